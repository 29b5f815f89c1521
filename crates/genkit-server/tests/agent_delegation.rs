//! A supervisor agent delegating to two sub-agents (the `agents`
//! middleware), served over HTTP and driven by Genkit JS's own agent client
//! (`remoteAgent` from `genkit/beta/client`): the answer, the sub-agent's
//! artifact in the supervisor's session, and the sub-agents' tool calls in
//! the supervisor's trace, nested under the delegation tool calls.
//! Skips (saying so) only when `node` or `npm` is not installed.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use genkit_agent::middleware::{
    AgentsMiddleware, AgentsOptions, ArtifactsMiddleware, ArtifactsOptions,
};
use genkit_agent::store::InMemorySessionStore;
use genkit_agent::{AgentOptions, define_prompt_agent_with};
use genkit_core::Registry;
use genkit_core::tracing::{InMemoryTraceStore, TraceData, add_span_processor};
use genkit_generate::GenerateOptions;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_server::FlowServer;
use serde_json::{Value, json};

fn traces() -> &'static Arc<InMemoryTraceStore> {
    static STORE: OnceLock<Arc<InMemoryTraceStore>> = OnceLock::new();
    STORE.get_or_init(|| {
        let store = Arc::new(InMemoryTraceStore::default());
        add_span_processor(store.clone());
        store
    })
}

/// Names of the spans from `span_id` up to the root.
fn ancestry(trace: &TraceData, span_id: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut next = Some(span_id.to_owned());
    while let Some(id) = next {
        let Some(span) = trace.spans.get(&id) else {
            break;
        };
        names.push(span.display_name.clone());
        next = span.parent_span_id.clone();
    }
    names
}

fn agents(registry: &Registry) {
    let store = || AgentOptions::new().store(Arc::new(InMemorySessionStore::new()));
    ProgrammableModel::define(registry, "researcherModel")
        .respond_tool_call("search", json!({"q": "rust release"}))
        .respond_text("Rust 1.0 shipped in 2015.");
    let search = Tool::from_json_schema(
        "search",
        "Searches.",
        Some(json!({"type": "object", "properties": {"q": {"type": "string"}}})),
        None,
        |_input: Value, _ctx| async move { Ok(json!("Rust 1.0 was released in 2015.")) },
    )
    .unwrap();
    define_prompt_agent_with(
        registry,
        "researcher",
        store().description("Researches facts."),
        move || {
            let search = search.clone();
            async move {
                Ok(GenerateOptions::new()
                    .model("researcherModel")
                    .system("You research.")
                    .tool(search))
            }
        },
    )
    .unwrap();
    ProgrammableModel::define(registry, "writerModel")
        .respond_tool_call(
            "write_artifact",
            json!({"name": "draft.md", "content": "# Rust\nReleased 2015."}),
        )
        .respond_text("Draft written.");
    define_prompt_agent_with(registry, "writer", store(), || async {
        Ok(GenerateOptions::new()
            .model("writerModel")
            .system("You write.")
            .use_middleware(ArtifactsMiddleware::new(ArtifactsOptions::default())))
    })
    .unwrap();
    ProgrammableModel::define(registry, "supervisorModel")
        .respond_tool_call(
            "delegate_to_researcher",
            json!({"task": "Find when Rust 1.0 shipped."}),
        )
        .respond_tool_call("delegate_to_writer", json!({"task": "Write a draft."}))
        .respond_text("All done.");
    let reg = registry.clone();
    define_prompt_agent_with(registry, "supervisor", store(), move || {
        let options: AgentsOptions =
            serde_json::from_value(json!({"agents": ["researcher", "writer"]})).unwrap();
        let middleware = AgentsMiddleware::new(&reg, options);
        async move {
            Ok(GenerateOptions::new()
                .model("supervisorModel")
                .system("You supervise.")
                .use_middleware(middleware?))
        }
    })
    .unwrap();
}

#[tokio::test]
async fn remote_agent_drives_a_supervisor_delegating_to_sub_agents() {
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let has = |cmd: &str| {
        std::process::Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        eprintln!(
            "SKIPPED: node and npm are required for the remoteAgent test (not found on PATH)"
        );
        return;
    }
    if !js.join("node_modules/genkit/package.json").exists() {
        let st = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&js)
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js.display());
    }
    let traces = traces();
    let registry = Registry::new();
    agents(&registry);
    let mut server = common::start(FlowServer::new(&registry).agent("supervisor")).await;
    let out = tokio::process::Command::new("node")
        .arg(js.join("agent_delegation.mjs"))
        .arg(server.url("/supervisor"))
        .current_dir(&js)
        .output()
        .await
        .expect("running node");
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let answer: Value = serde_json::from_str(stdout.trim()).expect("the client's JSON line");
    assert_eq!(answer["text"], "All done.", "{answer}");
    assert_eq!(answer["finishReason"], "stop", "{answer}");
    // The writer's artifact is the supervisor's session's, namespaced by
    // the delegation (`writer_<id>/draft.md`) and sourced.
    let artifacts = answer["artifacts"].as_array().expect("artifacts");
    assert_eq!(artifacts.len(), 1, "{answer}");
    let name = artifacts[0]["name"].as_str().unwrap_or_default();
    assert!(
        name.starts_with("writer_") && name.ends_with("/draft.md"),
        "{answer}"
    );
    assert_eq!(artifacts[0]["metadata"]["source"], "writer", "{answer}");

    // The sub-agents ran under the delegation tool calls of the supervisor's
    // turn: their tool calls are in its trace.
    let trace = traces
        .trace_ids()
        .into_iter()
        .filter_map(|id| traces.get(&id))
        .find(|t| t.spans_named("delegate_to_researcher").next().is_some())
        .expect("the supervisor's trace");
    let search = trace
        .spans_named("search")
        .next()
        .expect("the researcher's tool call");
    let path = ancestry(&trace, &search.span_id);
    let tool = path
        .iter()
        .position(|n| n == "delegate_to_researcher")
        .expect("search under the delegation");
    assert!(path[..tool].iter().any(|n| n == "researcher"), "{path:?}");
    assert!(path[tool..].iter().any(|n| n == "supervisor"), "{path:?}");
    let write = trace
        .spans_named("write_artifact")
        .next()
        .expect("the writer's tool call");
    assert!(
        ancestry(&trace, &write.span_id)
            .iter()
            .any(|n| n == "delegate_to_writer"),
        "write_artifact under the writer's delegation"
    );
}
