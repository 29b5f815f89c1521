//! Middleware: onion chains around a model call, a whole generate turn, or a
//! tool execution — one shape, different tails (Genkit's `dispatchModel` /
//! `dispatchGenerate` / tool dispatch).
//!
//! - [`ModelMiddleware`] wraps one model call; models carry their own
//!   (`ModelOptions::use_middleware`) and generate calls can add more.
//! - [`GenerateMiddleware`] has three hooks (`generate`, `model`, `tool`) and
//!   may contribute tools.
//!
//! Each hook receives a `next` handle — one generic chain, [`Next<H>`], for
//! all three ([`ModelNext`], [`GenerateNext`] and [`ToolNext`] are its
//! aliases): call `next.run(...)` to go one layer inward, change the request
//! on the way in or the response on the way out, or not call it at all.
//! `next` is cloneable, so a layer may call it again (retry) or not at all
//! (cache, fallback).
//!
//! The model-level shims Genkit applies by capability live here, one per
//! module: [`simulate_system_prompt`], [`augment_with_context`],
//! [`simulate_constrained_generation`], [`download_request_media`] and
//! [`validate_support`]. The policies an application chooses (retry,
//! fallback, history policy, tool approval, tool cache) are in the
//! `genkit-middleware` crate, built on these traits.

/// Implements [`GenerateMiddleware`] for a type that implements
/// [`ModelMiddleware`], using it as the model hook under the given name, so
/// one value can be passed wherever either kind is taken:
///
/// ```
/// use genkit_model::middleware::{ModelCallCtx, ModelMiddleware, ModelNext};
/// use genkit_model::types::{GenerateRequest, GenerateResponse};
///
/// struct Log;
///
/// #[async_trait::async_trait]
/// impl ModelMiddleware for Log {
///     async fn call(
///         &self,
///         req: GenerateRequest,
///         ctx: ModelCallCtx,
///         next: ModelNext,
///     ) -> genkit_core::Result<GenerateResponse> {
///         next.run(req, ctx).await
///     }
/// }
///
/// genkit_model::as_generate_middleware!(Log, "log");
/// ```
#[macro_export]
macro_rules! as_generate_middleware {
    ($ty:ty, $name:literal) => {
        #[$crate::middleware::__private::async_trait]
        impl $crate::middleware::GenerateMiddleware for $ty {
            fn name(&self) -> &str {
                $name
            }

            async fn model(
                &self,
                req: $crate::types::GenerateRequest,
                ctx: $crate::middleware::ModelCallCtx,
                next: $crate::middleware::ModelNext,
            ) -> $crate::middleware::__private::Result<$crate::types::GenerateResponse> {
                $crate::middleware::ModelMiddleware::call(self, req, ctx, next).await
            }
        }
    };
}

/// What [`as_generate_middleware!`](crate::as_generate_middleware) expands
/// to refers to, so its callers need no dependency of their own.
#[doc(hidden)]
pub mod __private {
    pub use async_trait::async_trait;
    pub use genkit_core::Result;
}

mod chain;
mod constrained;
mod context;
mod download_media;
#[cfg(feature = "download-media")]
mod media_fetch;
mod scope;
mod system_prompt;
mod validate_support;

pub use chain::{GenerateTurn, Hook, ModelCall, Next, Tail, ToolCall};

pub use constrained::{SimulateConstrainedGeneration, simulate_constrained_generation};
pub use context::{AugmentWithContext, CONTEXT_PREFACE, augment_with_context};
#[cfg(feature = "download-media")]
pub use download_media::download_request_media_http;
pub use download_media::{DownloadMedia, MediaFetcher, PartFilter, download_request_media};
#[cfg(feature = "download-media")]
pub use media_fetch::{DEFAULT_MEDIA_TIMEOUT, HttpMediaFetch};
pub use scope::{
    ArtifactContent, ConversationArtifacts, ConversationArtifactsRef, ConversationScope,
};
pub use system_prompt::{SimulateSystemPrompt, simulate_system_prompt};
pub use validate_support::{ValidateSupport, validate_support};

use crate::types::{
    GenerateActionOptions, GenerateRequest, GenerateResponse, GenerateResponseChunk, Part,
};
use async_trait::async_trait;
use genkit_core::action::{Cancellation, ChunkCallback};
use genkit_core::{ActionContext, DynAction, Result};
use serde_json::Value;
use std::sync::Arc;

