//! What the tool loop's spans record, kept as values for the exporter to
//! encode on its worker instead of JSON-encoding them on the request path.
//!
//! A call's turns all record the conversation so far (each turn's
//! `generate` span its options, each model span its request), and each
//! turn's history is the previous one plus the messages the turn added. So
//! the call keeps one log of its messages, each copied into it once, and a
//! span keeps a view of the log's first messages: recording a turn costs
//! the messages it added, not the whole history again.
//!
//! Each message of the log, and each set of tool definitions, is a
//! [`SharedPiece`]: the exporter encodes it once, when it first writes a
//! span holding it, and every other span that records it copies those
//! bytes. The call's final response, which every turn's span records, is
//! written once too (see [`SpanJson`]), its request's messages and tools
//! copied from the same pieces.
//!
//! Values whose size estimate is over the attribute cap are encoded at once
//! (up to the cap), so a queued span never holds more than about the cap.

use crate::tool::definitions::tool_definitions_piece;
use crate::types::{
    GenerateActionOptions, GenerateRequest, GenerateResponse, Message, Part, PartKind,
    ToolDefinition,
};
use genkit_core::tracing::{SharedPiece, SpanJson, approx_value_bytes, max_attribute_bytes};
use parking_lot::Mutex;
use serde::ser::Impossible;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Rough in-memory size of a JSON value (no further than `stop`).
fn value_bytes(v: Option<&Value>, stop: usize) -> usize {
    v.map_or(0, |v| approx_value_bytes(v, stop))
}

fn map_bytes(m: Option<&crate::types::Metadata>, stop: usize) -> usize {
    m.map_or(0, |m| {
        m.iter()
            .map(|(k, v)| k.len() + approx_value_bytes(v, stop))
            .sum()
    })
}

/// Rough in-memory size of a part.
fn part_bytes(p: &Part, stop: usize) -> usize {
    let kind = match &p.kind {
        PartKind::Text(t) | PartKind::Reasoning(t) => t.len(),
        PartKind::Media(m) => m.url.len() + m.content_type.as_ref().map_or(0, String::len),
        PartKind::ToolRequest(r) => {
            r.name.len()
                + r.reference.as_ref().map_or(0, String::len)
                + value_bytes(r.input.as_ref(), stop)
        }
        PartKind::ToolResponse(r) => {
            r.name.len()
                + r.reference.as_ref().map_or(0, String::len)
                + value_bytes(r.output.as_ref(), stop)
                + r.content
                    .as_ref()
                    .map_or(0, |c| c.iter().map(|p| part_bytes(p, stop)).sum())
        }
        PartKind::Data(v) => approx_value_bytes(v, stop),
        PartKind::Custom(m) => map_bytes(Some(m), stop),
        PartKind::Resource(r) => r.uri.len(),
        PartKind::Placeholder => 0,
    };
    let ext = p.extensions.as_ref().map_or(0, |e| {
        value_bytes(e.data.as_ref(), stop) + map_bytes(e.custom.as_ref(), stop)
    });
    std::mem::size_of::<Part>() + kind + map_bytes(p.metadata.as_ref(), stop) + ext
}

/// Rough in-memory size of a message.
pub fn message_bytes(m: &Message) -> usize {
    let stop = max_attribute_bytes();
    std::mem::size_of::<Message>()
        + m.content.iter().map(|p| part_bytes(p, stop)).sum::<usize>()
        + map_bytes(m.metadata.as_ref(), stop)
}

/// The messages of one call's turns, each copied in once.
pub struct History {
    log: Mutex<Arc<Mutex<Log>>>,
    /// Tells this call's model responses from others'.
    call: u64,
    /// The piece the last model span recorded for its response's message,
    /// if the loop kept that message as it was: the log takes it instead
    /// of a copy (and the final response, if it is that message). With the
    /// address of the message's parts, which the loop moves but never
    /// copies, to know it is that very message.
    offered: Mutex<Option<RecordedMessage>>,
    /// The options (without messages) the last turn recorded: a turn whose
    /// options are the same shares them instead of copying them again (the
    /// tool loop changes only the messages between turns).
    options: Mutex<Option<Arc<GenerateActionOptions>>>,
}

