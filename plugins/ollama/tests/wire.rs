//! Wire tests: the plugin against a scripted server on 127.0.0.1 that checks
//! the exact requests it sends and answers in Ollama's wire format (JSON and
//! newline-delimited JSON streams).

use futures::StreamExt;
use genkit_core::{ActionKind, CancellationToken, Plugin, Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_model::embedder::embed_many;
use genkit_model::tool::Tool;
use genkit_model::types::{DocumentData, FinishReason, Part};
use genkit_ollama::{EmbedderSpec, ModelSpec, Ollama, OllamaBuilder};
use genkit_provider::test_server::{End, Reply, TestServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn builder(server: &TestServer) -> OllamaBuilder {
    Ollama::builder()
        .server_address(server.url.clone())
        .header("Authorization", "Bearer proxy-secret")
        .timeout(Duration::from_secs(10))
}

fn registry(plugin: Ollama) -> Registry {
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

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the call hung")
}

fn answer(message: Value, reason: &str) -> Value {
    json!({
        "model": "llama3.2", "created_at": "2025-06-01T10:00:00.000Z", "message": message,
        "done": true, "done_reason": reason, "total_duration": 1000, "load_duration": 10,
        "prompt_eval_count": 12, "prompt_eval_duration": 100, "eval_count": 5, "eval_duration": 200
    })
}

fn text_answer(text: &str) -> Value {
    answer(json!({"role": "assistant", "content": text}), "stop")
}

fn line(content: &str) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:00Z",
           "message": {"role": "assistant", "content": content}, "done": false})
}

fn last_line(reason: &str) -> Value {
    json!({"model": "llama3.2", "created_at": "2025-06-01T10:00:01Z",
           "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": reason,
           "prompt_eval_count": 4, "eval_count": 2})
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct WeatherIn {
    city: String,
}

fn weather_tool(calls: Arc<AtomicUsize>) -> Tool<WeatherIn, Value> {
    Tool::new(
        "weather",
        "Get the weather for a city",
        move |input: WeatherIn, _ctx| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(json!({"city": input.city, "temperature_c": 18}))
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

#[tokio::test]
async fn generate_sends_the_exact_request_and_reads_the_answer() {
    let (server, reg) = setup(vec![Reply::json(text_answer("A cat."))]).await;
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt(vec![
            Part::text("What is this? "),
            Part::media("data:image/png;base64,iVBORw0KGgo=", Some("image/png")),
        ])
        .system("Be brief.")
        .model("ollama/llava")
        .config(
            json!({"temperature": 0.5, "maxOutputTokens": 32, "topK": 20, "topP": 0.8,
                       "stopSequences": ["\n\n"], "seed": 3, "num_ctx": 4096, "keepAlive": "10m"}),
        ),
    ))
    .await
    .expect("generate");
    let req = server.single_request();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), Some("Bearer proxy-secret"));
    assert_eq!(
        req.body,
        json!({
            "model": "llava",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is this? ", "images": ["iVBORw0KGgo="]}
            ],
            "stream": false,
            "options": {"temperature": 0.5, "num_predict": 32, "top_k": 20, "top_p": 0.8,
                        "stop": ["\n\n"], "seed": 3, "num_ctx": 4096},
            "keep_alive": "10m"
        })
    );
    assert_eq!(response.text(), "A cat.");
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    let usage = response.usage.expect("usage");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (Some(12), Some(5), Some(17))
    );
    assert_eq!(usage.input_images, Some(1));
}

#[tokio::test]
async fn tool_loop_and_parallel_calls() {
    let (server, reg) = setup(vec![
        Reply::json(answer(
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
                {"function": {"name": "weather", "arguments": {"city": "Rome"}}}
            ]}),
            "stop",
        )),
        Reply::json(text_answer("Sunny in both.")),
    ])
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let response = bounded(generate(
        &reg,
        GenerateOptions::prompt("Paris and Rome?")
            .model("ollama/llama3.2")
            .tool(weather_tool(calls.clone())),
    ))
    .await
    .expect("generate");
    assert_eq!(response.text(), "Sunny in both.");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        reqs[0].body,
        json!({"model": "llama3.2", "messages": [{"role": "user", "content": "Paris and Rome?"}],
               "stream": false, "tools": [weather_tool_json()]})
    );
    assert_eq!(
        reqs[1].body["messages"],
        json!([
            {"role": "user", "content": "Paris and Rome?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "weather", "arguments": {"city": "Paris"}}},
                {"function": {"name": "weather", "arguments": {"city": "Rome"}}}
            ]},
            {"role": "tool", "content": "{\"city\":\"Paris\",\"temperature_c\":18}", "tool_name": "weather"},
            {"role": "tool", "content": "{\"city\":\"Rome\",\"temperature_c\":18}", "tool_name": "weather"}
        ])
    );
}

