//! The scripted workloads of the benchmarks, shared by the criterion benches
//! and the `peer` binary, and written to do exactly what bench/js does.

use genkit::agent::types::AgentInput;
use genkit::agent::{Agent, AgentChat, AgentOptions};
use genkit::model::{ModelCtx, ModelOptions};
use genkit::prelude::*;
use genkit::tool::Tool;
use genkit::tracing::{RecordedSpan, add_span_processor};
use genkit::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, ModelSupports, Role,
    ToolRequest,
};
use genkit_server::telemetry::{BatchConfig, BatchProcessor, ExportError, SpanSink, trace_bodies};
use std::sync::Arc;

/// The Genkit telemetry exporter minus the network: the real
/// [`BatchProcessor`] (bounded queue, background worker) in front of a sink
/// that does what `TraceServerSink` does to a batch before posting it
/// ([`trace_bodies`]: group by trace, write each `TraceData`) and then drops
/// the bytes. What the
/// request path pays is exactly what it pays with the real exporter; the
/// serialization runs on the worker, as in production.
struct SerializingSink;

impl SpanSink for SerializingSink {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn export(
        &self,
        spans: Vec<Arc<RecordedSpan>>,
    ) -> futures::future::BoxFuture<'_, Result<(), ExportError>> {
        Box::pin(async move {
            std::hint::black_box(trace_bodies(&spans));
            Ok(())
        })
    }
}

/// Installs the exporter, so every span is recorded and exported. Its worker
/// runs on a runtime of its own (one thread), as an exporter in a
/// multi-threaded server runs beside the requests rather than between them.
pub fn install_exporter() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("exporter runtime");
        rt.block_on(async move {
            let processor =
                BatchProcessor::spawn(Arc::new(SerializingSink), BatchConfig::default())
                    .expect("exporter starts");
            tx.send(processor).expect("handing over the exporter");
            std::future::pending::<()>().await
        });
    });
    let processor: Arc<BatchProcessor> = rx.recv().expect("exporter started");
    add_span_processor(processor.clone());
    let _ = EXPORTER.set(processor);
}

static EXPORTER: std::sync::OnceLock<Arc<BatchProcessor>> = std::sync::OnceLock::new();

/// Spans the installed exporter accepted and dropped (a full queue drops:
/// a bench figure is honest only if this stays 0).
pub fn exporter_counts() -> Option<(u64, u64)> {
    EXPORTER.get().map(|p| {
        let s = p.stats();
        (s.queued, s.dropped)
    })
}

/// A registry with flow `echo` (input returned as is).
pub fn flow_echo() -> Genkit {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_flow("echo", |s: String, _ctx| async move { Ok(s) });
    ai
}

/// One call of `/flow/echo` looked up in the registry and run on JSON.
pub async fn call_flow_echo(ai: &Genkit) -> Value {
    let action = ai
        .registry()
        .lookup_action("/flow/echo")
        .await
        .expect("lookup")
        .expect("registered");
    action
        .run_json(json!("hello"), Default::default())
        .await
        .expect("runs")
        .output
}

fn text(t: &str) -> GenerateResponse {
    GenerateResponse::new(Message::model(t), FinishReason::Stop)
}

/// A model `scripted` answering `hello`.
pub fn generate_plain() -> Genkit {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_model(ModelOptions::new("scripted"), |_req, _ctx| async {
        Ok(text("hello"))
    });
    ai
}

/// One plain generate.
pub async fn call_generate_plain(ai: &Genkit) -> String {
    ai.generate(GenerateOptions::prompt("hi").model("scripted"))
        .await
        .expect("generates")
        .text()
}

/// Input of the two benchmark tools.
#[derive(Deserialize, Serialize, JsonSchema)]
pub struct X {
    /// A number.
    pub x: f64,
}

/// A model that asks for `toolA` and `toolB` on each of three turns, then
/// answers `done` (the turn is the number of tool messages so far).
pub fn generate_tools() -> (Genkit, Tool<X, String>, Tool<X, String>) {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    let a = ai.define_tool("toolA", "tool A", |i: X, _ctx| async move {
        Ok(format!("a{}", i.x))
    });
    let b = ai.define_tool("toolB", "tool B", |i: X, _ctx| async move {
        Ok(format!("b{}", i.x))
    });
    ai.define_model(
        ModelOptions::new("scripted").supports(ModelSupports {
            tools: Some(true),
            multiturn: Some(true),
            ..Default::default()
        }),
        |req: GenerateRequest, _ctx| async move {
            let turns = req.messages.iter().filter(|m| m.role == Role::Tool).count();
            if turns < 3 {
                let t = turns + 1;
                let calls = vec![
                    Part::tool_request(
                        ToolRequest::new("toolA", json!({"x": t})).with_ref(format!("a{t}")),
                    ),
                    Part::tool_request(
                        ToolRequest::new("toolB", json!({"x": t})).with_ref(format!("b{t}")),
                    ),
                ];
                return Ok(GenerateResponse::new(
                    Message::model(calls),
                    FinishReason::Stop,
                ));
            }
            Ok(text("done"))
        },
    );
    (ai, a, b)
}

