//! The session handle a turn works on: its messages, typed custom state and
//! artifacts, with changes streamed to the caller as Genkit JS streams them
//! (custom state as JSON Patch, artifacts as `artifact` chunks).

use std::sync::{Arc, Weak};

use genkit_core::action::ActionCtx;
use genkit_core::{CancellationToken, Registry, Result};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::json_patch::{JsonPatchOperation, diff};
use super::transform::ClientTransform;
use super::types::{AgentStreamChunk, Artifact, SessionState};
use genkit_model::middleware::{ArtifactContent, ConversationArtifacts};
use genkit_model::types::Message;

/// The session of a running agent turn (Genkit's `SessionRunner` view):
/// read and change its messages, custom state and artifacts, and stream
/// chunks to the caller. Cheap to clone; clones share the session.
///
/// Tools and flows called during a turn reach it from their context:
/// `ctx.extension::<AgentSession>()`.
#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Shared>,
}

struct Shared {
    live: Mutex<Live>,
    registry: Option<Registry>,
    aborted: CancellationToken,
    /// What the client sees of chunks and of the custom state.
    transform: Option<ClientTransform>,
}

struct Live {
    /// The state, but for `added`. Its history is shared with the snapshot
    /// it came from (and the store), so it is not changed in place.
    state: SessionState,
    /// Messages added since `state`'s history was last set: appending them
    /// to a shared history would copy all of it, and a prompt turn replaces
    /// the whole history with the model's anyway. Merged into `state` when
    /// a whole state is read.
    added: Vec<Message>,
    /// The history the session started from (or was last restored to), and
    /// how many of its leading messages `state`'s history still holds
    /// unchanged: what the caps check measured of it need not be measured
    /// again (see [`HistoryOrigin`]).
    origin: HistoryOrigin,
    /// Where chunks go; `None` once the turn is detached (nobody listens).
    sink: Option<ActionCtx<AgentStreamChunk>>,
    /// The custom state as last streamed in this turn (as the client sees
    /// it); `None` until the turn's first patch (which replaces the whole
    /// document).
    streamed_custom: Option<Value>,
}

/// The history a session's current history starts with: its first
/// `unchanged` messages are those `history` (of `len` messages) held when
/// the session started from it. A [`Weak`]: while it exists, `history`'s
/// allocation is neither reused nor changed in place, and a session whose
/// history is not shared still appends to it without copying it.
#[derive(Clone, Default)]
pub(crate) struct HistoryOrigin {
    pub(crate) history: Weak<Vec<Message>>,
    pub(crate) len: usize,
    pub(crate) unchanged: usize,
}

impl HistoryOrigin {
    /// The origin a session starting from `state` has: all of its history.
    pub(crate) fn of(state: &SessionState) -> Self {
        let len = state.messages().len();
        Self {
            history: state
                .messages
                .as_ref()
                .map(Arc::downgrade)
                .unwrap_or_default(),
            len,
            unchanged: len,
        }
    }
}

impl Live {
    /// Appends the added messages to the state's history (copying it if
    /// it is shared).
    fn merge_added(&mut self) {
        if !self.added.is_empty() {
            let added = std::mem::take(&mut self.added);
            self.state.messages_mut().extend(added);
        }
    }
}

impl std::fmt::Debug for AgentSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentSession")
            .field("session_id", &self.session_id())
            .finish()
    }
}

impl AgentSession {
    #[cfg(test)]
    pub(crate) fn new(
        state: SessionState,
        sink: Option<ActionCtx<AgentStreamChunk>>,
        registry: Option<Registry>,
    ) -> Self {
        Self::with_transform(state, sink, registry, None)
    }

    /// A session whose chunks and streamed custom state go through the
    /// agent's client transform.
    pub(crate) fn with_transform(
        state: SessionState,
        sink: Option<ActionCtx<AgentStreamChunk>>,
        registry: Option<Registry>,
        transform: Option<ClientTransform>,
    ) -> Self {
        Self {
            inner: Arc::new(Shared {
                live: Mutex::new(Live {
                    origin: HistoryOrigin::of(&state),
                    state,
                    added: Vec::new(),
                    sink,
                    streamed_custom: None,
                }),
                registry,
                aborted: CancellationToken::new(),
                transform,
            }),
        }
    }

    /// The session id.
    pub fn session_id(&self) -> String {
        self.inner
            .live
            .lock()
            .state
            .session_id
            .clone()
            .unwrap_or_default()
    }

    /// The registry the agent runs in (for `generate` and friends).
    pub fn registry(&self) -> Option<&Registry> {
        self.inner.registry.as_ref()
    }

    /// A copy of the whole state (sharing its history).
    pub fn state(&self) -> SessionState {
        let mut live = self.inner.live.lock();
        live.merge_added();
        live.state.clone()
    }

    /// The conversation so far.
    pub fn messages(&self) -> Vec<Message> {
        let live = self.inner.live.lock();
        let history = live.state.messages();
        let mut messages = Vec::with_capacity(history.len() + live.added.len());
        messages.extend_from_slice(history);
        messages.extend_from_slice(&live.added);
        messages
    }

