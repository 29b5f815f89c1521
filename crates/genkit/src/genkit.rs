//! The `Genkit` facade: one registry with the framework's built-ins, and
//! `define_*` / `generate` methods over it.

use crate::embedder::{EmbedderAction, EmbedderOptions, define_embedder, embed, embed_many};
use crate::generate::{
    GenerateOptions, GenerateStream, define_generate_action, generate, generate_stream,
};
use crate::middleware::{GenerateMiddleware, define_middleware};
use crate::model::{
    BackgroundModel, BackgroundModelFns, Model, ModelCtx, ModelImpl, ModelOptions, check_operation,
    define_background_model, define_model, define_model_impl,
};
use crate::prompt::{ExecutablePrompt, PromptConfig, define_prompt};
use crate::tool::{
    Tool, ToolCtx, ToolImpl, define_interrupt, define_multipart_tool, define_tool, define_tool_impl,
};
use crate::typed_stream::TypedGenerateStream;
use crate::types::{
    DocumentData, EmbedRequest, EmbedResponse, Embedding, GenerateRequest, GenerateResponse,
    MultipartToolResponse, Operation,
};
use genkit_core::action::ActionCtx;
use genkit_core::flow::{FlowContext, define_flow, define_streaming_flow};
use genkit_core::{Action, Payload, Plugin, Registry, Result};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

/// A Genkit instance: a registry holding your flows, models, tools and
/// prompts, plus the framework's own actions (`/util/generate`). Cheap to
/// clone (shared).
#[derive(Clone, Debug)]
pub struct Genkit {
    registry: Registry,
}

/// Configures a [`Genkit`].
#[derive(Default)]
pub struct GenkitBuilder {
    plugins: Vec<Arc<dyn Plugin>>,
    default_model: Option<String>,
    prompt_dir: Option<Option<PathBuf>>,
}

impl GenkitBuilder {
    /// Adds a plugin (initialised lazily, on first use).
    pub fn plugin(mut self, plugin: impl Plugin) -> Self {
        self.plugins.push(Arc::new(plugin));
        self
    }

    /// The model `generate` uses when the options name none.
    pub fn default_model(mut self, name: impl Into<String>) -> Self {
        self.default_model = Some(name.into());
        self
    }

    /// Loads `.prompt` files from `dir` (default `./prompts`, skipped when absent).
    pub fn prompt_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.prompt_dir = Some(Some(dir.into()));
        self
    }

    /// Does not load prompt files.
    pub fn no_prompt_dir(mut self) -> Self {
        self.prompt_dir = Some(None);
        self
    }

    /// Builds the instance. Fails if two plugins share a name, or if a prompt
    /// file is malformed.
    pub fn build(self) -> Result<Genkit> {
        let registry = Registry::new();
        for p in self.plugins {
            registry.register_plugin(p)?;
        }
        if let Some(m) = self.default_model {
            registry.register_value("defaultModel", "defaultModel", Value::from(m));
        }
        define_generate_action(&registry)?;
        let (dir, required) = match self.prompt_dir {
            None => (
                Some(PathBuf::from(crate::prompt::DEFAULT_PROMPT_DIR)),
                false,
            ),
            Some(Some(d)) => (Some(d), true),
            Some(None) => (None, false),
        };
        if let Some(dir) = dir {
            if required && !dir.is_dir() {
                return Err(genkit_core::Error::invalid_argument(format!(
                    "prompt directory {} does not exist",
                    dir.display()
                )));
            }
            // An absent default folder loads nothing, but is remembered so
            // that a missing prompt's error can say where it was looked for.
            crate::prompt::load_prompt_folder(&registry, &dir, None)?;
        }
        Ok(Genkit { registry })
    }
}

pub(crate) fn registered<T>(what: &str, name: &str, r: Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("defining {what} `{name}`: {e}"))
}

impl AsRef<Registry> for Genkit {
    fn as_ref(&self) -> &Registry {
        &self.registry
    }
}

