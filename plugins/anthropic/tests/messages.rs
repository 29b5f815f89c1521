//! Wire tests: the plugin against a local server that checks the exact
//! requests (method, path, headers, JSON body) and answers in the Messages
//! API's documented formats (JSON and server-sent events).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use genkit_anthropic::{Anthropic, AnthropicBuilder};
use genkit_core::{CancellationToken, Plugin, Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_middleware::retry;
use genkit_model::tool::Tool;
use genkit_model::types::{FinishReason, Part, Role, ToolChoice};
use genkit_provider::test_server::{End, Recorded, Reply, TestServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const KEY: &str = "sk-ant-test-5d2e";
const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn plugin_for(server: &TestServer, options: AnthropicBuilder) -> Anthropic {
    options
        .api_key(KEY)
        .base_url(server.url.clone())
        .build()
        .expect("plugin")
}

async fn setup_with(replies: Vec<Reply>, options: AnthropicBuilder) -> (TestServer, Registry) {
    let server = TestServer::start(replies).await;
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin_for(&server, options)))
        .expect("register");
    (server, registry)
}

async fn setup(replies: Vec<Reply>) -> (TestServer, Registry) {
    setup_with(replies, Anthropic::builder()).await
}

fn assert_call(r: &Recorded) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.query, None);
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("authorization"), None);
}

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": content, "stop_reason": stop_reason, "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 3}
    })
}

fn text_message(text: &str) -> Value {
    message(json!([{"type": "text", "text": text}]), "end_turn")
}

fn user_text(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

/// Stream events of a message: `message_start`, the given block events,
/// `message_delta` with the stop reason, `message_stop`.
/// An SSE reply as the Messages API frames it: `event: <type>` (the
/// payload's `type`, when it has one) then `data: <payload>`.
fn sse_raw(payloads: impl IntoIterator<Item = String>) -> Reply {
    Reply::sse(payloads.into_iter().map(|data| {
        let kind = serde_json::from_str::<Value>(&data)
            .ok()
            .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
        match kind {
            Some(kind) => format!("event: {kind}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        }
    }))
}

/// An SSE reply of JSON events.
fn sse(events: impl IntoIterator<Item = Value>) -> Reply {
    sse_raw(events.into_iter().map(|e| e.to_string()))
}

fn stream_events(blocks: Vec<Value>, stop_reason: &str) -> Vec<Value> {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_s", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 25, "output_tokens": 1}
    }})];
    events.push(json!({"type": "ping"}));
    events.extend(blocks);
    events.push(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 12}}));
    events.push(json!({"type": "message_stop"}));
    events
}

fn text_block(index: usize, pieces: &[&str]) -> Vec<Value> {
    let mut events = vec![json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "text", "text": ""}})];
    for p in pieces {
        events.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "text_delta", "text": p}}));
    }
    events.push(json!({"type": "content_block_stop", "index": index}));
    events
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WeatherIn {
    /// The city.
    city: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
struct WeatherOut {
    celsius: f64,
}

fn weather_tool() -> Tool<WeatherIn, WeatherOut> {
    Tool::new(
        "get_weather",
        "Current weather in a city",
        |input: WeatherIn, _ctx| async move {
            Ok(WeatherOut {
                celsius: if input.city == "Paris" { 21.5 } else { 30.0 },
            })
        },
    )
}

fn weather_tool_json() -> Value {
    let definition = weather_tool().definition();
    json!({
        "name": "get_weather",
        "description": "Current weather in a city",
        "input_schema": definition.input_schema.expect("input schema")
    })
}

#[tokio::test]
async fn text_generation_sends_the_exact_request() {
    let (server, registry) = setup(vec![Reply::json(json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "A cat."}],
        "stop_reason": "end_turn", "stop_sequence": null,
        "usage": {"input_tokens": 20, "output_tokens": 3,
            "cache_read_input_tokens": 5, "cache_creation_input_tokens": 0}
    }))])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt(vec![
            Part::text("Describe"),
            Part::media("data:image/png;base64,AAAA", None),
            Part::media("https://example.com/cat.jpg", Some("image/jpeg")),
        ])
        .system("You are terse.")
        .model(MODEL)
        .config(json!({
            "temperature": 0.5, "maxOutputTokens": 300, "topK": 40, "topP": 0.9,
            "stopSequences": ["END"], "metadata": {"user_id": "u-1"}
        })),
    )
    .await
    .expect("generate");
    let r = server.single_request();
    assert_call(&r);
    assert_eq!(
        r.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 300,
            "system": [{"type": "text", "text": "You are terse."}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
            ]}],
            "stop_sequences": ["END"],
            "temperature": 0.5,
            "top_k": 40,
            "top_p": 0.9,
            "metadata": {"user_id": "u-1"}
        })
    );
    assert_eq!(response.text(), "A cat.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.expect("usage");
    assert_eq!(usage.input_tokens, Some(20));
    assert_eq!(usage.output_tokens, Some(3));
    assert_eq!(usage.cached_content_tokens, Some(5));
    assert_eq!(usage.total_tokens, Some(28));
    assert_eq!(usage.input_images, Some(2));
}

