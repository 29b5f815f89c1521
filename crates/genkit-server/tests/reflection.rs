//! The Reflection API, served in-process (no dev env needed): every
//! endpoint, runAction framing, errors and cancellation by trace id.

mod common;

use common::client;
use futures::StreamExt;
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::{Action, ActionDesc, ActionKind, Error, Registry, StatusCode};
use genkit_server::reflection::{self, ReflectionState};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

struct Api {
    base: String,
    state: Arc<ReflectionState>,
}

async fn start(registry: &Registry) -> Api {
    let state = Arc::new(ReflectionState::new(registry, "4242-3100", None));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = reflection::router(state.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });
    Api { base, state }
}

fn registry() -> Registry {
    let r = Registry::new();
    define_flow(&r, "hello", |name: String, _| async move {
        Ok(format!("Hello, {name}!"))
    })
    .unwrap();
    define_streaming_flow(&r, "count", |n: u32, ctx| async move {
        for i in 0..n {
            ctx.send_chunk(json!({ "i": i }));
        }
        Ok(n)
    })
    .unwrap();
    define_flow(&r, "fail", |_: Value, _| async move {
        Err::<Value, _>(Error::internal("boom"))
    })
    .unwrap();
    define_flow(&r, "invalid", |_: Value, _| async move {
        Err::<Value, _>(Error::new(StatusCode::InvalidArgument, "bad thing"))
    })
    .unwrap();
    define_streaming_flow(&r, "forever", |_: Value, ctx| async move {
        ctx.send_chunk(json!("started"));
        ctx.cancel.cancelled().await;
        Ok(json!("unreachable: cancellation wins"))
    })
    .unwrap();
    define_flow(&r, "context", |_: Value, ctx| async move {
        Ok(ctx.context.to_value())
    })
    .unwrap();
    let model = Action::<Value, Value, Value>::from_desc(
        ActionDesc::new(ActionKind::Model, "acme/echo")
            .with_description("echoes")
            .with_metadata(
                "model",
                json!({"label": "Echo", "supports": {"multiturn": true}}),
            ),
        |req, _| async move { Ok(req) },
    )
    .unwrap();
    r.register(model).unwrap();
    r.register_value("defaultModel", "defaultModel", json!("acme/echo"));
    r
}

impl Api {
    async fn post(&self, path: &str, body: Value) -> reqwest::Response {
        client()
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap()
    }
    async fn get(&self, path: &str) -> reqwest::Response {
        client()
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn health_checks_the_runtime_id() {
    let api = start(&registry()).await;
    let ok = api.get("/api/__health?id=4242-3100").await;
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.headers()["x-genkit-version"],
        genkit_core::GENKIT_VERSION
    );
    assert_eq!(ok.text().await.unwrap(), "OK");
    assert_eq!(api.get("/api/__health").await.status(), 200);
    let bad = api.get("/api/__health?id=1-2").await;
    assert_eq!(bad.status(), 503);
    assert_eq!(bad.text().await.unwrap(), "Invalid runtime ID");
}

#[tokio::test]
async fn lists_actions_values_and_envs() {
    let api = start(&registry()).await;
    let actions: Value = api.get("/api/actions").await.json().await.unwrap();
    assert_eq!(
        actions["/flow/hello"],
        json!({
            "key": "/flow/hello", "name": "hello",
            "inputSchema": {"type": "string", "$schema": "http://json-schema.org/draft-07/schema#"},
            "outputSchema": {"type": "string", "$schema": "http://json-schema.org/draft-07/schema#"},
            "metadata": {"type": "flow"}
        })
    );
    assert_eq!(
        actions["/model/acme/echo"],
        json!({
            "key": "/model/acme/echo", "name": "acme/echo", "description": "echoes",
            "metadata": {"model": {"label": "Echo", "supports": {"multiturn": true}}, "type": "model"}
        })
    );
    assert_eq!(actions.as_object().unwrap().len(), 7);

    let v: Value = api
        .get("/api/values?type=defaultModel")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v, json!({"defaultModel": "acme/echo"}));
    let v: Value = api
        .get("/api/values?type=middleware")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v, json!({}));
    assert_eq!(api.get("/api/values").await.status(), 400);
    assert_eq!(api.get("/api/values?type=tools").await.status(), 400);
    let envs: Value = api.get("/api/envs").await.json().await.unwrap();
    assert_eq!(envs, json!(["dev"]));
}

