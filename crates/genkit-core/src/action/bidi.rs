//! Bidirectional actions: an `init` payload, then a stream of inputs; a
//! stream of chunks, then one output (Genkit's `defineBidiAction`, which
//! agents are built on).
//!
//! A [`BidiAction`] runs through the same path as every action — one span,
//! the action context, cancellation, chunk streaming, output validation —
//! with the run's inputs arriving while it runs: the body reads them from
//! [`BidiInputs`], the caller sends them through the [`BidiStream`] it got
//! from [`start`](BidiAction::start) and reads chunks from the same stream.
//!
//! ```
//! use futures::StreamExt;
//! use genkit_core::action::{ActionKind, BidiAction};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> genkit_core::Result<()> {
//! // Echoes each input as a chunk, prefixed by the init; outputs the count.
//! let echo = BidiAction::new(
//!     ActionKind::Custom,
//!     "echo",
//!     |prefix: String, mut inputs, ctx| async move {
//!         let mut n = 0u32;
//!         while let Some(input) = inputs.next().await {
//!             let input: String = input?;
//!             ctx.send_chunk(format!("{prefix}{input}"));
//!             n += 1;
//!         }
//!         Ok(n)
//!     },
//! );
//! let mut run = echo.start("> ".to_owned());
//! run.send("hi".to_owned())?;
//! assert_eq!(run.next().await.transpose()?, Some("> hi".to_owned()));
//! run.send("there".to_owned())?;
//! run.close();
//! assert_eq!(run.next().await.transpose()?, Some("> there".to_owned()));
//! assert_eq!(run.output().await?, 2);
//! # Ok(()) }
//! ```
//!
//! Inputs are validated against the input schema as they are sent: an
//! invalid input reaches the body as an `INVALID_ARGUMENT` error in its
//! place (and `send` returns it too), so a body that propagates input errors
//! with `?` fails the run, as in Genkit JS.

use super::stream::ActionStream;
use super::{
    Action, ActionCtx, ActionDesc, ActionKind, ActionResult, ChunkCallback, DynAction,
    ErasedAction, IntoDynAction, Payload, RunOptions,
};
use crate::error::{Error, Result};
use crate::registry::Registry;
use crate::schema::{SchemaValidator, accepts_anything, schema_for};
use crate::status::StatusCode;
use crate::tracing::TraceInfo;
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::any::{Any, TypeId};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// The telemetry attribute recording a run's init payload, as Genkit JS.
const INIT_ATTRIBUTE: &str = "genkit:init";

/// The inputs of a bidirectional run, as its body reads them: each item is
/// an input or the error an invalid input became. Ends when the caller
/// closes the input side.
pub struct BidiInputs<I> {
    rx: Option<mpsc::UnboundedReceiver<Result<I>>>,
}

impl<I> BidiInputs<I> {
    /// The next input; `None` once the caller closed the input side.
    pub async fn recv(&mut self) -> Option<Result<I>> {
        match &mut self.rx {
            Some(rx) => rx.recv().await,
            None => None,
        }
    }

    fn closed() -> Self {
        Self { rx: None }
    }
}

impl<I> Stream for BidiInputs<I> {
    type Item = Result<I>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<I>>> {
        match &mut self.get_mut().rx {
            Some(rx) => rx.poll_recv(cx),
            None => Poll::Ready(None),
        }
    }
}

type SendFn<T> = dyn Fn(T) -> Result<()> + Send + Sync;

/// Sends inputs into a running bidirectional action. Cheap to clone; the
/// input side closes when the run's [`BidiStream`] is closed (or consumed
/// by [`output`](BidiStream::output)) and every clone is dropped.
pub struct BidiSender<T> {
    send: Arc<SendFn<T>>,
}

impl<T> Clone for BidiSender<T> {
    fn clone(&self) -> Self {
        Self {
            send: self.send.clone(),
        }
    }
}

impl<T> BidiSender<T> {
    /// Sends one input. Fails with `INVALID_ARGUMENT` (naming the failing
    /// field) if it violates the input schema — the body receives that error
    /// in its place — or `FAILED_PRECONDITION` if the run no longer reads
    /// inputs.
    pub fn send(&self, input: T) -> Result<()> {
        (self.send)(input)
    }
}