#[tokio::test]
async fn max_tokens_defaults_and_is_configurable() {
    let (server, registry) = setup(vec![Reply::json(text_message("a"))]).await;
    generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .await
        .expect("generate");
    assert_eq!(server.single_request().body["max_tokens"], json!(4096));

    let (server, registry) = setup_with(
        vec![Reply::json(text_message("b"))],
        Anthropic::builder().default_max_tokens(1000),
    )
    .await;
    generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .await
        .expect("generate");
    assert_eq!(
        server.single_request().body,
        json!({"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": [user_text("hi")]})
    );
}

#[tokio::test]
async fn tool_loop_sends_tool_results_paired_by_id() {
    let (server, registry) = setup(vec![
        Reply::json(message(
            json!([
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
            ]),
            "tool_use",
        )),
        Reply::json(text_message("It is 21.5°C in Paris.")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Weather in Paris?")
            .model(MODEL)
            .tool(weather_tool())
            .tool_choice(ToolChoice::Required),
    )
    .await
    .expect("generate");
    assert_eq!(response.text(), "It is 21.5°C in Paris.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_call(&requests[1]);
    let tools = json!([weather_tool_json()]);
    assert_eq!(
        requests[0].body,
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 4096,
            "messages": [user_text("Weather in Paris?")],
            "tools": tools, "tool_choice": {"type": "any"}
        })
    );
    assert_eq!(
        requests[1].body,
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 4096,
            "messages": [
                user_text("Weather in Paris?"),
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01",
                     "content": [{"type": "text", "text": "{\"celsius\":21.5}"}]}
                ]}
            ],
            "tools": tools, "tool_choice": {"type": "any"}
        })
    );
}

#[tokio::test]
async fn parallel_tool_calls_are_answered_in_one_user_turn() {
    let (server, registry) = setup(vec![
        Reply::json(message(
            json!([
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_weather", "input": {"city": "Rome"}}
            ]),
            "tool_use",
        )),
        Reply::json(text_message("Rome is warmer.")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Paris or Rome?")
            .model(MODEL)
            .tool(weather_tool()),
    )
    .await
    .expect("generate");
    assert_eq!(response.text(), "Rome is warmer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "{\"celsius\":21.5}"}]},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "{\"celsius\":30.0}"}]}
        ]})
    );
    assert!(requests[1].body.get("tool_choice").is_none());
}

