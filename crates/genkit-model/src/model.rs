//! Models: `define_model` turns a function from [`GenerateRequest`] to
//! [`GenerateResponse`] into an action of kind `model`, with its capability
//! metadata and model-level middleware.

use crate::middleware::{
    ModelCallCtx, ModelFn, ModelMiddleware, ModelNext, augment_with_context,
    simulate_constrained_generation,
};
use crate::types::{
    GenerateRequest, GenerateResponse, GenerateResponseChunk, GenerationUsage, Message, ModelInfo,
    ModelStage, ModelSupports, Operation, Part, PartKind,
};
use futures::future::BoxFuture;
use genkit_core::action::{ActionCtx, ChunkSender};
use genkit_core::{
    Action, ActionDesc, ActionKey, ActionKind, DynAction, Error, Registry, Result, RunOptions,
    StatusCode,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

/// What a model function receives besides the request: the one
/// [`ActionCtx`] with [`GenerateResponseChunk`] stream chunks (context, chunk
/// sender, cancellation, trace ids, registry, typed extensions).
pub type ModelCtx = ActionCtx<GenerateResponseChunk>;

/// The typed action behind a model.
pub type ModelAction = Action<GenerateRequest, GenerateResponse, GenerateResponseChunk>;

/// How to define a model.
#[derive(Clone, Default)]
pub struct ModelOptions {
    /// The name (`provider/model` for plugin models).
    pub name: String,
    /// A human-readable label (defaults to the name).
    pub label: Option<String>,
    /// Versions the model accepts in `config.version`.
    pub versions: Vec<String>,
    /// What the model can do.
    pub supports: ModelSupports,
    /// JSON schema of the model's `config`.
    pub config_schema: Option<Value>,
    /// Release stage.
    pub stage: Option<ModelStage>,
    /// Model-level middleware, outermost first (the built-in context and
    /// constrained-output shims are appended after these).
    pub middleware: Vec<Arc<dyn ModelMiddleware>>,
}

impl ModelOptions {
    /// Options for a model named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the supported versions.
    pub fn versions<S: Into<String>>(mut self, versions: impl IntoIterator<Item = S>) -> Self {
        self.versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the capability flags.
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }

    /// Derives the config schema from `C`.
    pub fn config_schema<C: JsonSchema>(mut self) -> Self {
        self.config_schema = Some(genkit_core::schema::schema_for::<C>());
        self
    }

    /// Sets the config schema as raw JSON schema.
    pub fn config_json_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }

    /// Sets the release stage.
    pub fn stage(mut self, stage: ModelStage) -> Self {
        self.stage = Some(stage);
        self
    }

    /// Adds model-level middleware (Genkit's `use`).
    pub fn use_middleware(mut self, middleware: impl ModelMiddleware) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// The `ModelInfo` these options describe.
    pub fn info(&self) -> ModelInfo {
        ModelInfo {
            versions: (!self.versions.is_empty()).then(|| self.versions.clone()),
            label: Some(self.label.clone().unwrap_or_else(|| self.name.clone())),
            config_schema: self.config_schema.clone(),
            supports: Some(self.supports.clone()),
            stage: self.stage,
        }
    }

    fn desc(&self, kind: ActionKind) -> ActionDesc {
        let info = self.info();
        let mut model_meta = serde_json::to_value(&info).unwrap_or_default();
        // Genkit lists the config schema as `customOptions`.
        if let Value::Object(m) = &mut model_meta
            && let Some(schema) = m.remove("configSchema")
        {
            m.insert("customOptions".into(), schema);
        }
        let mut desc = ActionDesc::new(kind, self.name.clone())
            .with_description(info.label.clone().unwrap_or_default())
            .with_metadata("model", model_meta);
        desc.input_schema = Some(wire_schemas().request.clone());
        desc.output_schema = Some(wire_schemas().response.clone());
        if kind == ActionKind::Model {
            desc.stream_schema = Some(wire_schemas().chunk.clone());
        }
        desc
    }

    /// The full middleware chain: the user's, then Genkit's shims for
    /// documents and constrained output when the model lacks them.
    fn chain(&self) -> Arc<[Arc<dyn ModelMiddleware>]> {
        let mut chain = self.middleware.clone();
        if self.supports.context != Some(true) {
            chain.push(Arc::new(augment_with_context()));
        }
        chain.push(Arc::new(simulate_constrained_generation(Some(
            self.supports.clone(),
        ))));
        chain.into()
    }
}

