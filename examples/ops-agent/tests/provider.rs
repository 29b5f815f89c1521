//! With a provider in the environment the app talks to it: here Ollama's
//! wire protocol (`OLLAMA_HOST`) from a scripted server on 127.0.0.1, which
//! asks for a tool, gets its result in the next request, and answers.

use std::process::Command;
use std::time::Duration;

use genkit_provider::test_server::{Reply, TestServer};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_ops-agent");

fn last_line(reason: &str) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
           "message": {"role": "assistant", "content": ""},
           "done": true, "done_reason": reason, "prompt_eval_count": 10, "eval_count": 3})
}

fn text(content: &str) -> Value {
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
            last_line("stop"),
        ]),
        Reply::ndjson([text("The db "), text("is overloaded."), last_line("stop")]),
    ])
    .await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir")
        .arg(dir.path())
        .args(["--ask", "how is the db?", "--json"])
        .env("OLLAMA_HOST", &server.url);
    for var in [
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPS_AGENT_MODEL",
        "OPS_AGENT_DATABASE",
        "GENKIT_ENV",
    ] {
        cmd.env_remove(var);
    }
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::task::spawn_blocking(move || cmd.output()),
    )
    .await
    .expect("ops-agent finished")
    .expect("joined")
    .expect("ops-agent ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("model:   ollama/llama3.2 (OLLAMA_HOST is set)"),
        "{stderr}"
    );
    let reply: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(reply["answer"], "The db is overloaded.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[0].path, "/api/chat");
    assert_eq!(requests[0].body["model"], "llama3.2");
    let tools: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["getServiceStatus", "queryLogs", "restartService"]);
    // The system prompt opens the conversation; the tool result comes back.
    let messages = requests[1].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(messages[0]["role"], "system");
    let tool = messages.last().cloned().unwrap_or_default();
    assert_eq!(tool["role"], "tool");
    let content = tool["content"].as_str().unwrap_or_default();
    assert!(content.contains("db is online but overloaded"), "{content}");
}