/// The middleware plugin given to the Genkit builder: every middleware of
/// `@genkit-ai/middleware` is listed, with its config schema, and nothing
/// else had to be called.
#[tokio::test]
async fn the_middleware_plugin_lists_every_builtin_middleware() {
    let ai = genkit::Genkit::builder()
        .no_prompt_dir()
        .plugin(genkit::middleware::middleware_plugin())
        .build()
        .unwrap();
    let api = start(ai.registry()).await;
    let v: Value = api
        .get("/api/values?type=middleware")
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "agents",
            "artifacts",
            "fallback",
            "filesystem",
            "retry",
            "skills",
            "toolApproval"
        ]
    );
    for (name, desc) in v.as_object().unwrap() {
        assert_eq!(desc["name"], name.as_str());
        assert!(desc["description"].is_string(), "{desc}");
    }
    for name in [
        "agents",
        "artifacts",
        "fallback",
        "filesystem",
        "retry",
        "skills",
    ] {
        assert_eq!(v[name]["configSchema"]["type"], "object", "{name}: {v}");
    }
    assert_eq!(v["agents"]["configSchema"]["required"], json!(["agents"]));
}

#[tokio::test]
async fn run_action_json() {
    let api = start(&registry()).await;
    let r = api
        .post(
            "/api/runAction",
            json!({"key": "/flow/hello", "input": "Ada"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-genkit-version"], genkit_core::GENKIT_VERSION);
    let trace_id = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(r.headers()["x-genkit-span-id"].len(), 16);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"result": "Hello, Ada!", "telemetry": {"traceId": trace_id}})
    );

    let r = api
        .post(
            "/api/runAction",
            json!({"key": "/flow/context", "input": null, "context": {"auth": {"uid": "u"}}}),
        )
        .await;
    assert_eq!(
        r.json::<Value>().await.unwrap()["result"],
        json!({"auth": {"uid": "u"}})
    );
}