/// The JSON schemas of the model wire types, derived once per process
/// (deriving them is what made defining many models slow).
pub(crate) struct WireSchemas {
    pub(crate) request: Value,
    pub(crate) response: Value,
    pub(crate) chunk: Value,
    pub(crate) operation: Value,
}

pub(crate) fn wire_schemas() -> &'static WireSchemas {
    static SCHEMAS: std::sync::OnceLock<WireSchemas> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| WireSchemas {
        request: genkit_core::schema::schema_for::<GenerateRequest>(),
        response: genkit_core::schema::schema_for::<GenerateResponse>(),
        chunk: genkit_core::schema::schema_for::<GenerateResponseChunk>(),
        operation: genkit_core::schema::schema_for::<Operation>(),
    })
}

/// A model: an action of kind `model` plus its capabilities.
#[derive(Clone)]
pub struct Model {
    action: ModelAction,
    info: Arc<ModelInfo>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model").field("name", &self.name()).finish()
    }
}

impl Model {
    /// Builds a model without registering it (plugins return it from `init`).
    ///
    /// The function receives the request and a [`ModelCtx`]; it streams by
    /// calling `ctx.send_chunk(..)`.
    pub fn new<F, Fut>(opts: ModelOptions, runner: F) -> Model
    where
        F: Fn(GenerateRequest, ModelCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GenerateResponse>> + Send + 'static,
    {
        let runner = Arc::new(runner);
        let chain = opts.chain();
        let info = Arc::new(opts.info());
        let body = move |req: GenerateRequest,
                         ctx: ModelCtx|
              -> BoxFuture<'static, Result<GenerateResponse>> {
            let runner = runner.clone();
            // Most requests need none of the middleware (the built-in shims
            // apply only to documents or constrained output): call the
            // model directly.
            if !chain.iter().any(|layer| layer.applies(&req)) {
                return Box::pin(async move {
                    let started = std::time::Instant::now();
                    let mut response = runner(req, ctx).await?;
                    response.latency_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                    Ok(response)
                });
            }
            let chain = chain.clone();
            // The runner sees this run's context as the middleware left it.
            let base = ctx.clone().with_chunks(ChunkSender::<()>::none());
            let tail: ModelFn = Arc::new(move |req, mctx: ModelCallCtx| {
                let runner = runner.clone();
                let mut inner = base.clone().with_chunks(match mctx.on_chunk {
                    Some(cb) => ChunkSender::new(cb),
                    None => ChunkSender::none(),
                });
                inner.context = mctx.context;
                inner.cancel = mctx.cancel;
                Box::pin(async move {
                    let started = std::time::Instant::now();
                    let mut response = runner(req, inner).await?;
                    response.latency_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
                    Ok(response)
                })
            });
            let mctx = ModelCallCtx {
                on_chunk: ctx.chunks.callback(),
                context: ctx.context,
                cancel: ctx.cancel,
            };
            ModelNext::new(chain, tail).run(req, mctx)
        };
        let mut action = Action::from_desc_typed(opts.desc(ActionKind::Model), body);
        // Responses are kept for the exporter to encode (a fresh action is
        // not shared yet, so this always applies).
        action.set_output_recorder(crate::span_record::record_model_response);
        Model { action, info }
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// The capability metadata.
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The underlying action.
    pub fn action(&self) -> &ModelAction {
        &self.action
    }

    /// The model as an erased action.
    pub fn to_dyn(&self) -> DynAction {
        self.action.to_dyn()
    }

    /// A reference to this model with `config`.
    pub fn with_config(&self, config: Value) -> ModelRef {
        ModelRef::new(self.name()).with_config(config)
    }
}

impl genkit_core::IntoDynAction for &Model {
    fn into_dyn(self) -> DynAction {
        self.to_dyn()
    }
}

impl genkit_core::IntoDynAction for Model {
    fn into_dyn(self) -> DynAction {
        self.to_dyn()
    }
}

/// A model as a Rust type: its options (name, capabilities, config schema,
/// middleware) and a `generate` method. Register it with
/// [`define_model_impl`] (the facade's `ai.define_model_impl(MyModel)`), or
/// build it with [`Model::from_impl`] (e.g. in a plugin's `init`).
///
/// ```
/// use genkit_model::model::{ModelCtx, ModelImpl, ModelOptions};
/// use genkit_model::types::{FinishReason, GenerateRequest, GenerateResponse, Message};
///
/// struct Echo;
///
/// impl ModelImpl for Echo {
///     fn options(&self) -> ModelOptions { ModelOptions::new("echo") }
///     async fn generate(&self, req: GenerateRequest, _ctx: ModelCtx) -> genkit_core::Result<GenerateResponse> {
///         let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
///         Ok(GenerateResponse::new(Message::model(last), FinishReason::Stop))
///     }
/// }
/// ```
pub trait ModelImpl: Send + Sync + 'static {
    /// How the model is registered and what it supports.
    fn options(&self) -> ModelOptions;

