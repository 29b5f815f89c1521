//! The conversation a call belongs to, for middleware that keeps state
//! between calls.
//!
//! An agent turn runs its generate calls with its session as their
//! [`ConversationScope`] (a typed extension of the running action, see
//! [`genkit_core::tracing::with_extension`]). Middleware that remembers
//! results, such as the [tool cache](super::tool_cache), keys them by the
//! scope, so what one session's tools returned is never served to another
//! session.

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
