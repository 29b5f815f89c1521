//! Wire tests: the plugin against a scripted server on 127.0.0.1 that checks
//! the exact requests it sends and answers in the Chat Completions /
//! Embeddings wire format.

use futures::StreamExt;
use genkit_core::{ActionKind, CancellationToken, Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_middleware::retry;
use genkit_model::embedder::{embed, embed_many};
use genkit_model::model::lookup_model;
use genkit_model::tool::Tool;
use genkit_model::types::{DocumentData, FinishReason, Part, ToolChoice};
use genkit_openai::{ModelSpec, OpenAiCompatible, OpenAiCompatibleBuilder, StructuredOutputStyle};
use genkit_provider::test_server::{End, Reply, TestServer, sse_data};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

const KEY: &str = "sk-test-secret-123";

fn builder(server: &TestServer) -> OpenAiCompatibleBuilder {
    OpenAiCompatible::builder()
        .base_url(format!("{}/v1", server.url))
        .api_key(KEY)
        .header("OpenAI-Organization", "org-test")
        .timeout(Duration::from_secs(10))
}

fn registry(plugin: OpenAiCompatible) -> Registry {
    let registry = Registry::new();
    registry
        .register_plugin(Arc::new(plugin))
        .expect("register plugin");
    registry
}

async fn setup(replies: Vec<Reply>) -> (TestServer, Registry) {
    let server = TestServer::start(replies).await;
    let reg = registry(builder(&server).build().expect("build"));
    (server, reg)
}

/// Fails the test instead of hanging.
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the call hung")
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    })
}

fn text_completion(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

fn tool_calls_completion(calls: Value) -> Value {
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
    )
}

/// An SSE reply of `data:` events (each JSON value, then `[DONE]`).
fn sse_done(events: Vec<Value>) -> Reply {
    let frames = events.iter().map(|e| sse_data(&e.to_string()));
    Reply::sse(frames.chain([sse_data("[DONE]")]))
}

fn chunk(delta: Value, finish: Option<&str>) -> Value {
    json!({"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 2, "model": "gpt-4o",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WeatherIn {
    city: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WeatherOut {
    temperature_c: i32,
}

fn weather_tool(calls: Arc<AtomicUsize>) -> Tool<WeatherIn, WeatherOut> {
    Tool::new(
        "weather",
        "Get the weather for a city",
        move |input: WeatherIn, _ctx| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(WeatherOut {
                    temperature_c: if input.city == "Paris" { 18 } else { 25 },
                })
            }
        },
    )
}

fn weather_tool_json() -> Value {
    let mut schema = genkit_core::schema::schema_for::<WeatherIn>();
    schema.as_object_mut().expect("object").remove("$schema");
    json!({"type": "function", "function": {
        "name": "weather", "description": "Get the weather for a city", "parameters": schema}})
}

// ---------------------------------------------------------------- requests

#[tokio::test]
async fn generate_sends_the_exact_request_and_reads_the_answer() {
    let (server, reg) = setup(vec![Reply::json(text_completion("Paris."))]).await;
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt(vec![
            Part::text("What is in this picture? "),
            Part::media("https://example.com/cat.jpg", Some("image/jpeg")),
            Part::media("data:image/png;base64,iVBORw0KGgo=", None),
        ])
        .system("Answer briefly.")
        .model("openai/gpt-4o")
        .config(json!({
            "temperature": 0, "maxOutputTokens": 64, "topP": 0.5, "stopSequences": ["END"],
            "seed": 42, "frequencyPenalty": 0.5, "presencePenalty": 0.25, "user": "u-1",
            "logit_bias": {"50256": -100}
        })),
    ))
    .await
    .expect("generate");

    let req = server.single_request();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("openai-organization"), Some("org-test"));
    assert_eq!(
        req.body,
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Answer briefly."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in this picture? "},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
                ]}
            ],
            "temperature": 0.0, "max_tokens": 64, "top_p": 0.5, "stop": ["END"], "seed": 42,
            "frequency_penalty": 0.5, "presence_penalty": 0.25, "user": "u-1",
            "logit_bias": {"50256": -100}
        })
    );
    assert_eq!(response.text(), "Paris.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (Some(11), Some(7), Some(18))
    );
}