    /// Answers one request; streams by calling `ctx.send_chunk(..)`.
    fn generate(
        &self,
        request: GenerateRequest,
        ctx: ModelCtx,
    ) -> impl Future<Output = Result<GenerateResponse>> + Send;
}

impl Model {
    /// A model from a [`ModelImpl`], not registered anywhere.
    pub fn from_impl<M: ModelImpl>(model: M) -> Model {
        let opts = model.options();
        let model = Arc::new(model);
        Model::new(opts, move |request, ctx| {
            let model = model.clone();
            async move { model.generate(request, ctx).await }
        })
    }
}

/// Defines a model from a [`ModelImpl`] and registers it as `/model/<name>`.
pub fn define_model_impl<M: ModelImpl>(registry: &Registry, model: M) -> Result<Model> {
    let model = Model::from_impl(model);
    registry.register(&model)?;
    Ok(model)
}

/// Defines a model and registers it as `/model/<name>`.
pub fn define_model<F, Fut>(registry: &Registry, opts: ModelOptions, runner: F) -> Result<Model>
where
    F: Fn(GenerateRequest, ModelCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GenerateResponse>> + Send + 'static,
{
    let model = Model::new(opts, runner);
    registry.register(&model)?;
    Ok(model)
}

/// A model named, possibly with config and version: what `generate` accepts
/// as its `model` (`"openai/gpt-4o"`, a [`Model`], or a reference).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRef {
    /// The model name (no `/model/` prefix).
    pub name: String,
    /// Config merged under the request's config.
    pub config: Option<Value>,
    /// `config.version` to use.
    pub version: Option<String>,
}

impl ModelRef {
    /// A reference to `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            config: None,
            version: None,
        }
    }

    /// Sets the config.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Sets the version.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }
}

impl From<&str> for ModelRef {
    fn from(s: &str) -> Self {
        ModelRef::new(s)
    }
}

impl From<String> for ModelRef {
    fn from(s: String) -> Self {
        ModelRef::new(s)
    }
}

impl From<&Model> for ModelRef {
    fn from(m: &Model) -> Self {
        ModelRef::new(m.name())
    }
}

/// Finds a model (or background model) by name (`openai/gpt-4o`) or key
/// (`/model/openai/gpt-4o`). A missing model is `NOT_FOUND`.
pub async fn lookup_model(registry: &Registry, name: &str) -> Result<DynAction> {
    if name.starts_with('/') {
        return registry.require_action(name).await;
    }
    if let Some(a) = registry.lookup(ActionKind::Model, name).await? {
        return Ok(a);
    }
    if let Some(a) = registry.lookup(ActionKind::BackgroundModel, name).await? {
        return Ok(a);
    }
    Err(Error::not_found(format!("Model '{name}' not found")))
}

/// Calls a model action with a typed request, passing stream chunks on.
/// Models built with [`Model::new`] are called without any JSON conversion.
pub async fn call_model(
    model: &DynAction,
    req: GenerateRequest,
    ctx: &ModelCallCtx,
) -> Result<GenerateResponse> {
    call_model_recorded(model, req, ctx, None).await
}

/// [`call_model`], the model span recording `span_input` (the request's
/// JSON, typically deferred) when given.
pub async fn call_model_recorded(
    model: &DynAction,
    req: GenerateRequest,
    ctx: &ModelCallCtx,
    span_input: Option<genkit_core::tracing::SpanJson>,
) -> Result<GenerateResponse> {
    if let Some(typed) = ModelAction::downcast(model) {
        let opts = RunOptions {
            context: Some(ctx.context.clone()),
            cancel: ctx.cancel.clone().into_option(),
            on_chunk: ctx.on_chunk.clone(),
            span_input,
            ..RunOptions::default()
        };
        return Ok(typed.run_with(req, opts).await?.output);
    }
    let input = serde_json::to_value(&req)?;
    let mut opts = RunOptions {
        context: Some(ctx.context.clone()),
        cancel: ctx.cancel.clone().into_option(),
        span_input,
        ..RunOptions::default()
    };
    if let Some(cb) = ctx.on_chunk.clone() {
        opts = opts.on_chunk(move |v: Value| match serde_json::from_value(v) {
            Ok(chunk) => cb(chunk),
            Err(e) => tracing::warn!("dropping a model chunk that does not parse: {e}"),
        });
    }
    let out = model.run_json(input, opts).await?;
    serde_json::from_value(out.output).map_err(|e| {
        Error::new(
            StatusCode::Internal,
            format!("model `{}` returned an invalid response: {e}", model.name()),
        )
        .with_source(e)
    })
}

