//! Agents (bidirectional actions and their snapshot and abort companions)
//! served over HTTP and the Reflection API, replaying what Genkit JS 1.42
//! answered in `genkit-agent/tests/genkit_js_agent/recorded.jsonl` (`http` and
//! `reflection` records).
//!
//! The agents here are fixtures: each call plays the chunks and the outcome
//! Genkit JS's agent produced for the recorded request (the agent runtime is
//! tested on its own); what is under test is the serving layer: routes,
//! request bodies (`init` beside the input), SSE framing, JSON bodies,
//! Reflection API lines, status codes and how errors surface. Each call also
//! checks that the action received the recorded init and input.
//!
//! Deliberate difference: a request the action's schema refuses (no `init`,
//! an abort without `snapshotId`) is answered 400 `INVALID_ARGUMENT` (over
//! the Reflection API, code 3) where Genkit JS answers 500 `INTERNAL` (code
//! 13), as for every flow this server serves.

mod common;

use futures::StreamExt;
use genkit_core::action::{ActionCtx, BidiAction, BidiInputs};
use genkit_core::{Action, ActionDesc, ActionKind, Error, Registry, StatusCode};
use genkit_server::FlowServer;
use genkit_server::reflection::{self, ReflectionState};
use serde_json::{Map, Value, json};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

fn records() -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../genkit-agent/tests/genkit_js_agent/recorded.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn header(records: &[Value]) -> &Value {
    records
        .iter()
        .find(|r| r["kind"] == "header")
        .expect("a header line")
}

/// What one call of a fixture action plays.
struct Script {
    chunks: Vec<Value>,
    outcome: Result<Value, Error>,
}

/// What a fixture action was called with: the init (agents only) and inputs.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    key: String,
    init: Option<Value>,
    inputs: Vec<Value>,
}

/// The scripts the next calls play and the calls seen, shared by every
/// fixture action of a registry.
#[derive(Default, Clone)]
struct Fixture {
    scripts: Arc<Mutex<VecDeque<Script>>>,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl Fixture {
    fn push(&self, script: Script) {
        self.scripts.lock().unwrap().push_back(script);
    }

    /// Forgets scripts no call played; says whether there were any.
    fn unplayed(&self) -> bool {
        let mut s = self.scripts.lock().unwrap();
        let any = !s.is_empty();
        s.clear();
        any
    }

    fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }

    fn play(&self, call: Call, ctx: &ActionCtx<Value>) -> Result<Value, Error> {
        self.calls.lock().unwrap().push(call);
        let script = self
            .scripts
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| Error::internal("the fixture has no script for this call"))?;
        for c in script.chunks {
            ctx.send_chunk(c);
        }
        script.outcome
    }

    /// Registers `/agent/<name>`, `/agent-snapshot/<name>` and
    /// `/agent-abort/<name>` with the descriptors and schemas Genkit JS gave
    /// them.
    fn register(&self, registry: &Registry, header: &Value, name: &str) {
        let described = |kind: ActionKind| {
            let key = format!("/{}/{name}", kind.as_str());
            let mut desc = ActionDesc::new(kind, name);
            let listed = header["actions"]
                .as_array()
                .and_then(|a| a.iter().find(|d| d["key"] == key.as_str()))
                .unwrap_or_else(|| panic!("{key} is not in the header"));
            if let Some(d) = listed["description"].as_str() {
                desc = desc.with_description(d);
            }
            if let Some(m) = listed["metadata"].as_object() {
                desc.metadata.extend(m.clone());
            }
            // Every agent's schemas are the same; the header has one set.
            let schemas = header["schemas"]
                .as_object()
                .and_then(|s| {
                    s.iter()
                        .find(|(k, _)| k.starts_with(&format!("/{}/", kind.as_str())))
                })
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| panic!("no schemas for {key}"));
            desc.input_schema = schemas.get("inputSchema").cloned();
            desc.output_schema = schemas.get("outputSchema").cloned();
            desc.init_schema = schemas.get("initSchema").cloned();
            desc.stream_schema = schemas.get("streamSchema").cloned();
            (key, desc)
        };
        let (key, desc) = described(ActionKind::Agent);
        let me = self.clone();
        let agent = BidiAction::from_desc(
            desc,
            move |init: Value, mut inputs: BidiInputs<Value>, ctx: ActionCtx<Value>| {
                let me = me.clone();
                let key = key.clone();
                async move {
                    let mut seen = Vec::new();
                    while let Some(input) = inputs.next().await {
                        seen.push(input?);
                    }
                    let call = Call {
                        key,
                        init: Some(init),
                        inputs: seen,
                    };
                    me.play(call, &ctx)
                }
            },
        )
        .expect("the recorded agent schemas compile");
        registry.register(&agent).unwrap();
        for kind in [ActionKind::AgentSnapshot, ActionKind::AgentAbort] {
            let (key, desc) = described(kind);
            let me = self.clone();
            let action = Action::from_desc(desc, move |input: Value, ctx: ActionCtx<Value>| {
                let call = Call {
                    key: key.clone(),
                    init: None,
                    inputs: vec![input],
                };
                let outcome = me.play(call, &ctx);
                async move { outcome }
            })
            .expect("the recorded schemas compile");
            registry.register(&action).unwrap();
        }
    }
}

