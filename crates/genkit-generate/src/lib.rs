//! `generate`: model calls with the automatic tool loop, structured output,
//! streaming and middleware; and the `/util/generate` action that exposes the
//! same engine to Genkit's tools.

mod engine;
mod history;
mod options;
mod resources;
mod stream;
mod tools;
mod trace;

pub use engine::DEFAULT_MAX_TURNS;
pub use history::{conversation_from, take_conversation, take_history_from};
pub use options::{
    DEFAULT_MAX_TURNS_CAP, DEFAULT_TOOL_CONCURRENCY, GenerateOptions, LoopLimits, ToolErrorPolicy,
};
pub use stream::{GenerateChunk, GenerateStream};

use engine::{Engine, LoopState};
use genkit_core::action::{ActionCtx, ChunkCallback};
use genkit_core::tracing::{current_cancellation, current_context};
use genkit_core::{
    Action, ActionDesc, ActionKind, ActionStream, DynAction, Error, Registry, Result,
};
use genkit_model::middleware::{GenerateCallCtx, GenerateMiddleware, resolve_middleware};
use genkit_model::tool::ToolArg;
use genkit_model::types::{GenerateActionOptions, GenerateResponse, GenerateResponseChunk};
use std::future::Future;
use std::sync::Arc;

/// Generates a response, running requested tools until the model answers
/// (up to `max_turns`).
///
/// Of the messages given, only the last may come back changed (see
/// [`take_history_from`]); the rest of the conversation is appended.
pub fn generate(
    registry: &Registry,
    options: GenerateOptions,
) -> impl Future<Output = Result<GenerateResponse>> + Send + 'static {
    run(registry, options, None)
}

/// Like [`generate`], streaming chunks; read them from the returned stream,
/// then call [`GenerateStream::response`].
pub fn generate_stream(registry: &Registry, options: GenerateOptions) -> GenerateStream {
    let format = options.output.as_ref().and_then(|o| o.format.clone());
    let schema = options.output.as_ref().and_then(|o| o.json_schema.clone());
    let parser = stream_parser(registry, format.as_deref(), schema.as_ref());
    let registry = registry.clone();
    let inner = ActionStream::new(move |cb| Box::pin(run(&registry, options, Some(cb))));
    GenerateStream::new(inner, parser)
}

/// The parser of a stream's partial output, with the format found in
/// `registry`. A bad format is reported by the run itself; here it only
/// means no parsing.
pub fn stream_parser(
    registry: &Registry,
    format: Option<&str>,
    schema: Option<&serde_json::Value>,
) -> Option<Box<dyn genkit_model::formats::FormatHandler>> {
    genkit_model::formats::format_handler(registry, format, schema)
        .ok()
        .flatten()
}

/// One `generate` call. The options are turned into the engine's inputs
/// before the returned future is built, so the (large) options are never
/// part of its state.
fn run(
    registry: &Registry,
    mut options: GenerateOptions,
    on_chunk: Option<ChunkCallback<GenerateResponseChunk>>,
) -> impl Future<Output = Result<GenerateResponse>> + Send + 'static {
    // A child registry per call holds the tools given by value.
    let child = registry.child();
    let tools = std::mem::take(&mut options.tools);
    let tool_names = tools
        .iter()
        .map(|t| match t {
            ToolArg::Name(n) => n.clone(),
            ToolArg::Action(a) => a.name().to_owned(),
        })
        .collect();
    let ctx = GenerateCallCtx {
        on_chunk,
        context: options.context.take().unwrap_or_else(current_context),
        cancel: options.cancel.take().or_else(current_cancellation).into(),
    };
    let middleware = std::mem::take(&mut options.middleware);
    let tool_errors = options.tool_errors;
    let limits = options.limits;
    let tool_choice_once = options.tool_choice_once;
    let raw = options.into_action_options(tool_names).map(Box::new);
    async move {
        let raw = raw?;
        for tool in &tools {
            if let ToolArg::Action(a) = tool {
                register_dynamic_tool(&child, a).await?;
            }
        }
        let engine = Engine::new(child, middleware, tool_errors, limits, tool_choice_once);
        engine.run(raw, LoopState::default(), ctx).await
    }
}

/// Registers a tool given by value in the call's child registry (once, if
/// the same tool is given twice); a different tool under a registered
/// tool's key is an error.
async fn register_dynamic_tool(child: &Registry, tool: &DynAction) -> Result<()> {
    let key = tool.key();
    match child.lookup_action(&key).await? {
        Some(existing) if Arc::ptr_eq(&existing, tool) => Ok(()),
        Some(_) if child.registered_actions().contains_key(&key) => {
            Err(Error::invalid_argument(format!(
                "Cannot provide two tools with the same name: '{}'",
                tool.name()
            )))
        }
        _ => child.register(tool.clone()).map(drop),
    }
}

/// Runs the engine on serializable options (what `/util/generate` does),
/// resolving middleware named in `options.use`.
pub async fn generate_action_options(
    registry: &Registry,
    options: GenerateActionOptions,
    extra_middleware: Vec<Arc<dyn GenerateMiddleware>>,
    ctx: ActionCtx<GenerateResponseChunk>,
) -> Result<GenerateResponse> {
    let child = registry.child();
    let mut middleware = Vec::new();
    for r in options.middleware.iter().flatten() {
        middleware.push(resolve_middleware(&child, &r.name, r.config.as_ref())?);
    }
    middleware.extend(extra_middleware);
    let call = GenerateCallCtx {
        on_chunk: ctx.chunks.callback(),
        context: ctx.context,
        cancel: ctx.cancel,
    };
    let engine = Engine::new(
        child,
        middleware,
        ToolErrorPolicy::Fail,
        LoopLimits::default().with_wire_messages(),
        false,
    );
    engine
        .run(Box::new(options), LoopState::default(), call)
        .await
}

/// The typed `/util/generate` action.
pub type GenerateAction = Action<GenerateActionOptions, GenerateResponse, GenerateResponseChunk>;

/// Registers `/util/generate`: the whole engine as an action, so Genkit's
/// tools (and remote callers) can run it on JSON options.
pub fn define_generate_action(registry: &Registry) -> Result<GenerateAction> {
    let mut desc = ActionDesc::new(ActionKind::Util, "generate");
    desc.input_schema = Some(genkit_core::schema::schema_for::<GenerateActionOptions>());
    desc.output_schema = Some(genkit_core::schema::schema_for::<GenerateResponse>());
    desc.stream_schema = Some(genkit_core::schema::schema_for::<GenerateResponseChunk>());
    let reg = registry.clone();
    let action = Action::from_desc_typed(desc, move |options: GenerateActionOptions, ctx| {
        let reg = reg.clone();
        async move { generate_action_options(&reg, options, Vec::new(), ctx).await }
    });
    registry.register(&action)?;
    Ok(action)
}
