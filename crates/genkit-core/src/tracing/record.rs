//! What a span records while processors are installed, kept compact: JSON
//! encoding and the attribute map are built only when a processor asks for
//! the wire form ([`RecordedSpan::to_span_data`]), off the request path.

use super::data::{
    Annotation, BoolValue, InstrumentationLibrary, SpanData, SpanStatus, TimeEvent, TimeEvents,
};
use super::ids::{SpanId, TraceId};
use super::json::{SpanJson, escape_into, write_escaped_str};
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

impl RecordedSpan {
    /// Appends the wire form (`SpanData` JSON) to `buf`: the same bytes as
    /// serializing `self` with serde_json, written straight into the buffer.
    /// An input or output still waiting to be encoded is encoded directly as
    /// the attribute's JSON string (escaped as it is written), without
    /// building its text first.
    pub fn write_json(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(b"{\"spanId\":");
        write_hex(buf, &self.span_id.to_hex());
        buf.extend_from_slice(b",\"traceId\":");
        write_hex(buf, &self.trace_id.to_hex());
        if let Some(p) = &self.parent_span_id {
            buf.extend_from_slice(b",\"parentSpanId\":");
            write_hex(buf, &p.to_hex());
        }
        buf.extend_from_slice(b",\"startTime\":");
        write_f64(buf, self.start_time);
        buf.extend_from_slice(b",\"endTime\":");
        write_f64(buf, self.end_time.unwrap_or(0.0));
        buf.extend_from_slice(b",\"attributes\":");
        let truncated = self.write_attributes(buf);
        buf.extend_from_slice(b",\"displayName\":");
        write_escaped_str(buf, &self.name);
        // `links`, `instrumentationLibrary` (its default), `spanKind` and
        // `sameProcessAsParentSpan` are the same on every span.
        buf.extend_from_slice(
            b",\"links\":[],\"instrumentationLibrary\":{\"name\":\"genkit-tracer\",\"version\":\"v1\"},\
              \"spanKind\":\"INTERNAL\",\"sameProcessAsParentSpan\":{\"value\":true}",
        );
        if self.end_time.is_some() {
            match &self.failure {
                None => buf.extend_from_slice(b",\"status\":{\"code\":0}"),
                Some(f) => {
                    buf.extend_from_slice(b",\"status\":{\"code\":2,\"message\":");
                    write_escaped_str(buf, &f.message);
                    buf.push(b'}');
                }
            }
        }
        buf.extend_from_slice(b",\"timeEvents\":");
        match (&self.failure, self.end_time) {
            // Rare: written by the serde form.
            (Some(_), Some(_)) => {
                let _ = serde_json::to_writer(&mut *buf, &WireEvents(self));
            }
            _ => buf.extend_from_slice(b"{\"timeEvent\":[]}"),
        }
        if truncated {
            buf.extend_from_slice(b",\"truncated\":true");
        }
        buf.push(b'}');
    }