#[tokio::test]
async fn streamed_tool_call_is_assembled_from_input_json_deltas() {
    let mut first = text_block(0, &["Checking"]);
    first.extend([
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "toolu_s1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Pa"}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "ris\"}"}}),
        json!({"type": "content_block_stop", "index": 1}),
    ]);
    let (server, registry) = setup(vec![
        sse(stream_events(first, "tool_use")),
        sse(stream_events(
            text_block(0, &["It is ", "21.5°C."]),
            "end_turn",
        )),
    ])
    .await;
    let mut stream = generate_stream(
        &registry,
        GenerateOptions::prompt("Weather in Paris?")
            .model(MODEL)
            .tool(weather_tool()),
    );
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.expect("chunk").into_chunk());
    }
    let response = stream.response().await.expect("response");
    assert_eq!(response.text(), "It is 21.5°C.");
    assert_eq!(response.usage.and_then(|u| u.output_tokens), Some(12));

    let model_text: Vec<(u32, String)> = chunks
        .iter()
        .filter(|c| c.role == Some(Role::Model) && !c.text().is_empty())
        .map(|c| (c.index.unwrap_or(0), c.text()))
        .collect();
    assert_eq!(
        model_text,
        vec![
            (0, "Checking".to_owned()),
            (2, "It is ".to_owned()),
            (2, "21.5°C.".to_owned())
        ]
    );
    let calls: Vec<_> = chunks.iter().flat_map(|c| c.tool_requests()).collect();
    assert_eq!(calls.len(), 1, "one complete tool request is streamed");
    assert_eq!(calls[0].reference.as_deref(), Some("toolu_s1"));
    assert_eq!(calls[0].input, Some(json!({"city": "Paris"})));
    assert!(chunks.iter().any(|c| c.role == Some(Role::Tool)));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_call(r);
        assert_eq!(r.body["stream"], json!(true));
    }
    assert_eq!(
        requests[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Checking"},
            {"type": "tool_use", "id": "toolu_s1", "name": "get_weather", "input": {"city": "Paris"}}
        ]})
    );
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    celsius: f64,
}

#[tokio::test]
async fn structured_output_uses_output_config_format() {
    let (server, registry) = setup(vec![Reply::json(text_message(
        r#"{"city": "Paris", "celsius": 21.5}"#,
    ))])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Forecast for Paris")
            .model(MODEL)
            .output::<Forecast>(),
    )
    .await
    .expect("generate");
    assert_eq!(
        response.output::<Forecast>().expect("output"),
        Forecast {
            city: "Paris".into(),
            celsius: 21.5
        }
    );
    let r = server.single_request();
    assert_eq!(r.body["messages"], json!([user_text("Forecast for Paris")]));
    assert_eq!(
        r.body["output_config"],
        json!({"format": {"type": "json_schema", "schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
            "additionalProperties": false
        }}})
    );
}

#[tokio::test]
async fn models_without_structured_outputs_get_instructions_instead() {
    let (server, registry) = setup(vec![Reply::json(text_message(
        r#"{"city": "Oslo", "celsius": 4}"#,
    ))])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Forecast for Oslo")
            .model("anthropic/claude-sonnet-4")
            .output::<Forecast>(),
    )
    .await
    .expect("generate");
    assert_eq!(response.output::<Forecast>().expect("output").city, "Oslo");
    let body = server.single_request().body;
    assert!(body.get("output_config").is_none(), "{body}");
    let content = body["messages"][0]["content"].as_array().expect("content");
    assert_eq!(
        content.len(),
        2,
        "Genkit's schema instructions were added: {body}"
    );
}

