//! The Action: a named, self-describing, validated, traced, streamable async
//! function. Everything callable in Genkit is one.
//!
//! [`Action<I, O, S>`] is the typed surface (serde types in and out, schemas
//! derived with schemars); [`ErasedAction`] is the JSON core the registry,
//! the Reflection API and HTTP servers use. Both run through the same path:
//! validate input, open a span, run the body with the action context, a
//! chunk sender and a cancellation token, close the span, validate output.

mod bidi;
mod ctx;
mod desc;
mod kind;
mod stream;

pub use bidi::{BidiAction, BidiInputs, BidiSender, BidiStream, ErasedBidiAction, as_bidi};
pub use ctx::{ActionCtx, Cancellation, ChunkCallback, ChunkSender};
pub use desc::ActionDesc;
pub use kind::{ActionKey, ActionKind, UnknownKind};
pub use stream::ActionStream;

use crate::context::{ActionContext, Extensions};
use crate::error::{Error, Result};
use crate::registry::{Registry, WeakRegistry};
use crate::schema::{SchemaValidator, schema_for};
use crate::tracing::{Frame, Span, SpanJson, SpanOptions, SpanType, TraceInfo};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::TypeId;
use std::collections::BTreeMap;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};
use tokio_util::sync::CancellationToken;

/// Options for one run.
pub struct RunOptions<S = Value> {
    /// The action context; inherited from the calling action when `None`.
    pub context: Option<ActionContext>,
    /// Receives stream chunks.
    pub on_chunk: Option<ChunkCallback<S>>,
    /// Cancels the run; inherited from the calling action when `None`.
    pub cancel: Option<CancellationToken>,
    /// Labels recorded on the span.
    pub telemetry_labels: Option<BTreeMap<String, String>>,
    /// Called with the trace and span ids as soon as the span opens.
    pub on_trace_start: Option<Box<dyn FnOnce(TraceInfo) + Send>>,
    /// Metadata handed to the body as [`ActionCtx::metadata`].
    pub metadata: Option<Value>,
    /// The registry the body sees; by default the one the action is
    /// registered in, else the caller's.
    pub registry: Option<Registry>,
    /// Typed values added over the ones inherited from the caller.
    pub extensions: Extensions,
    /// What the span records as `genkit:input`, when the caller has it
    /// already (typically deferred, see [`SpanJson::defer`]); it must be the
    /// input's JSON. When `None` the input is recorded from the value.
    pub span_input: Option<SpanJson>,
}

impl<S> Default for RunOptions<S> {
    fn default() -> Self {
        Self {
            context: None,
            on_chunk: None,
            cancel: None,
            telemetry_labels: None,
            on_trace_start: None,
            metadata: None,
            registry: None,
            extensions: Extensions::new(),
            span_input: None,
        }
    }
}

impl<S> RunOptions<S> {
    /// Default options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the action context.
    pub fn context(mut self, context: ActionContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Streams chunks to `callback`.
    pub fn on_chunk(mut self, callback: impl Fn(S) + Send + Sync + 'static) -> Self {
        self.on_chunk = Some(Arc::new(callback));
        self
    }

    /// Sets the cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Sets telemetry labels.
    pub fn telemetry_labels(mut self, labels: BTreeMap<String, String>) -> Self {
        self.telemetry_labels = Some(labels);
        self
    }

    /// Attaches per-run metadata for the body.
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// Sets the registry the body sees (see [`ActionCtx::registry`]).
    pub fn registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Adds a typed value the body and every action it calls can read with
    /// [`ActionCtx::extension`].
    pub fn extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Records `input` as the span's `genkit:input` instead of encoding
    /// the run's input (see [`RunOptions::span_input`]).
    pub fn span_input(mut self, input: SpanJson) -> Self {
        self.span_input = Some(input);
        self
    }

    /// Calls `f` with the trace ids as soon as the span opens.
    pub fn on_trace_start(mut self, f: impl FnOnce(TraceInfo) + Send + 'static) -> Self {
        self.on_trace_start = Some(Box::new(f));
        self
    }
}

/// An output with the ids of the trace that produced it.
#[derive(Debug, Clone)]
pub struct ActionResult<O> {
    /// The output.
    pub output: O,
    /// The run's trace and span.
    pub trace: TraceInfo,
}

/// The type-erased face of every action: JSON in, JSON out.
pub trait ErasedAction: Send + Sync + 'static {
    /// The self-description.
    fn desc(&self) -> &ActionDesc;