/// A running bidirectional action: send inputs, read chunks (as a
/// [`Stream`]), then take the output.
///
/// The run makes progress while the stream or [`output`](Self::output) is
/// polled, in the caller's task (so it inherits the caller's trace and
/// context); sending never blocks.
pub struct BidiStream<T, S, O> {
    sender: Option<BidiSender<T>>,
    chunks: ActionStream<S, O>,
}

impl<T, S: Send + 'static, O: Send + 'static> BidiStream<T, S, O> {
    fn failed(error: Error) -> Self {
        Self {
            sender: None,
            chunks: ActionStream::failed(error),
        }
    }

    /// Sends one input (see [`BidiSender::send`]).
    pub fn send(&self, input: T) -> Result<()> {
        match &self.sender {
            Some(sender) => sender.send(input),
            None => Err(Error::new(
                StatusCode::FailedPrecondition,
                "the input side of this run is closed",
            )),
        }
    }

    /// A sender for sending inputs from elsewhere (another task); `None`
    /// once the input side is closed.
    pub fn sender(&self) -> Option<BidiSender<T>> {
        self.sender.clone()
    }

    /// Closes the input side (once every [`sender`](Self::sender) clone is
    /// dropped too): the body's [`BidiInputs`] end.
    pub fn close(&mut self) {
        self.sender = None;
    }

    /// Closes the input side, runs to completion (dropping chunks not yet
    /// read) and returns the output.
    pub async fn output(mut self) -> Result<O> {
        self.close();
        self.chunks.output().await
    }
}

impl<T, S: Send + 'static, O: Send + 'static> Stream for BidiStream<T, S, O> {
    type Item = Result<S>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<S>>> {
        self.get_mut().chunks.poll_next_unpin(cx)
    }
}

impl<T, S, O> Unpin for BidiStream<T, S, O> {}

/// The payload the underlying action runs on: the init (what its span
/// records as input) and the receiving end of the inputs, which no JSON
/// carries.
struct Start<Init, I> {
    init: Init,
    inputs: Option<BidiInputs<I>>,
}

impl<Init: Serialize, I> Serialize for Start<Init, I> {
    fn serialize<Ser: Serializer>(&self, s: Ser) -> std::result::Result<Ser::Ok, Ser::Error> {
        self.init.serialize(s)
    }
}

impl<'de, Init: Deserialize<'de>, I> Deserialize<'de> for Start<Init, I> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(Self {
            init: Init::deserialize(d)?,
            inputs: None,
        })
    }
}

/// Checks of values entering a run from the caller.
struct Checks {
    name: String,
    init: Option<SchemaValidator>,
    input: Option<SchemaValidator>,
}

impl Checks {
    /// Validates a JSON value and reads it as `T`; failures are
    /// `INVALID_ARGUMENT` naming the failing path.
    fn parse<T: DeserializeOwned>(
        &self,
        what: &str,
        validator: Option<&SchemaValidator>,
        value: Value,
    ) -> Result<T> {
        if let Some(v) = validator {
            v.validate(&value)
                .map_err(|e| caller_error(self.concise(what, e)))?;
        }
        serde_path_to_error::deserialize(value).map_err(|e| {
            let path = match e.path().to_string() {
                p if p == "." => "(root)".to_owned(),
                p => p,
            };
            caller_error(
                Error::invalid_argument(format!(
                    "invalid {what} for `{}`: - {path}: {}",
                    self.name,
                    e.inner()
                ))
                .with_details(serde_json::json!({ "errors": [{"path": path, "message": e.inner().to_string()}] })),
            )
        })
    }

    /// A schema failure of the `what` (`init`, `input`) sent to this
    /// action, in one line per violated field (`invalid init for `a`: -
    /// (root): must be object`), rather than the validator's text, which
    /// repeats the data and the whole schema; the details keep the list.
    fn concise(&self, what: &str, e: Error) -> Error {
        let Some(errors) = e
            .details()
            .and_then(|d| d.get("errors"))
            .and_then(Value::as_array)
            .filter(|list| !list.is_empty())
        else {
            return e;
        };
        let fields: Vec<String> = errors
            .iter()
            .map(|f| {
                let path = f.get("path").and_then(Value::as_str).unwrap_or("(root)");
                let message = f
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("is invalid");
                format!("- {path}: {message}")
            })
            .collect();
        Error::invalid_argument(format!(
            "invalid {what} for `{}`: {}",
            self.name,
            fields.join("; ")
        ))
        .with_details(serde_json::json!({ "errors": errors }))
    }