#[tokio::test]
async fn streamed_thinking_round_trips_with_its_signature() {
    let thinking = vec![
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Six times "}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "seven."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBsig=="}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "opaque=="}}),
        json!({"type": "content_block_stop", "index": 1}),
    ];
    let mut blocks = thinking;
    blocks.extend(text_block(2, &["42"]));
    let (server, registry) = setup(vec![
        sse(stream_events(blocks, "end_turn")),
        Reply::json(text_message("84")),
    ])
    .await;
    let config = json!({"thinking": {"enabled": true, "budgetTokens": 2048}});
    let mut stream = generate_stream(
        &registry,
        GenerateOptions::prompt("6*7?")
            .model(MODEL)
            .config(config.clone()),
    );
    let mut reasoning = String::new();
    while let Some(chunk) = stream.next().await {
        reasoning.push_str(&chunk.expect("chunk").reasoning());
    }
    assert_eq!(reasoning, "Six times seven.");
    let first = stream.response().await.expect("first turn");
    assert_eq!(first.reasoning(), "Six times seven.");
    assert_eq!(first.text(), "42");
    let parts = &first.message.as_ref().expect("message").content;
    assert_eq!(
        parts[0].metadata_value("thoughtSignature"),
        Some(&json!("EqQBsig=="))
    );

    let second = generate(
        &registry,
        GenerateOptions::messages(first.messages().expect("history"))
            .with_prompt("And doubled?")
            .model(MODEL)
            .config(config),
    )
    .await
    .expect("second turn");
    assert_eq!(second.text(), "84");
    let requests = server.requests();
    assert_eq!(
        requests[1].body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [
                user_text("6*7?"),
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Six times seven.", "signature": "EqQBsig=="},
                    {"type": "redacted_thinking", "data": "opaque=="},
                    {"type": "text", "text": "42"}
                ]},
                user_text("And doubled?")
            ]
        })
    );
}

#[tokio::test]
async fn http_errors_map_to_statuses_with_the_provider_message() {
    let cases = [
        (400, "invalid_request_error", StatusCode::InvalidArgument),
        (401, "authentication_error", StatusCode::Unauthenticated),
        (403, "permission_error", StatusCode::PermissionDenied),
        (429, "rate_limit_error", StatusCode::ResourceExhausted),
        (500, "api_error", StatusCode::Unavailable),
        (529, "overloaded_error", StatusCode::Unavailable),
    ];
    for (http, kind, expected) in cases {
        let reply = Reply::status(
            http,
            json!({"type": "error", "error": {"type": kind, "message": format!("provider says {http}")},
                "request_id": format!("req_{http}")}),
        )
        .header("retry-after", "3");
        let (_server, registry) = setup(vec![reply]).await;
        let err = generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
            .await
            .expect_err("an error status fails the call");
        assert_eq!(err.status(), expected, "HTTP {http}: {err}");
        assert!(
            err.message().contains(&format!("provider says {http}")),
            "{err}"
        );
        assert!(!err.to_string().contains(KEY) && !format!("{err:?}").contains(KEY));
        let details = err.details().expect("details");
        assert_eq!(details["type"], json!(kind));
        assert_eq!(details["requestId"], json!(format!("req_{http}")));
        assert_eq!(details["retryAfterMs"], json!(3000));
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (server, registry) = setup(vec![
        Reply::status(308, json!({})).header("location", "http://127.0.0.1:9/v1/messages"),
        Reply::json(text_message("followed")),
    ])
    .await;
    let err = generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .await
        .expect_err("a redirect is an error");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.message()
            .contains("redirected to http://127.0.0.1:9/v1/messages"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "the redirect was followed");
}

#[tokio::test]
async fn an_error_event_inside_the_stream_fails_the_call() {
    let mut events = stream_events(Vec::new(), "end_turn");
    events.truncate(2);
    events.extend(text_block(0, &["Hel"]));
    events.push(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    );
    let (_server, registry) = setup(vec![sse(events)]).await;
    let err = generate_stream(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .response()
        .await
        .expect_err("error event");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(err.message().contains("Overloaded"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_off_mid_way_is_an_error_not_a_hang() {
    for end in [End::Abort, End::Close] {
        let mut events = stream_events(Vec::new(), "end_turn");
        events.truncate(2);
        events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Once upon"}}));
        let (_server, registry) = setup(vec![sse(events).ending(end)]).await;
        let mut stream = generate_stream(
            &registry,
            GenerateOptions::prompt("Tell a story").model(MODEL),
        );
        let outcome = tokio::time::timeout(Duration::from_secs(10), async {
            let mut texts = Vec::new();
            while let Some(Ok(chunk)) = stream.next().await {
                texts.push(chunk.text());
            }
            (texts, stream.response().await)
        })
        .await
        .expect("a cut-off stream must not hang");
        assert_eq!(outcome.0, vec!["Once upon".to_owned()], "{end:?}");
        let err = outcome.1.expect_err("a cut-off stream is an error");
        assert_eq!(err.status(), StatusCode::Unavailable, "{end:?}: {err}");
    }
}

#[tokio::test]
async fn cancelling_a_stream_closes_the_connection() {
    let mut events = stream_events(Vec::new(), "end_turn");
    events.truncate(2);
    events.push(json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}));
    events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "First"}}));
    let (server, registry) = setup(vec![sse(events).ending(End::Hang)]).await;
    let cancel = CancellationToken::new();
    let mut stream = generate_stream(
        &registry,
        GenerateOptions::prompt("Go on forever")
            .model(MODEL)
            .cancel(cancel.clone()),
    );
    let first = stream.next().await.expect("a chunk").expect("ok chunk");
    assert_eq!(first.text(), "First");
    cancel.cancel();
    let err = tokio::time::timeout(Duration::from_secs(5), stream.response())
        .await
        .expect("cancellation ends the call")
        .expect_err("cancelled");
    assert_eq!(err.status(), StatusCode::Cancelled);
    server.wait_for_disconnect().await;
}