    /// Runs with JSON input, validating it against the input schema first.
    fn run_json(
        &self,
        input: Value,
        opts: RunOptions<Value>,
    ) -> BoxFuture<'_, Result<ActionResult<Value>>>;

    /// The action as `Any`, so typed callers can recover the typed action
    /// (see [`Action::downcast`]) and skip JSON entirely.
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;

    /// Called by [`Registry::register`]: the action remembers the (root of
    /// the) first registry it joins, which its body then sees as
    /// [`ActionCtx::registry`]. The default ignores it.
    fn on_registered(&self, registry: &Registry) {
        let _ = registry;
    }

    /// The registry key.
    fn key(&self) -> String {
        self.desc().key()
    }

    /// The name.
    fn name(&self) -> &str {
        &self.desc().name
    }
}

/// A shared, type-erased action.
pub type DynAction = Arc<dyn ErasedAction>;

/// Runs an erased action as a stream of JSON chunks.
pub fn stream_json(
    action: DynAction,
    input: Value,
    mut opts: RunOptions<Value>,
) -> ActionStream<Value, Value> {
    ActionStream::new(move |cb| {
        opts.on_chunk = Some(cb);
        Box::pin(async move { action.run_json(input, opts).await.map(|r| r.output) })
    })
}

type BodyFn<I, O, S> = dyn Fn(I, ActionCtx<S>) -> BoxFuture<'static, Result<O>> + Send + Sync;

struct Inner<I, O, S> {
    desc: ActionDesc,
    span: SpanOptions,
    input_validator: Option<SchemaValidator>,
    output_validator: Option<SchemaValidator>,
    body: Box<BodyFn<I, O, S>>,
    /// How a typed output is recorded on the span when no JSON of it is made
    /// anyway (by default: encoded at once, up to the cap).
    record_output: fn(&O) -> Option<SpanJson>,
    /// The root of the first registry this action was registered in.
    home: OnceLock<WeakRegistry>,
    _types: PhantomData<fn(I) -> (O, S)>,
}

/// A typed action: input `I`, output `O`, stream chunks `S`.
///
/// Cheap to clone (shared). Register it in a [`Registry`](crate::Registry)
/// to make it callable by key.
pub struct Action<I, O, S = ()> {
    inner: Arc<Inner<I, O, S>>,
}

impl<I, O, S> Clone for Action<I, O, S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<I, O, S> std::fmt::Debug for Action<I, O, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Action")
            .field("key", &self.inner.desc.key())
            .finish()
    }
}

/// Bounds every action payload satisfies: JSON both ways, sendable.
pub trait Payload: Serialize + DeserializeOwned + Send + 'static {}
impl<T: Serialize + DeserializeOwned + Send + 'static> Payload for T {}

