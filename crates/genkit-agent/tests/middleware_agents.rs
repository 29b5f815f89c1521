//! The `agents` and `artifacts` middleware against Genkit JS's, recorded by
//! tests-support/middleware-agents-js/record.mjs on the same scripted
//! conversation: a supervisor delegating to a researcher (calling a tool),
//! a writer (writing an artifact), a failing agent, an interrupting agent
//! and a missing one; and a supervisor limited to one delegation with the
//! `session` artifact strategy and a `toolPrefix`.

use std::sync::{Arc, OnceLock};

use genkit_agent::middleware::{
    AgentRef, AgentsMiddleware, AgentsOptions, ArtifactStrategy, ArtifactsMiddleware,
    ArtifactsOptions, define_agent_middleware, middleware_plugin, register_agent_middleware,
};
use genkit_agent::types::AgentOutput;
use genkit_agent::{AgentOptions, define_prompt_agent_with};
use genkit_core::tracing::{InMemoryTraceStore, TraceData, add_span_processor};
use genkit_core::{Error, Registry, StatusCode};
use genkit_generate::GenerateOptions;
use genkit_model::middleware::resolve_middleware;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateRequest, Message, Part, Role, ToolRequest};
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

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/middleware_agents_js.json")).unwrap()
}

/// A prompt agent generating with `model`, `system`, `tools` and
/// `middleware` (built anew per turn, as JS instantiates middleware per
/// generate call).
fn prompt_agent(
    registry: &Registry,
    name: &str,
    description: Option<&str>,
    system: &'static str,
    tools: Vec<Tool<Value, Value>>,
    middleware: impl Fn() -> Vec<Arc<dyn genkit_model::middleware::GenerateMiddleware>>
    + Send
    + Sync
    + 'static,
) {
    let mut options = AgentOptions::new();
    if let Some(d) = description {
        options = options.description(d);
    }
    let model = format!("{name}Model");
    define_prompt_agent_with(registry, name, options, move || {
        let mut opts = GenerateOptions::new().model(model.as_str()).system(system);
        for t in &tools {
            opts = opts.tool(t.clone());
        }
        for m in middleware() {
            opts = opts.use_middleware(m);
        }
        async move { Ok(opts) }
    })
    .unwrap();
}

fn search_tool() -> Tool<Value, Value> {
    Tool::from_json_schema(
        "search",
        "Searches.",
        Some(json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})),
        None,
        |input: Value, _ctx| async move {
            let q = input["q"].as_str().unwrap_or_default().to_owned();
            Ok(json!(format!(
                "Result for {q}: Rust 1.0 was released in 2015."
            )))
        },
    )
    .unwrap()
}

fn ask_user_tool() -> Tool<Value, Value> {
    Tool::from_json_schema(
        "ask_user",
        "Asks the user.",
        Some(json!({"type": "object", "properties": {"q": {"type": "string"}}})),
        None,
        |_input: Value, ctx| async move { Err(ctx.interrupt(Some(json!({"why": "need input"})))) },
    )
    .unwrap()
}

fn writer(registry: &Registry, runs: usize) {
    let mut model = ProgrammableModel::define(registry, "writerModel");
    for _ in 0..runs {
        model = model
            .respond_tool_call(
                "write_artifact",
                json!({"name": "draft.md", "content": "# Rust\nReleased 2015."}),
            )
            .respond_text("Draft written.");
    }
    prompt_agent(registry, "writer", None, "You write.", vec![], || {
        vec![Arc::new(ArtifactsMiddleware::new(
            ArtifactsOptions::default(),
        ))]
    });
}

fn call(name: &str, input: Value, r: &str) -> ToolRequest {
    ToolRequest::new(name, input).with_ref(r)
}

/// `writer_<4 chars>/draft.md` with the random invocation id masked.
fn mask(v: &Value) -> Value {
    let s = serde_json::to_string(v).unwrap();
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(i) = rest.find("writer_") {
        out.push_str(&rest[..i]);
        out.push_str("writer_XXXX");
        rest = &rest[i + "writer_".len() + 4..];
    }
    out.push_str(rest);
    serde_json::from_str(&out).unwrap()
}

fn tool_definitions(req: &GenerateRequest) -> Value {
    let mut tools: Vec<Value> = req
        .tools()
        .iter()
        .map(|t| {
            json!({"name": t.name, "description": t.description,
                   "inputSchema": t.input_schema, "outputSchema": t.output_schema})
        })
        .collect();
    tools.sort_by_key(|t| t["name"].to_string());
    Value::Array(tools)
}

