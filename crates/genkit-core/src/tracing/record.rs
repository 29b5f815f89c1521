//! What a span records while processors are installed, kept compact: JSON
//! encoding and the attribute map are built only when a processor asks for
//! the wire form ([`RecordedSpan::to_span_data`]), off the request path.

use super::data::{
    Annotation, BoolValue, InstrumentationLibrary, SpanData, SpanStatus, TimeEvent, TimeEvents,
};
use super::ids::{SpanId, TraceId};
use super::span::SpanType;
use crate::context::ActionContext;
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
    /// The input, as JSON text.
    pub input: Option<String>,
    /// The output, as JSON text.
    pub output: Option<String>,
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
        if let Some(input) = &self.input {
            a.insert(
                "genkit:input".into(),
                Value::from(redacted(input).into_owned()),
            );
        }
        if let Some(output) = &self.output {
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
        }
    }
}

/// Keys whose values never leave the process in a trace (a per-request
/// `config.apiKey`, for instance).
const SECRET_KEYS: [&str; 3] = ["apiKey", "api_key", "secrets"];

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
    let mentions_secret = SECRET_KEYS
        .iter()
        .any(|k| json.contains(&format!("\"{k}\"")));
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
