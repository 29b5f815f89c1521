//! Bounds on what a session holds: how many messages, how many bytes of
//! state, and how large one client message may be.
//!
//! Without them a client grows a session without end (and every turn sends
//! the whole history to the model, and every snapshot stores it). The
//! defaults are generous for a person chatting (a thousand messages, 8 MiB of
//! state, 256 KiB per message: a long document pasted in fits) and can be
//! raised per agent ([`AgentOptions::max_session_messages`],
//! [`AgentOptions::max_session_bytes`], [`AgentOptions::max_message_bytes`]).
//!
//! A turn that would exceed a cap is refused before anything is appended
//! (the client's message) or, when the turn itself grew the session past a
//! cap, fails with the session left as it was before the turn; either way
//! the session goes on, and a smaller turn works.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use genkit_core::{Error, Result, StatusCode};
use genkit_model::types::Message;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;

use super::runtime::AgentOptions;
use super::session::HistoryOrigin;
use super::types::{AgentInput, SessionState};

/// The default of [`AgentOptions::max_session_messages`].
pub const DEFAULT_MAX_SESSION_MESSAGES: usize = 1_000;
/// The default of [`AgentOptions::max_session_bytes`] (8 MiB).
pub const DEFAULT_MAX_SESSION_BYTES: usize = 8 * 1024 * 1024;
/// The default of [`AgentOptions::max_message_bytes`] (256 KiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// An agent's caps (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionLimits {
    messages: usize,
    session_bytes: usize,
    message_bytes: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            messages: DEFAULT_MAX_SESSION_MESSAGES,
            session_bytes: DEFAULT_MAX_SESSION_BYTES,
            message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
        }
    }
}

impl AgentOptions {
    /// The most messages a session's history may hold (default 1,000). A
    /// turn that would pass it fails with `RESOURCE_EXHAUSTED`, the session
    /// unchanged.
    pub fn max_session_messages(mut self, max: usize) -> Self {
        self.limits.messages = max;
        self
    }

    /// The most bytes a session's state may take as JSON (default 8 MiB). A
    /// turn that would pass it fails with `RESOURCE_EXHAUSTED`, the session
    /// unchanged.
    pub fn max_session_bytes(mut self, max: usize) -> Self {
        self.limits.session_bytes = max;
        self
    }

    /// The most bytes (as JSON) of one input's `message`, and of its
    /// `resume` (default 256 KiB); larger ones are refused with
    /// `INVALID_ARGUMENT`.
    pub fn max_message_bytes(mut self, max: usize) -> Self {
        self.limits.message_bytes = max;
        self
    }
}