fn js_tool_definitions(tools: &Value) -> Value {
    let mut tools: Vec<Value> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"name": t["name"], "description": t["description"],
                   "inputSchema": t["inputSchema"], "outputSchema": t["outputSchema"]})
        })
        .collect();
    tools.sort_by_key(|t| t["name"].to_string());
    Value::Array(tools)
}

/// The tool responses in `req`, by tool name then order (JS lists parallel
/// calls' responses as they complete, we as they were requested: the
/// middleware's answers are what is compared).
fn tool_responses(req: &GenerateRequest) -> Value {
    let mut out: Vec<Value> = req
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(Part::as_tool_response)
        .map(|r| json!({"name": r.name, "output": r.output}))
        .collect();
    out.sort_by_key(|r| r["name"].to_string());
    mask(&Value::Array(out))
}

fn sorted_js(v: &Value) -> Value {
    let mut out = v.as_array().unwrap().clone();
    out.sort_by_key(|r| r["name"].to_string());
    mask(&Value::Array(out))
}

fn system_texts(req: &GenerateRequest) -> Value {
    let system = req
        .messages
        .iter()
        .find(|m| m.role == Role::System)
        .unwrap();
    mask(&json!(system.content))
}

fn user(text: &str) -> Message {
    Message::new(Role::User, text)
}

fn final_artifacts(out: &AgentOutput) -> Value {
    mask(&json!(out.artifacts.clone().unwrap_or_default()))
}

