//! A per-request `config.apiKey` authorizes that request only, and shows
//! nowhere else: not in the echoed request of the response, not in the
//! body sent, not in `Debug` output.

use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate};
use genkit_model::embedder::embed_many;
use genkit_model::types::DocumentData;
use genkit_openai::{EmbedConfig, OpenAiCompatible, OpenAiConfig};
use genkit_provider::RequestConfig;
use genkit_provider::test_server::{Reply, TestServer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = "sk-per-request-42";

async fn setup(reply: Reply) -> (TestServer, Registry) {
    let server = TestServer::start(vec![reply]).await;
    let plugin = OpenAiCompatible::builder()
        .base_url(format!("{}/v1", server.url))
        .api_key("sk-plugin-key")
        .timeout(Duration::from_secs(10))
        .build()
        .expect("build");
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin))
        .expect("register");
    (server, registry)
}

#[tokio::test]
async fn a_request_key_is_used_and_redacted_in_the_echoed_request() {
    let completion = json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                     "finish_reason": "stop"}]
    });
    let (server, registry) = setup(Reply::json(completion)).await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model("openai/gpt-4o")
            .config(json!({"apiKey": KEY, "temperature": 0.5})),
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
    assert_eq!(
        echoed,
        Some(json!({"apiKey": "[redacted]", "temperature": 0.5}))
    );
    assert!(!serde_json::to_string(&response).unwrap().contains(KEY));
    assert!(!format!("{response:?}").contains(KEY));
}

#[tokio::test]
async fn an_embed_request_key_is_used() {
    let vectors = json!({"object": "list", "data": [{"object": "embedding", "index": 0,
        "embedding": [0.5]}], "model": "text-embedding-3-small"});
    let (server, registry) = setup(Reply::json(vectors)).await;
    embed_many(
        &registry,
        "openai/text-embedding-3-small",
        vec![DocumentData::from_text("cat")],
        Some(json!({"apiKey": KEY})),
    )
    .await
    .expect("embed");
    let sent = server.single_request();
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(!sent.body.to_string().contains(KEY));
}

#[test]
fn configs_do_not_print_keys() {
    let config = OpenAiConfig::from_value(Some(&json!({"apiKey": KEY}))).expect("config");
    assert!(!format!("{config:?}").contains(KEY));
    let options = EmbedConfig::from_value(Some(&json!({"apiKey": KEY}))).expect("options");
    assert!(!format!("{options:?}").contains(KEY));
}