/// A scripted failure the servers must not reveal (not user-facing).
fn hidden_failure() -> Error {
    Error::internal("scripted failure")
}

// ---------------------------------------------------------------- HTTP

/// The script that makes the fixture answer as the recorded response did.
fn http_script(response: &Value) -> Script {
    let parsed = &response["parsed"];
    if let Some(frames) = parsed.as_array() {
        let mut chunks = Vec::new();
        let mut outcome = Err(Error::internal("the recorded stream has no end"));
        for f in frames {
            let v = &f["value"];
            match (f["field"].as_str(), v.get("message"), v.get("result")) {
                (Some("data"), Some(m), _) => chunks.push(m.clone()),
                (Some("data"), None, Some(r)) => outcome = Ok(r.clone()),
                (Some("error"), _, _) => outcome = Err(hidden_failure()),
                other => panic!("unexpected frame {other:?}"),
            }
        }
        return Script { chunks, outcome };
    }
    let outcome = match response["status"].as_u64() {
        Some(200) => Ok(parsed["result"].clone()),
        _ => Err(hidden_failure()),
    };
    Script {
        chunks: vec![],
        outcome,
    }
}

/// `[{field, value}]` of an SSE body, checking its framing on the way.
fn parse_sse(body: &str) -> Vec<Value> {
    common::sse_frames(body)
        .into_iter()
        .map(|frame| {
            let (field, value) = frame
                .split_once(": ")
                .unwrap_or_else(|| panic!("a frame without a field: {frame:?}"));
            assert!(field == "data" || field == "error", "field {field}");
            json!({"field": field, "value": serde_json::from_str::<Value>(value).unwrap()})
        })
        .collect()
}

/// Without a recorded `init`, what the recorded request carried.
fn expected_call(request: &Value) -> Call {
    let path = request["path"].as_str().unwrap();
    let mut parts = path.trim_start_matches('/').splitn(2, '/');
    let agent = parts.next().unwrap();
    let body = &request["body"];
    match parts.next() {
        None => Call {
            key: format!("/agent/{agent}"),
            init: body.get("init").cloned(),
            inputs: vec![body["data"].clone()],
        },
        Some("getSnapshot") => Call {
            key: format!("/agent-snapshot/{agent}"),
            init: None,
            inputs: vec![body["data"].clone()],
        },
        Some("abort") => Call {
            key: format!("/agent-abort/{agent}"),
            init: None,
            inputs: vec![body["data"].clone()],
        },
        Some(other) => panic!("unexpected path /{agent}/{other}"),
    }
}

