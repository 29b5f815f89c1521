//! End-to-end tests against the REAL local OpenAI-compatible server
//! (llama.cpp's llama-server serving SmolLM2-135M, see tests-support/local-model/).
//!
//! Ignored by default, so a plain `cargo test` reports them as ignored (never
//! as a silent pass). `tests-support/openai-compat/e2e-local-model.sh` starts
//! the server and runs them with `--ignored`; run that way without
//! `LOCAL_MODEL_BASE_URL` they fail and say why.
//!
//! The model is tiny: assertions are on structure (non-empty text, a tool
//! call with the right name and a string argument, JSON that fits the
//! schema), never on wording.

use futures::StreamExt;
use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_model::embedder::{embed, embed_many};
use genkit_model::tool::Tool;
use genkit_model::types::{
    ConstrainedSupport, DocumentData, FinishReason, Message, Part, ToolChoice, ToolResponse,
};
use genkit_openai::{EmbedderSpec, ModelSpec, OpenAiCompatible, StructuredOutputStyle};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn env(name: &str, default: Option<&str>) -> String {
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => v,
        _ => default.map(str::to_owned).unwrap_or_else(|| {
            panic!(
                "{name} is not set. These tests need the local model server: run \
                 `bash tests-support/openai-compat/e2e-local-model.sh` (it installs nothing; run \
                 .ci/install-local-model-server.sh first)"
            )
        }),
    }
}

fn model() -> String {
    format!("local/{}", env("LOCAL_MODEL_NAME", Some("smollm2")))
}

fn embedder() -> String {
    format!(
        "local/{}",
        env("LOCAL_MODEL_EMBED_NAME", Some("smollm2-embed"))
    )
}

fn registry() -> Registry {
    let base_url = env("LOCAL_MODEL_BASE_URL", None);
    let plugin = OpenAiCompatible::builder()
        .name("local")
        .base_url(base_url)
        .models([ModelSpec::new(env("LOCAL_MODEL_NAME", Some("smollm2")))
            .label("SmolLM2 135M Instruct (llama.cpp)")
            .media(false)
            .constrained(ConstrainedSupport::All)])
        .embedders([EmbedderSpec::new(env(
            "LOCAL_MODEL_EMBED_NAME",
            Some("smollm2-embed"),
        ))])
        .structured_output(StructuredOutputStyle::JsonObjectWithSchema)
        // A 135M model on 2 shared cores can be slow under load.
        .timeout(Duration::from_secs(240))
        .build()
        .expect("build the plugin");
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin))
        .expect("register");
    registry
}