#[tokio::test]
async fn supervisor_delegates_to_sub_agents_as_genkit_js() {
    let js = fixture();
    let traces = traces();
    let registry = Registry::new();
    register_agent_middleware(&registry);

    let researcher = ProgrammableModel::define(&registry, "researcherModel")
        .respond_tool_call("search", json!({"q": "rust release"}))
        .respond_text("Rust 1.0 shipped in 2015.");
    prompt_agent(
        &registry,
        "researcher",
        Some("Researches facts."),
        "You research.",
        vec![search_tool()],
        Vec::new,
    );
    writer(&registry, 1);
    ProgrammableModel::define(&registry, "failingModel")
        .respond_error(Error::new(StatusCode::Unknown, "model exploded"));
    prompt_agent(&registry, "failing", None, "You fail.", vec![], Vec::new);
    ProgrammableModel::define(&registry, "askingModel")
        .respond_tool_call("ask_user", json!({"q": "which year?"}));
    prompt_agent(
        &registry,
        "asking",
        None,
        "You ask.",
        vec![ask_user_tool()],
        Vec::new,
    );

    let supervisor = ProgrammableModel::define(&registry, "supervisorModel")
        .respond_tool_call(
            "delegate_to_researcher",
            json!({"task": "Find when Rust 1.0 shipped."}),
        )
        .respond_tool_call(
            "delegate_to_writer",
            json!({"task": "Write a draft about it."}),
        )
        .respond_tool_calls(vec![
            call("read_artifact", json!({"name": "missing.md"}), "a"),
            call("delegate_to_failing", json!({"task": "Fail."}), "b"),
            call("delegate_to_asking", json!({"task": "Ask."}), "c"),
            call("delegate_to_ghost", json!({"task": "Anyone?"}), "d"),
        ])
        .respond_text("All done.");
    // The supervisor names its middleware as a request would: resolved by
    // name from the registry, with JS's config.
    let reg = registry.clone();
    prompt_agent(
        &registry,
        "supervisor",
        None,
        "You supervise.",
        vec![],
        move || {
            let agents = json!({"agents": ["researcher", {"name": "writer", "description": "Writes drafts."}, "failing", "asking", "ghost"]});
            vec![
                resolve_middleware(&reg, "agents", Some(&agents)).unwrap(),
                resolve_middleware(&reg, "artifacts", Some(&json!({"readonly": true}))).unwrap(),
            ]
        },
    );

    let agent = genkit_agent::runtime::AgentAction::downcast(
        &registry
            .lookup_action("/agent/supervisor")
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let out = agent
        .run(
            Default::default(),
            [genkit_agent::types::AgentInput::message(user(
                "Report on Rust 1.0.",
            ))],
        )
        .await
        .unwrap();
    assert_eq!(out.text(), js["finalText"].as_str().unwrap());

    let reqs = supervisor.requests();
    assert_eq!(
        tool_definitions(&reqs[0]),
        js_tool_definitions(&js["supervisorTools"])
    );
    assert_eq!(
        system_texts(&reqs[0]),
        mask(&js["systemFirstTurn"]["content"])
    );
    let last = reqs.last().unwrap();
    assert_eq!(system_texts(last), mask(&js["systemLastTurn"]["content"]));
    assert_eq!(tool_responses(last), sorted_js(&js["toolResponses"]));
    // The sub-agent's artifact is the supervisor's, namespaced and sourced.
    assert_eq!(final_artifacts(&out), mask(&js["finalArtifacts"]));
    // The researcher got the task alone (no history forwarded), as in JS.
    let researcher_seen: Vec<Value> = researcher
        .requests()
        .iter()
        .map(|r| {
            json!(
                r.messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    let js_seen: Vec<Value> = js["researcherRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|msgs| {
            json!(
                msgs.as_array()
                    .unwrap()
                    .iter()
                    .map(|m| json!({"role": m["role"], "content": m["content"]}))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    assert_eq!(
        strip_refs(json!(researcher_seen)),
        strip_refs(json!(js_seen))
    );

    // The sub-agents' spans nest under the delegation tool calls: the
    // supervisor's trace shows the researcher's `search` and the writer's
    // `write_artifact` calls.
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
        .expect("under the delegation");
    assert!(path[..tool].iter().any(|n| n == "researcher"), "{path:?}");
    assert!(path[tool..].iter().any(|n| n == "supervisor"), "{path:?}");
    let write = trace
        .spans_named("write_artifact")
        .next()
        .expect("the writer's tool call");
    assert!(
        ancestry(&trace, &write.span_id)
            .iter()
            .any(|n| n == "delegate_to_writer")
    );
}

/// Tool request refs differ between the scripted models; the rest must not.
fn strip_refs(mut v: Value) -> Value {
    match &mut v {
        Value::Object(map) => {
            map.remove("ref");
            for (_, x) in map.iter_mut() {
                *x = strip_refs(x.take());
            }
        }
        Value::Array(items) => {
            for x in items.iter_mut() {
                *x = strip_refs(x.take());
            }
        }
        _ => {}
    }
    v
}

#[tokio::test]
async fn delegation_limit_and_session_strategy_as_genkit_js() {
    let js = &fixture()["limited"];
    let registry = Registry::new();
    writer(&registry, 2);
    let limited = ProgrammableModel::define(&registry, "limitedModel")
        .respond_tool_call("ask_writer", json!({"task": "Write a draft."}))
        .respond_tool_call("ask_writer", json!({"task": "Write another."}))
        .respond_text("Limited done.");
    let reg = registry.clone();
    prompt_agent(
        &registry,
        "limited",
        None,
        "You are limited.",
        vec![],
        move || {
            let options = AgentsOptions {
                agents: vec![AgentRef::Name("writer".into())],
                tool_prefix: Some("ask".into()),
                max_delegations: Some(1),
                artifact_strategy: Some(ArtifactStrategy::Session),
                ..AgentsOptions::default()
            };
            vec![Arc::new(AgentsMiddleware::new(&reg, options).unwrap())]
        },
    );
    let agent = genkit_agent::runtime::AgentAction::downcast(
        &registry
            .lookup_action("/agent/limited")
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    let out = agent
        .run(
            Default::default(),
            [genkit_agent::types::AgentInput::message(user("Go."))],
        )
        .await
        .unwrap();
    assert_eq!(out.text(), js["finalText"].as_str().unwrap());
    let reqs = limited.requests();
    assert_eq!(
        tool_definitions(&reqs[0]),
        js_tool_definitions(&js["tools"])
    );
    assert_eq!(system_texts(&reqs[0]), mask(&js["system"]["content"]));
    assert_eq!(
        tool_responses(reqs.last().unwrap()),
        sorted_js(&js["toolResponses"])
    );
    assert_eq!(final_artifacts(&out), mask(&js["finalArtifacts"]));
}

#[test]
fn agents_middleware_needs_an_agent_as_genkit_js() {
    let registry = Registry::new();
    let err = AgentsMiddleware::new(&registry, AgentsOptions::default())
        .err()
        .unwrap();
    assert_eq!(
        err.message(),
        "agents middleware requires at least one agent in the \"agents\" option."
    );
}

/// What the Reflection API lists for `agents` and `artifacts` is Genkit
/// JS's `toJson()`: name, description and config schema.
#[test]
fn listings_carry_genkit_js_config_schemas() {
    let js = fixture();
    let registry = Registry::new();
    register_agent_middleware(&registry);
    let listed = registry.list_values("middleware");
    for name in ["agents", "artifacts"] {
        assert_eq!(listed[name], js["configSchemas"][name], "{name}");
    }
}

/// A config that breaks the schema is refused before the middleware is
/// built, naming the middleware and the field.
#[test]
fn a_config_that_breaks_the_schema_names_the_field() {
    let registry = Registry::new();
    define_agent_middleware(&registry).unwrap();
    for (name, config, expected) in [
        (
            "agents",
            json!({"agents": "researcher"}),
            "- agents: must be array",
        ),
        (
            "agents",
            json!({}),
            "- (root): must have required property 'agents'",
        ),
        (
            "agents",
            json!({"agents": ["a"], "artifactStrategy": "everywhere"}),
            "- artifactStrategy: must be equal to one of the allowed values",
        ),
        (
            "agents",
            json!({"agents": [{"description": "no name"}]}),
            "- agents.0: must match a schema in anyOf",
        ),
        (
            "agents",
            json!({"agents": ["a"], "maxDelegations": "two"}),
            "- maxDelegations: must be number",
        ),
        (
            "artifacts",
            json!({"readonly": "yes"}),
            "- readonly: must be boolean",
        ),
    ] {
        let err = resolve_middleware(&registry, name, Some(&config))
            .err()
            .unwrap_or_else(|| panic!("{name} accepted {config}"));
        assert_eq!(err.status(), StatusCode::InvalidArgument, "{config}");
        let message = err.message();
        assert!(
            message.starts_with(&format!("middleware `{name}` config")),
            "{message}"
        );
        // The parse errors come before the data and the schema.
        let errors = message.split("Provided data:").next().unwrap_or_default();
        assert!(errors.contains(expected), "{expected}: {message}");
    }
    // What the schema allows still builds.
    resolve_middleware(
        &registry,
        "agents",
        Some(&json!({"agents": ["a", {"name": "b", "description": "B."}], "toolPrefix": "ask", "maxDelegations": 2, "historyLength": 4, "artifactStrategy": "session"})),
    )
    .unwrap();
    resolve_middleware(&registry, "artifacts", Some(&json!({"readonly": true}))).unwrap();
    resolve_middleware(&registry, "artifacts", None).unwrap();
}

/// The plugin registers all of `@genkit-ai/middleware` the moment it is
/// added, usable by name at once; the older registration functions still
/// work on the same registry.
#[tokio::test]
async fn the_middleware_plugin_registers_every_middleware_by_name() {
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(middleware_plugin()))
        .unwrap();
    let listed = registry.list_values("middleware");
    assert_eq!(
        listed.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "agents",
            "artifacts",
            "fallback",
            "filesystem",
            "retry",
            "skills",
            "toolApproval"
        ]
    );
    assert_eq!(listed["agents"], fixture()["configSchemas"]["agents"]);
    let mw = resolve_middleware(
        &registry,
        "agents",
        Some(&json!({"agents": ["researcher"]})),
    )
    .unwrap();
    assert_eq!(mw.name(), "agents");
    let err = resolve_middleware(&registry, "retry", Some(&json!({"maxRetries": "three"})))
        .err()
        .unwrap();
    assert!(
        err.message().contains("middleware `retry` config"),
        "{}",
        err.message()
    );
    register_agent_middleware(&registry);
    genkit_middleware::define_builtin_middleware(&registry).unwrap();
    assert_eq!(registry.list_values("middleware"), listed);
    // A second plugin of the same name is refused.
    let err = registry
        .register_plugin(Arc::new(middleware_plugin()))
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::AlreadyExists);
}

#[tokio::test]
async fn written_artifacts_persist_in_the_session_snapshot() {
    let registry = Registry::new();
    ProgrammableModel::define(&registry, "builderModel")
        .respond_tool_call(
            "write_artifact",
            json!({"name": "notes.md", "content": "first"}),
        )
        .respond_tool_call(
            "write_artifact",
            json!({"name": "notes.md", "content": "second"}),
        )
        .respond_tool_call("read_artifact", json!({"name": "notes.md"}))
        .respond_text("Built.");
    let options =
        AgentOptions::new().store(Arc::new(genkit_agent::store::InMemorySessionStore::new()));
    let agent = define_prompt_agent_with(&registry, "builder", options, || async {
        Ok(GenerateOptions::new()
            .model("builderModel")
            .use_middleware(ArtifactsMiddleware::new(ArtifactsOptions::default())))
    })
    .unwrap();
    let out = agent.chat().send(user("Build.")).await.unwrap();
    assert_eq!(out.text(), "Built.");
    let snapshot = agent
        .get_snapshot(genkit_agent::types::GetSnapshotRequest {
            snapshot_id: out.snapshot_id.clone(),
            session_id: None,
        })
        .await
        .unwrap();
    // Written once, replaced by name.
    assert_eq!(
        json!(snapshot.state.and_then(|s| s.artifacts)),
        json!([{"name": "notes.md", "parts": [{"text": "second"}]}])
    );
}

#[tokio::test]
async fn outside_an_agent_session_the_tools_answer_as_genkit_js() {
    let registry = Registry::new();
    let model = ProgrammableModel::define(&registry, "m")
        .respond_tool_calls(vec![
            call("read_artifact", json!({"name": "x"}), "a"),
            call("write_artifact", json!({"name": "x", "content": "c"}), "b"),
        ])
        .respond_text("ok");
    let r = genkit_generate::generate(
        &registry,
        GenerateOptions::prompt("go")
            .model("m")
            .use_middleware(ArtifactsMiddleware::new(ArtifactsOptions::default())),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "ok");
    let reqs = model.requests();
    assert_eq!(
        tool_responses(&reqs[1]),
        json!([
            {"name": "read_artifact", "output": {"name": "x", "content": "Error: no active session.", "found": false}},
            {"name": "write_artifact", "output": {"status": "Error: no active session."}},
        ])
    );
    // Without a session the listing says there are no artifacts.
    assert_eq!(
        system_texts(&reqs[0]),
        json!([{"text": "<artifacts>\nNo artifacts are currently available in the session.\n</artifacts>",
                "metadata": {"artifacts-middleware-listing": true}}])
    );
}

#[test]
fn readonly_artifacts_offer_read_artifact_only() {
    use genkit_model::middleware::GenerateMiddleware;
    let names = |m: ArtifactsMiddleware| -> Vec<String> {
        m.tools().iter().map(|t| t.name().to_owned()).collect()
    };
    assert_eq!(
        names(ArtifactsMiddleware::new(ArtifactsOptions {
            readonly: Some(true)
        })),
        ["read_artifact"]
    );
    assert_eq!(
        names(ArtifactsMiddleware::new(ArtifactsOptions::default())),
        ["read_artifact", "write_artifact"]
    );
}

#[tokio::test]
async fn history_goes_to_a_client_managed_sub_agent_as_genkit_js() {
    let js = fixture();
    let registry = Registry::new();
    let listener = ProgrammableModel::define(&registry, "listenerModel").respond_text("Heard.");
    prompt_agent(&registry, "listener", None, "You listen.", vec![], Vec::new);
    ProgrammableModel::define(&registry, "historianModel")
        .respond_text("Noted.")
        .respond_tool_call("delegate_to_listener", json!({"task": "Summarize."}))
        .respond_text("Historian done.");
    let reg = registry.clone();
    prompt_agent(
        &registry,
        "historian",
        None,
        "You keep history.",
        vec![],
        move || {
            let options = AgentsOptions {
                agents: vec![AgentRef::Name("listener".into())],
                history_length: Some(2),
                ..AgentsOptions::default()
            };
            vec![Arc::new(AgentsMiddleware::new(&reg, options).unwrap())]
        },
    );
    let action = registry
        .lookup_action("/agent/historian")
        .await
        .unwrap()
        .unwrap();
    let agent = genkit_agent::runtime::AgentAction::downcast(&action).unwrap();
    let first = agent
        .run(
            Default::default(),
            [genkit_agent::types::AgentInput::message(user(
                "First fact: Rust 1.0 shipped in 2015.",
            ))],
        )
        .await
        .unwrap();
    let init = genkit_agent::types::AgentInit {
        state: first.state.clone(),
        ..Default::default()
    };
    let second = agent
        .run(
            init,
            [genkit_agent::types::AgentInput::message(user(
                "Delegate a summary.",
            ))],
        )
        .await
        .unwrap();
    assert_eq!(second.text(), "Historian done.");
    let seen: Vec<Value> = listener
        .requests()
        .iter()
        .map(|r| {
            json!(
                r.messages
                    .iter()
                    .map(|m| json!({"role": m.role, "content": m.content}))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    let js_seen: Vec<Value> = js["listenerRequests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|msgs| {
            json!(
                msgs.as_array()
                    .unwrap()
                    .iter()
                    .map(|m| json!({"role": m["role"], "content": m["content"]}))
                    .collect::<Vec<_>>()
            )
        })
        .collect();
    assert_eq!(json!(seen), json!(js_seen));
}
