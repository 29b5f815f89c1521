//! The conversation a call belongs to, for middleware that keeps state
//! between calls.
//!
//! An agent turn runs its generate calls with its session as their
//! [`ConversationScope`] (a typed extension of the running action, see
//! [`genkit_core::tracing::with_extension`]). Middleware that remembers
//! results, such as the [tool cache](super::tool_cache), keys them by the
//! scope, so what one session's tools returned is never served to another
//! session.

use crate::types::Part;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Identifies the conversation (an agent session) the running generate call
/// belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConversationScope(Arc<str>);

impl ConversationScope {
    /// The scope named `id` (an agent sets its session id).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The scope's id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The scope of the running action, if one was set.
    pub fn current() -> Option<Self> {
        genkit_core::tracing::current_extensions()
            .get::<Self>()
            .cloned()
    }
}

/// Named data middleware keeps with the conversation it runs in, so it is
/// stored with the conversation and found again by later turns (after a
/// restart too). An agent session implements it with its artifacts, and
/// puts itself in the context of its turn's calls ([`ConversationArtifactsRef`]);
/// a history policy keeps its summaries there.
pub trait ConversationArtifacts: Send + Sync + 'static {
    /// The artifact named `name`.
    fn artifact(&self, name: &str) -> Option<ArtifactContent>;

    /// Adds the artifact named `name`, replacing one of the same name.
    fn put_artifact(&self, name: &str, content: ArtifactContent);
}

/// What a named artifact holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArtifactContent {
    /// The content.
    pub parts: Vec<Part>,
    /// Artifact-specific data.
    pub metadata: Option<Map<String, Value>>,
}

/// The [`ConversationArtifacts`] of the running call, as a typed extension
/// (see [`genkit_core::tracing::with_extension`]).
#[derive(Clone)]
pub struct ConversationArtifactsRef(pub Arc<dyn ConversationArtifacts>);

impl ConversationArtifactsRef {
    /// The artifacts of the conversation the running action belongs to, if
    /// its caller set them.
    pub fn current() -> Option<Self> {
        genkit_core::tracing::current_extensions()
            .get::<Self>()
            .cloned()
    }
}