/// What a model call carries besides the request.
#[derive(Clone, Default)]
pub struct ModelCallCtx {
    /// Receives the model's stream chunks (absent when not streaming).
    pub on_chunk: Option<ChunkCallback<GenerateResponseChunk>>,
    /// The action context.
    pub context: ActionContext,
    /// Cancelled when the caller cancels (holds no token when the caller
    /// gave none, so a call nobody can cancel allocates nothing for it).
    pub cancel: Cancellation,
}

/// The rest of a model chain, ending in the model itself.
pub type ModelFn = Tail<ModelCall>;

/// The inner layers of a model chain.
pub type ModelNext = Next<ModelCall>;

/// Wraps one model call.
#[async_trait]
pub trait ModelMiddleware: Send + Sync + 'static {
    /// Handles the call; `next.run(req, ctx)` continues inward.
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse>;

    /// Whether this layer has anything to do for `req`; layers that say no
    /// are skipped without a call (the built-in shims use it to cost
    /// nothing on requests they leave alone).
    fn applies(&self, _req: &GenerateRequest) -> bool {
        true
    }
}

/// A closure `|req, ctx, next| async { ... }` is a model middleware.
#[async_trait]
impl<F, Fut> ModelMiddleware for F
where
    F: Fn(GenerateRequest, ModelCallCtx, ModelNext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<GenerateResponse>> + Send + 'static,
{
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        self(req, ctx, next).await
    }
}

/// One generate turn as generate-level middleware sees it.
#[derive(Debug, Clone)]
pub struct GenerateEnvelope {
    /// The options of this turn (messages so far, tools, output...).
    pub request: GenerateActionOptions,
    /// 0 for the first turn of the tool loop.
    pub current_turn: u32,
    /// Index of the message this turn will produce.
    pub message_index: u32,
}

/// What a generate turn carries besides its envelope.
#[derive(Clone, Default)]
pub struct GenerateCallCtx {
    /// Receives stream chunks of this turn and later ones.
    pub on_chunk: Option<ChunkCallback<GenerateResponseChunk>>,
    /// The action context.
    pub context: ActionContext,
    /// Cancelled when the caller cancels (holds no token when the caller
    /// gave none, so a call nobody can cancel allocates nothing for it).
    pub cancel: Cancellation,
}

/// The rest of a generate chain, ending in the turn itself.
pub type GenerateFn = Tail<GenerateTurn>;

/// The inner layers of a generate chain.
pub type GenerateNext = Next<GenerateTurn>;

/// What a tool execution carries besides the tool request part.
#[derive(Clone, Default)]
pub struct ToolCallCtx {
    /// The action context.
    pub context: ActionContext,
    /// Cancelled when the caller cancels (holds no token when the caller
    /// gave none, so a call nobody can cancel allocates nothing for it).
    pub cancel: Cancellation,
    /// The tool request part's metadata (`resumed` after a restart).
    pub metadata: Option<Value>,
    /// The tool about to run (its description carries its marks: see
    /// [`needs_approval`](crate::tool::needs_approval)); `None` only in
    /// chains built by hand.
    pub tool: Option<DynAction>,
}

/// The rest of a tool chain, ending in the tool itself. Returns the tool
/// response part, or `None` if a layer decided there is none.
pub type ToolFn = Tail<ToolCall>;

/// The inner layers of a tool chain.
pub type ToolNext = Next<ToolCall>;

/// Middleware for a whole generate call. Every hook defaults to passing
/// through; implement the ones you need.
#[async_trait]
pub trait GenerateMiddleware: Send + Sync + 'static {
    /// A name for logs and traces.
    fn name(&self) -> &str {
        "middleware"
    }

    /// Wraps each turn of the tool loop.
    async fn generate(
        &self,
        env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        next.run(env, ctx).await
    }

    /// Wraps each model call.
    async fn model(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        next.run(req, ctx).await
    }

    /// Wraps each tool execution.
    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        next.run(part, ctx).await
    }

    /// Tools this middleware makes available to the model.
    fn tools(&self) -> Vec<DynAction> {
        Vec::new()
    }
}