/// One generate with three tool turns (four model calls, six tool runs).
pub async fn call_generate_tools(ai: &Genkit, a: &Tool<X, String>, b: &Tool<X, String>) -> String {
    ai.generate(
        GenerateOptions::prompt("go")
            .model("scripted")
            .tool(a)
            .tool(b),
    )
    .await
    .expect("generates")
    .text()
}

/// Chunks the streaming model sends.
pub const STREAM_CHUNKS: usize = 1000;

/// A model that streams 1000 one-character chunks, then answers with their text.
pub fn generate_stream() -> Genkit {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_model(
        ModelOptions::new("streamer"),
        |_req, ctx: ModelCtx| async move {
            for _ in 0..STREAM_CHUNKS {
                ctx.send_chunk(GenerateResponseChunk::new(vec![Part::text("x")]));
            }
            Ok(text(&"x".repeat(STREAM_CHUNKS)))
        },
    );
    ai
}

/// One streamed generate, consuming every chunk; returns the chunk count.
pub async fn call_generate_stream(ai: &Genkit) -> usize {
    let mut stream = ai.generate_stream(GenerateOptions::prompt("hi").model("streamer"));
    let mut n = 0;
    while let Some(c) = stream.next().await {
        c.expect("chunk");
        n += 1;
    }
    stream.response().await.expect("response");
    n
}

/// Turns per operation of the `agent_session_50` workload.
pub const AGENT_SESSION_TURNS: usize = 50;

/// A registry with model `scripted` (always answers "hello") and prompt agent
/// `assistant` on it, keeping its sessions in an in-memory store (server
/// managed), as bench/js/agent_turn.mjs defines it.
pub fn agent_assistant() -> (Genkit, Agent) {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_model(ModelOptions::new("scripted"), |_req, _ctx| async {
        Ok(text("hello"))
    });
    let prompt = ai.define_prompt::<Value, Value>(
        genkit::prompt::PromptConfig::new("assistant").model("scripted"),
    );
    let store = Arc::new(genkit::agent::store::InMemorySessionStore::new());
    let agent = ai.define_prompt_agent("assistant", &prompt, AgentOptions::new().store(store));
    (ai, agent)
}

/// One streamed chat turn: sends "hi", consumes every chunk, returns the
/// reply's text.
pub async fn agent_chat_turn(chat: &AgentChat) -> String {
    let mut turn = chat.send_stream(AgentInput::message(Message::user("hi")));
    while let Some(chunk) = turn.next().await {
        std::hint::black_box(chunk.expect("chunk"));
    }
    let output = turn.output().await.expect("agent turn");
    output.message.map(|m| m.text()).unwrap_or_default()
}

/// One turn on a fresh session.
pub async fn call_agent_turn(agent: &Agent) -> String {
    agent_chat_turn(&agent.chat()).await
}

/// One session of [`AGENT_SESSION_TURNS`] turns, the history growing; returns
/// how many turns were answered "hello".
pub async fn call_agent_session(agent: &Agent) -> usize {
    let chat = agent.chat();
    let mut answered = 0;
    for _ in 0..AGENT_SESSION_TURNS {
        if agent_chat_turn(&chat).await == "hello" {
            answered += 1;
        }
    }
    answered
}

/// The vector benchmarks' data (`vector_bench`, `hnsw_sweep`): `count`
/// vectors of `dims` values in [-1, 1) from a fixed-seed xorshift32, so
/// both binaries, and bench/vectors/bench.mjs, index the same documents.
pub fn xorshift_vectors(seed: u32, count: usize, dims: usize) -> Vec<Vec<f32>> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            (0..dims)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (f64::from(x) / 4_294_967_296.0 * 2.0 - 1.0) as f32
                })
                .collect()
        })
        .collect()
}

/// The first `count` vectors of `dims` values in a file of little-endian
/// `f32`s with no header (what `genkit-local-embedder`'s `embed_corpus`
/// example writes). A file still being appended to may end inside a
/// vector: whole vectors count.
pub fn file_vectors(path: &str, count: usize, dims: usize) -> Result<Vec<Vec<f32>>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let row = dims * 4;
    let available = bytes.len() / row;
    if count > available {
        return Err(format!("{path}: {available} vectors, {count} needed"));
    }
    Ok(bytes[..count * row]
        .chunks_exact(row)
        .map(|v| {
            v.chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .collect())
}
