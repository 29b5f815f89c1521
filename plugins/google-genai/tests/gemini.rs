//! Wire tests: the plugin against a local server that checks the exact
//! requests (method, path, query, headers, JSON body) and answers in the
//! Gemini API's documented formats (JSON and SSE).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use genkit_core::{CancellationToken, Plugin, Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_google_genai::{GoogleAi, GoogleAiBuilder};
use genkit_middleware::retry;
use genkit_model::embedder::{embed, embed_many};
use genkit_model::tool::Tool;
use genkit_model::types::{DocumentData, FinishReason, Part, Role, ToolChoice};
use genkit_provider::test_server::{End, Recorded, Reply, TestServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const KEY: &str = "test-key-7f3a9c";

fn plugin_for(server: &TestServer, options: GoogleAiBuilder) -> GoogleAi {
    options
        .api_key(KEY)
        .base_url(format!("{}/v1beta", server.url))
        .build()
        .expect("plugin")
}

async fn setup_with(replies: Vec<Reply>, options: GoogleAiBuilder) -> (TestServer, Registry) {
    let server = TestServer::start(replies).await;
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin_for(&server, options)))
        .expect("register");
    (server, registry)
}

async fn setup(replies: Vec<Reply>) -> (TestServer, Registry) {
    setup_with(replies, GoogleAi::builder()).await
}

/// An SSE reply as the Gemini API frames it: `data: <payload>` lines
/// ending in CRLF.
fn sse_raw(payloads: impl IntoIterator<Item = String>) -> Reply {
    Reply::sse(payloads.into_iter().map(|p| format!("data: {p}\r\n\r\n")))
}

/// An SSE reply of JSON events.
fn sse(events: impl IntoIterator<Item = Value>) -> Reply {
    sse_raw(events.into_iter().map(|e| e.to_string()))
}

/// Method, path, query and headers of a model call.
fn assert_call(r: &Recorded, path: &str, query: Option<&str>) {
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, path);
    assert_eq!(r.query.as_deref(), query);
    assert_eq!(r.header("x-goog-api-key"), Some(KEY));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert!(
        r.header("x-goog-api-client")
            .is_some_and(|v| v.starts_with("genkit-rust/")),
        "{:?}",
        r.headers
    );
    assert_eq!(r.header("authorization"), None);
}

fn text_reply(text: &str) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": text}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
    })
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

/// The function declaration Gemini receives for [`weather_tool`].
fn weather_declaration() -> Value {
    json!({
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "OBJECT",
            "properties": {"city": {"type": "STRING", "description": "The city."}},
            "required": ["city"]
        }
    })
}

#[tokio::test]
async fn text_generation_sends_the_exact_request() {
    let (server, registry) = setup(vec![Reply::json(json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": "A tiny square."}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 12, "candidatesTokenCount": 4, "totalTokenCount": 16,
            "cachedContentTokenCount": 2
        },
        "modelVersion": "gemini-2.5-flash"
    }))])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt(vec![
            Part::text("Describe"),
            Part::media("data:image/png;base64,AAAA", None),
            Part::media("https://example.com/a.mp4", Some("video/mp4")),
        ])
        .system("You are terse.")
        .model("googleai/gemini-2.5-flash")
        .config(json!({
            "temperature": 0.3,
            "maxOutputTokens": 100,
            "topK": 20,
            "topP": 0.9,
            "stopSequences": ["END"],
            "safetySettings": [
                {"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_ONLY_HIGH"},
                {"category": "HARM_CATEGORY_UNSPECIFIED", "threshold": "BLOCK_NONE"}
            ],
            "thinkingConfig": {"thinkingBudget": 0},
            "seed": 42
        })),
    )
    .await
    .expect("generate");

    let r = server.single_request();
    assert_call(&r, "/v1beta/models/gemini-2.5-flash:generateContent", None);
    assert_eq!(
        r.body,
        json!({
            "contents": [{"role": "user", "parts": [
                {"text": "Describe"},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
                {"fileData": {"mimeType": "video/mp4", "fileUri": "https://example.com/a.mp4"}}
            ]}],
            "systemInstruction": {"parts": [{"text": "You are terse."}]},
            "safetySettings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_ONLY_HIGH"}],
            "generationConfig": {
                "temperature": 0.3, "maxOutputTokens": 100, "topK": 20, "topP": 0.9,
                "stopSequences": ["END"], "thinkingConfig": {"thinkingBudget": 0}, "seed": 42
            }
        })
    );
    assert_eq!(response.text(), "A tiny square.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.expect("usage");
    assert_eq!(usage.input_tokens, Some(12));
    assert_eq!(usage.output_tokens, Some(4));
    assert_eq!(usage.total_tokens, Some(16));
    assert_eq!(usage.cached_content_tokens, Some(2));
    assert_eq!(usage.input_images, Some(1));
    assert_eq!(usage.input_videos, Some(1));
    // The API's whole answer is kept as the response's `custom` data.
    assert_eq!(
        response.custom.as_ref().and_then(|r| r.get("modelVersion")),
        Some(&json!("gemini-2.5-flash"))
    );
}