    /// Validates a typed value against a schema beyond its serde shape.
    fn check<T: Serialize>(
        &self,
        what: &str,
        validator: Option<&SchemaValidator>,
        value: &T,
    ) -> Result<()> {
        match validator {
            Some(v) => v
                .validate(&serde_json::to_value(value)?)
                .map_err(|e| caller_error(self.concise(what, e))),
            None => Ok(()),
        }
    }
}

/// As for every action: bad input at the root of a trace came from the
/// remote caller, who may be told what is wrong with it.
fn caller_error(e: Error) -> Error {
    if crate::tracing::current_trace().is_none() {
        e.into_user_facing()
    } else {
        e
    }
}

/// Hands a checked input to the body; the error of an invalid one goes to
/// the body in its place and back to the caller.
fn forward<I>(tx: &mpsc::UnboundedSender<Result<I>>, name: &str, input: Result<I>) -> Result<()> {
    let rejected = input.as_ref().err().cloned();
    tx.send(input).map_err(|_| {
        Error::new(
            StatusCode::FailedPrecondition,
            format!("`{name}` no longer reads inputs: its run has ended"),
        )
    })?;
    rejected.map_or(Ok(()), Err)
}

/// Records the init as `genkit:init` on the span (only while recording).
fn label_init<S, Init: Serialize>(mut opts: RunOptions<S>, init: &Init) -> RunOptions<S> {
    if crate::tracing::is_recording()
        && let Ok(json) = serde_json::to_string(init)
    {
        opts.telemetry_labels
            .get_or_insert_with(Default::default)
            .insert(INIT_ATTRIBUTE.to_owned(), json);
    }
    opts
}

struct BidiInner<Init, I, O, S> {
    desc: ActionDesc,
    checks: Arc<Checks>,
    run: Action<Start<Init, I>, O, S>,
}

/// A bidirectional action: init `Init`, inputs `I`, output `O`, stream
/// chunks `S`. Cheap to clone (shared). Its descriptor carries all four
/// schemas and `metadata.bidi: true`.
pub struct BidiAction<Init, I, O, S = ()> {
    inner: Arc<BidiInner<Init, I, O, S>>,
}

impl<Init, I, O, S> Clone for BidiAction<Init, I, O, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<Init, I, O, S> std::fmt::Debug for BidiAction<Init, I, O, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BidiAction")
            .field("key", &self.inner.desc.key())
            .finish()
    }
}

fn derived<T: JsonSchema>() -> Option<Value> {
    let s = schema_for::<T>();
    (!accepts_anything(&s)).then_some(s)
}

