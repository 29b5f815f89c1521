//! Active spans and the task-local frame that carries the current span, the
//! action context and the cancellation token through nested async calls
//! (Genkit JS uses AsyncLocalStorage for the same job).

use super::data::{
    Annotation, BoolValue, InstrumentationLibrary, SpanData, SpanStatus, TimeEvent, TimeEvents,
};
use super::ids::{SpanId, TraceId};
use super::processor::{self, is_recording};
use crate::context::ActionContext;
use crate::error::{Error, Result};
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
    pub name: String,
    /// `genkit:type`.
    pub span_type: SpanType,
    /// `genkit:metadata:subtype`: the action kind (`flow`, `model`, ...).
    pub subtype: Option<String>,
    /// `genkit:key`, e.g. `/flow/echo`.
    pub key: Option<String>,
}

impl SpanOptions {
    /// Options for a span of `span_type` named `name`.
    pub fn new(name: impl Into<String>, span_type: SpanType) -> Self {
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
    /// Undecorated `genkit:path` children build on; empty when not recording.
    pub(crate) path: String,
}

/// Everything that flows implicitly from an action to the actions it calls.
#[derive(Clone, Default)]
pub(crate) struct Frame {
    pub(crate) span: Option<Arc<SpanCtx>>,
    pub(crate) context: ActionContext,
    pub(crate) cancel: Option<CancellationToken>,
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

/// Carries the caller's span, context and cancellation into `fut`, for work
/// moved to another task with `tokio::spawn`:
/// `tokio::spawn(genkit_core::tracing::propagate(async { ... }))`.
pub fn propagate<F: Future>(fut: F) -> impl Future<Output = F::Output> {
    let frame = Frame::current();
    frame.scope(fut)
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

struct Record {
    name: String,
    parent: Option<SpanId>,
    start_time: f64,
    attributes: Map<String, Value>,
    decorated_path: String,
}

/// An open span. End it with [`end_ok`](Span::end_ok) or
/// [`end_err`](Span::end_err); a span dropped without ending (its future was
/// dropped) is recorded as cancelled.
pub struct Span {
    ctx: Arc<SpanCtx>,
    record: Option<Box<Record>>,
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
                ctx: Arc::new(SpanCtx {
                    info,
                    path: String::new(),
                }),
                record: None,
            };
        }
        let type_label = if opts.subtype.as_deref() == Some("flow") {
            "flow"
        } else {
            opts.span_type.as_str()
        };
        let parent_path = parent.as_ref().map(|p| p.path.as_str()).unwrap_or("");
        let path = format!("{parent_path}/{{{},t:{type_label}}}", opts.name);
        // Genkit decorates the last path segment with the subtype, except on the root.
        let decorated_path = match (&opts.subtype, parent.is_some()) {
            (Some(sub), true) => format!(
                "{}{},s:{sub}}}",
                parent_path,
                &path[parent_path.len()..path.len() - 1]
            ),
            _ => path.clone(),
        };
        let mut attributes = Map::new();
        attributes.insert("genkit:type".into(), Value::from(opts.span_type.as_str()));
        attributes.insert("genkit:name".into(), Value::from(opts.name.clone()));
        if let Some(sub) = &opts.subtype {
            attributes.insert("genkit:metadata:subtype".into(), Value::from(sub.clone()));
        }
        if let Some(key) = &opts.key {
            attributes.insert("genkit:key".into(), Value::from(key.clone()));
        }
        if let Some(labels) = labels {
            for (k, v) in labels.iter() {
                attributes.insert(k.clone(), Value::from(v.clone()));
            }
        }
        if parent.is_none() {
            attributes.insert("genkit:isRoot".into(), Value::Bool(true));
        }
        let span = Span {
            ctx: Arc::new(SpanCtx { info, path }),
            record: Some(Box::new(Record {
                name: opts.name.clone(),
                parent: parent.map(|p| p.info.span_id),
                start_time: now_ms(),
                attributes,
                decorated_path,
            })),
        };
        processor::emit_start(|| span.to_data(0.0, None));
        span
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

    /// Sets an attribute (ignored when not recording).
    pub fn set_attribute(&mut self, key: impl Into<String>, value: impl FnOnce() -> Value) {
        if let Some(r) = &mut self.record {
            r.attributes.insert(key.into(), value());
        }
    }

    /// Records `genkit:input` as JSON text.
    pub fn set_input(&mut self, input: &Value) {
        self.set_attribute("genkit:input", || Value::from(input.to_string()));
    }