    /// Writes the attributes object as [`WireAttributes`] serializes it;
    /// returns whether the input or output was cut at the size cap.
    fn write_attributes(&self, buf: &mut Vec<u8>) -> bool {
        let custom = &self.attributes;
        // Custom attributes win over built-in ones of the same name.
        let own = |k: &str| custom.is_empty() || !custom.contains_key(k);
        let mut o = ObjectWriter { buf, first: true };
        let str_entry = |o: &mut ObjectWriter<'_>, k: &str, v: &str| {
            if own(k) {
                o.key(k);
                write_escaped_str(o.buf, v);
            }
        };
        str_entry(&mut o, "genkit:type", self.span_type.as_str());
        str_entry(&mut o, "genkit:name", &self.name);
        if let Some(sub) = &self.subtype {
            str_entry(&mut o, "genkit:metadata:subtype", sub);
        }
        if let Some(k) = &self.key {
            str_entry(&mut o, "genkit:key", k);
        }
        if let Some(labels) = &self.labels {
            for (k, v) in labels {
                str_entry(&mut o, k, v);
            }
        }
        if self.is_root() && own("genkit:isRoot") {
            o.key("genkit:isRoot");
            o.buf.extend_from_slice(b"true");
        }
        if let Some(ctx) = &self.context
            && let Some(json) = ctx.redacted_json()
        {
            str_entry(&mut o, "genkit:metadata:context", &json);
        }
        let mut truncated = false;
        for (k, value) in [
            ("genkit:input", &self.input),
            ("genkit:output", &self.output),
        ] {
            let Some(value) = value else { continue };
            if !own(k) {
                // Not written, but it still marks the span.
                truncated |= value.is_truncated();
                continue;
            }
            let mark = (o.buf.len(), o.first);
            o.key(k);
            match value.write_json_string(o.buf, mentions_escaped_secret, redacted) {
                Some(cut) => truncated |= cut,
                // No text: no attribute.
                None => {
                    o.buf.truncate(mark.0);
                    o.first = mark.1;
                }
            }
        }
        if self.end_time.is_some() {
            match &self.failure {
                None => str_entry(&mut o, "genkit:state", "success"),
                Some(f) => {
                    str_entry(&mut o, "genkit:state", "error");
                    if f.is_source && own("genkit:isFailureSource") {
                        o.key("genkit:isFailureSource");
                        o.buf.extend_from_slice(b"true");
                    }
                }
            }
        }
        if own("genkit:path") {
            o.key("genkit:path");
            // The decorated path, written without building it.
            match (&self.subtype, self.parent_span_id.is_some()) {
                (Some(sub), true) if self.path.ends_with('}') => {
                    o.buf.push(b'"');
                    escape_into(o.buf, &self.path.as_bytes()[..self.path.len() - 1]);
                    o.buf.extend_from_slice(b",s:");
                    escape_into(o.buf, sub.as_bytes());
                    o.buf.extend_from_slice(b"}\"");
                }
                _ => write_escaped_str(o.buf, &self.path),
            }
        }
        for (k, v) in custom {
            o.key(k);
            let _ = serde_json::to_writer(&mut *o.buf, v);
        }
        if o.first {
            o.buf.push(b'{');
        }
        o.buf.push(b'}');
        truncated
    }
}

/// Writes a JSON object's entries: `{` before the first, `,` between.
struct ObjectWriter<'a> {
    buf: &'a mut Vec<u8>,
    first: bool,
}

impl ObjectWriter<'_> {
    fn key(&mut self, k: &str) {
        self.buf.push(if self.first { b'{' } else { b',' });
        self.first = false;
        write_escaped_str(self.buf, k);
        self.buf.push(b':');
    }
}

fn write_hex(buf: &mut Vec<u8>, digits: &[u8]) {
    buf.push(b'"');
    buf.extend_from_slice(digits);
    buf.push(b'"');
}