/// `from_env` reads `OPENAI_BASE_URL` as OpenAI's SDKs do, and sends
/// `OPENAI_API_KEY` there.
#[tokio::test]
async fn from_env_reads_openai_base_url_and_sends_the_key_there() {
    let server = TestServer::start([Reply::json(text_completion("Hi."))]).await;
    let base = format!("{}/v1/", server.url);
    let plugin = OpenAiCompatible::from_env_with(|var| match var {
        "OPENAI_BASE_URL" => Some(base.clone()),
        "OPENAI_API_KEY" => Some(format!(" {KEY} ")),
        _ => None,
    })
    .expect("plugin");
    let reg = registry(plugin);
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Hello").model("openai/gpt-4o-mini"),
    ))
    .await
    .expect("generate");
    assert_eq!(response.text(), "Hi.");
    let req = server.single_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    // Without a key a compatible server is called without one.
    let server = TestServer::start([Reply::json(text_completion("Hi."))]).await;
    let base = format!("{}/v1", server.url);
    let plugin =
        OpenAiCompatible::from_env_with(|var| (var == "OPENAI_BASE_URL").then(|| base.clone()))
            .expect("plugin");
    bounded(generate(
        &registry(plugin),
        GenerateOptions::prompt("Hello").model("openai/gpt-4o-mini"),
    ))
    .await
    .expect("generate");
    assert_eq!(server.single_request().header("authorization"), None);
}

#[tokio::test]
async fn finish_reasons_map_to_genkit() {
    for (wire, genkit) in [
        ("length", FinishReason::Length),
        ("something_new", FinishReason::Other),
    ] {
        let (_server, reg) = setup(vec![Reply::json(completion(
            json!({"role": "assistant", "content": "x"}),
            wire,
        ))])
        .await;
        let r = bounded(generate(
            &reg,
            GenerateOptions::prompt("hi").model("openai/gpt-4o"),
        ))
        .await
        .expect("generate");
        assert_eq!(r.finish_reason, Some(genkit), "{wire}");
    }
    // A filtered answer is `blocked`, which `generate` turns into an error
    // carrying the response.
    let (_server, reg) = setup(vec![Reply::json(completion(
        json!({"role": "assistant", "content": ""}),
        "content_filter",
    ))])
    .await;
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("blocked");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert_eq!(
        err.details().expect("details")["response"]["finishReason"],
        json!("blocked")
    );
}

// ---------------------------------------------------------------- tools

#[tokio::test]
async fn tool_loop_sends_the_tool_result_back() {
    let (server, reg) = setup(vec![
        Reply::json(tool_calls_completion(json!([
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
        ]))),
        Reply::json(text_completion("It is 18 °C in Paris.")),
    ])
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(calls.clone());
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Weather in Paris?")
            .model("openai/gpt-4o")
            .tool(&tool)
            .tool_choice(ToolChoice::Auto),
    ))
    .await
    .expect("generate");
    assert_eq!(response.text(), "It is 18 °C in Paris.");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body,
        json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "Weather in Paris?"}],
            "tools": [weather_tool_json()],
            "tool_choice": "auto"
        })
    );
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature_c\":18}"}
        ])
    );
    assert_eq!(reqs[1].body["tools"], json!([weather_tool_json()]));
}

#[tokio::test]
async fn parallel_tool_calls_all_run_and_answer() {
    let (server, reg) = setup(vec![
        Reply::json(tool_calls_completion(json!([
            {"id": "call_p", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_r", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
        ]))),
        Reply::json(text_completion("Paris 18, Rome 25.")),
    ])
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Paris and Rome?")
            .model("openai/gpt-4o")
            .tool(weather_tool(calls.clone())),
    ))
    .await
    .expect("generate");
    assert_eq!(response.text(), "Paris 18, Rome 25.");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second[1]["tool_calls"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        second[2],
        json!({"role": "tool", "tool_call_id": "call_p", "content": "{\"temperature_c\":18}"})
    );
    assert_eq!(
        second[3],
        json!({"role": "tool", "tool_call_id": "call_r", "content": "{\"temperature_c\":25}"})
    );
}

