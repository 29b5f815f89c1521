//! Every item of the facade by its one path: a re-export removed or moved
//! by accident fails to compile here. The prelude's items are the same
//! items as their module paths.
#![allow(unused_imports)]

// The root: the instance, the error type and the version.
use genkit::{ActionCtxExt, Error, GENKIT_VERSION, Genkit, GenkitBuilder, Result};

// Actions and what they run with.
use genkit::action::{
    Action, ActionCtx, ActionDesc, ActionKey, ActionKind, ActionResult, ActionStream, BidiAction,
    Cancellation, CancellationToken, ChunkSender, DynAction, ErasedAction, IntoDynAction, Payload,
    RunOptions,
};
use genkit::context::{ActionContext, Extensions, RunLease};
use genkit::flow::{FlowContext, define_flow, define_streaming_flow};
use genkit::plugin::Plugin;
use genkit::registry::{Registry, WeakRegistry};
use genkit::schema::schema_for;
use genkit::status::StatusCode;
use genkit::tracing::{RecordedSpan, SpanId, TraceId, add_span_processor, run};

// Generation, models, tools, wire types, middleware.
use genkit::embedder::{EmbedderAction, EmbedderOptions, define_embedder, embed, embed_many};
use genkit::formats::{Format, OutputFormat, define_format};
use genkit::generate::{
    GenerateChunk, GenerateOptions, GenerateStream, ToolErrorPolicy, TypedGenerateStream, generate,
    generate_stream,
};
use genkit::middleware::{
    Filesystem, FilesystemOptions, MiddlewareDesc, MiddlewarePlugin, Skills, SkillsOptions,
    define_builtin_middleware, define_middleware_desc, filesystem, middleware_plugin, skills,
};
use genkit::middleware::{
    GenerateMiddleware, approve, define_middleware, history_policy, retry, tool_approval,
    tool_cache,
};
use genkit::model::{
    BackgroundModel, BackgroundModelFns, Model, ModelCtx, ModelImpl, ModelOptions, ModelRef,
    define_background_model, define_model, define_model_impl,
};
use genkit::testing::ProgrammableModel;
use genkit::tool::{
    Tool, ToolCtx, ToolImpl, ToolInterrupt, define_interrupt, define_multipart_tool, define_tool,
    define_tool_impl,
};
use genkit::types::{
    DocumentData, FinishReason, GenerateRequest, GenerateResponse, Message, Part, Role,
    ToolRequest, ToolResponse,
};

// Prompts.
use genkit::prompt::{
    ExecutablePrompt, PromptConfig, define_partial, define_prompt, define_schema, define_schema_for,
};

// Agents.
use genkit::agent::effect::{EffectError, INTERRUPT_ID_KEY, run_once};
use genkit::agent::input_check::{check_message, check_resume};
use genkit::agent::json_patch::{JsonPatch, JsonPatchOperation};
use genkit::agent::store::{InMemorySessionStore, SessionStore};
use genkit::agent::types::{AgentInit, AgentInput, AgentOutput, AgentResult, SessionSnapshot};
use genkit::agent::{
    Agent, AgentAction, AgentChat, AgentOptions, AgentSession, AgentTurnStream, ClientTransform,
    define_agent, define_prompt_agent,
};

// Retrieval and evaluation.
use genkit::evaluator::{
    EvaluateOptions, Evaluator, EvaluatorOptions, builtin, define_answer_relevancy,
    define_evaluator, define_faithfulness, evaluate,
};
use genkit::retrieval::chunk::{ChunkOptions, chunk_text};
use genkit::retrieval::indexer::{IndexOptions, Indexer, IndexerOptions, define_indexer};
use genkit::retrieval::local_vector_store::{
    LocalVectorStore, LocalVectorStoreOptions, define_local_vector_store,
};
use genkit::retrieval::reranker::{RerankOptions, Reranker, RerankerOptions, define_reranker};
use genkit::retrieval::retriever::{
    RetrieveOptions, Retriever, RetrieverOptions, define_retriever,
};
use genkit::retrieval::simple_retriever::{SimpleRetrieverOptions, define_simple_retriever};

#[cfg(feature = "sql-store")]
use genkit::stores::{SqliteSessionStore, default_sqlite_path, open_store};

/// Compiles only if `a` and `b` have the same type.
fn same<T>(_a: &T, _b: &T) {}

#[test]
fn the_prelude_names_the_same_items_as_their_modules() {
    use genkit::prelude as p;
    same(
        &p::GenerateOptions::prompt("hi"),
        &genkit::generate::GenerateOptions::prompt("hi"),
    );
    same(&p::Message::user("hi"), &genkit::types::Message::user("hi"));
    same(&p::Part::text("hi"), &genkit::types::Part::text("hi"));
    same(&p::Error::internal("x"), &genkit::Error::internal("x"));
    let ok: p::Result<()> = Ok(());
    same(&ok, &genkit::Result::<()>::Ok(()));
    assert!(GENKIT_VERSION.starts_with("rust/"));
}

/// `genkit::middleware::middleware_plugin` is the agent crate's (all of
/// `@genkit-ai/middleware`, `agents` and `artifacts` included), not
/// genkit-middleware's narrower one of the same name.
#[test]
fn the_middleware_plugin_is_the_one_with_agents() {
    let p: MiddlewarePlugin = middleware_plugin();
    let ai = genkit::Genkit::builder()
        .no_prompt_dir()
        .plugin(p)
        .build()
        .unwrap();
    let listed = ai.registry().list_values("middleware");
    for name in ["agents", "artifacts", "filesystem", "toolApproval"] {
        assert!(listed.contains_key(name), "{name}: {listed:?}");
    }
}