    /// Appends a copy of the conversation to `out` (one allocation at
    /// most, where [`messages`](Self::messages) and a move into a longer
    /// list would take two).
    pub(crate) fn copy_messages_into(&self, out: &mut Vec<Message>) {
        let live = self.inner.live.lock();
        out.reserve(live.state.messages().len() + live.added.len());
        out.extend_from_slice(live.state.messages());
        out.extend_from_slice(&live.added);
    }

    /// The last message of the conversation.
    #[cfg(test)]
    pub(crate) fn last_message(&self) -> Option<Message> {
        let live = self.inner.live.lock();
        live.added
            .last()
            .or_else(|| live.state.messages().last())
            .cloned()
    }

    /// Appends messages to the conversation.
    pub fn add_messages(&self, messages: impl IntoIterator<Item = Message>) {
        let mut live = self.inner.live.lock();
        live.added.extend(messages);
        if live.state.messages.is_none() {
            // As when appending to an absent history: it exists from now on.
            live.state.messages = Some(Arc::default());
        }
    }

    /// Keeps the first `keep` messages of the conversation and replaces the
    /// rest with `messages` (a turn's last message as the turn left it, then
    /// what it appended; see `genkit_generate::take_history_from`).
    pub fn replace_messages_from(&self, keep: usize, messages: impl IntoIterator<Item = Message>) {
        let mut live = self.inner.live.lock();
        live.merge_added();
        live.origin.unchanged = live.origin.unchanged.min(keep);
        let history = live.state.messages_mut();
        history.truncate(keep);
        history.extend(messages);
    }

    /// Takes `messages[skip..]` as the conversation if its first `keep`
    /// messages equal the conversation's first `keep` (and it has more):
    /// then the session holds what a call built on its history, rather
    /// than a copy of its history with the call's tail appended (the same
    /// messages, one copy of the history fewer). Otherwise nothing changes
    /// and `messages` is handed back.
    pub(crate) fn adopt_messages(
        &self,
        keep: usize,
        skip: usize,
        mut messages: Vec<Message>,
    ) -> Option<Vec<Message>> {
        let mut live = self.inner.live.lock();
        let history = live.state.messages();
        let ours = history.iter().chain(&live.added);
        let same = history.len() + live.added.len() >= keep
            && messages.len() > skip + keep
            && messages[skip..skip + keep].iter().eq(ours.take(keep));
        if !same {
            return Some(messages);
        }
        messages.drain(..skip);
        live.added.clear();
        // Equal messages: as unchanged as the originals were.
        live.origin.unchanged = live.origin.unchanged.min(keep);
        live.state.set_messages(messages);
        None
    }

    /// Replaces the conversation.
    pub fn set_messages(&self, messages: Vec<Message>) {
        let mut live = self.inner.live.lock();
        live.added.clear();
        live.origin.unchanged = 0;
        live.state.set_messages(messages);
    }

    /// The custom state as JSON, if set.
    pub fn custom(&self) -> Option<Value> {
        self.inner.live.lock().state.custom.clone()
    }

    /// The custom state read as `T` (`INVALID_ARGUMENT` if it does not fit).
    pub fn custom_as<T: DeserializeOwned>(&self) -> Result<Option<T>> {
        self.inner.live.lock().state.custom_as()
    }

    /// Replaces the custom state and streams the change as a `customPatch`
    /// chunk: the turn's first patch replaces the root, later ones are
    /// diffs from what was last streamed (none when nothing changed).
    pub fn set_custom<T: Serialize>(&self, custom: &T) -> Result<()> {
        let value = serde_json::to_value(custom)?;
        let transform = self.inner.transform.as_ref().filter(|t| t.rewrites_state());
        let whole = {
            let mut live = self.inner.live.lock();
            live.state.custom = Some(value.clone());
            if live.sink.is_none() {
                return Ok(());
            }
            transform.map(|_| {
                live.merge_added();
                live.state.clone()
            })
        };
        // The client sees the custom state of the transformed state; the
        // transform (user code) runs outside the lock.
        let shown = match (transform, whole) {
            (Some(t), Some(state)) => t.client_state(state).custom.unwrap_or(Value::Null),
            _ => value,
        };
        let patch = {
            let mut live = self.inner.live.lock();
            let patch = match &live.streamed_custom {
                None => vec![JsonPatchOperation::Replace {
                    path: String::new(),
                    value: shown.clone(),
                }],
                Some(previous) => diff(previous, &shown),
            };
            live.streamed_custom = Some(shown);
            patch
        };
        if !patch.is_empty() {
            self.send_chunk(AgentStreamChunk::custom_patch(patch));
        }
        Ok(())
    }

    /// Updates the custom state from its current value (`None` when unset).
    pub fn update_custom<T, F>(&self, update: F) -> Result<()>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce(Option<T>) -> T,
    {
        let current = self.custom_as::<T>()?;
        self.set_custom(&update(current))
    }