/// The capability metadata of a model action.
pub fn model_info(action: &DynAction) -> Option<ModelInfo> {
    action
        .desc()
        .metadata
        .get("model")
        // Read in place: the metadata can hold a large config schema.
        .and_then(|m| ModelInfo::deserialize(m).ok())
}

/// Character and media counts of a request and response, as Genkit's
/// `getBasicUsageStats` computes them (for models whose API reports none).
pub fn basic_usage_stats(input: &[Message], output: &Message) -> GenerationUsage {
    let count = |parts: &mut dyn Iterator<Item = &Part>| {
        let (mut chars, mut images, mut videos, mut audio) = (0u64, 0u64, 0u64, 0u64);
        for p in parts {
            match &p.kind {
                // JS counts UTF-16 code units.
                PartKind::Text(t) => chars += t.encode_utf16().count() as u64,
                PartKind::Media(m) => {
                    let ct = m.content_type.as_deref().unwrap_or("");
                    let is = |kind: &str| {
                        ct.starts_with(kind) || m.url.starts_with(&format!("data:{kind}"))
                    };
                    images += u64::from(is("image"));
                    videos += u64::from(is("video"));
                    audio += u64::from(is("audio"));
                }
                _ => {}
            }
        }
        (chars, images, videos, audio)
    };
    let (ic, ii, iv, ia) = count(&mut input.iter().flat_map(|m| m.content.iter()));
    let (oc, oi, ov, oa) = count(&mut output.content.iter());
    GenerationUsage {
        input_characters: Some(ic),
        input_images: Some(ii),
        input_videos: Some(iv),
        input_audio_files: Some(ia),
        output_characters: Some(oc),
        output_images: Some(oi),
        output_videos: Some(ov),
        output_audio_files: Some(oa),
        ..GenerationUsage::default()
    }
}

/// A long-running model: `start` returns an [`Operation`] that callers poll
/// with `check` (and may `cancel`). Registered as `/background-model/<name>`,
/// `/check-operation/<name>/check` and `/cancel-operation/<name>/cancel`.
#[derive(Clone)]
pub struct BackgroundModel {
    start: Action<GenerateRequest, Operation>,
    check: Action<Operation, Operation>,
    cancel: Option<Action<Operation, Operation>>,
}

type OperationFn =
    Arc<dyn Fn(Operation, ActionCtx) -> BoxFuture<'static, Result<Operation>> + Send + Sync>;

/// How a background model starts, checks and cancels operations.
pub struct BackgroundModelFns {
    /// Starts an operation for a request.
    pub start: Arc<
        dyn Fn(GenerateRequest, ActionCtx) -> BoxFuture<'static, Result<Operation>> + Send + Sync,
    >,
    /// Reports an operation's progress.
    pub check: OperationFn,
    /// Cancels an operation, if the model can.
    pub cancel: Option<OperationFn>,
}

