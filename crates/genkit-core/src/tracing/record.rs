//! What a span records while processors are installed, kept compact: JSON
//! encoding and the attribute map are built only when a processor asks for
//! the wire form ([`RecordedSpan::to_span_data`]), off the request path.

use super::data::{
    Annotation, BoolValue, InstrumentationLibrary, SpanData, SpanStatus, TimeEvent, TimeEvents,
};
use super::ids::{SpanId, TraceId};
use super::json::SpanJson;
use super::span::SpanType;
use crate::context::ActionContext;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A failure recorded on a span.
#[derive(Debug, Clone)]
pub struct SpanFailure {
    /// The status name, e.g. `NOT_FOUND`.
    pub status: &'static str,
    /// `STATUS: message`.
    pub message: String,
    /// The error's cause chain.
    pub stack: String,
    /// When it happened, epoch milliseconds.
    pub time: f64,
    /// Whether the error started here (`genkit:isFailureSource`).
    pub is_source: bool,
}

/// A span as recorded: started (`end_time` is `None`) or finished.
#[derive(Debug, Clone)]
pub struct RecordedSpan {
    /// The trace.
    pub trace_id: TraceId,
    /// The span.
    pub span_id: SpanId,
    /// The parent span, if any.
    pub parent_span_id: Option<SpanId>,
    /// `genkit:name` and the display name.
    pub name: Arc<str>,
    /// `genkit:type`.
    pub span_type: SpanType,
    /// `genkit:metadata:subtype`.
    pub subtype: Option<Arc<str>>,
    /// `genkit:key`.
    pub key: Option<Arc<str>>,
    /// Telemetry labels.
    pub labels: Option<BTreeMap<String, String>>,
    /// Undecorated path of this span (`/{outer,t:flow}/{inner,t:flow}`).
    pub path: Arc<str>,
    /// Start, epoch milliseconds.
    pub start_time: f64,
    /// End, epoch milliseconds.
    pub end_time: Option<f64>,
    /// The input, as JSON text (cut at the size cap).
    pub input: Option<SpanJson>,
    /// The output, as JSON text (cut at the size cap).
    pub output: Option<SpanJson>,
    /// The action context (redacted when exported).
    pub context: Option<ActionContext>,
    /// Other attributes.
    pub attributes: Map<String, Value>,
    /// The failure, if the span ended with an error.
    pub failure: Option<SpanFailure>,
}

impl RecordedSpan {
    /// Whether this is the root of its trace.
    pub fn is_root(&self) -> bool {
        self.parent_span_id.is_none()
    }

    /// `genkit:path` as Genkit reports it: the last segment decorated with
    /// the subtype, except on the root.
    pub fn decorated_path(&self) -> String {
        match (&self.subtype, self.parent_span_id.is_some()) {
            (Some(sub), true) if self.path.ends_with('}') => {
                format!("{},s:{sub}}}", &self.path[..self.path.len() - 1])
            }
            _ => self.path.to_string(),
        }
    }

    /// Whether the input or output was cut at the size cap (the wire
    /// form's `truncated`).
    pub fn is_truncated(&self) -> bool {
        self.input.as_ref().is_some_and(SpanJson::is_truncated)
            || self.output.as_ref().is_some_and(SpanJson::is_truncated)
    }

    /// Roughly the memory this record holds, in bytes: what an export queue
    /// bounded in bytes counts.
    pub fn approx_bytes(&self) -> usize {
        let text = |j: &Option<SpanJson>| j.as_ref().map_or(0, SpanJson::approx_bytes);
        let labels = self.labels.as_ref().map_or(0, |l| {
            l.iter().map(|(k, v)| k.len() + v.len() + 64).sum::<usize>()
        });
        let attributes = self
            .attributes
            .iter()
            .map(|(k, v)| k.len() + approx_value_bytes(v))
            .sum::<usize>();
        let failure = self
            .failure
            .as_ref()
            .map_or(0, |f| f.message.len() + f.stack.len());
        std::mem::size_of::<Self>()
            + self.name.len()
            + self.path.len()
            + text(&self.input)
            + text(&self.output)
            + labels
            + attributes
            + failure
    }