impl<Init, I, O, S> BidiAction<Init, I, O, S>
where
    Init: Payload,
    I: Payload,
    O: Payload,
    S: Payload,
{
    /// An action whose four schemas are derived from its types (no stream
    /// schema when `S` is `()`).
    pub fn new<F, Fut>(kind: ActionKind, name: impl Into<String>, body: F) -> Self
    where
        Init: JsonSchema,
        I: JsonSchema,
        O: JsonSchema,
        S: JsonSchema,
        F: Fn(Init, BidiInputs<I>, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let mut desc = ActionDesc::new(kind, name);
        desc.init_schema = derived::<Init>();
        desc.input_schema = derived::<I>();
        desc.output_schema = derived::<O>();
        if TypeId::of::<S>() != TypeId::of::<()>() {
            desc.stream_schema = derived::<S>();
        }
        // Derived schemas always compile.
        Self::from_desc(desc, body)
            .unwrap_or_else(|e| panic!("derived schema did not compile: {e}"))
    }

    /// Defines it with [`new`](Self::new) and registers it. Fails if the
    /// key is taken.
    pub fn define<F, Fut>(
        registry: &Registry,
        kind: ActionKind,
        name: impl Into<String>,
        body: F,
    ) -> Result<Self>
    where
        Init: JsonSchema,
        I: JsonSchema,
        O: JsonSchema,
        S: JsonSchema,
        F: Fn(Init, BidiInputs<I>, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let action = Self::new(kind, name, body);
        registry.register(&action)?;
        Ok(action)
    }

    /// An action described by `desc`, whose schemas (`init_schema`,
    /// `input_schema`, `output_schema`, `stream_schema`) are raw JSON schema.
    /// Fails with `INVALID_ARGUMENT` if one does not compile.
    pub fn from_desc<F, Fut>(mut desc: ActionDesc, body: F) -> Result<Self>
    where
        F: Fn(Init, BidiInputs<I>, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        desc.metadata.insert("bidi".into(), Value::Bool(true));
        let compile = |what: &str, s: &Option<Value>| -> Result<Option<SchemaValidator>> {
            match s {
                Some(schema) if !accepts_anything(schema) => {
                    SchemaValidator::compile(schema).map(Some).map_err(|e| {
                        Error::invalid_argument(format!(
                            "{what} schema of `{}`: {}",
                            desc.name,
                            e.message()
                        ))
                    })
                }
                _ => Ok(None),
            }
        };
        let checks = Arc::new(Checks {
            name: desc.name.clone(),
            init: compile("init", &desc.init_schema)?,
            input: compile("input", &desc.input_schema)?,
        });
        // The run itself: span, context, cancellation, chunks and the output
        // check of every action. Its input is the init (checked before the
        // run starts, as inputs are checked when sent).
        let mut run_desc = ActionDesc::new(desc.kind, desc.name.clone());
        run_desc.output_schema = desc.output_schema.clone();
        let run = Action::from_desc(run_desc, move |start: Start<Init, I>, ctx: ActionCtx<S>| {
            let inputs = start.inputs.unwrap_or_else(BidiInputs::closed);
            body(start.init, inputs, ctx)
        })?;
        Ok(Self {
            inner: Arc::new(BidiInner { desc, checks, run }),
        })
    }

    /// The self-description.
    pub fn desc(&self) -> &ActionDesc {
        &self.inner.desc
    }

    /// The registry key.
    pub fn key(&self) -> String {
        self.inner.desc.key()
    }

    /// Starts a run with the caller's context.
    pub fn start(&self, init: Init) -> BidiStream<I, S, O> {
        self.start_with(init, RunOptions::default())
    }

    /// Starts a run with options (`on_chunk` is replaced by the stream). An
    /// init that violates the init schema fails the run before it starts.
    pub fn start_with(&self, init: Init, opts: RunOptions<S>) -> BidiStream<I, S, O> {
        let checks = &self.inner.checks;
        if let Err(e) = checks.check("init", checks.init.as_ref(), &init) {
            return BidiStream::failed(e);
        }
        let opts = label_init(opts, &init);
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Start {
            init,
            inputs: Some(BidiInputs { rx: Some(rx) }),
        };
        let chunks = self.inner.run.stream_with(start, opts);
        let checks = checks.clone();
        let sender = BidiSender {
            send: Arc::new(move |input: I| {
                let checked = checks
                    .check("input", checks.input.as_ref(), &input)
                    .map(|()| input);
                forward(&tx, &checks.name, checked)
            }),
        };
        BidiStream {
            sender: Some(sender),
            chunks,
        }
    }

    /// Runs with `inputs` sent at once and the input side closed, and
    /// returns the output.
    pub async fn run(&self, init: Init, inputs: impl IntoIterator<Item = I>) -> Result<O> {
        let stream = self.start(init);
        for input in inputs {
            // A rejected input reaches the body, which decides the outcome.
            if let Err(e) = stream.send(input)
                && e.status() != StatusCode::InvalidArgument
            {
                break;
            }
        }
        stream.output().await
    }

    /// This action as a shared erased action (for the registry).
    pub fn to_dyn(&self) -> DynAction {
        self.inner.clone()
    }

    /// The typed action behind an erased one, if it is a bidirectional
    /// action with exactly these types.
    pub fn downcast(action: &DynAction) -> Option<Self> {
        let handle = action.clone().into_any().downcast::<BidiHandle>().ok()?;
        handle
            .typed
            .clone()
            .downcast::<BidiInner<Init, I, O, S>>()
            .ok()
            .map(|inner| Self { inner })
    }
}

/// The JSON face of a bidirectional action, for servers.
pub trait ErasedBidiAction: Send + Sync + 'static {
    /// The self-description.
    fn desc(&self) -> &ActionDesc;

    /// Starts a run on JSON: the init and every input are validated against
    /// their schemas; chunks and the output are JSON.
    fn start_json(&self, init: Value, opts: RunOptions<Value>) -> BidiStream<Value, Value, Value>;
}

/// The bidirectional face of an erased action, if it is one.
pub fn as_bidi(action: &DynAction) -> Option<Arc<dyn ErasedBidiAction>> {
    let handle = action.clone().into_any().downcast::<BidiHandle>().ok()?;
    Some(handle.erased.clone())
}