/// A shared middleware is a middleware.
#[async_trait]
impl<T: GenerateMiddleware + ?Sized> GenerateMiddleware for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn generate(
        &self,
        env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        (**self).generate(env, ctx, next).await
    }

    async fn model(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        (**self).model(req, ctx, next).await
    }

    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        (**self).tool(part, ctx, next).await
    }

    fn tools(&self) -> Vec<DynAction> {
        (**self).tools()
    }
}

/// Uses a [`ModelMiddleware`] as the model hook of a generate middleware.
pub struct ModelHook<M>(pub M);

#[async_trait]
impl<M: ModelMiddleware> GenerateMiddleware for ModelHook<M> {
    fn name(&self) -> &str {
        "model"
    }

    async fn model(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        self.0.call(req, ctx, next).await
    }
}

/// Adapts the `model` hook of a generate middleware into a model middleware,
/// so both kinds share one model chain.
pub struct GenerateModelHook(pub Arc<dyn GenerateMiddleware>);

#[async_trait]
impl ModelMiddleware for GenerateModelHook {
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        self.0.model(req, ctx, next).await
    }
}

/// Factory for middleware named in a serializable request
/// (`GenerateActionOptions.use = [{name, config}]`), registered with
/// [`define_middleware`].
pub type MiddlewareFactory =
    Arc<dyn Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync>;

const MIDDLEWARE_KIND: &str = "middleware";

/// Registers a named middleware factory so requests can refer to it by name
/// (`{"use": [{"name": "...", "config": {...}}]}`), and lists it under
/// `/api/values?type=middleware`.
pub fn define_middleware(
    registry: &genkit_core::Registry,
    name: &str,
    description: &str,
    factory: impl Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync + 'static,
) {
    let factory: MiddlewareFactory = Arc::new(factory);
    registry.register_object(MIDDLEWARE_KIND, name, Arc::new(factory));
    registry.register_value(
        MIDDLEWARE_KIND,
        name,
        serde_json::json!({"name": name, "description": description}),
    );
}

/// Resolves a middleware named in a request.
pub fn resolve_middleware(
    registry: &genkit_core::Registry,
    name: &str,
    config: Option<&Value>,
) -> Result<Arc<dyn GenerateMiddleware>> {
    let factory = registry
        .lookup_object::<MiddlewareFactory>(MIDDLEWARE_KIND, name)
        .ok_or_else(|| genkit_core::Error::not_found(format!("middleware `{name}` not found")))?;
    factory(config)
}

/// How a registered middleware is listed (Genkit's `MiddlewareDesc`): its
/// name, description, the JSON schema of its config and free-form metadata.
/// The Reflection API lists it under `/api/values?type=middleware`, so the
/// Dev UI can render a form for the config.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MiddlewareDesc {
    /// The name requests refer to (`use: [{name: ...}]`).
    pub name: String,
    /// What the middleware does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON schema a request's `config` must satisfy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_schema: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl MiddlewareDesc {
    /// A listing with a name and description, no config schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: Some(description.into()),
            config_schema: None,
            metadata: None,
        }
    }

    /// Sets the JSON schema a request's `config` is validated against.
    pub fn with_config_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata);
        self
    }
}

/// Registers a named middleware factory described by `desc`, like
/// [`define_middleware`], and validates each request's `config` against
/// `desc.config_schema` before the factory sees it: a config that does not
/// fit fails with `INVALID_ARGUMENT` naming the middleware and the field.
/// Fails if the config schema does not compile.
pub fn define_middleware_desc(
    registry: &genkit_core::Registry,
    desc: MiddlewareDesc,
    factory: impl Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync + 'static,
) -> Result<()> {
    let validator = desc
        .config_schema
        .as_ref()
        .map(genkit_core::schema::SchemaValidator::compile)
        .transpose()?;
    let name = desc.name.clone();
    let checked = move |config: Option<&Value>| {
        if let (Some(v), Some(config)) = (&validator, config) {
            v.validate(config).map_err(|e| {
                let mut out = genkit_core::Error::new(
                    e.status(),
                    format!("middleware `{name}` config: {}", e.message()),
                );
                if let Some(details) = e.details() {
                    out = out.with_details(details.clone());
                }
                out
            })?;
        }
        factory(config)
    };
    let factory: MiddlewareFactory = Arc::new(checked);
    registry.register_object(MIDDLEWARE_KIND, &desc.name, Arc::new(factory));
    registry.register_value(MIDDLEWARE_KIND, &desc.name, serde_json::to_value(&desc)?);
    Ok(())
}
