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

use genkit_core::{Error, Result, StatusCode};
use serde::Serialize;

use super::runtime::AgentOptions;
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

impl SessionLimits {
    /// Checks a turn's input against the per-message cap, and the session
    /// it is about to join (`state`, before the input's message is added)
    /// against the session caps.
    pub(crate) fn check_input(&self, input: &AgentInput, state: &SessionState) -> Result<()> {
        let mut input_bytes = 0;
        if let Some(message) = &input.message {
            input_bytes = self.check_one("message", message)?;
        }
        if let Some(resume) = &input.resume {
            input_bytes += self.check_one("resume", resume)?;
        }
        let added = usize::from(input.message.is_some());
        self.check_state(state, added, input_bytes)
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
    /// session caps.
    pub(crate) fn check_state(
        &self,
        state: &SessionState,
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
        if added_bytes > self.session_bytes || json_bytes_within(state, room).is_none() {
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
        let state = SessionState::default();
        let small = AgentInput::message(Message::user("hi"));
        limits.check_input(&small, &state).unwrap();
        let big = AgentInput::message(Message::user("x".repeat(100)));
        let err = limits.check_input(&big, &state).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert_eq!(
            err.message(),
            "agent input `message` is larger than the cap of 60 bytes per message (raise it with AgentOptions::max_message_bytes)"
        );
        let mut two = SessionState::default();
        two.set_messages(vec![Message::user("a"), Message::model("b")]);
        let err = limits.check_input(&small, &two).unwrap_err();
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        assert!(
            err.message()
                .starts_with("the session would hold 3 messages, past its cap of 2")
        );
        let mut large = SessionState::default();
        large.set_messages(vec![Message::user("y".repeat(190))]);
        let err = limits.check_state(&large, 0, 0).unwrap_err();
        assert!(err.message().contains("cap of 200 bytes"));
    }
}