impl Default for History {
    fn default() -> Self {
        static CALLS: AtomicU64 = AtomicU64::new(1);
        Self {
            log: Mutex::default(),
            call: CALLS.fetch_add(1, Ordering::Relaxed),
            offered: Mutex::new(None),
            options: Mutex::new(None),
        }
    }
}

/// A recorded model message: the address of its parts, and its piece.
type RecordedMessage = (usize, SharedPiece<Message>);

/// The recorded piece if it is `m`'s: the same parts and (should they be
/// new ones at the same address) the same content.
fn piece_of(recorded: &RecordedMessage, m: &Message) -> Option<SharedPiece<Message>> {
    let (at, piece) = recorded;
    (parts_address(m) == Some(*at) && **piece == *m).then(|| piece.clone())
}

thread_local! {
    /// The call whose model response is recorded next on this thread, and
    /// that response's message once recorded.
    static MODEL_MESSAGE: RefCell<Option<(u64, Option<RecordedMessage>)>> =
        const { RefCell::new(None) };
}

/// Where a message's parts are: the same for the message however it is
/// moved; `None` when it has none (an empty list has no address).
fn parts_address(m: &Message) -> Option<usize> {
    (!m.content.is_empty()).then_some(m.content.as_ptr() as usize)
}

/// A set of tool definitions as spans record it.
type ToolsPiece = SharedPiece<Arc<[ToolDefinition]>>;

#[derive(Default)]
struct Log {
    messages: Vec<SharedPiece<Message>>,
    /// `bytes[i]`: estimated size of the first `i + 1` messages.
    bytes: Vec<usize>,
}

/// The first `len` messages of a log.
struct HistoryView {
    log: Arc<Mutex<Log>>,
    len: usize,
}

impl Serialize for HistoryView {
    /// The messages, written from the log in place (not copied). The log
    /// belongs to one call, so holding its lock meanwhile can make only that
    /// call wait, for one record's encoding, and only if it is still
    /// running when the exporter gets to its spans.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let log = self.log.lock();
        log.messages[..self.len.min(log.messages.len())].serialize(s)
    }
}

impl History {
    /// The next model response recorded on this thread is this call's: its
    /// message is recorded as a piece the call's log can take.
    pub fn expect_model_message(&self) {
        MODEL_MESSAGE.with(|m| *m.borrow_mut() = Some((self.call, None)));
    }

    /// After the model call: `message` is the response's message as the
    /// loop keeps it. If it is the one the model span recorded (the same
    /// parts, unchanged), the log and the final response take that piece.
    pub fn take_model_message(&self, message: &Message) {
        let recorded = MODEL_MESSAGE.with(|m| match m.borrow_mut().take() {
            Some((call, recorded)) if call == self.call => recorded,
            _ => None,
        });
        *self.offered.lock() = recorded.filter(|r| piece_of(r, message).is_some());
    }

    /// The model call [`expect_model_message`](Self::expect_model_message)
    /// announced ended without a message for the log (it failed): the
    /// expectation is dropped, so a later model call on this thread is not
    /// taken for this call's.
    pub fn forget_model_message(&self) {
        MODEL_MESSAGE.with(|m| {
            let mut m = m.borrow_mut();
            if matches!(&*m, Some((call, _)) if *call == self.call) {
                *m = None;
            }
        });
    }

    /// `options` (whose messages the caller took out) as the last turn
    /// recorded them if they are the same, else a copy, kept for the next.
    fn options_like(&self, options: &GenerateActionOptions) -> Arc<GenerateActionOptions> {
        let mut last = self.options.lock();
        match &*last {
            Some(kept) if **kept == *options => kept.clone(),
            _ => {
                let copy = Arc::new(options.clone());
                *last = Some(copy.clone());
                copy
            }
        }
    }

    /// The offered piece, if it is `message`'s.
    fn offered_for(&self, message: &Message) -> Option<SharedPiece<Message>> {
        piece_of(self.offered.lock().as_ref()?, message)
    }