#[tokio::test]
async fn run_action_streaming_framing() {
    let api = start(&registry()).await;
    let r = api
        .post(
            "/api/runAction?stream=true",
            json!({"key": "/flow/count", "input": 2}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/plain");
    assert_eq!(r.headers()["transfer-encoding"], "chunked");
    let trace_id = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = r.text().await.unwrap();
    // Chunks end with a newline; the final value does not.
    assert_eq!(
        body,
        format!(
            "{{\"i\":0}}\n{{\"i\":1}}\n{{\"result\":2,\"telemetry\":{{\"traceId\":\"{trace_id}\"}}}}"
        )
    );
}

#[tokio::test]
async fn run_action_errors_are_200_with_error_bodies() {
    let api = start(&registry()).await;
    for stream in ["", "?stream=true"] {
        let r = api
            .post(
                &format!("/api/runAction{stream}"),
                json!({"key": "/flow/fail", "input": 1}),
            )
            .await;
        assert_eq!(r.status(), 200);
        let trace_id = r.headers()["x-genkit-trace-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body = r.text().await.unwrap();
        assert!(!body.ends_with('\n'));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["error"]["code"], 13);
        assert_eq!(v["error"]["message"], "boom");
        assert_eq!(v["error"]["details"]["traceId"], trace_id);
        assert!(
            v["error"]["details"]["stack"]
                .as_str()
                .unwrap()
                .contains("boom")
        );
    }
    let v: Value = api
        .post(
            "/api/runAction",
            json!({"key": "/flow/invalid", "input": 1}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], 3);
    // Input rejected by the schema, before any span opened.
    let v: Value = api
        .post("/api/runAction", json!({"key": "/flow/hello", "input": 5}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["error"]["code"], 3, "{v}");
    let r = api
        .post("/api/runAction", json!({"key": "/flow/nope", "input": 1}))
        .await;
    assert_eq!(r.status(), 404);
    let r = api.post("/api/runAction", json!({"input": 1})).await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn cancel_action_by_trace_id() {
    let api = start(&registry()).await;
    assert_eq!(
        (
            api.post("/api/cancelAction", json!({}))
                .await
                .status()
                .as_u16(),
            api.post("/api/cancelAction", json!({"traceId": 7}))
                .await
                .json::<Value>()
                .await
                .unwrap()
        ),
        (400, json!({"error": "traceId is required"}))
    );
    let r = api
        .post(
            "/api/cancelAction",
            json!({"traceId": "0123456789abcdef0123456789abcdef"}),
        )
        .await;
    assert_eq!(r.status(), 404);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"message": "Action not found or already completed"})
    );

    // Headers arrive as soon as the run starts, before it finishes.
    let r = api
        .post(
            "/api/runAction?stream=true",
            json!({"key": "/flow/forever", "input": null}),
        )
        .await;
    let trace_id = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut body = r.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert_eq!(&first[..], b"\"started\"\n");
    assert_eq!(api.state.active_runs(), 1);
    let c = api
        .post("/api/cancelAction", json!({"traceId": trace_id}))
        .await;
    assert_eq!(c.status(), 200);
    assert_eq!(
        c.json::<Value>().await.unwrap(),
        json!({"message": "Action cancelled"})
    );
    let mut rest = Vec::new();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .unwrap()
    {
        rest.extend_from_slice(&chunk.unwrap());
    }
    let v: Value = serde_json::from_slice(&rest).unwrap();
    assert_eq!(v["error"]["code"], 1);
    assert_eq!(v["error"]["message"], "Action was cancelled");
    assert_eq!(v["error"]["details"]["traceId"], trace_id);
    assert_eq!(api.state.active_runs(), 0);
    // A finished run is no longer cancellable.
    let again = api
        .post("/api/cancelAction", json!({"traceId": trace_id}))
        .await;
    assert_eq!(again.status(), 404);
}

#[tokio::test]
async fn finished_runs_are_forgotten() {
    let api = start(&registry()).await;
    let r = api
        .post(
            "/api/runAction",
            json!({"key": "/flow/hello", "input": "x"}),
        )
        .await;
    let trace_id = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    r.text().await.unwrap();
    assert_eq!(api.state.active_runs(), 0);
    let c = api
        .post("/api/cancelAction", json!({"traceId": trace_id}))
        .await;
    assert_eq!(c.status(), 404);
}

#[tokio::test]
async fn notify_answers_ok() {
    let api = start(&registry()).await;
    let r = api
        .post(
            "/api/notify",
            json!({"telemetryServerUrl": "http://localhost:4033", "reflectionApiSpecVersion": 1}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), "OK");
}

/// Requests a web page could make (a simple `text/plain` POST, a foreign
/// `Origin`, a DNS-rebound `Host`) are refused before the action runs; the
/// official CLI's (JSON, loopback `Host`, no `Origin`) and the Dev UI's
/// loopback origin get through. The guard is the flow server's (`guard`
/// module), so a body of the wrong type is 415 and every refusal is
/// Genkit's JSON error body (it was 403 and plain text before the two
/// servers shared it).
#[tokio::test]
async fn pages_and_rebound_hosts_cannot_drive_the_api() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Registry::new();
    let counter = runs.clone();
    define_flow(&r, "diagnose", move |_: Value, _| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(json!("ran"))
        }
    })
    .unwrap();
    let api = start(&r).await;
    let url = format!("{}/api/runAction", api.base);
    let body = r#"{"key":"/flow/diagnose","input":null,"context":{"auth":{"admin":true}}}"#;
    let port = api.base.rsplit(':').next().unwrap().to_owned();
    let refused = [
        (
            415,
            client()
                .post(&url)
                .header("content-type", "text/plain")
                .body(body),
        ),
        (415, client().post(&url).body(body)),
        (
            415,
            client()
                .post(&url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body),
        ),
        (
            403,
            client()
                .post(&url)
                .header("content-type", "application/json")
                .header("origin", "http://evil.example")
                .body(body),
        ),
        (
            403,
            client()
                .post(&url)
                .header("content-type", "application/json")
                .header("origin", "null")
                .body(body),
        ),
        (
            403,
            client()
                .post(&url)
                .header("content-type", "application/json")
                .header("host", format!("evil.example:{port}"))
                .body(body),
        ),
    ];
    for (status, request) in refused {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), status);
        let v: Value = r.json().await.unwrap();
        let expected = if status == 403 {
            "PERMISSION_DENIED"
        } else {
            "INVALID_ARGUMENT"
        };
        assert_eq!(v["status"], expected, "{v}");
    }
    // Reading answers through a rebound name is refused too.
    let r = client()
        .get(format!("{}/api/actions", api.base))
        .header("host", "evil.example:3100")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    for (host, origin) in [
        (format!("localhost:{port}"), None),
        (format!("127.0.0.1:{port}"), Some("http://localhost:4000")),
        (format!("localhost:{port}"), Some("http://127.0.0.1:4000")),
    ] {
        let mut request = client()
            .post(&url)
            .header("content-type", "application/json")
            .header("host", host)
            .body(body);
        if let Some(o) = origin {
            request = request.header("origin", o);
        }
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), 200);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["result"], "ran");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}