#[tokio::test]
async fn required_tool_choice_with_one_tool_names_it() {
    let (server, reg) = setup(vec![Reply::json(tool_calls_completion(json!([
        {"id": "c", "type": "function", "function": {"name": "weather", "arguments": "{ \"city\": \"Oslo\" }"}}
    ])))])
    .await;
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Weather?")
            .model("openai/gpt-4o")
            .tool(weather_tool(Arc::default()))
            .tool_choice(ToolChoice::Required)
            .return_tool_requests(true),
    ))
    .await
    .expect("generate");
    let req = server.single_request();
    assert_eq!(
        req.body["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
    let calls = response.tool_requests();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].input, Some(json!({"city": "Oslo"})));
    assert_eq!(calls[0].reference.as_deref(), Some("c"));
}

// ---------------------------------------------------------------- streaming

#[tokio::test]
async fn streamed_text_arrives_in_chunks() {
    let (server, reg) = setup(vec![sse_done(vec![
        chunk(json!({"role": "assistant", "content": ""}), None),
        chunk(json!({"content": "Hel"}), None),
        chunk(json!({"content": "lo!"}), None),
        chunk(json!({}), Some("stop")),
        json!({"id": "chatcmpl-s", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}),
    ])])
    .await;
    let mut stream = generate_stream(&reg, GenerateOptions::prompt("Hi").model("openai/gpt-4o"));
    let mut texts = Vec::new();
    while let Some(c) = bounded(stream.next()).await {
        texts.push(c.expect("chunk").text());
    }
    let response = bounded(stream.response()).await.expect("response");
    assert_eq!(texts, ["Hel", "lo!"]);
    assert_eq!(response.text(), "Hello!");
    assert_eq!(response.usage.expect("usage").total_tokens, Some(5));
    let req = server.single_request();
    assert_eq!(req.body["stream"], json!(true));
    assert_eq!(req.body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn streamed_tool_calls_are_assembled_across_chunks() {
    let frag = |index: u32, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(n) = name {
            call["function"]["name"] = json!(n);
        }
        chunk(json!({"tool_calls": [call]}), None)
    };
    let (server, reg) = setup(vec![
        sse_done(vec![
            chunk(json!({"role": "assistant", "content": null}), None),
            frag(0, Some("call_p"), Some("weather"), ""),
            frag(0, None, None, "{\"ci"),
            frag(1, Some("call_r"), Some("weather"), "{\"city\""),
            frag(0, None, None, "ty\": \"Par"),
            frag(1, None, None, ": \"Rome\"}"),
            frag(0, None, None, "is\"}"),
            chunk(json!({}), Some("tool_calls")),
        ]),
        sse_done(vec![
            chunk(json!({"content": "Both "}), None),
            chunk(json!({"content": "nice."}), None),
            chunk(json!({}), Some("stop")),
        ]),
    ])
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("Paris and Rome?")
            .model("openai/gpt-4o")
            .tool(weather_tool(calls.clone())),
    );
    let mut partial_requests = 0;
    let mut complete = Vec::new();
    let mut model_text = String::new();
    while let Some(c) = bounded(stream.next()).await {
        let c = c.expect("chunk");
        partial_requests += c
            .tool_requests()
            .filter(|r| r.partial == Some(true))
            .count();
        complete.extend(
            c.tool_requests()
                .filter(|r| r.partial.is_none())
                .map(|r| (r.reference.clone(), r.input.clone())),
        );
        if c.index() == 2 {
            model_text.push_str(&c.text());
        }
    }
    let response = bounded(stream.response()).await.expect("response");
    assert!(partial_requests >= 6, "partial tool requests were streamed");
    // The stream ends each call with its complete request, as it will run.
    assert_eq!(
        complete,
        [
            (Some("call_p".to_owned()), Some(json!({"city": "Paris"}))),
            (Some("call_r".to_owned()), Some(json!({"city": "Rome"})))
        ]
    );
    assert_eq!(model_text, "Both nice.");
    assert_eq!(response.text(), "Both nice.");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let second = &server.requests()[1].body;
    assert_eq!(
        second["messages"][1]["tool_calls"],
        json!([
            {"id": "call_p", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_r", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}}
        ])
    );
    assert_eq!(second["messages"][2]["tool_call_id"], json!("call_p"));
    assert_eq!(second["messages"][3]["tool_call_id"], json!("call_r"));
}

// ---------------------------------------------------------------- structured output

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

#[tokio::test]
async fn structured_output_uses_response_format() {
    let (server, reg) = setup(vec![Reply::json(text_completion(
        "{\"name\": \"Mara\", \"age\": 25}",
    ))])
    .await;
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Invent a person.")
            .model("openai/gpt-4o")
            .output::<Person>(),
    ))
    .await
    .expect("generate");
    assert_eq!(
        response.output::<Person>().expect("output"),
        Person {
            name: "Mara".into(),
            age: 25
        }
    );
    let mut schema = genkit_core::schema::schema_for::<Person>();
    schema.as_object_mut().expect("object").remove("$schema");
    let req = server.single_request();
    assert_eq!(
        req.body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema}})
    );
}