    /// The wire form (`SpanData`) with every `genkit:*` attribute.
    pub fn to_span_data(&self) -> SpanData {
        let mut a = Map::new();
        a.insert("genkit:type".into(), Value::from(self.span_type.as_str()));
        a.insert("genkit:name".into(), Value::from(&*self.name));
        if let Some(sub) = &self.subtype {
            a.insert("genkit:metadata:subtype".into(), Value::from(&**sub));
        }
        if let Some(key) = &self.key {
            a.insert("genkit:key".into(), Value::from(&**key));
        }
        if let Some(labels) = &self.labels {
            for (k, v) in labels {
                a.insert(k.clone(), Value::from(v.clone()));
            }
        }
        if self.is_root() {
            a.insert("genkit:isRoot".into(), Value::Bool(true));
        }
        if let Some(ctx) = &self.context
            && let Some(json) = ctx.redacted_json()
        {
            a.insert("genkit:metadata:context".into(), Value::from(json));
        }
        if let Some(input) = self.input.as_ref().and_then(SpanJson::text) {
            a.insert(
                "genkit:input".into(),
                Value::from(redacted(input).into_owned()),
            );
        }
        if let Some(output) = self.output.as_ref().and_then(SpanJson::text) {
            a.insert(
                "genkit:output".into(),
                Value::from(redacted(output).into_owned()),
            );
        }
        for (k, v) in &self.attributes {
            a.insert(k.clone(), v.clone());
        }
        let mut status = None;
        let mut events = Vec::new();
        if self.end_time.is_some() {
            match &self.failure {
                None => {
                    a.insert("genkit:state".into(), Value::from("success"));
                    status = Some(SpanStatus::default());
                }
                Some(f) => {
                    a.insert("genkit:state".into(), Value::from("error"));
                    if f.is_source {
                        a.insert("genkit:isFailureSource".into(), Value::Bool(true));
                    }
                    status = Some(SpanStatus {
                        code: 2,
                        message: Some(f.message.clone()),
                    });
                    let mut ev = Map::new();
                    ev.insert("exception.type".into(), Value::from(f.status));
                    ev.insert("exception.message".into(), Value::from(f.message.clone()));
                    ev.insert("exception.stacktrace".into(), Value::from(f.stack.clone()));
                    events.push(TimeEvent {
                        time: f.time,
                        annotation: Annotation {
                            attributes: ev,
                            description: "exception".into(),
                        },
                    });
                }
            }
        }
        a.insert("genkit:path".into(), Value::from(self.decorated_path()));
        SpanData {
            span_id: self.span_id.to_string(),
            trace_id: self.trace_id.to_string(),
            parent_span_id: self.parent_span_id.map(|p| p.to_string()),
            start_time: self.start_time,
            end_time: self.end_time.unwrap_or(0.0),
            attributes: a,
            display_name: self.name.to_string(),
            links: Vec::new(),
            instrumentation_library: InstrumentationLibrary::default(),
            span_kind: "INTERNAL".into(),
            same_process_as_parent_span: Some(BoolValue { value: true }),
            status,
            time_events: Some(TimeEvents { time_event: events }),
            truncated: self.is_truncated().then_some(true),
        }
    }
}

/// A rough size of a JSON value in memory.
fn approx_value_bytes(v: &Value) -> usize {
    32 + match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(approx_value_bytes).sum(),
        Value::Object(m) => m.iter().map(|(k, v)| k.len() + approx_value_bytes(v)).sum(),
        _ => 0,
    }
}

