//! [`ActionCtx`]: the one context every action body receives — a flow, a
//! tool, a model, an embedder — besides its input.

use crate::context::{ActionContext, Extensions};
use crate::error::{Error, Result};
use crate::registry::Registry;
use crate::tracing::TraceInfo;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A callback receiving stream chunks.
pub type ChunkCallback<S> = Arc<dyn Fn(S) + Send + Sync>;

/// Sends stream chunks to the caller, if the caller asked for a stream.
pub struct ChunkSender<S> {
    pub(super) callback: Option<ChunkCallback<S>>,
}

impl<S> Clone for ChunkSender<S> {
    fn clone(&self) -> Self {
        Self {
            callback: self.callback.clone(),
        }
    }
}

impl<S> ChunkSender<S> {
    /// A sender that drops every chunk.
    pub fn none() -> Self {
        Self { callback: None }
    }

    /// A sender calling `callback` for each chunk.
    pub fn new(callback: ChunkCallback<S>) -> Self {
        Self {
            callback: Some(callback),
        }
    }

    /// Whether the caller is streaming (chunks are not simply dropped).
    pub fn is_streaming(&self) -> bool {
        self.callback.is_some()
    }

    /// Sends one chunk.
    pub fn send(&self, chunk: S) {
        if let Some(cb) = &self.callback {
            cb(chunk);
        }
    }

    /// The callback, for passing on to a nested streaming run.
    pub fn callback(&self) -> Option<ChunkCallback<S>> {
        self.callback.clone()
    }
}

/// The caller's cancellation of a run, as an action body sees it: cancelled
/// when the caller cancels. A run whose caller gave no token holds none (a
/// trivial run then allocates nothing for it); [`token`](Self::token) makes
/// a fresh, never-cancelled one for code that needs a token to pass on.
#[derive(Clone, Debug, Default)]
pub struct Cancellation(Option<CancellationToken>);

impl Cancellation {
    /// Whether the caller cancelled the run.
    pub fn is_cancelled(&self) -> bool {
        self.0.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Resolves when the caller cancels the run (never, when it cannot).
    pub async fn cancelled(&self) {
        match &self.0 {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }

    /// The caller's token, if it gave one.
    pub fn caller_token(&self) -> Option<&CancellationToken> {
        self.0.as_ref()
    }

    /// The caller's token, else a fresh one nobody cancels.
    pub fn token(&self) -> CancellationToken {
        self.0.clone().unwrap_or_default()
    }

    /// The caller's token, if it gave one (for [`RunOptions::cancel`](super::RunOptions)).
    pub fn into_option(self) -> Option<CancellationToken> {
        self.0
    }
}

impl From<CancellationToken> for Cancellation {
    fn from(token: CancellationToken) -> Self {
        Self(Some(token))
    }
}

impl From<Option<CancellationToken>> for Cancellation {
    fn from(token: Option<CancellationToken>) -> Self {
        Self(token)
    }
}

/// What an action body receives besides its input: the request data
/// (`context`, Genkit's JSON `context` with `auth`), the chunk sender when
/// the caller streams, cancellation, trace ids, the caller's per-run
/// metadata, the registry the action runs in (the Genkit instance: the
/// facade's `ctx.genkit()`) and typed [`Extensions`].
///
/// Flows (`FlowContext<S>`), models (`ModelCtx`) and embedders receive it as
/// is; tools receive it through a typed view (`ToolCtx`) that adds
/// interrupts. `S` is the stream chunk type (`()` when the action does not
/// stream). Registry and extensions are inherited by every action the body
/// calls.
pub struct ActionCtx<S = ()> {
    /// Auth and other per-request data.
    pub context: ActionContext,
    /// Stream chunks to the caller.
    pub chunks: ChunkSender<S>,
    /// Cancelled when the caller cancels the run.
    pub cancel: Cancellation,
    /// This run's trace and span ids.
    pub trace: TraceInfo,
    /// Metadata the caller attached to this run (a tool receives its tool
    /// request part's metadata, e.g. `resumed` after an interrupt).
    pub metadata: Option<Value>,
    pub(super) registry: Option<Registry>,
    pub(super) extensions: Extensions,
}

impl<S> Clone for ActionCtx<S> {
    fn clone(&self) -> Self {
        Self {
            context: self.context.clone(),
            chunks: self.chunks.clone(),
            cancel: self.cancel.clone(),
            trace: self.trace,
            metadata: self.metadata.clone(),
            registry: self.registry.clone(),
            extensions: self.extensions.clone(),
        }
    }
}

impl<S> std::fmt::Debug for ActionCtx<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionCtx")
            .field("context", &self.context)
            .field("streaming", &self.is_streaming())
            .field("trace", &self.trace)
            .field("metadata", &self.metadata)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl<S> ActionCtx<S> {
    /// A context for calling a body directly (adapters, tests): not
    /// streaming, no metadata, and the registry and extensions of the action
    /// running in this task, if any.
    pub fn new(context: ActionContext, cancel: impl Into<Cancellation>, trace: TraceInfo) -> Self {
        Self {
            context,
            chunks: ChunkSender::none(),
            cancel: cancel.into(),
            trace,
            metadata: None,
            registry: crate::tracing::current_registry(),
            extensions: crate::tracing::current_extensions(),
        }
    }

    /// Sends one stream chunk (dropped if the caller is not streaming).
    pub fn send_chunk(&self, chunk: S) {
        self.chunks.send(chunk);
    }

    /// Whether the caller asked for a stream.
    pub fn is_streaming(&self) -> bool {
        self.chunks.is_streaming()
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The `auth` field of the request context, if set.
    pub fn auth(&self) -> Option<&Value> {
        self.context.auth()
    }

    /// This run's trace and span ids.
    pub fn trace(&self) -> TraceInfo {
        self.trace
    }

    /// The metadata the caller attached to this run (for a tool: the metadata
    /// of the tool request part that triggered the call).
    pub fn request_metadata(&self) -> Option<&Value> {
        self.metadata.as_ref()
    }

    /// After an interrupted tool call was restarted, the `resumed` metadata it
    /// was restarted with (`true` when none was given); `None` on a first call.
    pub fn resumed(&self) -> Option<&Value> {
        self.metadata.as_ref().and_then(|m| m.get("resumed"))
    }

    /// The registry this action runs in: the one it is registered in, else
    /// (an action given by value) its caller's. `None` only for an action
    /// never registered and run outside any registered action.
    pub fn registry(&self) -> Option<&Registry> {
        self.registry.as_ref()
    }

    /// Like [`registry`](Self::registry), `FAILED_PRECONDITION` when there is none.
    pub fn require_registry(&self) -> Result<&Registry> {
        self.registry.as_ref().ok_or_else(|| {
            Error::failed_precondition(
                "this action runs outside any registry: register it (or call it from a registered action) to reach the Genkit instance",
            )
        })
    }

    /// The typed extension of type `T` set by a caller, if any.
    pub fn extension<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// Every typed extension this run carries.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The same context with another chunk sender (for adapters that run a
    /// body with a different chunk type, such as model middleware).
    pub fn with_chunks<T>(self, chunks: ChunkSender<T>) -> ActionCtx<T> {
        ActionCtx {
            context: self.context,
            chunks,
            cancel: self.cancel,
            trace: self.trace,
            metadata: self.metadata,
            registry: self.registry,
            extensions: self.extensions,
        }
    }
}