/// A number as serde_json writes an `f64` (`null` when not finite).
fn write_f64(buf: &mut Vec<u8>, v: f64) {
    let _ = serde_json::to_writer(&mut *buf, &v);
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

impl TraceJson<'_> {
    /// Appends the trace's JSON to `buf`: the same bytes as serializing
    /// `self` with serde_json, written as [`RecordedSpan::write_json`] does.
    pub fn write_json(&self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(b"{\"traceId\":");
        write_hex(buf, &self.trace_id.to_hex());
        if let Some(r) = self.spans.iter().find(|r| r.is_root()) {
            buf.extend_from_slice(b",\"displayName\":");
            write_escaped_str(buf, &r.name);
            buf.extend_from_slice(b",\"startTime\":");
            write_f64(buf, r.start_time);
            buf.extend_from_slice(b",\"endTime\":");
            write_f64(buf, r.end_time.unwrap_or(0.0));
        }
        buf.extend_from_slice(b",\"spans\":{");
        for (i, span) in self.spans.iter().enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            write_hex(buf, &span.span_id.to_hex());
            buf.push(b':');
            span.write_json(buf);
        }
        buf.extend_from_slice(b"}}");
    }

    /// The trace's JSON (see [`write_json`](Self::write_json)).
    pub fn to_json_vec(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        self.write_json(&mut buf);
        buf
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

/// Whether escaped JSON text (the contents of a JSON string holding JSON)
/// mentions a secret key, as [`redacted`] checks raw text. A quote in such
/// text is always escaped (`\"`), and a `\"` there always stands for a
/// quote (a backslash is escaped too), so the escaped text holds
/// `\"apiKey\"` exactly when the raw text holds `"apiKey"`.
fn mentions_escaped_secret(escaped: &[u8]) -> bool {
    const ESCAPED_SECRET_KEYS: [&[u8]; 3] =
        [b"\\\"apiKey\\\"", b"\\\"api_key\\\"", b"\\\"secrets\\\""];
    // Shorter than the shortest key (the bytes between two copied pieces
    // are often a comma): nothing to find.
    let shortest = ESCAPED_SECRET_KEYS[0].len();
    if escaped.len() < shortest {
        return false;
    }
    // One pass over the bytes (the keys are ASCII, so a match of bytes is a
    // match of text): every key starts with `\"` and then `a` or `s`.
    let mut rest = escaped;
    while rest.len() >= shortest {
        let Some(i) = rest.iter().position(|&b| b == b'\\') else {
            return false;
        };
        rest = &rest[i..];
        if rest.len() < shortest {
            return false;
        }
        if rest[1] == b'"'
            && matches!(rest[2], b'a' | b's')
            && ESCAPED_SECRET_KEYS.iter().any(|k| rest.starts_with(k))
        {
            return true;
        }
        rest = &rest[1..];
    }
    false
}

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

    /// Case `i` of the spans the direct writer is checked on, built afresh
    /// each time (a deferred value is encoded only once, so the serde form
    /// and the direct writer each get their own).
    fn rich_span(i: usize) -> Option<RecordedSpan> {
        use std::collections::HashMap;
        let limit = crate::tracing::max_attribute_bytes();
        let tricky = json!({
            "q": "a\"b\\c\n\t\r\u{8}\u{c}\u{1}\u{1f}\u{7f}é😀/",
            "n": [1, 2.5, -0.0, 1e300, -7, u64::MAX],
            "t": true,
            "z": null,
            "nested": {"k\"ey": [{}, []]}
        });
        let mut s = span(false, false);
        match i {
            // Text, with a secret to redact.
            0 => {}
            // Deferred through serde and as JSON values, with escapes.
            1 => {
                s.input = Some(SpanJson::defer(tricky.clone(), 10));
                s.output = Some(SpanJson::defer_value(tricky));
            }
            // Deferred, mentioning secret keys: redacted as text is.
            2 => {
                s.input = Some(SpanJson::defer(
                    json!({"config": {"apiKey": "sk-1", "t": 1}, "m": "x"}),
                    10,
                ));
                s.output = Some(SpanJson::defer_cloned(&json!({"secrets": {"a": 1}})));
            }
            // A secret key's name inside a string, or as a value.
            3 => {
                s.input = Some(SpanJson::defer(json!({"note": "the \"apiKey\" field"}), 10));
                s.output = Some(SpanJson::defer(json!({"name": "api_key", "x": 1.5}), 10));
            }
            // Deferred values longer than the cap, cut inside a character.
            4 => {
                s.input = Some(SpanJson::defer("é".repeat(limit), 10));
                s.output = Some(SpanJson::defer(format!("xy{}", "😀".repeat(limit / 4)), 10));
            }
            // A JSON value whose text outgrows the cap (control characters
            // are six bytes each), and a cut secret: not JSON, so redacted
            // whole.
            5 => {
                s.input = Some(SpanJson::defer_value(Value::from(
                    "\u{1}".repeat(limit / 5),
                )));
                s.output = Some(SpanJson::defer(
                    json!({"apiKey": "k", "pad": "é".repeat(limit)}),
                    10,
                ));
            }
            // Cannot be encoded: no attribute.
            6 => {
                let bad: HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
                s.input = Some(SpanJson::defer(bad, 10));
                s.output = Some(SpanJson::defer(json!(["ok"]), 10));
            }
            // Custom attributes over built-in ones; a cut input not written
            // still marks the span; labels over built-ins too.
            7 => {
                s.input = Some(SpanJson::defer("y".repeat(limit * 2), 10));
                s.output = None;
                s.attributes = Map::from_iter([
                    ("genkit:input".to_owned(), json!("custom")),
                    ("genkit:path".to_owned(), json!(["p"])),
                    ("genkit:state".to_owned(), json!(1)),
                ]);
                s.labels = Some(
                    [
                        ("genkit:name".to_owned(), "label".to_owned()),
                        ("a\"b".to_owned(), "\u{0}".to_owned()),
                    ]
                    .into_iter()
                    .collect(),
                );
            }
            // A bare started root: nothing optional.
            8 => {
                s = span(false, true);
                s.subtype = None;
                s.key = None;
                s.labels = None;
                s.input = None;
                s.output = None;
                s.context = None;
                s.attributes = Map::new();
                s.end_time = None;
                s.name = "n\"ame\u{2}".into();
            }
            // Failed, with an already encoded deferred value.
            9 => {
                s = span(true, false);
                let out = SpanJson::defer(tricky, 10);
                assert!(out.text().is_some());
                s.output = Some(out);
                s.start_time = f64::NAN;
                s.path = "/{a,t:flow}".into();
            }
            // Root with a subtype (no decoration), path without a brace.
            10 => {
                s = span(false, true);
                s.path = "odd\\path".into();
                s.input = Some(SpanJson::defer(json!({"k": "v"}), 10));
            }
            _ => return None,
        }
        Some(s)
    }

    #[test]
    fn the_direct_writer_writes_what_serde_writes() {
        for i in 0.. {
            let (Some(old), Some(mut new)) = (rich_span(i), rich_span(i)) else {
                break;
            };
            (new.trace_id, new.span_id) = (old.trace_id, old.span_id);
            new.parent_span_id = old.parent_span_id;
            let expected = serde_json::to_vec(&old).unwrap();
            // Into a buffer holding something already, as a batch's is.
            let mut buf = b"[prefix]".to_vec();
            new.write_json(&mut buf);
            assert_eq!(
                String::from_utf8_lossy(&buf[8..]),
                String::from_utf8_lossy(&expected),
                "case {i}"
            );
            // Valid JSON, and equal to the `SpanData` form (except where
            // custom attributes named `genkit:state` and `genkit:path` win
            // in the serde form and lose in `to_span_data`, case 7).
            let parsed: Value = serde_json::from_slice(&buf[8..]).unwrap();
            if i != 7 {
                let built = serde_json::to_value(new.to_span_data()).unwrap();
                assert_eq!(parsed, built, "case {i}");
            }
        }
    }

    #[test]
    fn the_direct_trace_writer_writes_what_serde_writes() {
        let build = || {
            let mut root = rich_span(8).unwrap();
            root.end_time = Some(9.0);
            let mut all = vec![root.clone()];
            for i in 0..8 {
                let mut s = rich_span(i).unwrap();
                s.trace_id = root.trace_id;
                s.span_id = SpanId::random();
                all.push(s);
            }
            // Another trace, and a span recorded started and then ended.
            let other = rich_span(1).unwrap();
            let mut started = other.clone();
            started.end_time = None;
            all.insert(2, started);
            all.push(other);
            all
        };
        let old = build();
        // The same spans again, with fresh deferred values.
        let mut new = build();
        for (o, n) in old.iter().zip(new.iter_mut()) {
            n.trace_id = o.trace_id;
            n.span_id = o.span_id;
            n.parent_span_id = o.parent_span_id;
        }
        let old_traces = TraceJson::group(&old);
        let new_traces = TraceJson::group(&new);
        assert_eq!(old_traces.len(), 2);
        for (o, n) in old_traces.iter().zip(&new_traces) {
            let expected = serde_json::to_vec(o).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&n.to_json_vec()),
                String::from_utf8_lossy(&expected)
            );
        }
    }

    #[test]
    fn the_escaped_secret_check_finds_what_the_text_check_finds() {
        let mut cases = Vec::new();
        for k in ["apiKey", "api_key", "secrets"] {
            let cut = &k[..k.len() - 1];
            cases.extend([
                format!("\"{k}\""),
                format!("{{\"{k}\":1}}"),
                format!("[\"x\\\"{k}\"]"),
                format!("{{\"{k}x\":1}}"),
                format!("\"{cut}\""),
                format!("\\\"{k}\""),
                format!("\\\\\"{k}\\\""),
                format!("\"{k}"),
                format!("{k}\""),
                format!("\"\u{e9}{k}\""),
            ]);
        }
        cases.push("\\\\\\\"\"\"aaaa".into());
        for case in cases {
            for pad in 0..12 {
                let raw = format!(
                    "{}{case}{}",
                    "\\".repeat(pad % 3) + &"x".repeat(pad),
                    "y".repeat(pad)
                );
                let mut escaped = Vec::new();
                escape_into(&mut escaped, raw.as_bytes());
                let in_text = QUOTED_SECRET_KEYS.iter().any(|k| raw.contains(k));
                assert_eq!(mentions_escaped_secret(&escaped), in_text, "{raw}");
            }
        }
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