/// The wire form (`SpanData` JSON), written straight from the record: no
/// intermediate attribute map or copied strings, which is what exporters
/// serialize for every span. Equal to serializing
/// [`to_span_data`](RecordedSpan::to_span_data).
impl Serialize for RecordedSpan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("SpanData", 14)?;
        st.serialize_field("spanId", &Hex(&self.span_id))?;
        st.serialize_field("traceId", &Hex(&self.trace_id))?;
        match &self.parent_span_id {
            Some(p) => st.serialize_field("parentSpanId", &Hex(p))?,
            None => st.skip_field("parentSpanId")?,
        }
        st.serialize_field("startTime", &self.start_time)?;
        st.serialize_field("endTime", &self.end_time.unwrap_or(0.0))?;
        st.serialize_field("attributes", &WireAttributes(self))?;
        st.serialize_field("displayName", &*self.name)?;
        st.serialize_field("links", &[(); 0])?;
        st.serialize_field("instrumentationLibrary", &InstrumentationLibrary::default())?;
        st.serialize_field("spanKind", "INTERNAL")?;
        st.serialize_field("sameProcessAsParentSpan", &BoolValue { value: true })?;
        if self.end_time.is_some() {
            match &self.failure {
                None => st.serialize_field("status", &SpanStatus::default())?,
                Some(f) => st.serialize_field(
                    "status",
                    &SpanStatus {
                        code: 2,
                        message: Some(f.message.clone()),
                    },
                )?,
            }
        } else {
            st.skip_field("status")?;
        }
        st.serialize_field("timeEvents", &WireEvents(self))?;
        if self.is_truncated() {
            st.serialize_field("truncated", &true)?;
        } else {
            st.skip_field("truncated")?;
        }
        st.end()
    }
}

/// Writes an id as fixed-width lower-case hex, without allocating.
struct Hex<'a, T: HexId>(&'a T);

/// Ids written as hex.
trait HexId {
    /// Calls `f` with the hex digits.
    fn with_hex<R>(&self, f: impl FnOnce(&str) -> R) -> R;
}

impl HexId for TraceId {
    fn with_hex<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(super::ids::hex_str(&self.to_hex()))
    }
}

impl HexId for SpanId {
    fn with_hex<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        f(super::ids::hex_str(&self.to_hex()))
    }
}

impl<T: HexId> Serialize for Hex<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.with_hex(|h| s.serialize_str(h))
    }
}

struct WireAttributes<'a>(&'a RecordedSpan);

impl Serialize for WireAttributes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        // Custom attributes win over built-in ones of the same name (as in
        // `to_span_data`, where they are inserted later).
        let own = |k: &str| !r.attributes.contains_key(k);
        let mut m = s.serialize_map(None)?;
        let entry = |m: &mut S::SerializeMap, k: &str, v: Attr<'_>| -> Result<(), S::Error> {
            if own(k) {
                m.serialize_entry(k, &v)?;
            }
            Ok(())
        };
        entry(&mut m, "genkit:type", Attr::Str(r.span_type.as_str()))?;
        entry(&mut m, "genkit:name", Attr::Str(&r.name))?;
        if let Some(sub) = &r.subtype {
            entry(&mut m, "genkit:metadata:subtype", Attr::Str(sub))?;
        }
        if let Some(key) = &r.key {
            entry(&mut m, "genkit:key", Attr::Str(key))?;
        }
        if let Some(labels) = &r.labels {
            for (k, v) in labels {
                entry(&mut m, k, Attr::Str(v))?;
            }
        }
        if r.is_root() {
            entry(&mut m, "genkit:isRoot", Attr::Bool(true))?;
        }
        if let Some(ctx) = &r.context
            && let Some(json) = ctx.redacted_json()
        {
            entry(&mut m, "genkit:metadata:context", Attr::Str(&json))?;
        }
        if let Some(input) = r.input.as_ref().and_then(SpanJson::text) {
            entry(&mut m, "genkit:input", Attr::Str(&redacted(input)))?;
        }
        if let Some(output) = r.output.as_ref().and_then(SpanJson::text) {
            entry(&mut m, "genkit:output", Attr::Str(&redacted(output)))?;
        }
        if r.end_time.is_some() {
            match &r.failure {
                None => entry(&mut m, "genkit:state", Attr::Str("success"))?,
                Some(f) => {
                    entry(&mut m, "genkit:state", Attr::Str("error"))?;
                    if f.is_source {
                        entry(&mut m, "genkit:isFailureSource", Attr::Bool(true))?;
                    }
                }
            }
        }
        entry(&mut m, "genkit:path", Attr::Str(&r.decorated_path()))?;
        for (k, v) in &r.attributes {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

struct WireEvents<'a>(&'a RecordedSpan);