#[tokio::test]
async fn cancelling_a_plain_call_closes_the_connection() {
    let (server, registry) = setup(vec![Reply::Stall]).await;
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        canceller.cancel();
    });
    let err = generate(
        &registry,
        GenerateOptions::prompt("hi").model(MODEL).cancel(cancel),
    )
    .await
    .expect_err("cancelled");
    assert_eq!(err.status(), StatusCode::Cancelled);
    server.wait_for_disconnect().await;
}

#[tokio::test]
async fn a_request_over_the_timeout_is_deadline_exceeded() {
    let (_server, registry) = setup_with(
        vec![Reply::Stall],
        Anthropic::builder().timeout(Duration::from_millis(300)),
    )
    .await;
    let err = generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .await
        .expect_err("timeout");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
}

#[tokio::test]
async fn stop_reasons_map_to_finish_reasons() {
    let (_server, registry) = setup(vec![
        Reply::json(message(
            json!([{"type": "text", "text": "cut"}]),
            "max_tokens",
        )),
        Reply::json(message(
            json!([{"type": "text", "text": "done"}]),
            "stop_sequence",
        )),
        Reply::json(message(json!([]), "refusal")),
    ])
    .await;
    let call = || generate(&registry, GenerateOptions::prompt("hi").model(MODEL));
    assert_eq!(
        call().await.expect("length").finish_reason,
        Some(FinishReason::Length)
    );
    assert_eq!(
        call().await.expect("stop").finish_reason,
        Some(FinishReason::Stop)
    );
    // Genkit's generate turns a blocked response into FAILED_PRECONDITION.
    let err = call().await.expect_err("refusal");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert_eq!(
        err.details().expect("details")["response"]["finishReason"],
        json!("blocked")
    );
}

#[tokio::test]
async fn unknown_models_resolve_on_demand_and_version_overrides_the_model() {
    let (server, registry) = setup(vec![
        Reply::json(text_message("one")),
        Reply::json(text_message("two")),
    ])
    .await;
    generate(
        &registry,
        GenerateOptions::prompt("hi").model("anthropic/claude-3-7-sonnet-latest"),
    )
    .await
    .expect("on-demand model");
    generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model(MODEL)
            .config(json!({"version": "claude-sonnet-4-5-20250929"})),
    )
    .await
    .expect("versioned call");
    let requests = server.requests();
    assert_eq!(requests[0].body["model"], json!("claude-3-7-sonnet-latest"));
    assert_eq!(
        requests[1].body["model"],
        json!("claude-sonnet-4-5-20250929")
    );
}