#[tokio::test]
async fn tool_loop_sends_the_function_response_with_its_id_and_signature() {
    let (server, registry) = setup(vec![
        Reply::json(json!({
            "candidates": [{
                "content": {"role": "model", "parts": [{
                    "functionCall": {"id": "call-1", "name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "c2lnLTE="
                }]},
                "finishReason": "STOP"
            }]
        })),
        Reply::json(text_reply("It is 21.5°C in Paris.")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Weather in Paris?")
            .model("googleai/gemini-2.5-flash")
            .tool(weather_tool())
            .tool_choice(ToolChoice::Auto),
    )
    .await
    .expect("generate");
    assert_eq!(response.text(), "It is 21.5°C in Paris.");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let user = json!({"role": "user", "parts": [{"text": "Weather in Paris?"}]});
    let tools = json!([{"functionDeclarations": [weather_declaration()]}]);
    let tool_config = json!({"functionCallingConfig": {"mode": "AUTO"}});
    assert_call(
        &requests[0],
        "/v1beta/models/gemini-2.5-flash:generateContent",
        None,
    );
    assert_eq!(
        requests[0].body,
        json!({"contents": [user], "tools": tools, "toolConfig": tool_config})
    );
    assert_eq!(
        requests[1].body,
        json!({
            "contents": [
                user,
                {"role": "model", "parts": [{
                    "functionCall": {"id": "call-1", "name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "c2lnLTE="
                }]},
                {"role": "user", "parts": [{
                    "functionResponse": {
                        "id": "call-1",
                        "name": "get_weather",
                        "response": {"name": "get_weather", "content": {"celsius": 21.5}}
                    }
                }]}
            ],
            "tools": tools,
            "toolConfig": tool_config
        })
    );
    // The model's tool request came back as a Genkit tool request with its ref.
    let history = response.messages().expect("history");
    let call = history[1].content[0]
        .as_tool_request()
        .expect("tool request");
    assert_eq!(call.reference.as_deref(), Some("call-1"));
    assert_eq!(
        history[1].content[0].metadata_value("thoughtSignature"),
        Some(&json!("c2lnLTE="))
    );
}

#[tokio::test]
async fn parallel_tool_calls_are_answered_together_in_order() {
    let (server, registry) = setup(vec![
        Reply::json(json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"functionCall": {"id": "a", "name": "get_weather", "args": {"city": "Paris"}}},
                    {"functionCall": {"id": "b", "name": "get_weather", "args": {"city": "Rome"}}}
                ]},
                "finishReason": "STOP"
            }]
        })),
        Reply::json(text_reply("Rome is warmer.")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Paris or Rome?")
            .model("googleai/gemini-2.5-flash")
            .tool(weather_tool()),
    )
    .await
    .expect("generate");
    assert_eq!(response.text(), "Rome is warmer.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": "a", "name": "get_weather",
                "response": {"name": "get_weather", "content": {"celsius": 21.5}}}},
            {"functionResponse": {"id": "b", "name": "get_weather",
                "response": {"name": "get_weather", "content": {"celsius": 30.0}}}}
        ]})
    );
}