    /// A view of `messages`, copying into the log those past its end. The
    /// tool loop only appends to its history; if the log is longer than
    /// `messages` or its last message is not the one at that place (the
    /// history was rewritten), a new log is started (views of the old one
    /// keep it). Returns the view and the estimated size of its messages.
    fn view(&self, messages: &[Message]) -> (HistoryView, usize) {
        let mut current = self.log.lock();
        let consistent = {
            let log = current.lock();
            let kept = log.messages.len();
            kept <= messages.len()
                && kept
                    .checked_sub(1)
                    .is_none_or(|i| *log.messages[i] == messages[i])
        };
        if !consistent {
            *current = Arc::default();
        }
        let shared = current.clone();
        let mut log = shared.lock();
        let offered = self.offered.lock().clone();
        for m in &messages[log.messages.len()..] {
            let before = log.bytes.last().copied().unwrap_or(0);
            log.bytes.push(before + message_bytes(m));
            // The model span's piece of this very message, else a new one.
            let piece = offered
                .as_ref()
                .and_then(|r| piece_of(r, m))
                .unwrap_or_else(|| SharedPiece::new(m.clone()));
            log.messages.push(piece);
        }
        let bytes = messages
            .len()
            .checked_sub(1)
            .and_then(|i| log.bytes.get(i).copied())
            .unwrap_or(0);
        drop(log);
        (
            HistoryView {
                log: shared,
                len: messages.len(),
            },
            bytes,
        )
    }
}

/// A turn's options (without messages) and its history, written as the
/// options they are.
struct OptionsRecord {
    options: Arc<GenerateActionOptions>,
    history: HistoryView,
}

impl Serialize for OptionsRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        GenerateActionOptions::serialize(
            &self.options,
            WithFields {
                inner: s,
                fields: Fields {
                    messages: Some(&self.history),
                    ..Fields::default()
                },
            },
        )
    }
}

/// A model request (without messages) and its history, written as the
/// request it is.
struct RequestRecord {
    request: GenerateRequest,
    history: HistoryView,
    tools: Option<ToolsPiece>,
}

impl Serialize for RequestRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RequestWith {
            request: &self.request,
            history: &self.history,
            tools: self.tools.as_ref(),
        }
        .serialize(s)
    }
}

/// A request written with its messages from a history view and its tool
/// definitions from a piece.
struct RequestWith<'a> {
    request: &'a GenerateRequest,
    history: &'a HistoryView,
    tools: Option<&'a ToolsPiece>,
}

impl Serialize for RequestWith<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.request.serialize(WithFields {
            inner: s,
            fields: Fields {
                messages: Some(self.history),
                tools: self.tools,
                ..Fields::default()
            },
        })
    }
}

/// A model response, its message written from a piece (when `message` is
/// set, `response` holds an empty stand-in for it) and, for a call's final
/// response, its request's messages from the call's history and its tools
/// from their piece.
struct ResponseRecord {
    response: GenerateResponse,
    message: Option<SharedPiece<Message>>,
    history: Option<HistoryView>,
    tools: Option<ToolsPiece>,
}

impl Serialize for ResponseRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let request = match (self.response.request.as_deref(), &self.history) {
            (Some(request), Some(history)) => Some(RequestWith {
                request,
                history,
                tools: self.tools.as_ref(),
            }),
            _ => None,
        };
        self.response.serialize(WithFields {
            inner: s,
            fields: Fields {
                request: request.as_ref(),
                message: self.message.as_ref(),
                ..Fields::default()
            },
        })
    }
}

/// `r` with an empty stand-in for its message (written from a piece).
fn without_message(r: &GenerateResponse, message: &Message) -> GenerateResponse {
    GenerateResponse {
        message: Some(Message {
            role: message.role,
            content: Vec::new(),
            metadata: None,
        }),
        finish_reason: r.finish_reason,
        finish_message: r.finish_message.clone(),
        latency_ms: r.latency_ms,
        usage: r.usage.clone(),
        custom: r.custom.clone(),
        raw: r.raw.clone(),
        request: r.request.clone(),
        operation: r.operation.clone(),
        candidates: r.candidates.clone(),
    }
}

/// What a turn record writes in place of fields of the struct it wraps
/// (`messages` and `tools` of options and requests, `request` and
/// `message` of a response).
#[derive(Clone, Copy, Default)]
struct Fields<'a> {
    messages: Option<&'a HistoryView>,
    tools: Option<&'a ToolsPiece>,
    request: Option<&'a RequestWith<'a>>,
    message: Option<&'a SharedPiece<Message>>,
}

/// A serializer for a struct (the options or request of a turn, a
/// response) that writes [`Fields`] in place of those fields' values and
/// the rest as it is: the record is written without copying the history
/// into it. Anything but a struct is refused (never the case).
struct WithFields<'a, S> {
    inner: S,
    fields: Fields<'a>,
}