#[tokio::test]
async fn structured_output_in_llama_cpp_style_streams() {
    let server = TestServer::start(vec![sse_done(vec![
        chunk(json!({"content": "{\"name\": "}), None),
        chunk(json!({"content": "\"Ada\", \"age\": 3"}), None),
        chunk(json!({"content": "6}"}), None),
        chunk(json!({}), Some("stop")),
    ])])
    .await;
    let plugin = builder(&server)
        .name("local")
        .models([
            ModelSpec::new("smollm2").constrained(genkit_model::types::ConstrainedSupport::All)
        ])
        .structured_output(StructuredOutputStyle::JsonObjectWithSchema)
        .build()
        .expect("build");
    let reg = registry(plugin);
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("Invent a person.")
            .model("local/smollm2")
            .output::<Person>(),
    );
    let mut last_partial = None;
    while let Some(c) = bounded(stream.next()).await {
        if let Some(o) = c.expect("chunk").output() {
            last_partial = Some(o.clone());
        }
    }
    let response = bounded(stream.response()).await.expect("response");
    assert_eq!(last_partial, Some(json!({"name": "Ada", "age": 36})));
    assert_eq!(response.output::<Person>().expect("output").age, 36);
    let mut schema = genkit_core::schema::schema_for::<Person>();
    schema.as_object_mut().expect("object").remove("$schema");
    let req = server.single_request();
    assert_eq!(req.body["model"], json!("smollm2"));
    assert_eq!(
        req.body["response_format"],
        json!({"type": "json_object", "schema": schema})
    );
}

// ---------------------------------------------------------------- errors

#[tokio::test]
async fn http_errors_map_to_statuses_with_the_provider_message() {
    let cases = [
        (400, StatusCode::InvalidArgument),
        (401, StatusCode::Unauthenticated),
        (403, StatusCode::PermissionDenied),
        (404, StatusCode::NotFound),
        (429, StatusCode::ResourceExhausted),
        (500, StatusCode::Unavailable),
        (502, StatusCode::Unavailable),
        (503, StatusCode::Unavailable),
    ];
    for (http, status) in cases {
        let body = json!({"error": {"message": format!("provider says {http}"),
                                    "type": "invalid_request_error", "param": null, "code": "some_code"}});
        let (_server, reg) = setup(vec![Reply::status(http, body)]).await;
        let err = bounded(generate(
            &reg,
            GenerateOptions::prompt("hi").model("openai/gpt-4o"),
        ))
        .await
        .expect_err("must fail");
        assert_eq!(err.status(), status, "HTTP {http}: {err}");
        assert!(
            err.message().contains(&format!("provider says {http}")),
            "{err}"
        );
        assert_eq!(err.details().expect("details")["httpStatus"], json!(http));
        let all = format!("{err} {err:?} {}", err.stack());
        assert!(!all.contains(KEY), "the API key leaked: {all}");
    }
    // A non-JSON error body is quoted.
    let (_server, reg) = setup(vec![Reply::raw(500, "text/plain", "Internal Server Error")]).await;
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("must fail");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(err.message().contains("Internal Server Error"), "{err}");
}