async fn replay_http(header: &Value, record: &Value) -> usize {
    let name = record["name"].as_str().unwrap();
    let agent = record["agent"].as_str().unwrap();
    let registry = Registry::new();
    let fixture = Fixture::default();
    fixture.register(&registry, header, agent);
    let mut server = common::start(FlowServer::new(&registry).agent(agent)).await;
    let client = common::client();
    let exchanges = record["expect"]["exchanges"].as_array().unwrap();
    for (i, ex) in exchanges.iter().enumerate() {
        let at = format!("{name}, exchange {i}");
        let (request, recorded) = (&ex["request"], &ex["response"]);
        fixture.push(http_script(recorded));
        let mut post = client
            .post(server.url(request["path"].as_str().unwrap()))
            .json(&request["body"]);
        if let Some(accept) = request["headers"]["accept"].as_str() {
            post = post.header("accept", accept);
        }
        let response = post.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let content_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = response.text().await.unwrap();
        if fixture.unplayed() {
            // The schema refused the request before the action ran.
            assert_eq!(recorded["status"], 500, "{at}");
            assert_eq!(status, 400, "{at}: {body}");
            let v: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["status"], "INVALID_ARGUMENT", "{at}: {body}");
            assert!(fixture.take_calls().is_empty(), "{at}");
            continue;
        }
        assert_eq!(fixture.take_calls(), vec![expected_call(request)], "{at}");
        assert_eq!(
            status,
            recorded["status"].as_u64().unwrap() as u16,
            "{at}: {body}"
        );
        if recorded["parsed"].is_array() {
            assert_eq!(content_type, "text/event-stream", "{at}");
            assert_eq!(
                parse_sse(&body),
                recorded["parsed"].as_array().unwrap().clone(),
                "{at}"
            );
            if !body.contains("error: ") {
                // Same keys in the same order: byte for byte.
                assert_eq!(body, recorded["body"].as_str().unwrap(), "{at}");
            }
        } else {
            assert!(
                content_type.starts_with("application/json"),
                "{at}: {content_type}"
            );
            let v: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v, recorded["parsed"], "{at}");
            for h in recorded["genkitHeaders"].as_array().unwrap() {
                let h = h.as_str().unwrap();
                assert!(headers.contains_key(h), "{at}: no {h} header");
            }
            if status == 200 {
                assert_eq!(body, recorded["body"].as_str().unwrap(), "{at}");
            }
        }
    }
    server.stop();
    exchanges.len()
}

#[tokio::test]
async fn http_exchanges_replay_genkit_js() {
    let records = records();
    let header = header(&records);
    let mut scenarios = 0;
    let mut exchanges = 0;
    for record in records.iter().filter(|r| r["kind"] == "http") {
        exchanges += replay_http(header, record).await;
        scenarios += 1;
    }
    assert!(scenarios >= 9, "only {scenarios} http scenarios");
    eprintln!("replayed {exchanges} exchanges of {scenarios} http scenarios");
}