/// The struct being written by [`WithFields`].
struct WithFieldsStruct<'a, T> {
    inner: T,
    fields: Fields<'a>,
}

impl<T: serde::ser::SerializeStruct> serde::ser::SerializeStruct for WithFieldsStruct<'_, T> {
    type Ok = T::Ok;
    type Error = T::Error;

    fn serialize_field<V: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), Self::Error> {
        let f = self.fields;
        match key {
            "messages" if f.messages.is_some() => self.inner.serialize_field(key, &f.messages),
            "tools" if f.tools.is_some() => self.inner.serialize_field(key, &f.tools),
            "request" if f.request.is_some() => self.inner.serialize_field(key, &f.request),
            "message" if f.message.is_some() => self.inner.serialize_field(key, &f.message),
            _ => self.inner.serialize_field(key, value),
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), Self::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<Self::Ok, Self::Error> {
        self.inner.end()
    }
}

/// The methods of [`WithFields`] for anything but a struct: errors.
macro_rules! not_a_struct {
    ($($name:ident($($arg:ty),*);)*) => {
        $(
            fn $name(self, $(_: $arg),*) -> Result<Self::Ok, Self::Error> {
                Err(serde::ser::Error::custom("a turn record is a struct"))
            }
        )*
    };
}

impl<'a, S: Serializer> Serializer for WithFields<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Impossible<S::Ok, S::Error>;
    type SerializeTuple = Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = Impossible<S::Ok, S::Error>;
    type SerializeMap = Impossible<S::Ok, S::Error>;
    type SerializeStruct = WithFieldsStruct<'a, S::SerializeStruct>;
    type SerializeStructVariant = Impossible<S::Ok, S::Error>;

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        Ok(WithFieldsStruct {
            inner: self.inner.serialize_struct(name, len)?,
            fields: self.fields,
        })
    }

    not_a_struct! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_char(char);
        serialize_str(&str);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
        serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<Self::Ok, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(serde::ser::Error::custom("a turn record is a struct"))
    }
}

/// Options with something that is not simply appended to between turns
/// (documents the loop may merge into the messages, a resume) are encoded
/// at once, as any other value.
fn plain_history(raw: &GenerateActionOptions) -> bool {
    raw.docs.is_none() && raw.resume.is_none()
}

/// `genkit:input` of a turn's `generate` span.
pub fn record_options(raw: &mut GenerateActionOptions, history: &History) -> Option<SpanJson> {
    if !plain_history(raw) {
        return SpanJson::serialize(raw);
    }
    let stop = max_attribute_bytes();
    let messages = std::mem::take(&mut raw.messages);
    let options = history.options_like(raw);
    raw.messages = messages;
    let (view, history_bytes) = history.view(&raw.messages);
    let approx = history_bytes
        + value_bytes(options.config.as_ref(), stop)
        + value_bytes(
            options.output.as_ref().and_then(|o| o.json_schema.as_ref()),
            stop,
        )
        + 256;
    if approx > stop {
        return SpanJson::serialize(raw);
    }
    Some(SpanJson::defer(
        OptionsRecord {
            options,
            history: view,
        },
        approx,
    ))
}

/// `genkit:input` of a model span: `request` holds the messages of `raw`.
pub fn record_request(
    raw: &GenerateActionOptions,
    request: &GenerateRequest,
    history: &History,
) -> Option<SpanJson> {
    if !plain_history(raw) || request.docs.is_some() || request.candidates.is_some() {
        return SpanJson::serialize(request);
    }
    let stop = max_attribute_bytes();
    let (view, history_bytes) = history.view(&request.messages);
    // The tool definitions are shared with every request for the same tools.
    let approx = history_bytes
        + value_bytes(request.config.as_ref(), stop)
        + value_bytes(
            request.output.as_ref().and_then(|o| o.schema.as_ref()),
            stop,
        )
        + 256;
    if approx > stop {
        return SpanJson::serialize(request);
    }
    let tools = request.tools.as_ref().and_then(tool_definitions_piece);
    let request = GenerateRequest {
        messages: Arc::default(),
        ..request.clone()
    };
    Some(SpanJson::defer(
        RequestRecord {
            request,
            history: view,
            tools,
        },
        approx,
    ))
}

