//! A per-request `config.apiKey` goes to the server as a bearer token (for
//! an Ollama behind an authenticating proxy) and shows nowhere else: not in
//! the echoed request of the response, not in the body, not in `Debug`.

use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate};
use genkit_ollama::{Ollama, OllamaConfig};
use genkit_provider::RequestConfig;
use genkit_provider::test_server::{Reply, TestServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "proxy-key-42";

#[tokio::test]
async fn a_request_key_is_sent_as_a_bearer_token_and_redacted_in_the_echo() {
    let answer = json!({
        "model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
        "message": {"role": "assistant", "content": "ok"}, "done": true, "done_reason": "stop"
    });
    let server = TestServer::start(vec![Reply::json(answer)]).await;
    let plugin = Ollama::builder()
        .server_address(server.url.clone())
        .timeout(Duration::from_secs(10))
        .build()
        .expect("build");
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin))
        .expect("register");
    let response = generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model("ollama/llama3.2")
            .config(json!({"apiKey": KEY})),
    )
    .await
    .expect("generate");
    let sent = server.single_request();
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!sent.body.to_string().contains(KEY));
    let echoed = response.request.as_ref().and_then(|r| r.config.clone());
    assert_eq!(echoed, Some(json!({"apiKey": "[redacted]"})));
    assert!(!serde_json::to_string(&response).unwrap().contains(KEY));
}

#[test]
fn configs_do_not_print_keys() {
    let config = OllamaConfig::from_value(Some(&json!({"apiKey": KEY}))).expect("config");
    assert!(!format!("{config:?}").contains(KEY));
}
