//! What clients see of an agent's sessions (Genkit's `clientTransform`):
//! the state in outputs, snapshots read back and `customPatch` chunks, and
//! every stream chunk, can be rewritten (e.g. secrets redacted) while the
//! store keeps the real state the turns work on.

use std::sync::Arc;

use super::types::{AgentStreamChunk, SessionState};

type StateFn = dyn Fn(SessionState) -> SessionState + Send + Sync;
type ChunkFn = dyn Fn(AgentStreamChunk) -> Option<AgentStreamChunk> + Send + Sync;

/// Rewrites what an agent sends to its clients. Without a function for a
/// part, that part is sent unchanged.
///
/// ```
/// use genkit_agent::ClientTransform;
///
/// let transform = ClientTransform::new()
///     .state(|mut state| {
///         if let Some(custom) = state.custom.as_mut().and_then(|c| c.as_object_mut()) {
///             custom.remove("secret");
///         }
///         state
///     })
///     .chunk(|chunk| chunk.artifact.is_none().then_some(chunk));
/// # let _ = transform;
/// ```
#[derive(Clone, Default)]
pub struct ClientTransform {
    state: Option<Arc<StateFn>>,
    chunk: Option<Arc<ChunkFn>>,
}

impl std::fmt::Debug for ClientTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTransform")
            .field("state", &self.state.is_some())
            .field("chunk", &self.chunk.is_some())
            .finish()
    }
}

impl ClientTransform {
    /// A transform that changes nothing (until given functions).
    pub fn new() -> Self {
        Self::default()
    }

    /// The session state as clients see it: in client-managed outputs,
    /// snapshots read back, and the custom state `customPatch` chunks
    /// describe.
    pub fn state(
        mut self,
        transform: impl Fn(SessionState) -> SessionState + Send + Sync + 'static,
    ) -> Self {
        self.state = Some(Arc::new(transform));
        self
    }

    /// Every stream chunk as clients see it; `None` drops the chunk.
    pub fn chunk(
        mut self,
        transform: impl Fn(AgentStreamChunk) -> Option<AgentStreamChunk> + Send + Sync + 'static,
    ) -> Self {
        self.chunk = Some(Arc::new(transform));
        self
    }

    /// Whether clients see a rewritten state.
    pub(crate) fn rewrites_state(&self) -> bool {
        self.state.is_some()
    }

    pub(crate) fn client_state(&self, state: SessionState) -> SessionState {
        match &self.state {
            Some(f) => f(state),
            None => state,
        }
    }

    pub(crate) fn client_chunk(&self, chunk: AgentStreamChunk) -> Option<AgentStreamChunk> {
        match &self.chunk {
            Some(f) => f(chunk),
            None => Some(chunk),
        }
    }
}