#[tokio::test]
async fn redirects_are_not_followed_so_credentials_stay_with_the_configured_host() {
    let (server, reg) = setup(vec![
        Reply::status(307, json!({})).header("location", "http://127.0.0.1:9/elsewhere"),
        Reply::json(completion(
            json!({"role": "assistant", "content": "followed"}),
            "stop",
        )),
    ])
    .await;
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("a redirect is an error");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.message()
            .contains("redirected to http://127.0.0.1:9/elsewhere"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "the redirect was followed");
    assert!(!format!("{err} {err:?}").contains(KEY));
}

#[tokio::test]
async fn rate_limits_are_retried_by_the_retry_middleware() {
    let (server, reg) = setup(vec![
        Reply::status(
            429,
            json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after", "0"),
        Reply::json(text_completion("ok")),
    ])
    .await;
    let retried = Arc::new(AtomicUsize::new(0));
    let r = retried.clone();
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi")
            .model("openai/gpt-4o")
            .use_model_middleware(
                retry()
                    .initial_delay(Duration::from_millis(1))
                    .jitter(false)
                    .on_error(move |e, _| {
                        assert_eq!(e.status(), StatusCode::ResourceExhausted);
                        r.fetch_add(1, Ordering::SeqCst);
                    }),
            ),
    ))
    .await
    .expect("retried");
    assert_eq!(response.text(), "ok");
    assert_eq!(retried.load(Ordering::SeqCst), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_stream_cut_off_midway_is_an_error() {
    // The body ends cleanly but before any finish_reason or [DONE].
    let frames = vec![format!(
        "data: {}\n\n",
        chunk(json!({"content": "Hel"}), None)
    )];
    let (_s, reg) = setup(vec![Reply::sse(frames.clone())]).await;
    let mut stream = generate_stream(&reg, GenerateOptions::prompt("hi").model("openai/gpt-4o"));
    while bounded(stream.next()).await.is_some() {}
    let err = bounded(stream.response()).await.expect_err("cut off");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(
        err.message()
            .contains("ended before the response was complete"),
        "{err}"
    );

    // The connection breaks mid-body.
    let (_s, reg) = setup(vec![Reply::sse(frames).ending(End::Abort)]).await;
    let err = bounded(
        generate_stream(&reg, GenerateOptions::prompt("hi").model("openai/gpt-4o")).response(),
    )
    .await
    .expect_err("broken");
    assert_eq!(err.status(), StatusCode::Unavailable, "{err}");
}

#[tokio::test]
async fn malformed_stream_events_and_stream_errors() {
    let frames = vec![
        format!("data: {}\n\n", chunk(json!({"content": "a"}), None)),
        "data: {this is not json\n\n".to_owned(),
    ];
    let (_s, reg) = setup(vec![Reply::sse(frames)]).await;
    let err = bounded(
        generate_stream(&reg, GenerateOptions::prompt("hi").model("openai/gpt-4o")).response(),
    )
    .await
    .expect_err("malformed");
    assert_eq!(err.status(), StatusCode::Internal);
    assert!(err.message().contains("not JSON"), "{err}");

    let frames = vec![
        format!("data: {}\n\n", chunk(json!({"content": "a"}), None)),
        "data: {\"error\": {\"message\": \"The server is overloaded\", \"type\": \"server_error\"}}\n\n".to_owned(),
    ];
    let (_s, reg) = setup(vec![Reply::sse(frames)]).await;
    let err = bounded(
        generate_stream(&reg, GenerateOptions::prompt("hi").model("openai/gpt-4o")).response(),
    )
    .await
    .expect_err("stream error");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(err.message().contains("The server is overloaded"), "{err}");

    // Non-JSON success bodies.
    let (_s, reg) = setup(vec![Reply::raw(200, "application/json", "{\"choices\": [")]).await;
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("malformed");
    assert_eq!(err.status(), StatusCode::Internal);
}

#[tokio::test]
async fn timeouts_are_deadline_exceeded() {
    let server = TestServer::start(vec![
        Reply::Hang,
        Reply::sse(vec![format!(
            "data: {}\n\n",
            chunk(json!({"content": "a"}), None)
        )])
        .ending(End::Hang),
    ])
    .await;
    let reg = registry(
        builder(&server)
            .timeout(Duration::from_millis(300))
            .build()
            .expect("build"),
    );
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("timeout");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    let err = bounded(
        generate_stream(&reg, GenerateOptions::prompt("hi").model("openai/gpt-4o")).response(),
    )
    .await
    .expect_err("idle stream");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    assert!(err.message().contains("next stream event"), "{err}");
}

#[tokio::test]
async fn cancellation_drops_the_http_request() {
    let (server, reg) = setup(vec![
        Reply::sse(vec![format!(
            "data: {}\n\n",
            chunk(json!({"content": "first"}), None)
        )])
        .ending(End::Hang),
    ])
    .await;
    let cancel = CancellationToken::new();
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("hi")
            .model("openai/gpt-4o")
            .cancel(cancel.clone()),
    );
    let first = bounded(stream.next()).await.expect("a chunk").expect("ok");
    assert_eq!(first.text(), "first");
    cancel.cancel();
    let err = bounded(stream.response()).await.expect_err("cancelled");
    assert_eq!(err.status(), StatusCode::Cancelled, "{err}");
    // The server sees the connection go away.
    bounded(server.wait_for_disconnect()).await;
}

