//! Active spans and the task-local frame that carries the current span, the
//! action context and the cancellation token through nested async calls
//! (Genkit JS uses AsyncLocalStorage for the same job).

use super::ids::{SpanId, TraceId};
use super::json::SpanJson;
use super::processor::{self, is_recording};
use super::record::{RecordedSpan, SpanFailure};
use crate::context::{ActionContext, Extensions};
use crate::error::{Error, Result};
use crate::registry::Registry;
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

/// What kind of span this is (`genkit:type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanType {
    /// An action run (`genkit:type` = `action`).
    Action,
    /// A framework step such as one generate turn (`util`).
    Util,
    /// A `run` step inside a flow (`flowStep`).
    FlowStep,
}

impl SpanType {
    /// The `genkit:type` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Action => "action",
            Self::Util => "util",
            Self::FlowStep => "flowStep",
        }
    }
}

/// How to open a span.
#[derive(Debug, Clone)]
pub struct SpanOptions {
    /// Span name (`genkit:name`), e.g. the action name.
    pub name: Arc<str>,
    /// `genkit:type`.
    pub span_type: SpanType,
    /// `genkit:metadata:subtype`: the action kind (`flow`, `model`, ...).
    pub subtype: Option<Arc<str>>,
    /// `genkit:key`, e.g. `/flow/echo`.
    pub key: Option<Arc<str>>,
}

impl SpanOptions {
    /// Options for a span of `span_type` named `name`.
    pub fn new(name: impl Into<Arc<str>>, span_type: SpanType) -> Self {
        Self {
            name: name.into(),
            span_type,
            subtype: None,
            key: None,
        }
    }
}

/// Identity of the span a piece of code runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceInfo {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
}

#[derive(Debug)]
pub(crate) struct SpanCtx {
    pub(crate) info: TraceInfo,
    /// Undecorated `genkit:path` children build on; `None` when not recording.
    pub(crate) path: Option<Arc<str>>,
}

/// Everything that flows implicitly from an action to the actions it calls.
#[derive(Clone, Default)]
pub(crate) struct Frame {
    pub(crate) span: Option<Arc<SpanCtx>>,
    pub(crate) context: ActionContext,
    pub(crate) cancel: Option<CancellationToken>,
    /// The registry of the running action (what `ctx.genkit()` reaches).
    pub(crate) registry: Option<Registry>,
    /// Typed values inherited by nested runs.
    pub(crate) extensions: Extensions,
}

tokio::task_local! {
    static FRAME: Frame;
}

impl Frame {
    pub(crate) fn current() -> Frame {
        FRAME.try_with(Frame::clone).unwrap_or_default()
    }

    pub(crate) async fn scope<F: Future>(self, f: F) -> F::Output {
        FRAME.scope(self, f).await
    }
}

/// The span the caller runs in, if any.
pub fn current_trace() -> Option<TraceInfo> {
    FRAME
        .try_with(|f| f.span.as_ref().map(|s| s.info))
        .ok()
        .flatten()
}

/// The action context of the running action (empty outside actions).
pub fn current_context() -> ActionContext {
    FRAME.try_with(|f| f.context.clone()).unwrap_or_default()
}

/// The cancellation token of the running action, if it has one.
pub fn current_cancellation() -> Option<CancellationToken> {
    FRAME.try_with(|f| f.cancel.clone()).ok().flatten()
}

/// The typed extensions of the running action (empty outside actions).
pub fn current_extensions() -> Extensions {
    FRAME.try_with(|f| f.extensions.clone()).unwrap_or_default()
}

/// The registry of the running action, if it has one.
pub fn current_registry() -> Option<Registry> {
    FRAME.try_with(|f| f.registry.clone()).ok().flatten()
}

/// Runs `fut` with `value` added to the current typed extensions, so the
/// actions it runs see it in [`ActionCtx::extension`](crate::ActionCtx::extension)
/// (e.g. an agent turn making its session visible to the tools it calls).
pub fn with_extension<T, F>(value: T, fut: F) -> impl Future<Output = F::Output>
where
    T: Send + Sync + 'static,
    F: Future,
{
    let mut frame = Frame::current();
    frame.extensions.insert(value);
    frame.scope(fut)
}

/// Runs `build` with `token` as the running action's cancellation, so the
/// futures it builds that carry the caller's frame ([`with_extension`],
/// [`propagate`]) and every action they run see `token` in
/// [`ActionCtx::is_cancelled`](crate::ActionCtx::is_cancelled) and stop when
/// it fires, instead of the caller's cancellation (e.g. an agent turn that
/// outlives its caller and is stopped by its own abort signal).
pub fn with_cancellation_scope<R>(token: crate::CancellationToken, build: impl FnOnce() -> R) -> R {
    let mut frame = Frame::current();
    frame.cancel = Some(token);
    FRAME.sync_scope(frame, build)
}