/// A response as a span output: a copy encoded later when small, encoded
/// now (up to the cap) otherwise.
pub fn record_response(r: &GenerateResponse) -> Option<SpanJson> {
    if r.operation.is_some() || r.candidates.is_some() {
        return SpanJson::serialize(r);
    }
    let approx = response_bytes(r);
    if approx > max_attribute_bytes() {
        return SpanJson::serialize(r);
    }
    Some(SpanJson::defer(r.clone(), approx))
}

/// Rough in-memory size of a response.
fn response_bytes(r: &GenerateResponse) -> usize {
    let stop = max_attribute_bytes();
    let request = r.request.as_ref().map_or(0, |q| {
        q.messages.iter().map(message_bytes).sum::<usize>()
            + value_bytes(q.config.as_ref(), stop)
            + q.docs.as_ref().map_or(0, |_| stop + 1)
            + value_bytes(q.output.as_ref().and_then(|o| o.schema.as_ref()), stop)
    });
    r.message.as_ref().map_or(0, message_bytes)
        + request
        + r.finish_message.as_ref().map_or(0, String::len)
        + value_bytes(r.custom.as_ref(), stop)
        + value_bytes(r.raw.as_ref(), stop)
        + 256
}

/// A model span's output. When a tool loop expects this response
/// ([`History::expect_model_message`]), its message is recorded as a piece
/// the loop's log then takes instead of copying the message again.
pub fn record_model_response(r: &GenerateResponse) -> Option<SpanJson> {
    let expected = MODEL_MESSAGE.with(|m| matches!(&*m.borrow(), Some((_, None))));
    let message = r.message.as_ref().filter(|_| expected);
    let approx = response_bytes(r);
    // Left to `record_response`: responses it encodes at once, and those
    // with no message to share.
    let plain = r.operation.is_some() || r.candidates.is_some() || approx > max_attribute_bytes();
    let (Some(message), Some(at), false) = (message, message.and_then(parts_address), plain) else {
        return record_response(r);
    };
    let piece = SharedPiece::new(message.clone());
    MODEL_MESSAGE.with(|m| {
        if let Some((_, slot)) = &mut *m.borrow_mut() {
            *slot = Some((at, piece.clone()));
        }
    });
    Some(SpanJson::defer(
        ResponseRecord {
            response: without_message(r, message),
            message: Some(piece),
            history: None,
            tools: None,
        },
        approx,
    ))
}