impl Serialize for WireEvents<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("TimeEvents", 1)?;
        match (&self.0.failure, self.0.end_time) {
            (Some(f), Some(_)) => {
                let mut ev = Map::new();
                ev.insert("exception.type".into(), Value::from(f.status));
                ev.insert("exception.message".into(), Value::from(f.message.clone()));
                ev.insert("exception.stacktrace".into(), Value::from(f.stack.clone()));
                let event = TimeEvent {
                    time: f.time,
                    annotation: Annotation {
                        attributes: ev,
                        description: "exception".into(),
                    },
                };
                st.serialize_field("timeEvent", &[event])?;
            }
            _ => st.serialize_field("timeEvent", &[(); 0])?,
        }
        st.end()
    }
}

/// One trace's spans in wire form (`TraceData` JSON), written straight from
/// the records; what the Genkit telemetry exporter posts. When a span was
/// recorded twice (started, then ended), the later record wins.
pub struct TraceJson<'a> {
    trace_id: TraceId,
    spans: Vec<&'a RecordedSpan>,
}

impl<'a> TraceJson<'a> {
    /// Groups spans by trace, traces in first-seen order.
    pub fn group(spans: impl IntoIterator<Item = &'a RecordedSpan>) -> Vec<TraceJson<'a>> {
        let mut out: Vec<TraceJson<'a>> = Vec::new();
        for span in spans {
            match out.iter_mut().find(|t| t.trace_id == span.trace_id) {
                Some(t) => match t.spans.iter_mut().find(|s| s.span_id == span.span_id) {
                    Some(existing) => *existing = span,
                    None => t.spans.push(span),
                },
                None => out.push(TraceJson {
                    trace_id: span.trace_id,
                    spans: vec![span],
                }),
            }
        }
        out
    }
}

impl TraceJson<'_> {
    /// The trace assembled as [`TraceData`](super::TraceData) (for
    /// inspection; exporters serialize `self` directly).
    pub fn to_trace_data(&self) -> super::TraceData {
        let mut trace = super::TraceData {
            trace_id: self.trace_id.to_string(),
            ..Default::default()
        };
        for span in &self.spans {
            trace.insert_span(span.to_span_data());
        }
        trace
    }
}

impl Serialize for TraceJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let root = self.spans.iter().find(|r| r.is_root());
        let mut st = s.serialize_struct("TraceData", 5)?;
        st.serialize_field("traceId", &Hex(&self.trace_id))?;
        match root {
            Some(r) => {
                st.serialize_field("displayName", &*r.name)?;
                st.serialize_field("startTime", &r.start_time)?;
                st.serialize_field("endTime", &r.end_time.unwrap_or(0.0))?;
            }
            None => {
                st.skip_field("displayName")?;
                st.skip_field("startTime")?;
                st.skip_field("endTime")?;
            }
        }
        st.serialize_field("spans", &SpansById(&self.spans))?;
        st.end()
    }
}

struct SpansById<'a, 'b>(&'b [&'a RecordedSpan]);

impl Serialize for SpansById<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for span in self.0 {
            m.serialize_entry(&Hex(&span.span_id), *span)?;
        }
        m.end()
    }
}

/// A built-in attribute value: text or a flag.
enum Attr<'a> {
    Str(&'a str),
    Bool(bool),
}

impl Serialize for Attr<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Attr::Str(t) => s.serialize_str(t),
            Attr::Bool(b) => s.serialize_bool(*b),
        }
    }
}

/// Keys whose values never leave the process in a trace (a per-request
/// `config.apiKey`, for instance).
const SECRET_KEYS: [&str; 3] = ["apiKey", "api_key", "secrets"];

/// The secret keys as they appear in JSON text, for a quick check.
const QUOTED_SECRET_KEYS: [&str; 3] = ["\"apiKey\"", "\"api_key\"", "\"secrets\""];