#[tokio::test]
async fn streamed_tool_call_then_streamed_answer() {
    let (server, registry) = setup(vec![
        sse([
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Checking"}]}, "index": 0}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [
                {"functionCall": {"id": "s1", "name": "get_weather", "args": {"city": "Paris"}}}
            ]}, "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 3, "totalTokenCount": 11}}),
        ]),
        sse([
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "It is "}]}}]}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "21.5°C."}]},
                "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 4, "totalTokenCount": 24}}),
        ]),
    ])
    .await;
    let mut stream = generate_stream(
        &registry,
        GenerateOptions::prompt("Weather in Paris?")
            .model("googleai/gemini-2.5-flash")
            .tool(weather_tool()),
    );
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.expect("chunk").into_chunk());
    }
    let response = stream.response().await.expect("response");
    assert_eq!(response.text(), "It is 21.5°C.");
    assert_eq!(response.usage.and_then(|u| u.output_tokens), Some(4));

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
    let streamed_call = chunks
        .iter()
        .flat_map(|c| c.tool_requests())
        .next()
        .expect("a streamed tool request");
    assert_eq!(streamed_call.name, "get_weather");
    assert_eq!(streamed_call.reference.as_deref(), Some("s1"));
    assert!(chunks.iter().any(|c| c.role == Some(Role::Tool)));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_call(
            r,
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            Some("alt=sse"),
        );
    }
    assert_eq!(
        requests[1].body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Checking"},
            {"functionCall": {"id": "s1", "name": "get_weather", "args": {"city": "Paris"}}}
        ]})
    );
}

#[derive(Debug, Serialize, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    celsius: f64,
}

#[tokio::test]
async fn structured_output_uses_the_response_json_schema() {
    let (server, registry) = setup(vec![Reply::json(text_reply(
        r#"{"city": "Paris", "celsius": 21.5}"#,
    ))])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Forecast for Paris")
            .model("googleai/gemini-2.5-flash")
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
    assert_eq!(
        r.body["generationConfig"],
        json!({
            "responseMimeType": "application/json",
            "responseJsonSchema": genkit_core::schema::schema_for::<Forecast>()
        })
    );
    assert_eq!(
        r.body["contents"],
        json!([{"role": "user", "parts": [{"text": "Forecast for Paris"}]}])
    );
}

#[tokio::test]
async fn legacy_response_schema_is_cleaned() {
    let (server, registry) = setup_with(
        vec![Reply::json(text_reply(r#"{"city": "Oslo", "celsius": 4}"#))],
        GoogleAi::builder().legacy_response_schema(true),
    )
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("Forecast for Oslo")
            .model("googleai/gemini-2.5-flash")
            .output::<Forecast>(),
    )
    .await
    .expect("generate");
    assert_eq!(response.output::<Forecast>().expect("output").city, "Oslo");
    let config = &server.single_request().body["generationConfig"];
    assert_eq!(config["responseMimeType"], json!("application/json"));
    let schema = &config["responseSchema"];
    assert_eq!(schema["type"], json!("object"));
    assert!(schema.get("$schema").is_none(), "{schema}");
    assert!(config.get("responseJsonSchema").is_none());
}

#[tokio::test]
async fn thoughts_become_reasoning_and_signatures_go_back() {
    let (server, registry) = setup(vec![
        Reply::json(json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"thought": true, "text": "Six times seven."},
                    {"text": "42", "thoughtSignature": "c2lnLTI="}
                ]},
                "finishReason": "STOP"
            }],
            "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 1,
                "thoughtsTokenCount": 7, "totalTokenCount": 13}
        })),
        Reply::json(text_reply("84")),
    ])
    .await;
    let config = json!({"thinkingConfig": {"includeThoughts": true, "thinkingLevel": "LOW"}});
    let first = generate(
        &registry,
        GenerateOptions::prompt("6*7?")
            .model("googleai/gemini-3-flash-preview")
            .config(config.clone()),
    )
    .await
    .expect("first turn");
    assert_eq!(first.reasoning(), "Six times seven.");
    assert_eq!(first.text(), "42");
    assert_eq!(
        first.usage.as_ref().and_then(|u| u.thoughts_tokens),
        Some(7)
    );

    let second = generate(
        &registry,
        GenerateOptions::messages(first.messages().expect("history"))
            .with_prompt("And doubled?")
            .model("googleai/gemini-3-flash-preview")
            .config(config),
    )
    .await
    .expect("second turn");
    assert_eq!(second.text(), "84");
    let requests = server.requests();
    assert_eq!(
        requests[1].body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "6*7?"}]},
            {"role": "model", "parts": [
                {"thought": true, "text": "Six times seven."},
                {"text": "42", "thoughtSignature": "c2lnLTI="}
            ]},
            {"role": "user", "parts": [{"text": "And doubled?"}]}
        ])
    );
    assert_eq!(
        requests[1].body["generationConfig"],
        json!({"thinkingConfig": {"includeThoughts": true, "thinkingLevel": "LOW"}})
    );
}