impl Genkit {
    /// Starts configuring an instance.
    pub fn builder() -> GenkitBuilder {
        GenkitBuilder::default()
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The instance over an existing registry (e.g. the one an action's
    /// context carries: see [`ActionCtxExt::genkit`](crate::ActionCtxExt::genkit)).
    pub fn from_registry(registry: Registry) -> Self {
        Self { registry }
    }

    /// Defines a flow, registered as `/flow/<name>`; schemas come from `I` and `O`.
    /// The body reaches this instance with `ctx.genkit()`.
    ///
    /// # Panics
    /// If a flow with this name is already defined or the name is invalid (a
    /// programming error, like registering two axum routes for one path);
    /// [`try_define_flow`](Self::try_define_flow) returns the error instead.
    pub fn define_flow<I, O, F, Fut>(&self, name: &str, body: F) -> Action<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, FlowContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered("flow", name, self.try_define_flow(name, body))
    }

    /// Like [`define_flow`](Self::define_flow); a taken or invalid name is
    /// an error (`ALREADY_EXISTS`, `INVALID_ARGUMENT`).
    pub fn try_define_flow<I, O, F, Fut>(&self, name: &str, body: F) -> Result<Action<I, O>>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, FlowContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        define_flow(&self.registry, name, body)
    }

    /// Defines a flow that streams chunks of type `S` with `ctx.send_chunk`.
    ///
    /// # Panics
    /// If a flow with this name is already defined or the name is invalid.
    pub fn define_streaming_flow<I, O, S, F, Fut>(&self, name: &str, body: F) -> Action<I, O, S>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        S: Payload + Serialize + JsonSchema,
        F: Fn(I, FlowContext<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered("flow", name, self.try_define_streaming_flow(name, body))
    }

    /// Like [`define_streaming_flow`](Self::define_streaming_flow), returning
    /// the error instead of panicking.
    pub fn try_define_streaming_flow<I, O, S, F, Fut>(
        &self,
        name: &str,
        body: F,
    ) -> Result<Action<I, O, S>>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        S: Payload + Serialize + JsonSchema,
        F: Fn(I, FlowContext<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        define_streaming_flow(&self.registry, name, body)
    }

    /// Runs a named step of a flow, recorded as a child span.
    pub async fn run<T, F>(&self, name: &str, step: F) -> Result<T>
    where
        T: Serialize,
        F: Future<Output = Result<T>>,
    {
        genkit_core::tracing::run(name, step).await
    }

    /// Defines a model, registered as `/model/<name>`.
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid.
    pub fn define_model<F, Fut>(&self, opts: ModelOptions, runner: F) -> Model
    where
        F: Fn(GenerateRequest, ModelCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GenerateResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("model", &name, self.try_define_model(opts, runner))
    }

    /// Like [`define_model`](Self::define_model), returning the error instead of panicking.
    pub fn try_define_model<F, Fut>(&self, opts: ModelOptions, runner: F) -> Result<Model>
    where
        F: Fn(GenerateRequest, ModelCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GenerateResponse>> + Send + 'static,
    {
        define_model(&self.registry, opts, runner)
    }

    /// Defines a model from a type implementing [`ModelImpl`].
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid.
    pub fn define_model_impl<M: ModelImpl>(&self, model: M) -> Model {
        // The registration error names the model's key.
        self.try_define_model_impl(model)
            .unwrap_or_else(|e| panic!("defining a model: {e}"))
    }

    /// Like [`define_model_impl`](Self::define_model_impl), returning the
    /// error instead of panicking.
    pub fn try_define_model_impl<M: ModelImpl>(&self, model: M) -> Result<Model> {
        define_model_impl(&self.registry, model)
    }

    /// Defines a background (long-running) model and its operation actions.
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid.
    pub fn define_background_model(
        &self,
        opts: ModelOptions,
        fns: BackgroundModelFns,
    ) -> BackgroundModel {
        let name = opts.name.clone();
        registered(
            "background model",
            &name,
            self.try_define_background_model(opts, fns),
        )
    }

    /// Like [`define_background_model`](Self::define_background_model),
    /// returning the error instead of panicking.
    pub fn try_define_background_model(
        &self,
        opts: ModelOptions,
        fns: BackgroundModelFns,
    ) -> Result<BackgroundModel> {
        define_background_model(&self.registry, opts, fns)
    }

    /// Polls a background model's operation.
    pub async fn check_operation(&self, operation: Operation) -> Result<Operation> {
        check_operation(&self.registry, operation).await
    }

    /// Defines a tool, registered as `/tool/<name>`; schemas come from `I` and `O`.
    /// The body reaches this instance with `ctx.genkit()`.
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid.
    pub fn define_tool<I, O, F, Fut>(&self, name: &str, description: &str, body: F) -> Tool<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered("tool", name, self.try_define_tool(name, description, body))
    }