    /// The session of the agent turn the running code belongs to: a turn
    /// puts its session in the context of the model calls, tools,
    /// middleware and flows it runs (`ai.currentSession()` in Genkit JS).
    /// `None` outside an agent turn.
    pub fn current() -> Option<Self> {
        genkit_core::tracing::current_extensions()
            .get::<Self>()
            .cloned()
    }

    /// The artifacts so far.
    pub fn artifacts(&self) -> Vec<Artifact> {
        self.inner.live.lock().state.artifacts().to_vec()
    }

    /// Adds an artifact, replacing the one of the same name, and streams it
    /// as an `artifact` chunk.
    pub fn add_artifact(&self, artifact: Artifact) {
        {
            let mut live = self.inner.live.lock();
            let artifacts = live.state.artifacts.get_or_insert_with(Vec::new);
            let same = artifact
                .name
                .as_ref()
                .and_then(|n| artifacts.iter().position(|a| a.name.as_ref() == Some(n)));
            match same {
                Some(i) => {
                    if let Some(slot) = artifacts.get_mut(i) {
                        *slot = artifact.clone();
                    }
                }
                None => artifacts.push(artifact.clone()),
            }
        }
        self.send_chunk(AgentStreamChunk::artifact(artifact));
    }

    /// Streams a chunk to the caller, as the agent's client transform shows
    /// it (dropped once the turn is detached).
    pub fn send_chunk(&self, chunk: AgentStreamChunk) {
        let sink = self.inner.live.lock().sink.clone();
        let Some(sink) = sink else {
            return;
        };
        let chunk = match &self.inner.transform {
            Some(t) => t.client_chunk(chunk),
            None => Some(chunk),
        };
        if let Some(chunk) = chunk {
            sink.send_chunk(chunk);
        }
    }

    /// Whether the turn was aborted (through the agent's abort action).
    pub fn is_aborted(&self) -> bool {
        self.inner.aborted.is_cancelled()
    }

    /// Resolves once the turn is aborted.
    pub async fn aborted(&self) {
        self.inner.aborted.cancelled().await
    }

    pub(crate) fn abort_token(&self) -> CancellationToken {
        self.inner.aborted.clone()
    }

    pub(crate) fn begin_turn(&self) {
        self.inner.live.lock().streamed_custom = None;
    }

    pub(crate) fn detach_stream(&self) {
        self.inner.live.lock().sink = None;
    }

    pub(crate) fn restore(&self, state: SessionState) {
        let mut live = self.inner.live.lock();
        live.added.clear();
        live.origin = HistoryOrigin::of(&state);
        live.state = state;
    }

    /// A copy of the whole state (as [`state`](Self::state)), and the
    /// history it starts with unchanged.
    pub(crate) fn state_and_origin(&self) -> (SessionState, HistoryOrigin) {
        let mut live = self.inner.live.lock();
        live.merge_added();
        (live.state.clone(), live.origin.clone())
    }
}

/// Middleware keeps what belongs to the conversation (a history policy's
/// summaries) as the session's artifacts, stored with its snapshots.
impl ConversationArtifacts for AgentSession {
    fn artifact(&self, name: &str) -> Option<ArtifactContent> {
        self.artifacts()
            .into_iter()
            .find(|a| a.name.as_deref() == Some(name))
            .map(|a| ArtifactContent {
                parts: a.parts,
                metadata: a.metadata,
            })
    }

    fn put_artifact(&self, name: &str, content: ArtifactContent) {
        let mut artifact = Artifact::new(name, content.parts);
        artifact.metadata = content.metadata;
        self.add_artifact(artifact);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(messages: &[Message]) -> Vec<String> {
        messages.iter().map(Message::text).collect()
    }

    #[test]
    fn added_messages_leave_the_shared_history_alone() {
        let shared = Arc::new(vec![Message::user("a"), Message::model("b")]);
        let state = SessionState {
            messages: Some(shared.clone()),
            ..SessionState::default()
        };
        let session = AgentSession::new(state, None, None);
        session.add_messages([Message::user("c")]);
        assert_eq!(texts(&session.messages()), ["a", "b", "c"]);
        assert_eq!(
            session.last_message().map(|m| m.text()).as_deref(),
            Some("c")
        );
        // The history the session started from (the stored snapshot's) is
        // not changed; the whole state has the added message.
        assert_eq!(texts(&shared), ["a", "b"]);
        let whole = session.state();
        assert_eq!(texts(whole.messages()), ["a", "b", "c"]);
        assert_eq!(texts(&session.messages()), ["a", "b", "c"]);

        session.add_messages([Message::model("d")]);
        session.set_messages(vec![Message::user("x")]);
        assert_eq!(texts(&session.messages()), ["x"]);
        session.add_messages([Message::model("y")]);
        session.restore(whole);
        assert_eq!(texts(&session.messages()), ["a", "b", "c"]);
    }

    #[test]
    fn adding_to_an_absent_history_creates_it() {
        let session = AgentSession::new(SessionState::default(), None, None);
        assert_eq!(session.state().messages, None);
        session.add_messages([Message::user("a")]);
        assert_eq!(texts(session.state().messages()), ["a"]);
    }
}