// ---------------------------------------------------------------- keys

#[tokio::test]
async fn request_scoped_keys_and_missing_keys() {
    let (server, reg) = setup(vec![Reply::json(text_completion("ok"))]).await;
    bounded(generate(
        &reg,
        GenerateOptions::prompt("hi")
            .model("openai/gpt-4o")
            .config(json!({"apiKey": "sk-per-request"})),
    ))
    .await
    .expect("generate");
    let req = server.single_request();
    assert_eq!(req.header("authorization"), Some("Bearer sk-per-request"));
    assert!(req.body.get("apiKey").is_none() && req.body.get("api_key").is_none());

    // No key at all: nothing is sent when one is required.
    let server = TestServer::start(vec![]).await;
    let plugin = OpenAiCompatible::builder()
        .base_url(format!("{}/v1", server.url))
        .require_api_key(true)
        .build()
        .expect("build");
    let err = bounded(generate(
        &registry(plugin),
        GenerateOptions::prompt("hi").model("openai/gpt-4o"),
    ))
    .await
    .expect_err("no key");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(server.requests().is_empty());

    // A local server without a key gets no Authorization header.
    let server = TestServer::start(vec![Reply::json(text_completion("ok"))]).await;
    let plugin = OpenAiCompatible::builder()
        .name("local")
        .base_url(format!("{}/v1", server.url))
        .build()
        .expect("build");
    bounded(generate(
        &registry(plugin),
        GenerateOptions::prompt("hi").model("local/any-model"),
    ))
    .await
    .expect("generate");
    assert_eq!(server.single_request().header("authorization"), None);
}

#[test]
fn keys_never_show_in_debug_output() {
    let b = OpenAiCompatible::builder()
        .api_key(KEY)
        .header("api-key", "azure-secret-456");
    let plugin = b.clone().build().expect("build");
    let text = format!("{b:?} {plugin:?}");
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("azure-secret-456"), "{text}");
    assert!(text.contains("api-key"), "header names are shown: {text}");
}

// ---------------------------------------------------------------- embeddings