impl<I: Payload, O: Payload, S: Serialize + Send + 'static> Action<I, O, S> {
    /// An action whose schemas are derived from `I`, `O` and `S` (no stream
    /// schema when `S` is `()`).
    pub fn new<F, Fut>(kind: ActionKind, name: impl Into<String>, body: F) -> Self
    where
        I: JsonSchema,
        O: JsonSchema,
        S: JsonSchema,
        F: Fn(I, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let mut desc = ActionDesc::new(kind, name);
        desc.input_schema = derived_schema::<I>();
        desc.output_schema = derived_schema::<O>();
        if TypeId::of::<S>() != TypeId::of::<()>() {
            desc.stream_schema = derived_schema::<S>();
        }
        // Derived schemas always compile.
        Self::from_desc(desc, body)
            .unwrap_or_else(|e| panic!("derived schema did not compile: {e}"))
    }

    /// An action whose schemas in `desc` describe `I` and `O` exactly, with
    /// no constraint beyond their serde shape (the framework's own wire types:
    /// generate requests, responses...). Typed (de)serialization enforces
    /// them, reporting the failing path, so no JSON-schema validation runs —
    /// and typed callers pass values without any JSON at all.
    pub fn from_desc_typed<F, Fut>(desc: ActionDesc, body: F) -> Self
    where
        F: Fn(I, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        Self::build(desc, None, None, body)
    }

    fn build<F, Fut>(
        desc: ActionDesc,
        input_validator: Option<SchemaValidator>,
        output_validator: Option<SchemaValidator>,
        body: F,
    ) -> Self
    where
        F: Fn(I, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let span = SpanOptions {
            name: desc.name.as_str().into(),
            span_type: SpanType::Action,
            subtype: Some(desc.kind.as_str().into()),
            key: Some(desc.key().into()),
        };
        Self {
            inner: Arc::new(Inner {
                desc,
                span,
                input_validator,
                output_validator,
                body: Box::new(move |i, ctx| Box::pin(body(i, ctx))),
                record_output: |o| SpanJson::serialize(o),
                home: OnceLock::new(),
                _types: PhantomData,
            }),
        }
    }

    /// An action described by `desc` (schemas given as raw JSON schema, e.g. for
    /// dynamic tools). Fails with `INVALID_ARGUMENT` if a schema does not compile.
    pub fn from_desc<F, Fut>(desc: ActionDesc, body: F) -> Result<Self>
    where
        F: Fn(I, ActionCtx<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        let compile = |s: &Option<Value>| -> Result<Option<SchemaValidator>> {
            match s {
                Some(schema) if !crate::schema::accepts_anything(schema) => {
                    SchemaValidator::compile(schema).map(Some)
                }
                _ => Ok(None),
            }
        };
        let input_validator = compile(&desc.input_schema).map_err(|e| {
            Error::invalid_argument(format!("input schema of `{}`: {}", desc.name, e.message()))
        })?;
        let output_validator = compile(&desc.output_schema).map_err(|e| {
            Error::invalid_argument(format!("output schema of `{}`: {}", desc.name, e.message()))
        })?;
        Ok(Self::build(desc, input_validator, output_validator, body))
    }

    /// Sets how the span records a typed output (instead of encoding it at
    /// once), e.g. as a copy encoded later with [`SpanJson::defer`]. Takes
    /// effect only on an action not yet cloned or registered (call it right
    /// after building it); returns whether it did.
    pub fn set_output_recorder(&mut self, record: fn(&O) -> Option<SpanJson>) -> bool {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.record_output = record;
                true
            }
            None => false,
        }
    }

    /// The self-description.
    pub fn desc(&self) -> &ActionDesc {
        &self.inner.desc
    }

    /// The registry key.
    pub fn key(&self) -> String {
        self.inner.desc.key()
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.inner.desc.name
    }

    /// Runs with the caller's context and returns the output.
    pub async fn run(&self, input: I) -> Result<O> {
        Ok(self.run_with(input, RunOptions::default()).await?.output)
    }

    /// Runs with options and returns the output with its trace ids.
    pub async fn run_with(&self, input: I, opts: RunOptions<S>) -> Result<ActionResult<O>> {
        let inner = &self.inner;
        let recording = crate::tracing::is_recording() && opts.span_input.is_none();
        let input_text = match &inner.input_validator {
            Some(v) => {
                let json = serde_json::to_value(&input)?;
                v.validate(&json).map_err(mark_caller_error)?;
                // The JSON made for validation is kept and encoded later.
                recording.then(|| SpanJson::defer_value(json))
            }
            None if recording => SpanJson::serialize(&input),
            None => None,
        };
        let (output, _, trace) = inner.execute(input, input_text, opts, false).await?;
        // Without `want_json` the output always comes back.
        let output =
            output.ok_or_else(|| Error::internal("the action's output was not returned"))?;
        Ok(ActionResult { output, trace })
    }

    /// Runs as a stream: chunks as they are sent, then the output.
    pub fn stream(&self, input: I) -> ActionStream<S, O> {
        self.stream_with(input, RunOptions::default())
    }

    /// Runs as a stream with options (`on_chunk` is replaced by the stream).
    pub fn stream_with(&self, input: I, mut opts: RunOptions<S>) -> ActionStream<S, O> {
        let this = self.clone();
        ActionStream::new(move |cb| {
            opts.on_chunk = Some(cb);
            Box::pin(async move { this.run_with(input, opts).await.map(|r| r.output) })
        })
    }
}

/// Runs `body` until it finishes or `token` is cancelled. The body is polled
/// first and the token only when the body is pending, so a body that finishes
/// at once never registers with the token (the common case, and what made
/// cancellation cost something on every call); cancellation still wins over
/// a body that finishes in the same poll.
async fn run_cancellable<T>(
    body: impl Future<Output = Result<T>>,
    token: &CancellationToken,
) -> Result<T> {
    let mut body = std::pin::pin!(body);
    let mut cancelled = std::pin::pin!(token.cancelled());
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(r) = body.as_mut().poll(cx) {
            return std::task::Poll::Ready(if token.is_cancelled() {
                Err(Error::cancelled())
            } else {
                r
            });
        }
        if cancelled.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(Err(Error::cancelled()));
        }
        std::task::Poll::Pending
    })
    .await
}