fn greedy(max_tokens: u32) -> serde_json::Value {
    json!({"temperature": 0, "maxOutputTokens": max_tokens})
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WeatherIn {
    city: String,
}

fn weather_tool() -> Tool<WeatherIn, serde_json::Value> {
    Tool::new(
        "get_weather",
        "Get the current weather for a city",
        |input: WeatherIn, _ctx| async move {
            Ok(json!({"city": input.city, "temperature_c": 18, "sky": "sunny"}))
        },
    )
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn generate_text() {
    let response = generate(
        &registry(),
        GenerateOptions::prompt("What is the capital of France?")
            .model(model())
            .config(greedy(24)),
    )
    .await
    .expect("generate");
    assert!(
        !response.text().trim().is_empty(),
        "empty answer: {response:?}"
    );
    assert!(matches!(
        response.finish_reason,
        Some(FinishReason::Stop | FinishReason::Length)
    ));
    let usage = response.usage.as_ref().expect("usage");
    assert!(usage.input_tokens.unwrap_or(0) > 0 && usage.output_tokens.unwrap_or(0) > 0);
    println!("generate: {:?}", response.text());
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn stream_text() {
    let mut stream = generate_stream(
        &registry(),
        GenerateOptions::prompt("Say hello.")
            .model(model())
            .config(greedy(16)),
    );
    let mut chunks = Vec::new();
    while let Some(c) = stream.next().await {
        chunks.push(c.expect("chunk").text());
    }
    let response = stream.response().await.expect("response");
    assert!(chunks.len() >= 2, "expected several chunks, got {chunks:?}");
    assert_eq!(chunks.concat(), response.text());
    assert!(!response.text().trim().is_empty());
    // Greedy decoding is deterministic on this server: the same request
    // without streaming gives the same text.
    let plain = generate(
        &registry(),
        GenerateOptions::prompt("Say hello.")
            .model(model())
            .config(greedy(16)),
    )
    .await
    .expect("generate");
    assert_eq!(plain.text(), response.text());
    println!("stream: {chunks:?}");
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn forced_tool_call_and_tool_result_round_trip() {
    let reg = registry();
    let tool = weather_tool();
    // `required` with one tool goes out as the named function.
    let first = generate(
        &reg,
        GenerateOptions::prompt("What is the weather in Paris?")
            .model(model())
            .config(greedy(60))
            .tool(&tool)
            .tool_choice(ToolChoice::Required)
            .return_tool_requests(true),
    )
    .await
    .expect("forced tool call");
    let calls = first.tool_requests();
    assert_eq!(calls.len(), 1, "{first:?}");
    assert_eq!(calls[0].name, "get_weather");
    let city = calls[0].input.as_ref().and_then(|i| i["city"].as_str());
    assert!(city.is_some_and(|c| !c.is_empty()), "{:?}", calls[0].input);
    assert!(calls[0].reference.is_some(), "the server gives call ids");

    // Send the tool's result back (assistant message with `content: ""`).
    let request = calls[0].clone();
    let mut history = first.messages().expect("history");
    history.push(Message::tool(vec![Part::tool_response(
        ToolResponse::for_request(&request, json!({"temperature_c": 18, "sky": "sunny"})),
    )]));
    let second = generate(
        &reg,
        GenerateOptions::messages(history)
            .model(model())
            .config(greedy(30))
            .tool(&tool),
    )
    .await
    .expect("answer after the tool result");
    assert!(!second.text().trim().is_empty(), "{second:?}");
    println!("tool call: {:?} -> {:?}", calls[0].input, second.text());
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn streamed_forced_tool_call() {
    let mut stream = generate_stream(
        &registry(),
        GenerateOptions::prompt("What is the weather in Rome?")
            .model(model())
            .config(greedy(60))
            .tool(weather_tool())
            .tool_choice(ToolChoice::Required)
            .return_tool_requests(true),
    );
    let mut partial = 0;
    while let Some(c) = stream.next().await {
        partial += c
            .expect("chunk")
            .tool_requests()
            .filter(|r| r.partial == Some(true))
            .count();
    }
    let response = stream.response().await.expect("response");
    assert!(
        partial >= 2,
        "tool-call fragments were streamed ({partial})"
    );
    let calls = response.tool_requests();
    assert_eq!(calls.len(), 1, "one call, fragments joined: {response:?}");
    assert_eq!(calls[0].name, "get_weather");
    assert!(
        calls[0]
            .input
            .as_ref()
            .is_some_and(|i| i["city"].is_string())
    );
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn structured_output() {
    let response = generate(
        &registry(),
        GenerateOptions::prompt("Invent a person.")
            .model(model())
            .config(greedy(60))
            .output::<Person>(),
    )
    .await
    .expect("generate");
    let person: Person = response.output().expect("JSON fitting the schema");
    assert!(!person.name.is_empty());
    println!("person: {person:?} (age {})", person.age);
}

#[tokio::test]
#[ignore = "needs the local model server: run tests-support/openai-compat/e2e-local-model.sh"]
async fn embeddings() {
    let reg = registry();
    let one = embed(&reg, &embedder(), "The cat sat on the mat.")
        .await
        .expect("embed");
    assert_eq!(one.len(), 1);
    let dims = one[0].embedding.len();
    assert!(dims > 0);
    let many = embed_many(
        &reg,
        &embedder(),
        vec![
            DocumentData::from_text("The cat sat on the mat."),
            DocumentData::from_text("The stock market fell"),
        ],
        None,
    )
    .await
    .expect("embed many");
    assert_eq!(many.len(), 2);
    assert!(many.iter().all(|e| e.embedding.len() == dims));
    let max_diff = one[0]
        .embedding
        .iter()
        .zip(&many[0].embedding)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(max_diff < 1e-3, "same text, same vector (diff {max_diff})");
    assert_ne!(many[0].embedding, many[1].embedding);
    println!("embeddings: {dims} dimensions");
}