#[tokio::test]
async fn embeddings() {
    let (server, reg) = setup(vec![
        Reply::json(json!({"object": "list", "model": "text-embedding-3-small",
            "data": [
                {"object": "embedding", "index": 1, "embedding": [0.5, 0.25]},
                {"object": "embedding", "index": 0, "embedding": [1.0, -1.0]}
            ],
            "usage": {"prompt_tokens": 4, "total_tokens": 4}})),
        Reply::json(json!({"data": [{"index": 0, "embedding": [0.125]}]})),
    ])
    .await;
    let out = bounded(embed_many(
        &reg,
        "openai/text-embedding-3-small",
        vec![
            DocumentData::from_text("cat"),
            DocumentData::from_text("kitten"),
        ],
        Some(json!({"dimensions": 2, "user": "u"})),
    ))
    .await
    .expect("embed");
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].embedding, vec![1.0, -1.0]);
    assert_eq!(out[1].embedding, vec![0.5, 0.25]);
    let single = bounded(embed(&reg, "openai/my-custom-embedder", "dog"))
        .await
        .expect("embed");
    assert_eq!(single[0].embedding, vec![0.125]);

    let reqs = server.requests();
    assert_eq!(reqs[0].path, "/v1/embeddings");
    assert_eq!(
        reqs[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        reqs[0].body,
        json!({"model": "text-embedding-3-small", "input": ["cat", "kitten"], "dimensions": 2, "user": "u"})
    );
    assert_eq!(
        reqs[1].body,
        json!({"model": "my-custom-embedder", "input": ["dog"]})
    );
}

#[tokio::test]
async fn embedding_count_mismatch_is_an_error() {
    let (_server, reg) = setup(vec![Reply::json(json!({"data": []}))]).await;
    let err = bounded(embed(&reg, "openai/text-embedding-3-small", "x"))
        .await
        .expect_err("mismatch");
    assert_eq!(err.status(), StatusCode::Internal);
}

// ---------------------------------------------------------------- registry

#[tokio::test]
async fn known_models_are_listed_and_others_resolved() {
    let server = TestServer::start(vec![Reply::json(text_completion("hi"))]).await;
    let plugin = builder(&server).build().expect("build");
    let listed = genkit_core::Plugin::list_actions(&plugin)
        .await
        .expect("list");
    let gpt4o = listed
        .iter()
        .find(|d| d.name == "openai/gpt-4o")
        .expect("gpt-4o listed");
    assert_eq!(gpt4o.kind, ActionKind::Model);
    let supports = &gpt4o.metadata["model"]["supports"];
    assert_eq!(supports["tools"], json!(true));
    assert_eq!(supports["media"], json!(true));
    assert_eq!(supports["constrained"], json!("all"));
    assert!(gpt4o.metadata["model"]["customOptions"]["properties"]["temperature"].is_object());
    let emb = listed
        .iter()
        .find(|d| d.name == "openai/text-embedding-3-small")
        .expect("embedder listed");
    assert_eq!(emb.kind, ActionKind::Embedder);
    assert_eq!(emb.metadata["info"]["dimensions"], json!(1536));
    assert!(server.requests().is_empty(), "listing makes no request");

    let reg = registry(plugin);
    let custom = lookup_model(&reg, "openai/ft:gpt-4o-mini:acme::abc")
        .await
        .expect("resolved");
    assert_eq!(custom.name(), "openai/ft:gpt-4o-mini:acme::abc");
    let r = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("openai/ft:gpt-4o-mini:acme::abc"),
    ))
    .await
    .expect("generate");
    assert_eq!(r.text(), "hi");
    assert_eq!(
        server.single_request().body["model"],
        json!("ft:gpt-4o-mini:acme::abc")
    );
}

#[test]
fn builder_validation() {
    assert!(
        OpenAiCompatible::builder()
            .base_url("not a url")
            .build()
            .is_err()
    );
    assert!(
        OpenAiCompatible::builder()
            .base_url("ftp://x/v1")
            .build()
            .is_err()
    );
    assert!(OpenAiCompatible::builder().name("a/b").build().is_err());
    let bad_header = OpenAiCompatible::builder()
        .header("bad header", "x")
        .build();
    assert_eq!(
        bad_header.expect_err("bad").status(),
        StatusCode::InvalidArgument
    );
}

#[tokio::test]
async fn absurd_retry_hints_never_panic() {
    let max_ms = genkit_provider::error::MAX_RETRY_AFTER.as_millis() as u64;
    for hint in ["1e300", "1e20", "-1", "NaN", "soon"] {
        let body = json!({"error": {"message": "slow down", "code": "rate_limit_exceeded"}});
        let reply = Reply::status(429, body).header("retry-after", hint);
        let (_server, reg) = setup(vec![reply]).await;
        let err = bounded(generate(
            &reg,
            GenerateOptions::prompt("hi").model("openai/gpt-4o"),
        ))
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