/// An action's typed input from its JSON. An object (a tool's arguments,
/// a flow's fields) is read in place, its keys borrowed; anything else is
/// consumed, so a string moves into the input. Either way the path of what
/// does not fit is worked out only for input that fails.
fn typed_input<I: DeserializeOwned>(
    input: Value,
) -> std::result::Result<I, serde_path_to_error::Error<serde_json::Error>> {
    if input.is_object() {
        typed_input_ref(&input)
    } else {
        serde_path_to_error::deserialize(input)
    }
}

/// [`typed_input`] of input that is kept: read in place, and read again
/// with the error's path (which costs an allocation per key) only if it
/// does not fit.
fn typed_input_ref<I: DeserializeOwned>(
    input: &Value,
) -> std::result::Result<I, serde_path_to_error::Error<serde_json::Error>> {
    I::deserialize(input).or_else(|_| serde_path_to_error::deserialize(input))
}

/// Input that fails validation at the root of a trace came from the remote
/// caller, who may be told what is wrong with it.
fn mark_caller_error(e: Error) -> Error {
    if crate::tracing::current_trace().is_none() {
        e.into_user_facing()
    } else {
        e
    }
}

fn derived_schema<T: JsonSchema>() -> Option<Value> {
    let s = schema_for::<T>();
    (!crate::schema::accepts_anything(&s)).then_some(s)
}

impl<I: Payload, O: Payload, S: Serialize + Send + 'static> Inner<I, O, S> {
    /// The common run path. Returns the output, its JSON when `want_json` (or
    /// when it had to be serialized anyway) and the trace ids. With
    /// `want_json` the caller needs only the JSON, and the output itself may
    /// be kept by the span instead (`None` then).
    async fn execute(
        &self,
        input: I,
        input_text: Option<SpanJson>,
        opts: RunOptions<S>,
        want_json: bool,
    ) -> Result<(Option<O>, Option<Value>, TraceInfo)> {
        let parent = Frame::current();
        let mut span = Span::start_with_labels(&self.span, opts.telemetry_labels.as_ref());
        let trace = span.info();
        if let Some(f) = opts.on_trace_start {
            f(trace);
        }
        let context = opts.context.unwrap_or(parent.context);
        if span.is_recording() {
            if let Some(text) = opts.span_input.or(input_text) {
                span.set_input_json(text);
            }
            span.set_context(&context);
        }
        let cancel = opts.cancel.or(parent.cancel);
        let registry = match (opts.registry, self.home.get()) {
            (Some(explicit), _) => Some(explicit),
            // Nested in an action of the same registry (the common case):
            // reuse the caller's handle instead of upgrading the weak one.
            (None, Some(home)) => match parent.registry {
                Some(caller) if home.points_to(&caller) => Some(caller),
                caller => home.upgrade().or(caller),
            },
            (None, None) => parent.registry,
        };
        let extensions = if opts.extensions.is_empty() {
            parent.extensions
        } else {
            parent.extensions.merged(&opts.extensions)
        };
        let frame = Frame {
            span: Some(span.ctx()),
            context: context.clone(),
            cancel: cancel.clone(),
            registry: registry.clone(),
            extensions: extensions.clone(),
        };
        let ctx = ActionCtx {
            context,
            chunks: ChunkSender {
                callback: opts.on_chunk,
            },
            cancel: Cancellation::from(cancel.clone()),
            trace,
            metadata: opts.metadata,
            registry,
            extensions,
        };
        let body = (self.body)(input, ctx);
        let result = match &cancel {
            Some(token) => {
                if token.is_cancelled() {
                    Err(Error::cancelled())
                } else {
                    run_cancellable(frame.scope(body), token).await
                }
            }
            None => frame.scope(body).await,
        };
        match result {
            Ok(output) => {
                let need_json = want_json || self.output_validator.is_some();
                let output_json = if need_json {
                    match serde_json::to_value(&output) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            let mut err = Error::internal(format!(
                                "output of `{}` is not JSON: {e}",
                                self.desc.name
                            ));
                            span.end_err(&mut err);
                            return Err(err);
                        }
                    }
                } else {
                    None
                };
                let mut output = Some(output);
                if span.is_recording() {
                    let recorded = match &output_json {
                        // The caller needs only the JSON: the span keeps the
                        // output itself rather than a copy of its JSON.
                        Some(json) if want_json => {
                            output.take().map(|typed| SpanJson::defer_as(typed, json))
                        }
                        Some(json) => Some(SpanJson::defer_cloned(json)),
                        None => output.as_ref().and_then(self.record_output),
                    };
                    if let Some(recorded) = recorded {
                        span.set_output_json(recorded);
                    }
                }
                span.end_ok();
                // As in Genkit, the output is validated after the span closes.
                if let (Some(v), Some(json)) = (&self.output_validator, &output_json) {
                    v.validate(json)?;
                }
                Ok((output, output_json, trace))
            }
            Err(mut e) => {
                span.end_err(&mut e);
                Err(e)
            }
        }
    }
}