    /// Records `genkit:output` as JSON text of `output`.
    pub fn set_output<T: Serialize + ?Sized>(&mut self, output: &T) {
        self.set_attribute("genkit:output", || {
            Value::from(serde_json::to_string(output).unwrap_or_default())
        });
    }

    /// Records the action context (auth and secrets redacted).
    pub fn set_context(&mut self, context: &ActionContext) {
        if self.record.is_some()
            && let Some(json) = context.redacted_json()
        {
            self.set_attribute("genkit:metadata:context", || Value::from(json));
        }
    }

    /// Ends the span successfully.
    pub fn end_ok(mut self) {
        if let Some(mut r) = self.record.take() {
            r.attributes
                .insert("genkit:state".into(), Value::from("success"));
            let data = Self::finish(&self.ctx, *r, SpanStatus::default(), None);
            processor::emit_end(&data);
        }
    }

    /// Ends the span with an error. The first span an error passes through is
    /// marked `genkit:isFailureSource`; the error learns its trace id.
    pub fn end_err(mut self, error: &mut Error) {
        let trace_id = self.ctx.info.trace_id;
        error.set_trace_id_if_absent(|| trace_id.to_string());
        let is_source = error.take_failure_source();
        if let Some(mut r) = self.record.take() {
            r.attributes
                .insert("genkit:state".into(), Value::from("error"));
            if is_source {
                r.attributes
                    .insert("genkit:isFailureSource".into(), Value::Bool(true));
            }
            let message = error.to_string();
            let mut ev = Map::new();
            ev.insert("exception.type".into(), Value::from(error.status().name()));
            ev.insert("exception.message".into(), Value::from(message.clone()));
            ev.insert("exception.stacktrace".into(), Value::from(error.stack()));
            let event = TimeEvent {
                time: now_ms(),
                annotation: Annotation {
                    attributes: ev,
                    description: "exception".into(),
                },
            };
            let status = SpanStatus {
                code: 2,
                message: Some(message),
            };
            let data = Self::finish(&self.ctx, *r, status, Some(event));
            processor::emit_end(&data);
        }
    }

    fn finish(
        ctx: &SpanCtx,
        mut r: Record,
        status: SpanStatus,
        event: Option<TimeEvent>,
    ) -> SpanData {
        r.attributes.insert(
            "genkit:path".into(),
            Value::from(std::mem::take(&mut r.decorated_path)),
        );
        SpanData {
            span_id: ctx.info.span_id.to_string(),
            trace_id: ctx.info.trace_id.to_string(),
            parent_span_id: r.parent.map(|p| p.to_string()),
            start_time: r.start_time,
            end_time: now_ms(),
            attributes: r.attributes,
            display_name: r.name,
            links: Vec::new(),
            instrumentation_library: InstrumentationLibrary::default(),
            span_kind: "INTERNAL".into(),
            same_process_as_parent_span: Some(BoolValue { value: true }),
            status: Some(status),
            time_events: Some(TimeEvents {
                time_event: event.into_iter().collect(),
            }),
        }
    }

    fn to_data(&self, end_time: f64, status: Option<SpanStatus>) -> SpanData {
        let Some(r) = &self.record else {
            return SpanData::default();
        };
        let mut attributes = r.attributes.clone();
        attributes.insert("genkit:path".into(), Value::from(r.decorated_path.clone()));
        SpanData {
            span_id: self.ctx.info.span_id.to_string(),
            trace_id: self.ctx.info.trace_id.to_string(),
            parent_span_id: r.parent.map(|p| p.to_string()),
            start_time: r.start_time,
            end_time,
            attributes,
            display_name: r.name.clone(),
            links: Vec::new(),
            instrumentation_library: InstrumentationLibrary::default(),
            span_kind: "INTERNAL".into(),
            same_process_as_parent_span: Some(BoolValue { value: true }),
            status,
            time_events: None,
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

/// Runs `fut` inside a new span, recording `input` (if given) and the output.
/// Used for non-action steps such as a generate turn (`{generate,t:util}`).
pub async fn in_span<T, F>(opts: SpanOptions, input: Option<&Value>, fut: F) -> Result<T>
where
    T: Serialize,
    F: Future<Output = Result<T>>,
{
    let mut span = Span::start(&opts);
    if let Some(input) = input {
        span.set_input(input);
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
pub async fn run<T, F>(name: impl Into<String>, fut: F) -> Result<T>
where
    T: Serialize,
    F: Future<Output = Result<T>>,
{
    in_span(SpanOptions::new(name, SpanType::FlowStep), None, fut).await
}