#[tokio::test]
async fn http_errors_map_to_statuses_with_the_provider_message() {
    let cases = [
        (400, "INVALID_ARGUMENT", StatusCode::InvalidArgument),
        (401, "UNAUTHENTICATED", StatusCode::Unauthenticated),
        (403, "PERMISSION_DENIED", StatusCode::PermissionDenied),
        (429, "RESOURCE_EXHAUSTED", StatusCode::ResourceExhausted),
        (500, "INTERNAL", StatusCode::Unavailable),
        (503, "UNAVAILABLE", StatusCode::Unavailable),
    ];
    for (http, name, expected) in cases {
        let reply = Reply::status(
            http,
            json!({"error": {"code": http, "message": format!("provider says {http}"), "status": name}}),
        )
        .header("retry-after", "7");
        let (_server, registry) = setup(vec![reply]).await;
        let err = generate(
            &registry,
            GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
        )
        .await
        .expect_err("an error status fails the call");
        assert_eq!(err.status(), expected, "HTTP {http}: {err}");
        assert!(
            err.message().contains(&format!("provider says {http}")),
            "{err}"
        );
        assert!(!err.to_string().contains(KEY) && !format!("{err:?}").contains(KEY));
        assert_eq!(
            err.details().and_then(|d| d.get("retryAfterMs")),
            Some(&json!(7000)),
            "HTTP {http}"
        );
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (server, registry) = setup(vec![
        Reply::status(302, json!({})).header("location", "http://127.0.0.1:9/v1beta"),
        Reply::json(text_reply("followed")),
    ])
    .await;
    let err = generate(
        &registry,
        GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
    )
    .await
    .expect_err("a redirect is an error");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.message()
            .contains("redirected to http://127.0.0.1:9/v1beta"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "the redirect was followed");
}

#[tokio::test]
async fn an_error_event_inside_the_stream_fails_the_call() {
    let (_server, registry) = setup(vec![sse([
        json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}]}),
        json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
    ])])
    .await;
    let stream = generate_stream(
        &registry,
        GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
    );
    let err = stream.response().await.expect_err("error event");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(err.message().contains("The model is overloaded."), "{err}");
}

#[tokio::test]
async fn a_stream_cut_off_mid_way_is_an_error_not_a_hang() {
    for end in [End::Abort, End::Close] {
        let (_server, registry) = setup(vec![sse(
            [json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Once upon"}]}}]})],
        )
        .ending(end)])
        .await;
        let mut stream = generate_stream(
            &registry,
            GenerateOptions::prompt("Tell a story").model("googleai/gemini-2.5-flash"),
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
    let (server, registry) =
        setup(vec![sse(
        [json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "First"}]}}]})],
    )
    .ending(End::Hang)])
        .await;
    let cancel = CancellationToken::new();
    let mut stream = generate_stream(
        &registry,
        GenerateOptions::prompt("Go on forever")
            .model("googleai/gemini-2.5-flash")
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
        GenerateOptions::prompt("hi")
            .model("googleai/gemini-2.5-flash")
            .cancel(cancel),
    )
    .await
    .expect_err("cancelled");
    assert_eq!(err.status(), StatusCode::Cancelled);
    server.wait_for_disconnect().await;
}