/// What a bidirectional action hands out as `Any`: its JSON face and its
/// typed self.
struct BidiHandle {
    erased: Arc<dyn ErasedBidiAction>,
    typed: Arc<dyn Any + Send + Sync>,
}

impl<Init: Payload, I: Payload, O: Payload, S: Payload> ErasedBidiAction
    for BidiInner<Init, I, O, S>
{
    fn desc(&self) -> &ActionDesc {
        &self.desc
    }

    fn start_json(&self, init: Value, opts: RunOptions<Value>) -> BidiStream<Value, Value, Value> {
        let checks = &self.checks;
        let init: Init = match checks.parse("init", checks.init.as_ref(), init) {
            Ok(init) => init,
            Err(e) => return BidiStream::failed(e),
        };
        // Everything but the chunk callback, which the stream provides.
        let typed = RunOptions::<S> {
            context: opts.context,
            cancel: opts.cancel,
            telemetry_labels: opts.telemetry_labels,
            on_trace_start: opts.on_trace_start,
            metadata: opts.metadata,
            registry: opts.registry,
            extensions: opts.extensions,
            span_input: opts.span_input,
            on_chunk: None,
        };
        let mut typed = label_init(typed, &init);
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Start {
            init,
            inputs: Some(BidiInputs { rx: Some(rx) }),
        };
        let run = self.run.clone();
        let name = self.desc.name.clone();
        let chunks = ActionStream::new(move |cb: ChunkCallback<Value>| {
            typed.on_chunk = Some(Arc::new(move |chunk: S| {
                match serde_json::to_value(chunk) {
                    Ok(v) => cb(v),
                    Err(e) => {
                        ::tracing::warn!(action = %name, "dropping a stream chunk that is not JSON: {e}")
                    }
                }
            }));
            Box::pin(async move {
                let output = run.run_with(start, typed).await?.output;
                Ok(serde_json::to_value(output)?)
            })
        });
        let checks = checks.clone();
        let sender = BidiSender {
            send: Arc::new(move |input: Value| {
                let parsed = checks.parse("input", checks.input.as_ref(), input);
                forward(&tx, &checks.name, parsed)
            }),
        };
        BidiStream {
            sender: Some(sender),
            chunks,
        }
    }
}

impl<Init: Payload, I: Payload, O: Payload, S: Payload> ErasedAction for BidiInner<Init, I, O, S> {
    fn desc(&self) -> &ActionDesc {
        &self.desc
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        Arc::new(BidiHandle {
            erased: self.clone(),
            typed: self,
        })
    }

    /// Runs with no init (JSON `null`) and `input` as the only input, as
    /// Genkit JS runs a bidirectional action called like any other; servers
    /// that have an init use [`as_bidi`].
    fn run_json(
        &self,
        input: Value,
        mut opts: RunOptions<Value>,
    ) -> BoxFuture<'_, Result<ActionResult<Value>>> {
        Box::pin(async move {
            let on_chunk = opts.on_chunk.take();
            let trace = Arc::new(Mutex::new(None::<TraceInfo>));
            let seen = trace.clone();
            let user_hook = opts.on_trace_start.take();
            opts.on_trace_start = Some(Box::new(move |info| {
                *seen.lock() = Some(info);
                if let Some(hook) = user_hook {
                    hook(info);
                }
            }));
            let mut stream = self.start_json(Value::Null, opts);
            // A rejected input reaches the body, which decides the outcome.
            let _ = stream.send(input);
            stream.close();
            while let Some(chunk) = stream.next().await {
                if let (Ok(chunk), Some(cb)) = (chunk, &on_chunk) {
                    cb(chunk);
                }
            }
            let output = stream.output().await?;
            let trace = trace
                .lock()
                .take()
                .ok_or_else(|| Error::internal("a finished run has no span"))?;
            Ok(ActionResult { output, trace })
        })
    }
}

impl<Init: Payload, I: Payload, O: Payload, S: Payload> IntoDynAction
    for BidiAction<Init, I, O, S>
{
    fn into_dyn(self) -> DynAction {
        self.inner
    }
}

impl<Init: Payload, I: Payload, O: Payload, S: Payload> IntoDynAction
    for &BidiAction<Init, I, O, S>
{
    fn into_dyn(self) -> DynAction {
        self.inner.clone()
    }
}
