//! Trace wire types: `TraceData` and `SpanData` as Genkit's telemetry server,
//! Dev UI and `genkit-schema.json` define them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A whole trace: its spans keyed by span id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceData {
    /// 32 lower-case hex digits.
    pub trace_id: String,
    /// The root span's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Root span start, epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<f64>,
    /// Root span end, epoch milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_time: Option<f64>,
    /// Spans by span id.
    pub spans: BTreeMap<String, SpanData>,
}

impl TraceData {
    /// The span without a parent, if it has arrived.
    pub fn root_span(&self) -> Option<&SpanData> {
        self.spans.values().find(|s| s.parent_span_id.is_none())
    }

    /// Spans whose `genkit:name` (or display name) is `name`.
    pub fn spans_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a SpanData> + 'a {
        self.spans.values().filter(move |s| s.display_name == name)
    }

    /// Adds or replaces a span, updating the trace header from the root span.
    pub fn insert_span(&mut self, span: SpanData) {
        if span.parent_span_id.is_none() {
            self.display_name = Some(span.display_name.clone());
            self.start_time = Some(span.start_time);
            self.end_time = Some(span.end_time);
        }
        self.spans.insert(span.span_id.clone(), span);
    }
}

/// One span.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanData {
    /// 16 lower-case hex digits.
    pub span_id: String,
    /// 32 lower-case hex digits.
    pub trace_id: String,
    /// The parent span, absent on the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    /// Epoch milliseconds.
    pub start_time: f64,
    /// Epoch milliseconds; `0` while the span is still running.
    pub end_time: f64,
    /// `genkit:*` attributes and telemetry labels.
    pub attributes: Map<String, Value>,
    /// The span name.
    pub display_name: String,
    /// Links to other spans (always empty here).
    #[serde(default)]
    pub links: Vec<Value>,
    /// Which tracer made the span.
    pub instrumentation_library: InstrumentationLibrary,
    /// Always `INTERNAL`.
    pub span_kind: String,
    /// Whether the parent runs in this process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_process_as_parent_span: Option<BoolValue>,
    /// `{code: 0}` on success, `{code: 2, message}` on error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<SpanStatus>,
    /// Exception events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_events: Option<TimeEvents>,
    /// `true` when an attribute was cut at the size cap (Genkit's
    /// `SpanData.truncated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

impl SpanData {
    /// A string attribute.
    pub fn attr_str(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).and_then(Value::as_str)
    }
}

/// `{ "value": bool }`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct BoolValue {
    /// The flag.
    pub value: bool,
}

/// The tracer that produced a span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InstrumentationLibrary {
    /// `genkit-tracer`.
    pub name: String,
    /// `v1`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Unused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_url: Option<String>,
}

impl Default for InstrumentationLibrary {
    fn default() -> Self {
        Self {
            name: "genkit-tracer".into(),
            version: Some("v1".into()),
            schema_url: None,
        }
    }
}

/// Span status (OpenTelemetry codes: 0 unset/ok, 2 error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpanStatus {
    /// 0 or 2.
    pub code: u8,
    /// The error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `{ "timeEvent": [...] }`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimeEvents {
    /// The events.
    pub time_event: Vec<TimeEvent>,
}

/// A timestamped annotation, e.g. an exception.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimeEvent {
    /// Epoch milliseconds.
    pub time: f64,
    /// What happened.
    pub annotation: Annotation,
}

/// The body of a [`TimeEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Annotation {
    /// e.g. `exception.type`, `exception.message`, `exception.stacktrace`.
    pub attributes: Map<String, Value>,
    /// e.g. `exception`.
    pub description: String,
}
