//! With a provider in the environment the app talks to it: each test runs
//! the real binary with `--ask ... --json` against a scripted server on
//! 127.0.0.1 speaking that provider's wire format (streamed, as the app
//! asks): the model asks for `getServiceStatus`, the tool runs, its result
//! goes back in the next request, and the model answers. The start-up line
//! names the model and why it was chosen.

use std::process::Output;
use std::time::Duration;

use genkit_provider::test_server::{Recorded, Reply, TestServer, sse_data};
use serde_json::{Value, json};

mod common;
use common::{ops_agent, output_within};

/// What the fleet's status tool says about the db (see src/fleet.rs).
const DB_STATUS: &str = "db is online but overloaded";
const TOOLS: [&str; 3] = ["getServiceStatus", "queryLogs", "restartService"];

/// Runs `ops-agent --ask "how is the db?" --json` with `env`; returns the
/// start-up lines (stderr) and the answer.
async fn ask(env: &[(&str, &str)]) -> (String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = ops_agent(dir.path());
    cmd.args(["--ask", "how is the db?", "--json"])
        .envs(env.iter().copied());
    let out: Output = output_within(cmd, Duration::from_secs(60)).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let reply: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}); stderr: {stderr}"));
    let answer = reply["answer"].as_str().unwrap_or_default().to_owned();
    (stderr, answer)
}

/// The two requests of a turn with one tool call: (first, second).
fn two(server: &TestServer) -> (Recorded, Recorded) {
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let mut it = requests.into_iter();
    (it.next().expect("first"), it.next().expect("second"))
}

fn texts<'a>(values: impl IntoIterator<Item = &'a Value>, pointer: &str) -> Vec<&'a str> {
    values
        .into_iter()
        .filter_map(|v| v.pointer(pointer).and_then(Value::as_str))
        .collect()
}

fn openai_chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1748772000,
           "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_0",
           "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
}

fn openai_usage() -> Value {
    json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 1748772000,
           "model": "gpt-4o-mini-2024-07-18", "choices": [],
           "usage": {"prompt_tokens": 250, "completion_tokens": 12, "total_tokens": 262}})
}

/// Chat Completions SSE: `data: <chunk>` events, then `data: [DONE]`.
fn openai_sse(chunks: Vec<Value>) -> Reply {
    let frames = chunks.iter().map(|c| sse_data(&c.to_string()));
    Reply::sse(frames.chain([sse_data("[DONE]")]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_key_and_base_url_select_openai_and_its_tool_calls_run() {
    let server = TestServer::start([
        openai_sse(vec![
            openai_chunk(
                json!({"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                    {"index": 0, "id": "call_Q1", "type": "function",
                     "function": {"name": "getServiceStatus", "arguments": ""}}]}),
                None,
            ),
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"serv"}}]}),
                None,
            ),
            openai_chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "ice\":\"db\"}"}}]}),
                None,
            ),
            openai_chunk(json!({}), Some("tool_calls")),
            openai_usage(),
        ]),
        openai_sse(vec![
            openai_chunk(
                json!({"role": "assistant", "content": "", "refusal": null}),
                None,
            ),
            openai_chunk(json!({"content": "The db "}), None),
            openai_chunk(json!({"content": "is overloaded."}), None),
            openai_chunk(json!({}), Some("stop")),
            openai_usage(),
        ]),
    ])
    .await;
    let base = format!("{}/v1", server.url);
    let (stderr, answer) = ask(&[
        ("OPENAI_API_KEY", "sk-test-ops"),
        ("OPENAI_BASE_URL", &base),
    ])
    .await;
    assert!(
        stderr.contains(&format!(
            "model:   openai/gpt-4o-mini (OPENAI_API_KEY is set, at {base} (OPENAI_BASE_URL))"
        )),
        "{stderr}"
    );
    // The history budget is counted with GPT-4o mini's own tokenizer.
    assert!(
        stderr.contains("history: last 20 turns within 8000 tokens, counted with o200k_base"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"[tool] getServiceStatus {"service":"db"}"#),
        "{stderr}"
    );
    assert_eq!(answer, "The db is overloaded.");

    let (first, second) = two(&server);
    for request in [&first, &second] {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.header("authorization"), Some("Bearer sk-test-ops"));
        assert_eq!(request.body["model"], "gpt-4o-mini");
        assert_eq!(request.body["stream"], true);
    }
    let tools = first.body["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(texts(&tools, "/function/name"), TOOLS);
    let messages = second.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(messages[0]["role"], "system");
    let call = &messages[messages.len() - 2];
    assert_eq!(call["tool_calls"][0]["id"], "call_Q1");
    assert_eq!(
        call["tool_calls"][0]["function"]["name"],
        "getServiceStatus"
    );
    let tool = &messages[messages.len() - 1];
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_Q1");
    let result = tool["content"].as_str().unwrap_or_default();
    assert!(result.contains(DB_STATUS), "{result}");
}