/// Carries the caller's span, context and cancellation into `fut`, for work
/// moved to another task with `tokio::spawn`:
/// `tokio::spawn(genkit_core::tracing::propagate(async { ... }))`.
pub fn propagate<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let frame = Frame::current();
    frame.scope(fut)
}

thread_local! {
    /// Where span paths are put together before they are shared.
    static PATH_BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// `{parent}/{name,t:type}`, built without the formatting machinery (which
/// cost more than the rest of starting a span) in a buffer kept per thread,
/// so the only allocation is the shared path's.
fn child_path(parent: &str, name: &str, type_label: &str) -> Arc<str> {
    let build = |path: &mut String| {
        path.clear();
        path.push_str(parent);
        path.push_str("/{");
        path.push_str(name);
        path.push_str(",t:");
        path.push_str(type_label);
        path.push('}');
    };
    // Without the buffer (a thread being torn down), a string of its own.
    let fresh = || {
        let mut path = String::new();
        build(&mut path);
        Arc::<str>::from(path)
    };
    PATH_BUF
        .try_with(|buf| {
            let Ok(mut path) = buf.try_borrow_mut() else {
                return fresh();
            };
            build(&mut path);
            let shared = Arc::from(path.as_str());
            // A long path is not kept: the buffer stays small.
            if path.capacity() > 4096 {
                *path = String::new();
            }
            shared
        })
        .unwrap_or_else(|_| fresh())
}

pub(crate) fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// An open span. End it with [`end_ok`](Span::end_ok) or
/// [`end_err`](Span::end_err); a span dropped without ending (its future was
/// dropped) is recorded as cancelled.
pub struct Span {
    ctx: Arc<SpanCtx>,
    /// Allocated once, where processors get it: unique until the span ends
    /// (start events get a copy), so it is changed in place.
    record: Option<Arc<RecordedSpan>>,
}

impl Span {
    /// Opens a span under the caller's current span (or a new trace).
    pub fn start(opts: &SpanOptions) -> Span {
        Self::start_with_labels(opts, None)
    }

    /// Like [`start`](Self::start), also setting telemetry labels as attributes.
    pub fn start_with_labels(
        opts: &SpanOptions,
        labels: Option<&BTreeMap<String, String>>,
    ) -> Span {
        let parent = FRAME.try_with(|f| f.span.clone()).ok().flatten();
        Self::start_under(parent, opts, labels)
    }

    /// Opens a span under `self` rather than under the caller's current
    /// span: a loop can nest one span per step (each step's span inside the
    /// previous one) without recursing.
    pub fn start_child(&self, opts: &SpanOptions) -> Span {
        Self::start_under(Some(self.ctx()), opts, None)
    }

    /// Runs `fut` with this span as the current one (spans opened inside are
    /// its children); the caller's action context and cancellation carry over.
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> + use<F> {
        let mut frame = Frame::current();
        frame.span = Some(self.ctx());
        frame.scope(fut)
    }

    fn start_under(
        parent: Option<Arc<SpanCtx>>,
        opts: &SpanOptions,
        labels: Option<&BTreeMap<String, String>>,
    ) -> Span {
        let trace_id = parent
            .as_ref()
            .map(|p| p.info.trace_id)
            .unwrap_or_else(TraceId::random);
        let info = TraceInfo {
            trace_id,
            span_id: SpanId::random(),
        };
        if !is_recording() {
            return Span {
                ctx: Arc::new(SpanCtx { info, path: None }),
                record: None,
            };
        }
        let type_label = if opts.subtype.as_deref() == Some("flow") {
            "flow"
        } else {
            opts.span_type.as_str()
        };
        let parent_path = parent
            .as_ref()
            .and_then(|p| p.path.as_deref())
            .unwrap_or("");
        let path = child_path(parent_path, &opts.name, type_label);
        let record = RecordedSpan {
            trace_id,
            span_id: info.span_id,
            parent_span_id: parent.map(|p| p.info.span_id),
            name: opts.name.clone(),
            span_type: opts.span_type,
            subtype: opts.subtype.clone(),
            key: opts.key.clone(),
            labels: labels.cloned(),
            path: path.clone(),
            start_time: now_ms(),
            end_time: None,
            input: None,
            output: None,
            context: None,
            attributes: Map::new(),
            failure: None,
        };
        processor::emit_start(|| record.clone());
        Span {
            ctx: Arc::new(SpanCtx {
                info,
                path: Some(path),
            }),
            record: Some(Arc::new(record)),
        }
    }

    /// The span's trace and span ids.
    pub fn info(&self) -> TraceInfo {
        self.ctx.info
    }

    /// Whether attributes are being recorded (a processor is installed).
    pub fn is_recording(&self) -> bool {
        self.record.is_some()
    }

    pub(crate) fn ctx(&self) -> Arc<SpanCtx> {
        self.ctx.clone()
    }

    /// The record, while recording (never shared before the span ends).
    fn record(&mut self) -> Option<&mut RecordedSpan> {
        self.record.as_mut().and_then(Arc::get_mut)
    }

    /// Sets an attribute (ignored when not recording).
    pub fn set_attribute(&mut self, key: impl Into<String>, value: impl FnOnce() -> Value) {
        if let Some(r) = self.record() {
            r.attributes.insert(key.into(), value());
        }
    }

    /// Records `genkit:input` as JSON text (a [`SpanJson`] is shared as is;
    /// text over [`max_attribute_bytes`](super::max_attribute_bytes) is cut).
    pub fn set_input_json(&mut self, input: impl Into<SpanJson>) {
        if let Some(r) = self.record() {
            r.input = Some(input.into());
        }
    }

    /// Records `genkit:input` from any serializable value (serialized only
    /// while recording, and only up to the size cap).
    pub fn set_input<T: Serialize + ?Sized>(&mut self, input: &T) {
        if let Some(r) = self.record() {
            r.input = SpanJson::serialize(input);
        }
    }

    /// Records `genkit:output` as JSON text (a [`SpanJson`] is shared as
    /// is; text over the size cap is cut).
    pub fn set_output_json(&mut self, output: impl Into<SpanJson>) {
        if let Some(r) = self.record() {
            r.output = Some(output.into());
        }
    }

    /// Records `genkit:output` from any serializable value (serialized only
    /// while recording, and only up to the size cap).
    pub fn set_output<T: Serialize + ?Sized>(&mut self, output: &T) {
        if let Some(r) = self.record() {
            r.output = SpanJson::serialize(output);
        }
    }

    /// Records the action context (auth and secrets are redacted on export).
    pub fn set_context(&mut self, context: &ActionContext) {
        if let Some(r) = self.record()
            && !context.is_empty()
        {
            r.context = Some(context.clone());
        }
    }

    /// Ends the span successfully.
    pub fn end_ok(mut self) {
        if let Some(mut r) = self.record.take() {
            if let Some(rec) = Arc::get_mut(&mut r) {
                rec.end_time = Some(now_ms());
            }
            processor::emit_end(r);
        }
    }

    /// Ends the span with an error. The first span an error passes through is
    /// marked `genkit:isFailureSource`; the error learns its trace id.
    pub fn end_err(mut self, error: &mut Error) {
        let trace_id = self.ctx.info.trace_id;
        error.set_trace_id_if_absent(|| trace_id.to_string());
        let is_source = error.take_failure_source();
        if let Some(mut r) = self.record.take() {
            if let Some(rec) = Arc::get_mut(&mut r) {
                let now = now_ms();
                rec.end_time = Some(now);
                rec.failure = Some(SpanFailure {
                    status: error.status().name(),
                    message: error.to_string(),
                    stack: error.stack(),
                    time: now,
                    is_source,
                });
            }
            processor::emit_end(r);
        }
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if self.record.is_some() {
            let mut err = Error::cancelled();
            let span = Span {
                ctx: self.ctx.clone(),
                record: self.record.take(),
            };
            span.end_err(&mut err);
        }
    }
}

/// Runs `fut` inside a new span, recording `input_json` (JSON text, if
/// given) and the output (serialized only while recording). Used for
/// non-action steps such as a generate turn (`{generate,t:util}`); callers
/// build `input_json` only when [`is_recording`](super::is_recording).
pub async fn in_span<T, F>(opts: SpanOptions, input_json: Option<String>, fut: F) -> Result<T>
where
    T: Serialize,
    F: Future<Output = Result<T>>,
{
    let mut span = Span::start(&opts);
    if let Some(input) = input_json {
        span.set_input_json(input);
    }
    let mut frame = Frame::current();
    frame.span = Some(span.ctx());
    match frame.scope(fut).await {
        Ok(out) => {
            span.set_output(&out);
            span.end_ok();
            Ok(out)
        }
        Err(mut e) => {
            span.end_err(&mut e);
            Err(e)
        }
    }
}

/// A flow step: runs `fut` in a `flowStep` span named `name`, so it appears as
/// a child of the running flow in the trace (Genkit's `run`).
pub async fn run<T, F>(name: impl Into<Arc<str>>, fut: F) -> Result<T>
where
    T: Serialize,
    F: Future<Output = Result<T>>,
{
    in_span(SpanOptions::new(name, SpanType::FlowStep), None, fut).await
}