/// Counts the bytes written, failing once past `limit` (so a value far over
/// a cap is not serialized whole).
struct Counter {
    written: usize,
    limit: usize,
}

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len();
        if self.written > self.limit {
            return Err(std::io::Error::other("over the cap"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The JSON size of `value`, or `None` when it is over `limit`.
fn json_bytes_within<T: Serialize + ?Sized>(value: &T, limit: usize) -> Option<usize> {
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.written)
}

/// The JSON sizes of histories already measured, by the (shared) history
/// itself, so a session's history is measured once rather than at every
/// turn: the snapshot a run resumes shares the history the previous run
/// measured, and a turn that appends to it is measured by what it appended.
///
/// An entry holds a [`Weak`] of the history: while it does, the allocation
/// cannot be reused for another history, and its messages cannot change
/// (`Arc::make_mut` and `Arc::get_mut` never change a value in place while
/// a `Weak` of it exists), so a live entry's size stays right. Bounded: the
/// oldest entries make way (a history not found is measured again).
#[derive(Default)]
pub(crate) struct HistorySizes {
    seen: Mutex<VecDeque<(Weak<Vec<Message>>, usize)>>,
}

/// How many measured histories an agent remembers (about one per session
/// turning at once).
const REMEMBERED_HISTORIES: usize = 256;

/// Histories shorter than this are measured rather than looked up: that
/// costs less than a search of the remembered ones.
const REMEMBERED_FROM_LEN: usize = 8;

impl HistorySizes {
    /// The size measured of the history at `history` (newest entries
    /// first: a session's next turn finds what its last one measured).
    fn get(&self, history: *const Vec<Message>) -> Option<usize> {
        let seen = self.seen.lock();
        seen.iter()
            .find(|(weak, _)| std::ptr::eq(weak.as_ptr(), history))
            .map(|(_, bytes)| *bytes)
    }

    fn put(&self, history: &Arc<Vec<Message>>, bytes: usize) {
        let mut seen = self.seen.lock();
        if seen.len() >= REMEMBERED_HISTORIES {
            seen.pop_back();
        }
        seen.push_front((Arc::downgrade(history), bytes));
    }
}

/// A session state's fields but its history, serialized as the state
/// serializes them (`tests::state_size_is_its_json_size` keeps the two in
/// step).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StateSansHistory<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    custom: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    artifacts: Option<&'a Vec<crate::types::Artifact>>,
}

/// `"messages":` and the comma before it (or after it).
const HISTORY_KEY_BYTES: usize = "\"messages\":".len();

impl SessionLimits {
    /// Checks a turn's input against the per-message cap, and the session
    /// it is about to join (`state`, before the input's message is added)
    /// against the session caps.
    pub(crate) fn check_input(
        &self,
        input: &AgentInput,
        state: &SessionState,
        sizes: &HistorySizes,
    ) -> Result<()> {
        let mut input_bytes = 0;
        if let Some(message) = &input.message {
            input_bytes = self.check_one("message", message)?;
        }
        if let Some(resume) = &input.resume {
            input_bytes += self.check_one("resume", resume)?;
        }
        let added = usize::from(input.message.is_some());
        self.check_state(state, &HistoryOrigin::default(), sizes, added, input_bytes)
    }

    fn check_one<T: Serialize>(&self, field: &str, value: &T) -> Result<usize> {
        json_bytes_within(value, self.message_bytes).ok_or_else(|| {
            Error::user_facing(
                StatusCode::InvalidArgument,
                format!(
                    "agent input `{field}` is larger than the cap of {} bytes per message (raise it with AgentOptions::max_message_bytes)",
                    self.message_bytes
                ),
            )
        })
    }

    /// Checks `state` plus `added` messages of `added_bytes` against the
    /// session caps. `origin` says which leading messages of its history
    /// are those of a history measured before (see [`HistorySizes`]).
    pub(crate) fn check_state(
        &self,
        state: &SessionState,
        origin: &HistoryOrigin,
        sizes: &HistorySizes,
        added: usize,
        added_bytes: usize,
    ) -> Result<()> {
        let messages = state.messages().len().saturating_add(added);
        if messages > self.messages {
            return Err(Error::user_facing(
                StatusCode::ResourceExhausted,
                format!(
                    "the session would hold {messages} messages, past its cap of {} (raise it with AgentOptions::max_session_messages, or start a new session)",
                    self.messages
                ),
            ));
        }
        let room = self.session_bytes.saturating_sub(added_bytes);
        if added_bytes > self.session_bytes
            || state_bytes_within(state, origin, sizes, room).is_none()
        {
            return Err(Error::user_facing(
                StatusCode::ResourceExhausted,
                format!(
                    "the session's state would be larger than its cap of {} bytes (raise it with AgentOptions::max_session_bytes, or start a new session)",
                    self.session_bytes
                ),
            ));
        }
        Ok(())
    }
}

/// The JSON size of `state`, or `None` when it is over `limit`: its
/// history measured by what is known of it (see [`HistorySizes`]), the
/// rest serialized.
fn state_bytes_within(
    state: &SessionState,
    origin: &HistoryOrigin,
    sizes: &HistorySizes,
    limit: usize,
) -> Option<usize> {
    let rest = StateSansHistory {
        session_id: state.session_id.as_ref(),
        custom: state.custom.as_ref(),
        artifacts: state.artifacts.as_ref(),
    };
    let rest_bytes = json_bytes_within(&rest, limit)?;
    let Some(history) = &state.messages else {
        return Some(rest_bytes);
    };
    // `{}` has no field to put a comma after.
    let comma = usize::from(rest_bytes > 2);
    let fixed = rest_bytes + HISTORY_KEY_BYTES + comma;
    let history_bytes = history_bytes_within(history, origin, sizes, limit.checked_sub(fixed)?)?;
    Some(fixed + history_bytes)
}

/// The JSON size of a history (an array of messages), or `None` when it
/// is over `limit`. Remembered in `sizes` when measured.
fn history_bytes_within(
    history: &Arc<Vec<Message>>,
    origin: &HistoryOrigin,
    sizes: &HistorySizes,
    limit: usize,
) -> Option<usize> {
    let remembered = history.len() >= REMEMBERED_FROM_LEN;
    // The messages measured before (as an array: `[`, them, the commas
    // between them and `]`), if the history starts with a whole measured
    // one. (An entry found for the origin measured it as the session
    // started from it: the origin's `Weak` kept it from changing since.)
    // A history grown from its origin in this run is not looked up: its
    // origin was measured, not it.
    let grown = origin.len >= REMEMBERED_FROM_LEN
        && origin.unchanged == origin.len
        && origin.len <= history.len()
        && !std::ptr::eq(origin.history.as_ptr(), Arc::as_ptr(history));
    let known = grown
        .then(|| sizes.get(origin.history.as_ptr()))
        .flatten()
        .map(|bytes| (origin.len, bytes));
    if known.is_none()
        && remembered
        && let Some(bytes) = sizes.get(Arc::as_ptr(history))
    {
        return (bytes <= limit).then_some(bytes);
    }
    let (from, mut bytes) = known.unwrap_or((0, 2));
    for (i, message) in history.iter().enumerate().skip(from) {
        // A comma before every message but the first.
        bytes += usize::from(i > 0);
        bytes += json_bytes_within(message, limit.checked_sub(bytes)?)?;
    }
    if bytes > limit {
        return None;
    }
    if remembered {
        sizes.put(history, bytes);
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::Message;

    #[test]
    fn caps_count_messages_and_bytes() {
        let limits = SessionLimits {
            messages: 2,
            session_bytes: 200,
            message_bytes: 60,
        };
        let sizes = HistorySizes::default();
        let state = SessionState::default();
        let small = AgentInput::message(Message::user("hi"));
        limits.check_input(&small, &state, &sizes).unwrap();
        let big = AgentInput::message(Message::user("x".repeat(100)));
        let err = limits.check_input(&big, &state, &sizes).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert_eq!(
            err.message(),
            "agent input `message` is larger than the cap of 60 bytes per message (raise it with AgentOptions::max_message_bytes)"
        );
        let mut two = SessionState::default();
        two.set_messages(vec![Message::user("a"), Message::model("b")]);
        let err = limits.check_input(&small, &two, &sizes).unwrap_err();
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        assert!(
            err.message()
                .starts_with("the session would hold 3 messages, past its cap of 2")
        );
        let mut large = SessionState::default();
        large.set_messages(vec![Message::user("y".repeat(190))]);
        let err = limits
            .check_state(&large, &HistoryOrigin::default(), &sizes, 0, 0)
            .unwrap_err();
        assert!(err.message().contains("cap of 200 bytes"));
    }

    fn exact(state: &SessionState) -> usize {
        serde_json::to_vec(state).unwrap().len()
    }

    fn measured(state: &SessionState, origin: &HistoryOrigin, sizes: &HistorySizes) -> usize {
        state_bytes_within(state, origin, sizes, usize::MAX).unwrap()
    }

    #[test]
    fn state_size_is_its_json_size() {
        let mut states = Vec::new();
        for session_id in [None, Some("s-1".to_owned())] {
            for messages in [
                None,
                Some(vec![]),
                Some(vec![Message::user("a \"quoted\" é")]),
                Some(vec![Message::user("a"), Message::model("b\n")]),
                Some(
                    (0..REMEMBERED_FROM_LEN + 2)
                        .map(|i| Message::user(format!("m{i}")))
                        .collect(),
                ),
            ] {
                for custom in [None, Some(serde_json::json!({"k": [1, "x"]}))] {
                    for artifacts in [None, Some(vec![])] {
                        states.push(SessionState {
                            session_id: session_id.clone(),
                            messages: messages.clone().map(Arc::new),
                            custom: custom.clone(),
                            artifacts,
                        });
                    }
                }
            }
        }
        for state in &states {
            // Measured afresh, then found measured.
            let sizes = HistorySizes::default();
            let none = HistoryOrigin::default();
            assert_eq!(measured(state, &none, &sizes), exact(state), "{state:?}");
            assert_eq!(measured(state, &none, &sizes), exact(state), "{state:?}");
            let exact = exact(state);
            assert_eq!(state_bytes_within(state, &none, &sizes, exact), Some(exact));
            assert_eq!(state_bytes_within(state, &none, &sizes, exact - 1), None);
        }
    }

    #[test]
    fn an_appended_history_is_measured_by_what_was_appended() {
        let sizes = HistorySizes::default();
        let start = SessionState {
            session_id: Some("s".to_owned()),
            messages: Some(Arc::new(
                (0..REMEMBERED_FROM_LEN)
                    .map(|i| Message::user(format!("m{i}")))
                    .collect(),
            )),
            ..SessionState::default()
        };
        let none = HistoryOrigin::default();
        assert_eq!(measured(&start, &none, &sizes), exact(&start));
        let origin = HistoryOrigin::of(&start);
        let mut grown = start.clone();
        grown
            .messages_mut()
            .extend([Message::user("c"), Message::model("d")]);
        assert_eq!(measured(&grown, &origin, &sizes), exact(&grown));
        let grown_history = grown
            .messages
            .as_ref()
            .map_or(std::ptr::null(), Arc::as_ptr);
        assert_eq!(
            sizes.get(grown_history),
            Some(exact(&grown) - 2 - 11 - 1 - 15)
        );
        // A history whose origin changed is measured whole.
        let mut changed = start.clone();
        changed.messages_mut()[0] = Message::user("a longer message");
        let partly = HistoryOrigin {
            unchanged: 0,
            ..origin.clone()
        };
        assert_eq!(
            measured(&changed, &partly, &HistorySizes::default()),
            exact(&changed)
        );
        // An origin that was not measured: measured whole.
        let mut other = grown.clone();
        other.messages_mut().push(Message::user("e"));
        assert_eq!(
            measured(&other, &origin, &HistorySizes::default()),
            exact(&other)
        );
    }
}