fn gemini_event(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({"candidates": [candidate],
           "usageMetadata": {"promptTokenCount": 250, "candidatesTokenCount": 12, "totalTokenCount": 262},
           "modelVersion": "gemini-2.5-flash", "responseId": "r-1"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_key_and_base_url_select_gemini_and_its_tool_calls_run() {
    let server = TestServer::start([
        Reply::sse_data([gemini_event(
            json!([{"functionCall": {"name": "getServiceStatus", "args": {"service": "db"}}}]),
            Some("STOP"),
        )]),
        Reply::sse_data([
            gemini_event(json!([{"text": "The db "}]), None),
            gemini_event(json!([{"text": "is overloaded."}]), Some("STOP")),
        ]),
    ])
    .await;
    let (stderr, answer) = ask(&[
        ("GEMINI_API_KEY", "g-test-ops"),
        ("GOOGLE_GEMINI_BASE_URL", &server.url),
    ])
    .await;
    let line = format!(
        "model:   googleai/gemini-2.5-flash (GEMINI_API_KEY is set, at {} (GOOGLE_GEMINI_BASE_URL))",
        server.url
    );
    assert!(stderr.contains(&line), "{stderr}");
    // No tokenizer is known for Gemini: the budget is estimated.
    assert!(
        stderr.contains("estimated at 4 characters a token"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"[tool] getServiceStatus {"service":"db"}"#),
        "{stderr}"
    );
    assert_eq!(answer, "The db is overloaded.");

    let (first, second) = two(&server);
    for request in [&first, &second] {
        assert_eq!(
            request.path,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
        );
        assert_eq!(request.query.as_deref(), Some("alt=sse"));
        assert_eq!(request.header("x-goog-api-key"), Some("g-test-ops"));
    }
    let declarations = first.body["tools"][0]["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(texts(&declarations, "/name"), TOOLS);
    assert!(
        first.body["systemInstruction"].is_object(),
        "{}",
        first.body
    );
    let contents = second.body["contents"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let call = &contents[contents.len() - 2];
    assert_eq!(call["role"], "model");
    assert_eq!(call["parts"][0]["functionCall"]["name"], "getServiceStatus");
    let response = &contents[contents.len() - 1]["parts"][0]["functionResponse"];
    assert_eq!(response["name"], "getServiceStatus");
    let result = response["response"].to_string();
    assert!(result.contains(DB_STATUS), "{result}");
}

/// One Messages API SSE event: `event: <type>` and its `data:`.
fn anthropic_event(data: Value) -> String {
    let kind = data["type"].as_str().unwrap_or_default().to_owned();
    format!("event: {kind}\ndata: {data}\n\n")
}

fn anthropic_stream(blocks: Vec<Value>, deltas: Vec<Value>, stop: &str) -> Reply {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5-20251001",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 250, "output_tokens": 1}}})];
    for block in blocks {
        events.push(json!({"type": "content_block_start", "index": 0, "content_block": block}));
    }
    events.push(json!({"type": "ping"}));
    for delta in deltas {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": delta}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "message_delta",
                       "delta": {"stop_reason": stop, "stop_sequence": null},
                       "usage": {"output_tokens": 12}}));
    events.push(json!({"type": "message_stop"}));
    Reply::sse(events.into_iter().map(anthropic_event))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_key_and_base_url_select_claude_and_its_tool_calls_run() {
    let server = TestServer::start([
        anthropic_stream(
            vec![json!({"type": "tool_use", "id": "toolu_01", "name": "getServiceStatus", "input": {}})],
            vec![
                json!({"type": "input_json_delta", "partial_json": "{\"service\": "}),
                json!({"type": "input_json_delta", "partial_json": "\"db\"}"}),
            ],
            "tool_use",
        ),
        anthropic_stream(
            vec![json!({"type": "text", "text": ""})],
            vec![
                json!({"type": "text_delta", "text": "The db "}),
                json!({"type": "text_delta", "text": "is overloaded."}),
            ],
            "end_turn",
        ),
    ])
    .await;
    let (stderr, answer) = ask(&[
        ("ANTHROPIC_API_KEY", "a-test-ops"),
        ("ANTHROPIC_BASE_URL", &server.url),
    ])
    .await;
    let line = format!(
        "model:   anthropic/claude-haiku-4-5 (ANTHROPIC_API_KEY is set, at {} (ANTHROPIC_BASE_URL))",
        server.url
    );
    assert!(stderr.contains(&line), "{stderr}");
    assert!(
        stderr.contains(r#"[tool] getServiceStatus {"service":"db"}"#),
        "{stderr}"
    );
    assert_eq!(answer, "The db is overloaded.");

    let (first, second) = two(&server);
    for request in [&first, &second] {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(request.header("x-api-key"), Some("a-test-ops"));
        assert_eq!(request.body["model"], "claude-haiku-4-5");
        assert_eq!(request.body["stream"], true);
    }
    let tools = first.body["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(texts(&tools, "/name"), TOOLS);
    assert!(!first.body["system"].is_null(), "{}", first.body);
    let messages = second.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let call = &messages[messages.len() - 2];
    assert_eq!(call["role"], "assistant");
    assert_eq!(call["content"][0]["type"], "tool_use");
    assert_eq!(call["content"][0]["id"], "toolu_01");
    assert_eq!(call["content"][0]["input"], json!({"service": "db"}));
    let result = &messages[messages.len() - 1]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_01");
    let text = result["content"].to_string();
    assert!(text.contains(DB_STATUS), "{text}");
}

fn ollama_last(reason: &str) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
           "message": {"role": "assistant", "content": ""},
           "done": true, "done_reason": reason, "prompt_eval_count": 10, "eval_count": 3})
}

fn ollama_text(content: &str) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
           "message": {"role": "assistant", "content": content}, "done": false})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollama_host_selects_ollama_and_its_tool_calls_run() {
    let server = TestServer::start([
        Reply::ndjson([
            json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
                   "message": {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "call_1", "function": {"index": 0, "name": "getServiceStatus",
                                                     "arguments": {"service": "db"}}}]},
                   "done": false}),
            ollama_last("stop"),
        ]),
        Reply::ndjson([
            ollama_text("The db "),
            ollama_text("is overloaded."),
            ollama_last("stop"),
        ]),
    ])
    .await;
    let (stderr, answer) = ask(&[("OLLAMA_HOST", &server.url)]).await;
    assert!(
        stderr.contains("model:   ollama/llama3.2 (OLLAMA_HOST is set)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"[tool] getServiceStatus {"service":"db"}"#),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "history: last 20 turns within 8000 tokens, estimated at 4 characters a token"
        ),
        "{stderr}"
    );
    assert_eq!(answer, "The db is overloaded.");

    let (first, second) = two(&server);
    assert_eq!(first.path, "/api/chat");
    assert_eq!(first.body["model"], "llama3.2");
    let tools = first.body["tools"].as_array().cloned().unwrap_or_default();
    assert_eq!(texts(&tools, "/function/name"), TOOLS);
    // The system prompt opens the conversation; the tool result comes back.
    let messages = second.body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(messages[0]["role"], "system");
    let tool = messages.last().cloned().unwrap_or_default();
    assert_eq!(tool["role"], "tool");
    let content = tool["content"].as_str().unwrap_or_default();
    assert!(content.contains(DB_STATUS), "{content}");
}