#[tokio::test]
async fn streamed_text_and_tool_calls() {
    let (server, reg) = setup(vec![
        Reply::ndjson(vec![
            json!({"message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_a", "function": {"index": 0, "name": "weather", "arguments": {"city": "Paris"}}}]}, "done": false}),
            json!({"message": {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_b", "function": {"index": 1, "name": "weather", "arguments": {"city": "Oslo"}}}]}, "done": false}),
            last_line("stop"),
        ]),
        Reply::ndjson(vec![line("Nice "), line("weather."), last_line("stop")]),
    ])
    .await;
    let calls = Arc::new(AtomicUsize::new(0));
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("Paris and Oslo?")
            .model("ollama/qwen3")
            .tool(weather_tool(calls.clone())),
    );
    let mut streamed_requests = 0;
    let mut texts = Vec::new();
    while let Some(c) = bounded(stream.next()).await {
        let c = c.expect("chunk");
        streamed_requests += c.tool_requests().count();
        if c.index() == 2 {
            texts.push(c.text());
        }
    }
    let response = bounded(stream.response()).await.expect("response");
    assert_eq!(streamed_requests, 2);
    assert_eq!(texts, ["Nice ", "weather."]);
    assert_eq!(response.text(), "Nice weather.");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let reqs = server.requests();
    assert_eq!(reqs[0].body["stream"], json!(true));
    assert_eq!(
        reqs[1].body["messages"][2],
        json!({"role": "tool", "content": "{\"city\":\"Paris\",\"temperature_c\":18}",
               "tool_name": "weather", "tool_call_id": "call_a"})
    );
    assert_eq!(
        reqs[1].body["messages"][1]["tool_calls"][1]["id"],
        json!("call_b")
    );
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

#[tokio::test]
async fn structured_output_uses_format() {
    let (server, reg) = setup(vec![Reply::ndjson(vec![
        line("{\"name\": \"Ada\", "),
        line("\"age\": 36}"),
        last_line("stop"),
    ])])
    .await;
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("Invent a person.")
            .model("ollama/llama3.2")
            .output::<Person>(),
    );
    let mut partial = Vec::new();
    while let Some(c) = bounded(stream.next()).await {
        if let Some(o) = c.expect("chunk").output() {
            partial.push(o.clone());
        }
    }
    let response = bounded(stream.response()).await.expect("response");
    assert_eq!(partial.first(), Some(&json!({"name": "Ada"})));
    assert_eq!(
        response.output::<Person>().expect("output"),
        Person {
            name: "Ada".into(),
            age: 36
        }
    );
    let mut schema = genkit_core::schema::schema_for::<Person>();
    schema.as_object_mut().expect("object").remove("$schema");
    assert_eq!(server.single_request().body["format"], schema);
}

#[tokio::test]
async fn http_errors_map_to_statuses() {
    for (http, status) in [
        (400, StatusCode::InvalidArgument),
        (401, StatusCode::Unauthenticated),
        (403, StatusCode::PermissionDenied),
        (404, StatusCode::NotFound),
        (429, StatusCode::ResourceExhausted),
        (500, StatusCode::Unavailable),
        (503, StatusCode::Unavailable),
    ] {
        let (_server, reg) = setup(vec![Reply::status(
            http,
            json!({"error": format!("ollama says {http}")}),
        )])
        .await;
        let err = bounded(generate(
            &reg,
            GenerateOptions::prompt("hi").model("ollama/nope"),
        ))
        .await
        .expect_err("must fail");
        assert_eq!(err.status(), status, "HTTP {http}: {err}");
        assert!(
            err.message().contains(&format!("ollama says {http}")),
            "{err}"
        );
        let all = format!("{err} {err:?}");
        assert!(!all.contains("proxy-secret"), "{all}");
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (server, reg) = setup(vec![
        Reply::status(301, json!({})).header("location", "http://127.0.0.1:9/api/chat"),
        Reply::json(json!({"error": "followed"})),
    ])
    .await;
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("ollama/nope"),
    ))
    .await
    .expect_err("a redirect is an error");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(
        err.message()
            .contains("redirected to http://127.0.0.1:9/api/chat"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "the redirect was followed");
}