/// JSON text `json` with secret fields replaced by `<redacted>`; borrowed
/// (no parsing at all) when none of the secret keys appears in it, which is
/// almost always.
fn redacted(json: &str) -> std::borrow::Cow<'_, str> {
    fn scrub(value: &mut Value) {
        match value {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if SECRET_KEYS.contains(&k.as_str()) {
                        *v = Value::from("<redacted>");
                    } else {
                        scrub(v);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(scrub),
            _ => {}
        }
    }
    let mentions_secret = QUOTED_SECRET_KEYS.iter().any(|k| json.contains(k));
    if !mentions_secret {
        return std::borrow::Cow::Borrowed(json);
    }
    match serde_json::from_str::<Value>(json) {
        Ok(mut v) => {
            scrub(&mut v);
            std::borrow::Cow::Owned(v.to_string())
        }
        // Not JSON after all: keep nothing rather than risk a secret.
        Err(_) => std::borrow::Cow::Borrowed("\"<redacted>\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn span(failure: bool, root: bool) -> RecordedSpan {
        RecordedSpan {
            trace_id: TraceId::random(),
            span_id: SpanId::random(),
            parent_span_id: (!root).then(SpanId::random),
            name: "step".into(),
            span_type: SpanType::Action,
            subtype: Some("tool".into()),
            key: Some("/tool/step".into()),
            labels: Some(
                [("team".to_owned(), "core".to_owned())]
                    .into_iter()
                    .collect(),
            ),
            path: "/{flow,t:flow}/{step,t:action}".into(),
            start_time: 1.5,
            end_time: Some(2.5),
            input: Some(r#"{"config":{"apiKey":"k"}}"#.into()),
            output: Some("\"out\"".into()),
            context: Some(crate::context::ActionContext::from_value(
                json!({"auth": 1, "t": 2}),
            )),
            attributes: Map::from_iter([("custom".to_owned(), json!({"x": 1}))]),
            failure: failure.then(|| SpanFailure {
                status: "NOT_FOUND",
                message: "NOT_FOUND: gone".into(),
                stack: "NOT_FOUND: gone".into(),
                time: 2.0,
                is_source: true,
            }),
        }
    }

    #[test]
    fn direct_wire_form_equals_span_data() {
        for (failure, root) in [(false, false), (true, false), (false, true), (true, true)] {
            let s = span(failure, root);
            let direct = serde_json::to_value(&s).unwrap();
            let built = serde_json::to_value(s.to_span_data()).unwrap();
            assert_eq!(direct, built, "failure={failure} root={root}");
        }
        let mut started = span(false, true);
        started.end_time = None;
        assert_eq!(
            serde_json::to_value(&started).unwrap(),
            serde_json::to_value(started.to_span_data()).unwrap()
        );
    }

    #[test]
    fn a_cut_input_marks_the_span_truncated_in_both_wire_forms() {
        let mut s = span(false, false);
        assert_eq!(serde_json::to_value(&s).unwrap().get("truncated"), None);
        let limit = crate::tracing::max_attribute_bytes();
        s.input = SpanJson::serialize(&"y".repeat(limit * 2));
        assert!(s.is_truncated());
        let direct = serde_json::to_value(&s).unwrap();
        assert_eq!(direct["truncated"], true);
        let input = direct["attributes"]["genkit:input"].as_str().unwrap();
        assert!(input.len() <= limit && input.starts_with("\"yyy"));
        assert_eq!(direct, serde_json::to_value(s.to_span_data()).unwrap());
        assert!(s.approx_bytes() >= limit);
    }

    #[test]
    fn trace_json_equals_assembled_trace_data() {
        let root = span(false, true);
        let mut child = span(true, false);
        child.trace_id = root.trace_id;
        child.parent_span_id = Some(root.span_id);
        let mut started = child.clone();
        started.end_time = None;
        started.failure = None;
        let traces = TraceJson::group([&started, &root, &child]);
        assert_eq!(traces.len(), 1);
        let direct = serde_json::to_value(&traces[0]).unwrap();
        let built = traces[0].to_trace_data();
        assert_eq!(built.spans.len(), 2);
        assert_eq!(built.spans[&child.span_id.to_string()].end_time, 2.5);
        assert_eq!(direct, serde_json::to_value(&built).unwrap());
    }

    #[test]
    fn secrets_are_redacted_in_exported_inputs() {
        let v =
            json!({"messages": [], "config": {"apiKey": "sk-123", "temperature": 1}}).to_string();
        let r: Value = serde_json::from_str(&redacted(&v)).unwrap();
        assert_eq!(r["config"]["apiKey"], "<redacted>");
        assert_eq!(r["config"]["temperature"], 1);
        let plain = json!({"a": [1, {"b": 2}]}).to_string();
        assert!(matches!(redacted(&plain), std::borrow::Cow::Borrowed(_)));
    }
}