#[tokio::test]
async fn a_request_over_the_timeout_is_deadline_exceeded() {
    let (_server, registry) = setup_with(
        vec![
            Reply::Stall,
            sse([json!({"candidates": [{"content": {"parts": [{"text": "slow"}]}}]})])
                .ending(End::Hang),
        ],
        GoogleAi::builder().timeout(Duration::from_millis(300)),
    )
    .await;
    let err = generate(
        &registry,
        GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
    )
    .await
    .expect_err("timeout");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    let err = generate_stream(
        &registry,
        GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
    )
    .response()
    .await
    .expect_err("timeout mid-stream");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
}

#[tokio::test]
async fn finish_reasons_and_blocked_prompts() {
    let candidate = |reason: &str| json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "x"}]}, "finishReason": reason}]});
    let (_server, registry) = setup(vec![
        Reply::json(candidate("MAX_TOKENS")),
        Reply::json(candidate("SAFETY")),
        Reply::json(candidate("RECITATION")),
        Reply::json(
            json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3}}),
        ),
    ])
    .await;
    let call = || {
        generate(
            &registry,
            GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
        )
    };
    let truncated = call().await.expect("a length stop is a response");
    assert_eq!(truncated.finish_reason, Some(FinishReason::Length));
    // Genkit's generate turns a blocked response into FAILED_PRECONDITION
    // carrying the response.
    let mut blocked = Vec::new();
    for _ in 0..3 {
        let err = call().await.expect_err("blocked");
        assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
        let response = &err.details().expect("details")["response"];
        blocked.push((
            response["finishReason"].clone(),
            response.get("finishMessage").cloned(),
        ));
    }
    assert_eq!(
        blocked,
        vec![
            (json!("blocked"), None),
            (json!("blocked"), None),
            (
                json!("blocked"),
                Some(json!("The prompt was blocked (PROHIBITED_CONTENT)"))
            ),
        ]
    );
}