#[tokio::test]
async fn unreachable_server_is_unavailable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let reg = registry(
        Ollama::builder()
            .server_address(format!("http://127.0.0.1:{port}"))
            .build()
            .expect("build"),
    );
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("ollama/x"),
    ))
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(
        err.message().ends_with(&format!(
            "is the Ollama server at http://127.0.0.1:{port} running?"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn broken_streams_are_errors() {
    // Ends cleanly but without the final line.
    let (_s, reg) = setup(vec![Reply::ndjson_frames(vec![format!(
        "{}\n",
        line("Hel")
    )])])
    .await;
    let err =
        bounded(generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/m")).response())
            .await
            .expect_err("cut off");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(
        err.message()
            .contains("ended before the response was complete"),
        "{err}"
    );

    // The connection breaks.
    let (_s, reg) = setup(vec![
        Reply::ndjson_frames(vec![format!("{}\n", line("Hel"))]).ending(End::Abort),
    ])
    .await;
    let err =
        bounded(generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/m")).response())
            .await
            .expect_err("broken");
    assert_eq!(err.status(), StatusCode::Unavailable, "{err}");

    // An error line mid-stream.
    let (_s, reg) = setup(vec![Reply::ndjson(vec![
        line("Hel"),
        json!({"error": "llama runner process has terminated"}),
    ])])
    .await;
    let err =
        bounded(generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/m")).response())
            .await
            .expect_err("stream error");
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(
        err.message()
            .contains("llama runner process has terminated"),
        "{err}"
    );

    // A line that is not JSON.
    let (_s, reg) = setup(vec![Reply::ndjson_frames(vec![
        format!("{}\n", line("a")),
        "{\"message\": oops\n".into(),
    ])])
    .await;
    let err =
        bounded(generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/m")).response())
            .await
            .expect_err("malformed");
    assert_eq!(err.status(), StatusCode::Internal);
}

#[tokio::test]
async fn timeouts_and_cancellation() {
    let server = TestServer::start(vec![
        Reply::Hang,
        Reply::ndjson_frames(vec![format!("{}\n", line("a"))]).ending(End::Hang),
        Reply::ndjson_frames(vec![format!("{}\n", line("first"))]).ending(End::Hang),
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
        GenerateOptions::prompt("hi").model("ollama/m"),
    ))
    .await
    .expect_err("timeout");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    let err =
        bounded(generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/m")).response())
            .await
            .expect_err("idle");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");

    let cancel = CancellationToken::new();
    let reg = registry(builder(&server).build().expect("build"));
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("hi")
            .model("ollama/m")
            .cancel(cancel.clone()),
    );
    assert_eq!(
        bounded(stream.next())
            .await
            .expect("chunk")
            .expect("ok")
            .text(),
        "first"
    );
    cancel.cancel();
    let err = bounded(stream.response()).await.expect_err("cancelled");
    assert_eq!(err.status(), StatusCode::Cancelled);
    // All three hanging answers were dropped: the cancelled one too.
    bounded(async {
        while server.disconnects() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn embeddings() {
    let (server, reg) = setup(vec![Reply::json(json!({
        "model": "nomic-embed-text", "embeddings": [[0.5, -0.5], [0.25, 1.0]],
        "total_duration": 100, "load_duration": 1, "prompt_eval_count": 4
    }))])
    .await;
    let out = bounded(embed_many(
        &reg,
        "ollama/nomic-embed-text",
        vec![
            DocumentData::from_text("cat"),
            DocumentData::from_text("kitten"),
        ],
        Some(json!({"truncate": false, "keepAlive": "1m", "num_ctx": 2048})),
    ))
    .await
    .expect("embed");
    assert_eq!(out[0].embedding, vec![0.5, -0.5]);
    assert_eq!(out[1].embedding, vec![0.25, 1.0]);
    let req = server.single_request();
    assert_eq!(req.path, "/api/embed");
    assert_eq!(
        req.body,
        json!({"model": "nomic-embed-text", "input": ["cat", "kitten"], "truncate": false,
               "keep_alive": "1m", "options": {"num_ctx": 2048}})
    );
}

#[tokio::test]
async fn models_are_listed_from_the_server() {
    let server = TestServer::start(vec![Reply::json(json!({"models": [
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189,
         "details": {"family": "llama", "parameter_size": "3.2B"}},
        {"name": "nomic-embed-text:latest", "model": "nomic-embed-text:latest"},
        {"name": "gemma3:1b", "model": "gemma3:1b"}
    ]}))])
    .await;
    let plugin = builder(&server)
        .model(ModelSpec::new("gemma3:1b").tools(false))
        .embedder(EmbedderSpec::new("all-minilm").dimensions(384))
        .build()
        .expect("build");
    let listed = bounded(plugin.list_actions()).await.expect("list");
    let find = |name: &str| {
        listed
            .iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("{name} not listed in {listed:#?}"))
    };
    let llama = find("ollama/llama3.2:latest");
    assert_eq!(llama.kind, ActionKind::Model);
    assert_eq!(llama.metadata["model"]["supports"]["tools"], json!(true));
    assert_eq!(
        find("ollama/gemma3:1b").metadata["model"]["supports"]["tools"],
        json!(false)
    );
    assert_eq!(
        find("ollama/nomic-embed-text:latest").kind,
        ActionKind::Embedder
    );
    assert_eq!(
        find("ollama/all-minilm").metadata["info"]["dimensions"],
        json!(384)
    );
    assert_eq!(listed.len(), 4, "no duplicates: {listed:#?}");
    let req = server.single_request();
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("GET", "/api/tags")
    );

    // Server down: the configured ones are still listed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let offline = Ollama::builder()
        .server_address(format!("http://127.0.0.1:{port}"))
        .model(ModelSpec::new("llama3.2"))
        .build()
        .expect("build");
    let listed = bounded(offline.list_actions()).await.expect("list");
    assert_eq!(
        listed.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
        ["ollama/llama3.2"]
    );
}

#[test]
fn builder_validation_and_debug() {
    assert!(Ollama::builder().server_address("nope").build().is_err());
    assert!(Ollama::builder().name("").build().is_err());
    assert!(Ollama::builder().header("bad name", "x").build().is_err());
    let b = Ollama::builder().header("Authorization", "Bearer top-secret");
    let p = b.clone().build().expect("build");
    let text = format!("{b:?} {p:?}");
    assert!(!text.contains("top-secret"), "{text}");
}

#[tokio::test]
async fn absurd_retry_hints_never_panic() {
    let max_ms = genkit_provider::error::MAX_RETRY_AFTER.as_millis() as u64;
    for hint in ["1e300", "1e20", "-1", "NaN", "soon"] {
        let reply = Reply::status(429, json!({"error": "busy"})).header("retry-after", hint);
        let (_server, reg) = setup(vec![reply]).await;
        let err = bounded(generate(
            &reg,
            GenerateOptions::prompt("hi").model("ollama/llama3.2"),
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

#[tokio::test]
async fn the_timeout_bounds_each_wait_not_the_whole_call() {
    let lines = |n: usize| {
        let mut lines: Vec<Value> = (0..n)
            .map(|_| json!({"message": {"role": "assistant", "content": "x"}, "done": false}))
            .collect();
        lines.push(json!({"message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop"}));
        lines
    };
    let server = TestServer::start(vec![
        Reply::ndjson(lines(7)).paced(Duration::from_millis(120)),
        Reply::ndjson(lines(2)).paced(Duration::from_millis(600)),
        Reply::Hang,
    ])
    .await;
    let plugin = Ollama::builder()
        .server_address(server.url.clone())
        .timeout(Duration::from_millis(400))
        .build()
        .expect("build");
    let reg = registry(plugin);
    let call = || generate_stream(&reg, GenerateOptions::prompt("hi").model("ollama/llama3.2"));
    let response = bounded(call().response())
        .await
        .expect("a flowing stream completes");
    assert_eq!(response.text(), "xxxxxxx");
    let err = bounded(call().response())
        .await
        .expect_err("a trickling stream");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
    let err = bounded(generate(
        &reg,
        GenerateOptions::prompt("hi").model("ollama/llama3.2"),
    ))
    .await
    .expect_err("a server that never answers");
    assert_eq!(err.status(), StatusCode::DeadlineExceeded, "{err}");
}