impl<I: Payload, O: Payload, S: Payload> ErasedAction for Inner<I, O, S> {
    fn desc(&self) -> &ActionDesc {
        &self.desc
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }

    fn on_registered(&self, registry: &Registry) {
        let _ = self.home.set(registry.root().downgrade());
    }

    fn run_json(
        &self,
        input: Value,
        opts: RunOptions<Value>,
    ) -> BoxFuture<'_, Result<ActionResult<Value>>> {
        Box::pin(async move {
            if let Some(v) = &self.input_validator {
                v.validate(&input).map_err(mark_caller_error)?;
            }
            // While recording, a small input is read by reference and kept
            // for the span (encoded later, off the request path); a large
            // one is encoded now, up to the cap, and then consumed.
            let (typed, recorded) = if !crate::tracing::is_recording() || opts.span_input.is_some()
            {
                (typed_input(input), None)
            } else {
                match SpanJson::size_within_cap(&input) {
                    Err(recorded) => (typed_input(input), Some(recorded)),
                    Ok(approx) => {
                        let typed = typed_input_ref(&input);
                        (typed, Some(SpanJson::defer_measured(input, approx)))
                    }
                }
            };
            let typed: I = typed.map_err(|e| {
                let path = e.path().to_string();
                let path = if path == "." {
                    "(root)".to_owned()
                } else {
                    path
                };
                mark_caller_error(
                    Error::invalid_argument(format!(
                        "invalid input for `{}`: - {path}: {}",
                        self.desc.name,
                        e.inner()
                    ))
                    .with_details(serde_json::json!({ "errors": [{"path": path, "message": e.inner().to_string()}] })),
                )
            })?;
            let on_chunk: Option<ChunkCallback<S>> = opts.on_chunk.map(|cb| {
                let name = self.desc.name.clone();
                Arc::new(move |chunk: S| match serde_json::to_value(chunk) {
                    Ok(v) => cb(v),
                    Err(e) => ::tracing::warn!(action = %name, "dropping a stream chunk that is not JSON: {e}"),
                }) as ChunkCallback<S>
            });
            let typed_opts = RunOptions {
                context: opts.context,
                on_chunk,
                cancel: opts.cancel,
                telemetry_labels: opts.telemetry_labels,
                on_trace_start: opts.on_trace_start,
                metadata: opts.metadata,
                registry: opts.registry,
                extensions: opts.extensions,
                span_input: opts.span_input,
            };
            let (_, json, trace) = self.execute(typed, recorded, typed_opts, true).await?;
            Ok(ActionResult {
                output: json.unwrap_or(Value::Null),
                trace,
            })
        })
    }
}

impl<I: Payload, O: Payload, S: Payload> Action<I, O, S> {
    /// The typed action behind an erased one, if its types are `I`, `O`, `S`.
    pub fn downcast(action: &DynAction) -> Option<Self> {
        action
            .clone()
            .into_any()
            .downcast::<Inner<I, O, S>>()
            .ok()
            .map(|inner| Self { inner })
    }

    /// This action as a shared erased action.
    pub fn to_dyn(&self) -> DynAction {
        self.inner.clone()
    }

    /// Runs with JSON input and output, as the registry does.
    pub async fn run_json(
        &self,
        input: Value,
        opts: RunOptions<Value>,
    ) -> Result<ActionResult<Value>> {
        ErasedAction::run_json(&*self.inner, input, opts).await
    }
}

/// Turns something into a registrable erased action.
pub trait IntoDynAction {
    /// The erased action.
    fn into_dyn(self) -> DynAction;
}

impl IntoDynAction for DynAction {
    fn into_dyn(self) -> DynAction {
        self
    }
}

impl<I: Payload, O: Payload, S: Payload> IntoDynAction for Action<I, O, S> {
    fn into_dyn(self) -> DynAction {
        self.inner
    }
}

impl<I: Payload, O: Payload, S: Payload> IntoDynAction for &Action<I, O, S> {
    fn into_dyn(self) -> DynAction {
        self.inner.clone()
    }
}

impl std::fmt::Debug for dyn ErasedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErasedAction")
            .field("key", &self.key())
            .finish()
    }
}
