//! Defining actions on the instance: flows, models, tools, embedders,
//! resources, named middleware, output formats (Genkit's `defineFlow`,
//! `defineModel`, `defineTool`, `defineResource`, ...).

use crate::embedder::{EmbedderAction, EmbedderOptions, define_embedder};
use crate::middleware::{GenerateMiddleware, define_middleware};
use crate::model::{
    BackgroundModel, BackgroundModelFns, Model, ModelCtx, ModelImpl, ModelOptions,
    define_background_model, define_model, define_model_impl,
};
use crate::resource::{Resource, ResourceInput, ResourceOptions, ResourceOutput, define_resource};
use crate::tool::{
    Tool, ToolCtx, ToolImpl, define_interrupt, define_multipart_tool, define_tool, define_tool_impl,
};
use crate::types::{
    EmbedRequest, EmbedResponse, GenerateRequest, GenerateResponse, MultipartToolResponse,
};
use genkit_core::Result;
use genkit_core::action::{Action, ActionCtx, Payload};
use genkit_core::flow::{FlowContext, define_flow, define_streaming_flow};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;

use crate::genkit::{Genkit, registered};

impl Genkit {
    /// Defines a flow, registered as `/flow/<name>`; schemas come from `I` and `O`.
    /// The body reaches this instance with `ctx.genkit()`.
    ///
    /// # Panics
    /// If a flow with this name is already defined or the name is invalid (a
    /// programming error, like registering two axum routes for one path). The
    /// fallible path is
    /// [`genkit::flow::define_flow`](crate::flow::define_flow), which returns
    /// the error instead.
    #[track_caller]
    pub fn define_flow<I, O, F, Fut>(&self, name: &str, body: F) -> Action<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, FlowContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered("flow", name, define_flow(self.registry(), name, body))
    }

    /// Defines a flow that streams chunks of type `S` with `ctx.send_chunk`.
    ///
    /// # Panics
    /// If a flow with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::flow::define_streaming_flow`](crate::flow::define_streaming_flow),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_streaming_flow<I, O, S, F, Fut>(&self, name: &str, body: F) -> Action<I, O, S>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        S: Payload + Serialize + JsonSchema,
        F: Fn(I, FlowContext<S>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered(
            "flow",
            name,
            define_streaming_flow(self.registry(), name, body),
        )
    }

    /// Defines a model, registered as `/model/<name>`.
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::model::define_model`](crate::model::define_model), which
    /// returns the error instead.
    #[track_caller]
    pub fn define_model<F, Fut>(&self, opts: ModelOptions, runner: F) -> Model
    where
        F: Fn(GenerateRequest, ModelCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<GenerateResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("model", &name, define_model(self.registry(), opts, runner))
    }

    /// Defines a model from a type implementing [`ModelImpl`].
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::model::define_model_impl`](crate::model::define_model_impl),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_model_impl<M: ModelImpl>(&self, model: M) -> Model {
        let name = model.options().name;
        registered("model", &name, define_model_impl(self.registry(), model))
    }

    /// Defines a background (long-running) model and its operation actions.
    ///
    /// # Panics
    /// If a model with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::model::define_background_model`](crate::model::define_background_model),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_background_model(
        &self,
        opts: ModelOptions,
        fns: BackgroundModelFns,
    ) -> BackgroundModel {
        let name = opts.name.clone();
        registered(
            "background model",
            &name,
            define_background_model(self.registry(), opts, fns),
        )
    }

    /// Defines a tool, registered as `/tool/<name>`; schemas come from `I` and `O`.
    /// The body reaches this instance with `ctx.genkit()`.
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::tool::define_tool`](crate::tool::define_tool), which returns
    /// the error instead.
    #[track_caller]
    pub fn define_tool<I, O, F, Fut>(&self, name: &str, description: &str, body: F) -> Tool<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
        F: Fn(I, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O>> + Send + 'static,
    {
        registered(
            "tool",
            name,
            define_tool(self.registry(), name, description, body),
        )
    }

    /// Defines a tool from a type implementing [`ToolImpl`].
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::tool::define_tool_impl`](crate::tool::define_tool_impl), which
    /// returns the error instead.
    #[track_caller]
    pub fn define_tool_impl<T: ToolImpl>(&self, tool: T) -> Tool<T::Input, T::Output> {
        let name = tool.name().to_owned();
        registered("tool", &name, define_tool_impl(self.registry(), tool))
    }

    /// Defines a multipart tool (`/tool.v2/<name>`), returning parts besides its output.
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::tool::define_multipart_tool`](crate::tool::define_multipart_tool),
    /// which returns the error instead.
    #[track_caller]
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
            define_multipart_tool(self.registry(), name, description, body),
        )
    }

    /// Defines an interrupt: a tool that pauses generation for the caller to
    /// answer with [`Tool::respond`].
    ///
    /// # Panics
    /// If a tool with this name is already defined or the name is invalid. The
    /// fallible path is
    /// [`genkit::tool::define_interrupt`](crate::tool::define_interrupt), which
    /// returns the error instead.
    #[track_caller]
    pub fn define_interrupt<I, O>(&self, name: &str, description: &str) -> Tool<I, O>
    where
        I: Payload + JsonSchema,
        O: Payload + JsonSchema,
    {
        registered(
            "interrupt",
            name,
            define_interrupt(self.registry(), name, description, None),
        )
    }

    /// Defines an embedder, registered as `/embedder/<name>`.
    ///
    /// # Panics
    /// If an embedder with this name is already defined or the name is invalid.
    /// The fallible path is
    /// [`genkit::embedder::define_embedder`](crate::embedder::define_embedder),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_embedder<F, Fut>(&self, opts: EmbedderOptions, runner: F) -> EmbedderAction
    where
        F: Fn(EmbedRequest, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<EmbedResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "embedder",
            &name,
            define_embedder(self.registry(), opts, runner),
        )
    }

    /// Defines a resource, registered as `/resource/<name>` (Genkit's
    /// `defineResource`): content at a fixed URI or at every URI of a
    /// template, which MCP servers publish. `body` receives the URI read.
    ///
    /// # Panics
    /// If a resource with this name is already defined, the name is invalid
    /// or the template is not supported. The fallible path is
    /// [`genkit::resource::define_resource`](crate::resource::define_resource),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_resource<F, Fut>(&self, opts: ResourceOptions, body: F) -> Resource
    where
        F: Fn(ResourceInput, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceOutput>> + Send + 'static,
    {
        let name = opts.name().to_owned();
        registered(
            "resource",
            &name,
            define_resource(self.registry(), opts, body),
        )
    }

    /// Registers a named middleware usable from serialized requests.
    pub fn define_middleware(
        &self,
        name: &str,
        description: &str,
        factory: impl Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync + 'static,
    ) {
        define_middleware(self.registry(), name, description, factory)
    }

    /// Registers a named middleware listed with a config schema (Genkit's
    /// `MiddlewareDesc`); each request's `config` is validated against it.
    /// [`define_builtin_middleware`](crate::middleware::define_builtin_middleware)
    /// registers `retry`, `fallback`, `filesystem` and `skills` this way.
    pub fn define_middleware_desc(
        &self,
        desc: crate::middleware::MiddlewareDesc,
        factory: impl Fn(Option<&Value>) -> Result<Arc<dyn GenerateMiddleware>> + Send + Sync + 'static,
    ) -> Result<()> {
        crate::middleware::define_middleware_desc(self.registry(), desc, factory)
    }

    /// Registers an output format (Genkit's `defineFormat`), so `generate`,
    /// streaming, `/util/generate` and prompts can ask for it by name.
    pub fn define_format(
        &self,
        format: impl crate::formats::Format + 'static,
    ) -> Arc<dyn crate::formats::Format> {
        crate::formats::define_format(self.registry(), format)
    }
}