#[tokio::test]
async fn the_plugin_lists_known_models_and_never_shows_its_key() {
    let server = TestServer::start(Vec::new()).await;
    let plugin = plugin_for(&server, Anthropic::builder());
    assert!(!format!("{plugin:?}").contains(KEY));
    assert!(!format!("{:?}", Anthropic::builder().api_key(KEY)).contains(KEY));
    let names: Vec<String> = plugin
        .list_actions()
        .await
        .expect("list")
        .into_iter()
        .map(|d| d.key())
        .collect();
    assert!(
        names.contains(&"/model/anthropic/claude-sonnet-4-5".to_owned()),
        "{names:?}"
    );
    let supports = plugin
        .model("claude-haiku-4-5")
        .info()
        .supports
        .clone()
        .expect("supports");
    assert_eq!(supports.tools, Some(true));
    assert_eq!(supports.tool_choice, Some(true));
}

#[tokio::test]
async fn a_per_request_api_key_is_refused() {
    let (server, registry) = setup(vec![]).await;
    let err = generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model(MODEL)
            .config(json!({"apiKey": "sk-ant-other"})),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(!err.to_string().contains("sk-ant-other"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_retry_middleware_retries_rate_limits_and_overload() {
    let error = |http: u16, kind: &str| {
        Reply::status(
            http,
            json!({"type": "error", "error": {"type": kind, "message": "try later"}}),
        )
    };
    let (server, registry) = setup(vec![
        error(429, "rate_limit_error"),
        error(529, "overloaded_error"),
        Reply::json(text_message("finally")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("hi").model(MODEL).use_middleware(
            retry()
                .initial_delay(Duration::from_millis(5))
                .jitter(false),
        ),
    )
    .await
    .expect("retried until it worked");
    assert_eq!(response.text(), "finally");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests.iter().all(|r| r.body == requests[0].body));
}

#[tokio::test]
async fn a_malformed_stream_event_is_an_error() {
    let (_server, registry) = setup(vec![sse_raw([
        json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "usage": {"input_tokens": 1}}})
        .to_string(),
        r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_del"#.to_owned(),
    ])])
    .await;
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        generate_stream(&registry, GenerateOptions::prompt("hi").model(MODEL)).response(),
    )
    .await
    .expect("no hang")
    .expect_err("malformed");
    assert_eq!(err.status(), StatusCode::Internal, "{err}");
}

#[tokio::test]
async fn the_timeout_bounds_each_wait_not_the_whole_call() {
    // Eight events 120 ms apart: about a second in all, each wait under the
    // 400 ms limit, so the stream completes.
    let events = stream_events(text_block(0, &["a", "b"]), "end_turn");
    let flowing = sse(events.clone()).paced(Duration::from_millis(120));
    // The same events 600 ms apart: the first wait exceeds the limit.
    let trickling = sse(events).paced(Duration::from_millis(600));
    let (_server, registry) = setup_with(
        vec![flowing, trickling, Reply::Hang],
        Anthropic::builder().timeout(Duration::from_millis(400)),
    )
    .await;
    let call = || generate_stream(&registry, GenerateOptions::prompt("hi").model(MODEL));
    let response = call().response().await.expect("a flowing stream completes");
    assert_eq!(response.text(), "ab");
    let err = call().response().await.expect_err("a trickling stream");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    let err = generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
        .await
        .expect_err("a server that never answers");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
}

#[tokio::test]
async fn absurd_retry_hints_never_panic() {
    let max_ms = genkit_provider::error::MAX_RETRY_AFTER.as_millis() as u64;
    for hint in ["1e300", "1e20", "-1", "NaN", "soon"] {
        let reply = Reply::status(
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}),
        )
        .header("retry-after", hint);
        let (_server, registry) = setup(vec![reply]).await;
        let err = generate(&registry, GenerateOptions::prompt("hi").model(MODEL))
            .await
            .expect_err("429");
        assert_eq!(err.status(), StatusCode::ResourceExhausted, "{hint}: {err}");
        let after = err.details().and_then(|d| d.get("retryAfterMs")).cloned();
        assert!(
            after.is_none() || after == Some(json!(max_ms)),
            "{hint}: {after:?}"
        );
    }
}