/// Every agent the registry has is served with its companions; one that is
/// not registered is refused when the router is built.
#[tokio::test]
async fn serving_all_flows_includes_agents() {
    let records = records();
    let header = header(&records);
    let registry = Registry::new();
    let fixture = Fixture::default();
    fixture.register(&registry, header, "promptAgentWithStore");
    let mut server = common::start(FlowServer::new(&registry)).await;
    fixture.push(Script {
        chunks: vec![],
        outcome: Ok(json!({"snapshotId": "s1"})),
    });
    let r = common::client()
        .post(server.url("/promptAgentWithStore/abort"))
        .json(&json!({"data": {"snapshotId": "s1"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": {"snapshotId": "s1"}})
    );
    server.stop();

    let err = FlowServer::new(&registry)
        .agent("nobody")
        .into_router()
        .await
        .expect_err("an unknown agent is refused");
    assert!(err.to_string().contains("nobody"), "{err}");
}

// ---------------------------------------------------------------- Reflection

/// `"{{name}}"` strings replaced by the captured values.
fn substitute(v: &Value, captures: &Map<String, Value>) -> Value {
    match v {
        Value::String(s) => s
            .strip_prefix("{{")
            .and_then(|s| s.strip_suffix("}}"))
            .and_then(|name| captures.get(name))
            .cloned()
            .unwrap_or_else(|| v.clone()),
        Value::Array(a) => Value::Array(a.iter().map(|x| substitute(x, captures)).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), substitute(x, captures)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A recorded error's message without Genkit JS's `STATUS: ` prefix.
fn unprefixed(message: &str) -> &str {
    match message.split_once(": ") {
        Some((status, rest)) if StatusCode::from_name(status).is_some() => rest,
        _ => message,
    }
}

fn reflection_error(e: &Value) -> Error {
    let status = StatusCode::from_code(e["code"].as_u64().unwrap() as u16).unwrap();
    Error::new(status, unprefixed(e["message"].as_str().unwrap()))
}

fn reflection_script(body: &Value) -> Script {
    let lines = match body.as_array() {
        Some(lines) => lines.clone(),
        None => vec![body.clone()],
    };
    let mut chunks = Vec::new();
    let mut outcome = Err(Error::internal("the recorded run has no end"));
    for line in lines {
        if let Some(r) = line.get("result") {
            outcome = Ok(r.clone());
        } else if let Some(e) = line.get("error") {
            outcome = Err(reflection_error(e));
        } else {
            chunks.push(line);
        }
    }
    Script { chunks, outcome }
}

/// Our descriptor as Genkit JS lists it: `metadata.type` is ours only.
fn js_descriptor(mut d: Value) -> Value {
    if let Some(m) = d.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("type");
        if m.is_empty() {
            d.as_object_mut().unwrap().remove("metadata");
        }
    }
    d
}

/// The final line of a Reflection answer, its traceId replaced as recorded.
fn normalize_final(mut v: Value) -> Value {
    if let Some(t) = v.get_mut("telemetry").and_then(|t| t.get_mut("traceId")) {
        assert!(t.as_str().is_some_and(|s| s.len() == 32), "trace id {t}");
        *t = json!("<traceId>");
    }
    if let Some(e) = v.get_mut("error") {
        let details = e["details"].as_object_mut().unwrap();
        assert!(details.remove("stack").is_some());
        if details.contains_key("traceId") {
            details.insert("traceId".into(), json!("<traceId>"));
        }
        details.insert("stack".into(), json!("<stack>"));
    }
    v
}

async fn replay_reflection(header: &Value, record: &Value) {
    let name = record["name"].as_str().unwrap();
    let registry = Registry::new();
    let fixture = Fixture::default();
    fixture.register(&registry, header, "promptAgentWithStore");
    let state = Arc::new(ReflectionState::new(&registry, "agent-test", None));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = reflection::router(state);
    let serving = tokio::spawn(async move { axum::serve(listener, router).await });
    let client = common::client();
    let mut captures = Map::new();
    let requests = record["requests"].as_array().unwrap();
    let expected = record["expect"]["exchanges"].as_array().unwrap();
    assert_eq!(requests.len(), expected.len());
    for (i, (request, recorded)) in requests.iter().zip(expected).enumerate() {
        let at = format!("{name}, request {i}");
        let url = format!("{base}{}", request["path"].as_str().unwrap());
        if request["method"] == "GET" {
            let r = client.get(&url).send().await.unwrap();
            assert_eq!(r.status(), 200, "{at}");
            let listed: Value = r.json().await.unwrap();
            for key in request["onlyKeys"].as_array().unwrap() {
                let key = key.as_str().unwrap();
                assert_eq!(
                    js_descriptor(listed[key].clone()),
                    recorded["body"][key],
                    "{at}: {key}"
                );
            }
            continue;
        }
        let body = substitute(&request["body"], &captures);
        fixture.push(reflection_script(&recorded["body"]));
        let r = client.post(&url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), 200, "{at}");
        let headers = r.headers().clone();
        let text = r.text().await.unwrap();
        let streaming = recorded["body"].is_array();
        let mut lines: Vec<Value> = if streaming {
            text.split('\n')
                .map(|l| serde_json::from_str(l).unwrap())
                .collect()
        } else {
            vec![serde_json::from_str(&text).unwrap()]
        };
        let last = lines.pop().map(normalize_final).unwrap();
        if fixture.unplayed() {
            // The init schema refused the run (JS: code 13, ours: 3).
            assert_eq!(recorded["body"]["error"]["code"], 13, "{at}");
            assert_eq!(last["error"]["code"], 3, "{at}: {last}");
            assert!(fixture.take_calls().is_empty(), "{at}");
            continue;
        }
        let call = fixture.take_calls();
        let key = body["key"].as_str().unwrap();
        let want = Call {
            key: key.to_owned(),
            init: key.starts_with("/agent/").then(|| body["init"].clone()),
            inputs: vec![body["input"].clone()],
        };
        assert_eq!(call, vec![want], "{at}");
        for h in recorded["genkitHeaders"].as_array().unwrap() {
            let h = h.as_str().unwrap();
            assert!(headers.contains_key(h), "{at}: no {h} header");
        }
        let content_type = headers["content-type"].to_str().unwrap();
        assert_eq!(Some(content_type), recorded["contentType"].as_str(), "{at}");
        let mut want_lines = match recorded["body"].as_array() {
            Some(l) => l.clone(),
            None => vec![recorded["body"].clone()],
        };
        let mut want_last = want_lines.pop().unwrap();
        if let Some(m) = want_last.pointer_mut("/error/message") {
            *m = json!(unprefixed(m.as_str().unwrap()));
        }
        assert_eq!(lines, want_lines, "{at}");
        assert_eq!(last, want_last, "{at}");
        if let Some(capture) = request["captureSnapshotId"].as_str() {
            captures.insert(capture.into(), last["result"]["snapshotId"].clone());
        }
    }
    serving.abort();
}

#[tokio::test]
async fn reflection_exchanges_replay_genkit_js() {
    let records = records();
    let header = header(&records);
    let mut n = 0;
    for record in records.iter().filter(|r| r["kind"] == "reflection") {
        replay_reflection(header, record).await;
        n += 1;
    }
    assert_eq!(n, 2);
}

// ---------------------------------------------------------------- JS client

/// Real agents for the JS client: `chatAgent`, a prompt agent on a
/// programmable model scripted for the client's conversation (with an
/// interrupting tool), and `blockingAgent`, a custom agent whose turns run
/// until aborted. Both keep their sessions in an in-memory store. Returns
/// the scripted model.
fn real_agents(registry: &Registry) -> genkit_model::testing::ProgrammableModel {
    use genkit_agent::store::InMemorySessionStore;
    use genkit_agent::types::AgentResult;
    use genkit_agent::{AgentOptions, define_agent, define_prompt_agent_with};
    use genkit_generate::GenerateOptions;
    use genkit_model::testing::ProgrammableModel;
    use genkit_model::tool::Tool;
    use genkit_model::types::{
        FinishReason, GenerateResponse, GenerateResponseChunk, Message, Part, Role,
    };
    let chunk =
        |t: &str| GenerateResponseChunk::new(vec![Part::text(t)]).with_position(0, Role::Model);
    let model = ProgrammableModel::define(registry, "scriptedModel")
        .respond_text("echo: hi")
        .respond_with_chunks(
            vec![chunk("echo: "), chunk("again")],
            GenerateResponse::new(Message::new(Role::Model, "echo: again"), FinishReason::Stop),
        )
        .respond_text("echo: more")
        .respond_tool_call("interruptTool", json!({"query": "please interrupt"}))
        .respond_text("answered: {\"answer\":\"yes\"}");
    let object = |prop: &str| json!({"type": "object", "properties": {prop: {"type": "string"}}});
    let tool = Tool::from_json_schema(
        "interruptTool",
        "Asks the user",
        Some(object("query")),
        Some(object("answer")),
        |_input, ctx| async move { Err(ctx.interrupt(None)) },
    )
    .unwrap();
    registry.register(tool.to_dyn()).unwrap();
    let store = || AgentOptions::new().store(Arc::new(InMemorySessionStore::new()));
    define_prompt_agent_with(registry, "chatAgent", store(), || async {
        Ok(GenerateOptions::new()
            .model("scriptedModel")
            .tools(vec!["interruptTool".to_owned()]))
    })
    .unwrap();
    define_agent(
        registry,
        "blockingAgent",
        store(),
        |session, _| async move {
            session.aborted().await;
            Ok(AgentResult {
                message: Some(Message::model("unblocked")),
                ..AgentResult::default()
            })
        },
    )
    .unwrap();
    model
}

/// Genkit JS's own agent client (`remoteAgent` from `genkit/beta/client`,
/// pinned in `tests/js/package.json`) drives real Rust agents served here: a
/// multi-turn conversation and an interrupt with its resume against the
/// prompt agent, a detached turn and its abort against the blocking agent.
/// Skips (saying so) only when `node` or `npm` is not installed.
#[tokio::test]
async fn remote_agent_js_client_drives_a_rust_agent() {
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
    let registry = Registry::new();
    let model = real_agents(&registry);
    let served = FlowServer::new(&registry)
        .agent("chatAgent")
        .agent("blockingAgent");
    let mut server = common::start(served).await;
    let out = tokio::process::Command::new("node")
        .arg(js.join("agent_client_test.mjs"))
        .arg(server.url("/chatAgent"))
        .arg(server.url("/blockingAgent"))
        .current_dir(&js)
        .output()
        .await
        .expect("running node");
    server.stop();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("4 passed, 0 failed"), "{stdout}");
    assert_eq!(model.remaining(), 0, "the client played the whole script");
}

/// As in Genkit JS, an agent turn whose client leaves mid-stream runs to its
/// end (it records its snapshot); only the agent's abort action stops it.
#[tokio::test]
async fn an_agent_turn_outlives_a_client_that_leaves() {
    let registry = Registry::new();
    let gate = Arc::new(tokio::sync::Notify::new());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Value>();
    let done_tx = Arc::new(Mutex::new(Some(done_tx)));
    let (g, d) = (gate.clone(), done_tx.clone());
    let agent = BidiAction::from_desc(
        ActionDesc::new(ActionKind::Agent, "slow"),
        move |_init: Value, mut inputs: BidiInputs<Value>, ctx: ActionCtx<Value>| {
            let (gate, done) = (g.clone(), d.clone());
            async move {
                let input = inputs.next().await.transpose()?.unwrap_or_default();
                ctx.send_chunk(json!({"modelChunk": {"content": [{"text": "working"}]}}));
                gate.notified().await;
                if let Some(tx) = done.lock().unwrap().take() {
                    let _ = tx.send(input.clone());
                }
                Ok(json!({"finishReason": "stop"}))
            }
        },
    )
    .unwrap();
    registry.register(&agent).unwrap();
    let mut server = common::start(FlowServer::new(&registry).agent("slow")).await;
    let response = common::client()
        .post(server.url("/slow"))
        .header("accept", "text/event-stream")
        .json(&json!({"data": {"message": {"role": "user", "content": [{"text": "go"}]}}, "init": {}}))
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("working"));
    drop(body);
    // Let the server see the closed connection before the turn may go on.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    gate.notify_one();
    let input = tokio::time::timeout(std::time::Duration::from_secs(5), done_rx)
        .await
        .expect("the turn ran to its end")
        .unwrap();
    assert_eq!(input["message"]["content"][0]["text"], "go");
    server.stop();
}

/// A bad agent request is told what is wrong in one line naming the field
/// (issue 27): no `init`, an init or input that does not fit the schema.
#[tokio::test]
async fn bad_agent_requests_name_the_field_in_one_line() {
    let registry = Registry::new();
    real_agents(&registry);
    let mut server = common::start(FlowServer::new(&registry).agent("chatAgent")).await;
    let client = common::client();
    let hi = json!({"message": {"role": "user", "content": [{"text": "hi"}]}});
    for (body, message) in [
        (
            json!({"data": hi}),
            "the agent request has no `init`: send {\"data\": <input>, \"init\": {}} (`{}` starts a new session; {\"sessionId\": \"...\"} continues one)",
        ),
        (
            json!({"data": hi, "init": {"sessionId": 5}}),
            "invalid init for `chatAgent`: - sessionId: must be null,string",
        ),
        (
            json!({"data": {"message": {"role": "boss", "content": [{"text": "hi"}]}}, "init": {}}),
            "invalid input for `chatAgent`: - message.role: must be equal to one of the allowed values",
        ),
    ] {
        let r = client
            .post(server.url("/chatAgent"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400, "{body}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["status"], "INVALID_ARGUMENT", "{body}");
        assert_eq!(v["message"], message, "{body}");
    }
    server.stop();
}

/// An agent's context provider guards all three of its routes.
#[tokio::test]
async fn an_agent_context_provider_guards_every_route() {
    let registry = Registry::new();
    real_agents(&registry);
    let server = FlowServer::new(&registry).agent_with_context(
        "chatAgent",
        genkit_server::context_providers::api_key("secret"),
    );
    let mut server = common::start(server).await;
    let client = common::client();
    let turn =
        json!({"data": {"message": {"role": "user", "content": [{"text": "hi"}]}}, "init": {}});
    let lookup = json!({"data": {"snapshotId": "snapshot-0"}});
    for (path, body) in [
        ("/chatAgent", &turn),
        ("/chatAgent/getSnapshot", &lookup),
        ("/chatAgent/abort", &lookup),
    ] {
        let r = client
            .post(server.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{path}");
    }
    let r = client
        .post(server.url("/chatAgent"))
        .header("authorization", "secret")
        .json(&turn)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["message"]["content"][0]["text"], "echo: hi");
    let snapshot_id = v["result"]["snapshotId"].clone();
    let r = client
        .post(server.url("/chatAgent/getSnapshot"))
        .header("authorization", "secret")
        .json(&json!({"data": {"snapshotId": snapshot_id}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["status"], "completed");
    server.stop();
}

/// A context provider sees an agent turn's `init` beside its input, so it
/// can decide by session.
#[tokio::test]
async fn a_context_provider_sees_the_turns_init() {
    use genkit_server::context_providers::{RequestData, from_fn};
    let registry = Registry::new();
    let agent = BidiAction::from_desc(
        ActionDesc::new(ActionKind::Agent, "echoAuth"),
        |init: Value, mut inputs: BidiInputs<Value>, ctx: ActionCtx<Value>| async move {
            let input = inputs.next().await.transpose()?.unwrap_or_default();
            Ok(json!({"init": init, "input": input, "auth": ctx.context.auth()}))
        },
    )
    .unwrap();
    registry.register(&agent).unwrap();
    let by_session = from_fn(|req: &RequestData| {
        let session = req
            .init
            .as_ref()
            .and_then(|i| i.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let input = req.input.clone();
        async move {
            match session.as_deref() {
                Some("s-alice") => Ok(genkit_core::ActionContext::new()
                    .with_auth(json!({"sub": "alice", "sawInput": input}))),
                _ => Err(Error::user_facing(
                    StatusCode::PermissionDenied,
                    "not your session",
                )),
            }
        }
    });
    let mut server =
        common::start(FlowServer::new(&registry).agent_with_context("echoAuth", by_session)).await;
    let post = |init: Value| {
        common::client()
            .post(server.url("/echoAuth"))
            .json(&json!({"data": "hi", "init": init}))
            .send()
    };
    let r = post(json!({"sessionId": "s-bob"})).await.unwrap();
    assert_eq!(r.status(), 403);
    let r = post(json!({"sessionId": "s-alice"})).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": {
            "init": {"sessionId": "s-alice"},
            "input": "hi",
            "auth": {"sub": "alice", "sawInput": "hi"}
        }})
    );
    server.stop();
}

/// A flow named like one of an agent's routes is refused when the router is
/// built, rather than one hiding the other.
#[tokio::test]
async fn a_flow_at_an_agent_route_is_refused() {
    let registry = Registry::new();
    real_agents(&registry);
    genkit_core::flow::define_flow(&registry, "chatAgent", |x: Value, _| async move { Ok(x) })
        .unwrap();
    let err = FlowServer::new(&registry)
        .into_router()
        .await
        .expect_err("two actions at /chatAgent");
    assert!(err.to_string().contains("/chatAgent"), "{err}");
    // Named twice, the same agent is fine.
    let _router = FlowServer::new(&registry)
        .agent("chatAgent")
        .agent("chatAgent")
        .into_router()
        .await
        .unwrap();
}