#[tokio::test]
async fn embeddings_use_embed_content_and_batch_embed_contents() {
    let (server, registry) = setup(vec![
        Reply::json(json!({"embedding": {"values": [0.5, -0.25]}})),
        Reply::json(json!({"embeddings": [{"values": [1.0, 0.0]}, {"values": [0.0, 1.0]}]})),
    ])
    .await;
    let one = embed(&registry, "googleai/gemini-embedding-001", "hello")
        .await
        .expect("embed");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].embedding, vec![0.5, -0.25]);
    let many = embed_many(
        &registry,
        "googleai/gemini-embedding-001",
        vec![DocumentData::from_text("a"), DocumentData::from_text("b")],
        Some(json!({"taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 2})),
    )
    .await
    .expect("embed many");
    assert_eq!(
        many.iter().map(|e| e.embedding.clone()).collect::<Vec<_>>(),
        vec![vec![1.0, 0.0], vec![0.0, 1.0]]
    );
    let requests = server.requests();
    assert_call(
        &requests[0],
        "/v1beta/models/gemini-embedding-001:embedContent",
        None,
    );
    assert_eq!(
        requests[0].body,
        json!({"content": {"parts": [{"text": "hello"}]}})
    );
    assert_call(
        &requests[1],
        "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        None,
    );
    let item = |text: &str| {
        json!({"model": "models/gemini-embedding-001", "content": {"parts": [{"text": text}]},
            "taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 2})
    };
    assert_eq!(
        requests[1].body,
        json!({"requests": [item("a"), item("b")]})
    );
}

#[tokio::test]
async fn unknown_models_resolve_on_demand_and_version_overrides_the_path() {
    let (server, registry) = setup(vec![
        Reply::json(text_reply("one")),
        Reply::json(text_reply("two")),
    ])
    .await;
    generate(
        &registry,
        GenerateOptions::prompt("hi").model("googleai/gemini-experimental-x"),
    )
    .await
    .expect("on-demand model");
    generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model("googleai/gemini-2.5-flash")
            .config(json!({"version": "gemini-2.5-flash-001"})),
    )
    .await
    .expect("versioned call");
    let requests = server.requests();
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-experimental-x:generateContent"
    );
    assert_eq!(
        requests[1].path,
        "/v1beta/models/gemini-2.5-flash-001:generateContent"
    );
    assert!(requests[1].body.get("generationConfig").is_none());
}

#[tokio::test]
async fn the_plugin_lists_known_models_and_never_shows_its_key() {
    let server = TestServer::start(Vec::new()).await;
    let plugin = plugin_for(&server, GoogleAi::builder());
    assert!(!format!("{plugin:?}").contains(KEY));
    assert!(!format!("{:?}", GoogleAi::builder().api_key(KEY)).contains(KEY));
    let names: Vec<String> = plugin
        .list_actions()
        .await
        .expect("list")
        .into_iter()
        .map(|d| d.key())
        .collect();
    assert!(
        names.contains(&"/model/googleai/gemini-2.5-flash".to_owned()),
        "{names:?}"
    );
    assert!(names.contains(&"/embedder/googleai/gemini-embedding-001".to_owned()));
    let model = plugin.model("gemini-2.5-pro");
    let supports = model.info().supports.clone().expect("supports");
    assert_eq!(supports.tools, Some(true));
    assert_eq!(supports.system_role, Some(true));
}

#[tokio::test]
async fn a_per_request_api_key_is_refused() {
    let (server, registry) = setup(vec![]).await;
    let err = generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model("googleai/gemini-2.5-flash")
            .config(json!({"apiKey": "other-key-123"})),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(!err.to_string().contains("other-key-123"));
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_retry_middleware_retries_rate_limits_and_outages() {
    let (server, registry) = setup(vec![
        Reply::status(
            429,
            json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}),
        ),
        Reply::status(
            503,
            json!({"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}),
        ),
        Reply::json(text_reply("finally")),
    ])
    .await;
    let response = generate(
        &registry,
        GenerateOptions::prompt("hi")
            .model("googleai/gemini-2.5-flash")
            .use_middleware(
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
        r#"{"candidates": [{"content": {"parts": [{"text": "Hi"#.to_owned(),
    ])])
    .await;
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        generate_stream(
            &registry,
            GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
        )
        .response(),
    )
    .await
    .expect("no hang")
    .expect_err("malformed");
    assert_eq!(err.status(), StatusCode::Internal, "{err}");
    assert!(err.message().contains("not JSON"), "{err}");
}

#[tokio::test]
async fn absurd_retry_hints_never_panic() {
    let max_ms = genkit_provider::error::MAX_RETRY_AFTER.as_millis() as u64;
    let quota = |delay: &str| {
        json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]}})
    };
    let cases = [
        // (Retry-After header, retryDelay in the body)
        (Some("1e300"), "1s"),
        (Some("1e20"), "1s"),
        (None, "1e30s"),
        (None, "-5s"),
        (None, "NaNs"),
        (Some("garbage"), "garbage"),
    ];
    for (header, delay) in cases {
        let mut reply = Reply::status(429, quota(delay));
        if let Some(h) = header {
            reply = reply.header("retry-after", h);
        }
        let (_server, registry) = setup(vec![reply]).await;
        let err = generate(
            &registry,
            GenerateOptions::prompt("hi").model("googleai/gemini-2.5-flash"),
        )
        .await
        .expect_err("429");
        assert_eq!(
            err.status(),
            StatusCode::ResourceExhausted,
            "{delay}: {err}"
        );
        let after = err.details().and_then(|d| d.get("retryAfterMs")).cloned();
        assert!(
            after.is_none() || after == Some(json!(max_ms)),
            "{header:?} {delay}: {after:?}"
        );
    }
}