/// The call's final response, as every turn's span records it: written
/// once for all of them, its request's messages from the call's history
/// (which the turns' records share) and its tools from their piece.
pub fn record_final_response(r: &GenerateResponse, history: &History) -> Option<SpanJson> {
    let Some(request) = r.request.as_deref() else {
        return record_response(r);
    };
    if r.operation.is_some()
        || r.candidates.is_some()
        || request.docs.is_some()
        || request.candidates.is_some()
    {
        return record_response(r);
    }
    let stop = max_attribute_bytes();
    let (view, history_bytes) = history.view(&request.messages);
    let approx = r.message.as_ref().map_or(0, message_bytes)
        + history_bytes
        + value_bytes(request.config.as_ref(), stop)
        + value_bytes(
            request.output.as_ref().and_then(|o| o.schema.as_ref()),
            stop,
        )
        + r.finish_message.as_ref().map_or(0, String::len)
        + value_bytes(r.custom.as_ref(), stop)
        + value_bytes(r.raw.as_ref(), stop)
        + 256;
    if approx > stop {
        return SpanJson::serialize(r);
    }
    let tools = request.tools.as_ref().and_then(tool_definitions_piece);
    // The last model span's piece, if this is its message.
    let message = r
        .message
        .as_ref()
        .and_then(|m| Some((m, history.offered_for(m)?)));
    let (response, message) = match message {
        Some((m, piece)) => (without_message(r, m), Some(piece)),
        None => (r.clone(), None),
    };
    Some(SpanJson::defer(
        ResponseRecord {
            response,
            message,
            history: Some(view),
            tools,
        },
        approx,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Role, ToolRequest};
    use serde_json::json;

    fn turn_messages(n: usize) -> Vec<Message> {
        let mut m = vec![Message::user("go")];
        for t in 0..n {
            m.push(Message::model(vec![Part::tool_request(
                ToolRequest::new("toolA", json!({"x": t})).with_ref(format!("a{t}")),
            )]));
            m.push(Message::new(Role::Tool, vec![Part::text(format!("r{t}"))]));
        }
        m
    }

    #[test]
    fn recorded_turns_encode_as_the_options_and_requests_they_were() {
        let history = History::default();
        let mut recorded = Vec::new();
        let mut kept = Vec::new();
        for n in 0..4 {
            let mut raw = GenerateActionOptions::new(turn_messages(n))
                .with_model("m")
                .with_tools(["toolA"]);
            // The same options for two turns, then other ones.
            raw.config = Some(json!({"temperature": n / 2}));
            let opts = record_options(&mut raw, &history).unwrap();
            assert!(opts.is_deferred());
            kept.push(history.options.lock().clone().map(|o| Arc::as_ptr(&o)));
            let request = GenerateRequest {
                config: raw.config.clone(),
                ..GenerateRequest::new(raw.messages.clone())
            };
            let req = record_request(&raw, &request, &history).unwrap();
            assert!(req.is_deferred());
            recorded.push((opts, serde_json::to_string(&raw).unwrap()));
            recorded.push((req, serde_json::to_string(&request).unwrap()));
        }
        // Turns with the same options share one copy; changed ones get theirs.
        assert!(kept[0].is_some());
        assert_eq!(kept[0], kept[1]);
        assert_ne!(kept[1], kept[2]);
        assert_eq!(kept[2], kept[3]);
        // A rewritten history starts the log over.
        let mut other = GenerateActionOptions::new(vec![Message::user("other")]);
        let o = record_options(&mut other, &history).unwrap();
        recorded.push((o, serde_json::to_string(&other).unwrap()));
        for (span_json, expected) in &recorded {
            assert_eq!(span_json.as_str(), expected);
            assert!(!span_json.is_truncated());
        }
        let response =
            GenerateResponse::new(Message::model("done"), crate::types::FinishReason::Stop);
        let r = record_response(&response).unwrap();
        assert_eq!(r.as_str(), serde_json::to_string(&response).unwrap());
    }

    #[test]
    fn large_turns_are_encoded_at_once_up_to_the_cap() {
        let history = History::default();
        let big = "z".repeat(max_attribute_bytes() * 2);
        let mut raw = GenerateActionOptions::new(vec![Message::user(big.as_str())]);
        let opts = record_options(&mut raw, &history).unwrap();
        assert!(!opts.is_deferred());
        assert!(opts.is_truncated());
        let response = GenerateResponse::new(
            Message::model(big.as_str()),
            crate::types::FinishReason::Stop,
        );
        let r = record_response(&response).unwrap();
        assert!(!r.is_deferred() && r.is_truncated());
    }

    /// A span's input and output.
    type SpanRecords = (Option<SpanJson>, Option<SpanJson>);

    /// A call's records as its spans would hold them: each turn's options,
    /// model request and model response (the loop's history moved from turn
    /// to turn, as the engine moves it), and the final response every turn
    /// records. With the call's history.
    fn call_records(defs: &Arc<[ToolDefinition]>) -> (Vec<SpanRecords>, History) {
        let history = History::default();
        let mut out = Vec::new();
        let mut messages = vec![Message::user("go")];
        let mut last = None;
        let mut final_message = None;
        for n in 0..4 {
            let mut raw = GenerateActionOptions::new(std::mem::take(&mut messages))
                .with_model("m")
                .with_tools(["toolA"]);
            // A secret in one turn's config: that turn's records are
            // redacted as text.
            raw.config = Some(if n == 2 {
                json!({"apiKey": "sk-1", "t": n})
            } else {
                json!({"t": n, "q": "\"é\n"})
            });
            let opts = record_options(&mut raw, &history);
            let request = GenerateRequest {
                config: raw.config.clone(),
                tools: Some(defs.clone()),
                ..GenerateRequest::new(raw.messages.clone())
            };
            let req = record_request(&raw, &request, &history);
            // The model answers; its span records the response, whose
            // message the loop then keeps.
            let content = if n < 3 {
                vec![Part::tool_request(
                    ToolRequest::new("toolA", json!({"x": n, "s": "\u{1}"}))
                        .with_ref(format!("a{n}")),
                )]
            } else {
                vec![Part::text("done \"é\"")]
            };
            let mut response =
                GenerateResponse::new(Message::model(content), crate::types::FinishReason::Stop);
            history.expect_model_message();
            let model_output = record_model_response(&response);
            let message = response.message.take().unwrap();
            history.take_model_message(&message);
            out.push((opts, None));
            out.push((req, model_output));
            last = Some(request);
            if n < 3 {
                messages = std::mem::take(&mut raw.messages);
                messages.push(message);
                messages.push(Message::new(Role::Tool, vec![Part::text(format!("r{n}"))]));
            } else {
                final_message = Some(message);
            }
        }
        let response = GenerateResponse {
            message: final_message,
            request: last.map(Box::new),
            ..GenerateResponse::new(Message::model("unused"), crate::types::FinishReason::Stop)
        };
        let fin = record_final_response(&response, &history).unwrap();
        assert!(fin.is_deferred());
        for (_, output) in out.iter_mut().step_by(2) {
            *output = Some(fin.clone());
        }
        (out, history)
    }

    #[test]
    fn spans_write_the_shared_pieces_as_their_serde_form() {
        use genkit_core::tracing::{RecordedSpan, SpanId, SpanType, TraceId};
        let tool =
            crate::tool::Tool::new("toolA", "tool A", |x: i64, _ctx| async move { Ok(x) }).to_dyn();
        let defs = crate::tool::definitions::tool_definitions(std::slice::from_ref(&tool));
        let trace = TraceId::random();
        let ids: Vec<SpanId> = (0..8).map(|_| SpanId::random()).collect();
        let spans = |records: Vec<SpanRecords>| -> Vec<RecordedSpan> {
            records
                .into_iter()
                .zip(&ids)
                .map(|((input, output), id)| RecordedSpan {
                    trace_id: trace,
                    span_id: *id,
                    parent_span_id: Some(ids[0]),
                    name: "generate".into(),
                    span_type: SpanType::Util,
                    subtype: None,
                    key: None,
                    labels: None,
                    path: "/{generate,t:util}".into(),
                    start_time: 1.0,
                    end_time: Some(2.0),
                    input,
                    output,
                    context: None,
                    attributes: Default::default(),
                    failure: None,
                })
                .collect()
        };
        // Written twice by the exporter (pieces encoded by the first
        // write, copied by the second), and once through serde (the text).
        let (records, history) = call_records(&defs);
        let exported = spans(records);
        let expected = spans(call_records(&defs).0);
        // The first model span's message is the log's: written with that
        // span, it is encoded for the turns after it too.
        exported[1].write_json(&mut Vec::new());
        let log = history.log.lock().clone();
        assert!(log.lock().messages[1].is_encoded());
        assert!(!log.lock().messages[2].is_encoded());
        for round in 0..2 {
            for (e, s) in expected.iter().zip(&exported) {
                let mut buf = Vec::new();
                s.write_json(&mut buf);
                assert_eq!(
                    String::from_utf8_lossy(&buf),
                    String::from_utf8_lossy(&serde_json::to_vec(e).unwrap()),
                    "round {round}"
                );
            }
        }
        let wire = serde_json::to_value(&expected[4]).unwrap();
        let input = wire["attributes"]["genkit:input"].as_str().unwrap();
        assert!(input.contains("<redacted>") && !input.contains("sk-1"));
        let output = wire["attributes"]["genkit:output"].as_str().unwrap();
        let back: GenerateResponse = serde_json::from_str(output).unwrap();
        let request = back.request.unwrap();
        assert_eq!(request.messages.len(), 7);
        assert_eq!(request.tools.unwrap()[0].name, "toolA");
    }

    #[test]
    fn a_failed_model_call_forgets_only_its_own_expectation() {
        let expected = || MODEL_MESSAGE.with(|m| m.borrow().as_ref().map(|(call, _)| *call));
        let (ours, other) = (History::default(), History::default());
        ours.expect_model_message();
        // Another call's failure leaves this call's expectation.
        other.forget_model_message();
        assert_eq!(expected(), Some(ours.call));
        ours.forget_model_message();
        assert_eq!(expected(), None);
        // With nothing expected, a model response records no piece.
        let response = GenerateResponse {
            message: Some(Message::model(vec![Part::text("hi")])),
            ..GenerateResponse::default()
        };
        assert!(record_model_response(&response).is_some());
        assert_eq!(expected(), None);
    }
}