impl BackgroundModel {
    /// Builds the three actions without registering them.
    pub fn new(opts: ModelOptions, fns: BackgroundModelFns) -> Result<Self> {
        let mut meta = opts.desc(ActionKind::BackgroundModel).metadata;
        meta.insert("outputSchema".into(), wire_schemas().response.clone());
        let key = ActionKey::format(ActionKind::BackgroundModel, &opts.name);
        let stamp = move |mut op: Operation, key: &str| {
            op.action = Some(key.to_owned());
            op
        };
        let mut start_desc = ActionDesc::new(ActionKind::BackgroundModel, opts.name.clone());
        start_desc.description = opts.label.clone();
        start_desc.metadata = meta.clone();
        start_desc.input_schema = Some(wire_schemas().request.clone());
        start_desc.output_schema = Some(wire_schemas().operation.clone());
        let chain = opts.chain();
        let (start_fn, k) = (fns.start.clone(), key.clone());
        let start =
            Action::from_desc_typed(start_desc, move |req: GenerateRequest, ctx: ActionCtx| {
                let start_fn = start_fn.clone();
                let k = k.clone();
                let mut base = ctx.clone();
                base.metadata = None;
                let tail: ModelFn = Arc::new(move |req, mctx: ModelCallCtx| {
                    let start_fn = start_fn.clone();
                    let mut inner = base.clone();
                    inner.context = mctx.context;
                    inner.cancel = mctx.cancel;
                    Box::pin(async move {
                        let op = start_fn(req, inner).await?;
                        Ok(GenerateResponse {
                            operation: Some(Box::new(op)),
                            ..GenerateResponse::default()
                        })
                    })
                });
                let mctx = ModelCallCtx {
                    on_chunk: None,
                    context: ctx.context,
                    cancel: ctx.cancel,
                };
                let run = ModelNext::new(chain.clone(), tail).run(req, mctx);
                async move {
                    let resp = run.await?;
                    let op = resp
                        .operation
                        .ok_or_else(|| Error::internal("background model returned no operation"))?;
                    Ok(stamp(*op, &k))
                }
            });
        let op_desc = |kind: ActionKind, suffix: &str| {
            let mut d = ActionDesc::new(kind, format!("{}/{suffix}", opts.name));
            d.description = opts.label.clone();
            d.metadata = meta.clone();
            d.input_schema = Some(wire_schemas().operation.clone());
            d.output_schema = Some(wire_schemas().operation.clone());
            d
        };
        let (check_fn, k) = (fns.check.clone(), key.clone());
        let check = Action::from_desc_typed(
            op_desc(ActionKind::CheckOperation, "check"),
            move |op, ctx| {
                let f = check_fn.clone();
                let k = k.clone();
                async move { Ok(stamp(f(op, ctx).await?, &k)) }
            },
        );
        let cancel = match fns.cancel {
            Some(cancel_fn) => {
                let k = key.clone();
                Some(Action::from_desc_typed(
                    op_desc(ActionKind::CancelOperation, "cancel"),
                    move |op, ctx| {
                        let f = cancel_fn.clone();
                        let k = k.clone();
                        async move { Ok(stamp(f(op, ctx).await?, &k)) }
                    },
                ))
            }
            None => None,
        };
        Ok(Self {
            start,
            check,
            cancel,
        })
    }

    /// The three actions, for registering or returning from a plugin.
    pub fn actions(&self) -> Vec<DynAction> {
        let mut out = vec![self.start.to_dyn(), self.check.to_dyn()];
        if let Some(c) = &self.cancel {
            out.push(c.to_dyn());
        }
        out
    }

    /// Starts an operation.
    pub async fn start(&self, request: GenerateRequest) -> Result<Operation> {
        self.start.run(request).await
    }

    /// Checks an operation.
    pub async fn check(&self, operation: Operation) -> Result<Operation> {
        self.check.run(operation).await
    }

    /// Cancels an operation; `UNIMPLEMENTED` if the model cannot.
    pub async fn cancel(&self, operation: Operation) -> Result<Operation> {
        match &self.cancel {
            Some(c) => c.run(operation).await,
            None => Err(Error::new(
                StatusCode::Unimplemented,
                format!("{} does not support cancellation.", self.start.name()),
            )),
        }
    }
}

/// Defines a background model and registers its actions.
pub fn define_background_model(
    registry: &Registry,
    opts: ModelOptions,
    fns: BackgroundModelFns,
) -> Result<BackgroundModel> {
    let model = BackgroundModel::new(opts, fns)?;
    for a in model.actions() {
        registry.register(a)?;
    }
    Ok(model)
}

/// Polls an operation through the `check-operation` action of the background
/// model that started it (`operation.action`).
pub async fn check_operation(registry: &Registry, operation: Operation) -> Result<Operation> {
    let action = operation
        .action
        .as_deref()
        .and_then(|k| k.strip_prefix("/background-model/"))
        .ok_or_else(|| Error::invalid_argument("operation has no background-model `action`"))?;
    let check = registry
        .require_action(&format!("/check-operation/{action}/check"))
        .await?;
    let out = check
        .run_json(serde_json::to_value(&operation)?, RunOptions::default())
        .await?;
    serde_json::from_value(out.output).map_err(|e| {
        Error::internal(format!(
            "check-operation returned an invalid operation: {e}"
        ))
        .with_source(e)
    })
}