    /// Like [`define_tool`](Self::define_tool), returning the error instead of panicking.
    pub fn try_define_tool<I, O, F, Fut>(
        &self,
        name: &str,
        description: &str,
        body: F,
    ) -> Result<Tool<I, O>>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        define_tool(&self.registry, name, description, body)
    }

    /// Defines a tool from a type implementing [`ToolImpl`].
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid.
    pub fn define_tool_impl<T: ToolImpl>(&self, tool: T) -> Tool<T::Input, T::Output> {
        let name = tool.name().to_owned();
        registered("tool", &name, self.try_define_tool_impl(tool))
    }

    /// Like [`define_tool_impl`](Self::define_tool_impl), returning the error
    /// instead of panicking.
    pub fn try_define_tool_impl<T: ToolImpl>(&self, tool: T) -> Result<Tool<T::Input, T::Output>> {
        define_tool_impl(&self.registry, tool)
    }

    /// Defines a multipart tool (`/tool.v2/<name>`), returning parts besides its output.
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid.
    pub fn define_multipart_tool<I, F, Fut>(
        &self,
        name: &str,
        description: &str,
        body: F,
    ) -> Tool<I, MultipartToolResponse>
    where
        I: Payload + JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<MultipartToolResponse>> + Send + 'static,
    {
        registered(
            "tool",
            name,
            self.try_define_multipart_tool(name, description, body),
        )
    }

    /// Like [`define_multipart_tool`](Self::define_multipart_tool), returning
    /// the error instead of panicking.
    pub fn try_define_multipart_tool<I, F, Fut>(
        &self,
        name: &str,
        description: &str,
        body: F,
    ) -> Result<Tool<I, MultipartToolResponse>>
    where
        I: Payload + JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<MultipartToolResponse>> + Send + 'static,
    {
        define_multipart_tool(&self.registry, name, description, body)
    }

    /// Defines an interrupt: a tool that pauses generation for the caller to
    /// answer with [`Tool::respond`].
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid.
    pub fn define_interrupt<I, O>(&self, name: &str, description: &str) -> Tool<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
    {
        registered(
            "interrupt",
            name,
            self.try_define_interrupt(name, description),
        )
    }

    /// Like [`define_interrupt`](Self::define_interrupt), returning the error
    /// instead of panicking.
    pub fn try_define_interrupt<I, O>(&self, name: &str, description: &str) -> Result<Tool<I, O>>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
    {
        define_interrupt(&self.registry, name, description, None)
    }

    /// Defines an embedder, registered as `/embedder/<name>`.
    ///
    /// # Panics
    /// If an embedder with this name is already defined or the name is invalid.
    pub fn define_embedder<F, Fut>(&self, opts: EmbedderOptions, runner: F) -> EmbedderAction
    where
        F: Fn(EmbedRequest, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<EmbedResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("embedder", &name, self.try_define_embedder(opts, runner))
    }

    /// Like [`define_embedder`](Self::define_embedder), returning the error
    /// instead of panicking.
    pub fn try_define_embedder<F, Fut>(
        &self,
        opts: EmbedderOptions,
        runner: F,
    ) -> Result<EmbedderAction>
    where
        F: Fn(EmbedRequest, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<EmbedResponse>> + Send + 'static,
    {
        define_embedder(&self.registry, opts, runner)
    }

    /// Embeds a text.
    pub async fn embed(&self, embedder: &str, text: &str) -> Result<Vec<Embedding>> {
        embed(&self.registry, embedder, text).await
    }

    /// Embeds documents.
    pub async fn embed_many(
        &self,
        embedder: &str,
        documents: Vec<DocumentData>,
    ) -> Result<Vec<Embedding>> {
        embed_many(&self.registry, embedder, documents, None).await
    }

    /// Registers a named middleware usable from serialized requests.
    pub fn define_middleware(
        &self,
        name: &str,
        description: &str,
        factory: impl Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync + 'static,
    ) {
        define_middleware(&self.registry, name, description, factory)
    }

    /// Registers an output format (Genkit's `defineFormat`), so `generate`,
    /// streaming, `/util/generate` and prompts can ask for it by name.
    pub fn define_format(
        &self,
        format: impl crate::formats::Format + 'static,
    ) -> Arc<dyn crate::formats::Format> {
        crate::formats::define_format(&self.registry, format)
    }

    /// Registers a named JSON schema usable from prompt frontmatter.
    pub fn define_schema(&self, name: &str, schema: Value) -> Result<()> {
        crate::prompt::define_schema(&self.registry, name, schema)
    }

    /// Registers the JSON schema of `T` under `name`.
    pub fn define_schema_for<T: JsonSchema>(&self, name: &str) -> Result<()> {
        crate::prompt::define_schema_for::<T>(&self.registry, name)
    }

    /// Defines a prompt in code, registered as `/prompt/<name>` and
    /// `/executable-prompt/<name>`.
    ///
    /// # Panics
    /// If the prompt is invalid or its name is taken;
    /// [`try_define_prompt`](Self::try_define_prompt) returns the error instead.
    pub fn define_prompt<I, O>(&self, config: PromptConfig<I, O>) -> ExecutablePrompt<I, O> {
        registered("prompt", "", self.try_define_prompt(config))
    }

    /// Like [`define_prompt`](Self::define_prompt), returning the error
    /// instead of panicking.
    pub fn try_define_prompt<I, O>(
        &self,
        config: PromptConfig<I, O>,
    ) -> Result<ExecutablePrompt<I, O>> {
        define_prompt(&self.registry, config)
    }

    /// A prompt defined in code or loaded from a `.prompt` file; `NOT_FOUND`
    /// if there is none.
    pub fn prompt<I, O>(&self, name: &str) -> Result<ExecutablePrompt<I, O>> {
        crate::prompt::prompt(&self.registry, name, None)
    }

    /// A variant (`name.variant.prompt`) of a prompt.
    pub fn prompt_variant<I, O>(
        &self,
        name: &str,
        variant: &str,
    ) -> Result<ExecutablePrompt<I, O>> {
        crate::prompt::prompt(&self.registry, name, Some(variant))
    }

    /// Registers a Handlebars partial for prompts.
    pub fn define_partial(&self, name: &str, source: &str) -> Result<()> {
        crate::prompt::define_partial(&self.registry, name, source)
    }

    /// Generates a response, running requested tools until the model answers.
    pub fn generate(
        &self,
        options: GenerateOptions,
    ) -> impl Future<Output = Result<GenerateResponse>> + Send + 'static {
        generate(&self.registry, options)
    }

    /// Generates a response as a stream of chunks, then the response.
    pub fn generate_stream(&self, options: GenerateOptions) -> GenerateStream {
        generate_stream(&self.registry, options)
    }

    /// Generates structured output of type `T` in one call: the output
    /// schema comes from `T` and the parsed `T` is returned (a model output
    /// that does not fit is `INVALID_ARGUMENT`).
    pub async fn generate_as<T>(&self, options: GenerateOptions) -> Result<T>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let response = generate(&self.registry, options.output::<T>()).await?;
        response.output::<T>()
    }

    /// Streams structured output of type `T`: chunks carry the partial
    /// output ([`GenerateChunk::output_as`](crate::generate::GenerateChunk::output_as)),
    /// and [`TypedGenerateStream::output`] gives the final `T`.
    pub fn generate_stream_as<T>(&self, options: GenerateOptions) -> TypedGenerateStream<T>
    where
        T: DeserializeOwned + JsonSchema,
    {
        TypedGenerateStream::new(generate_stream(&self.registry, options.output::<T>()))
    }
}
