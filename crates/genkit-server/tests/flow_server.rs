//! The flow server: JSON and SSE protocol, statuses, context providers,
//! CORS, body limit, graceful shutdown.

mod common;

use common::{client, sse_frames, start};
use futures::StreamExt;
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::{ActionContext, Error, Registry, StatusCode};
use genkit_server::FlowServer;
use genkit_server::context_providers::{api_key, bearer_token, from_fn};
use genkit_server::cors::CorsLayer;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
        Ok(format!("counted {n}, streaming: {}", ctx.is_streaming()))
    })
    .unwrap();
    define_streaming_flow(&r, "breaksMidway", |kind: String, ctx| async move {
        ctx.send_chunk(1);
        ctx.send_chunk(2);
        Err::<String, _>(if kind == "user" {
            Error::user_facing(StatusCode::ResourceExhausted, "quota exceeded")
        } else {
            Error::internal("database password is hunter2")
        })
    })
    .unwrap();
    define_flow(&r, "denied", |_: Value, _| async move {
        Err::<Value, _>(Error::user_facing(
            StatusCode::PermissionDenied,
            "not yours",
        ))
    })
    .unwrap();
    define_flow(&r, "leaky", |_: Value, _| async move {
        Err::<Value, _>(Error::internal(
            "connection string postgres://admin:hunter2@db",
        ))
    })
    .unwrap();
    define_flow(&r, "context", |_: Value, ctx| async move {
        Ok(ctx.context.to_value())
    })
    .unwrap();
    define_streaming_flow(&r, "ticks", |n: u32, ctx| async move {
        for i in 0..n {
            ctx.send_chunk(i);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(n)
    })
    .unwrap();
    r
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
}

#[tokio::test]
async fn json_result_with_trace_headers() {
    let s = start(FlowServer::new(&registry())).await;
    let r = client()
        .post(s.url("/hello"))
        .json(&json!({"data": "Ada"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert!(is_hex(
        r.headers()["x-genkit-trace-id"].to_str().unwrap(),
        32
    ));
    assert!(is_hex(
        r.headers()["x-genkit-span-id"].to_str().unwrap(),
        16
    ));
    assert_eq!(r.text().await.unwrap(), r#"{"result":"Hello, Ada!"}"#);

    // Non-streaming callers do not stream.
    let r = client()
        .post(s.url("/count"))
        .json(&json!({"data": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": "counted 2, streaming: false"})
    );
}

#[tokio::test]
async fn streaming_sends_sse_frames() {
    let s = start(FlowServer::new(&registry())).await;
    let expected = "data: {\"message\":{\"i\":0}}\n\ndata: {\"message\":{\"i\":1}}\n\ndata: {\"result\":\"counted 2, streaming: true\"}\n\n";
    let by_accept = client()
        .post(s.url("/count"))
        .header("accept", "text/event-stream")
        .json(&json!({"data": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_accept.status(), 200);
    assert_eq!(by_accept.headers()["content-type"], "text/event-stream");
    assert!(is_hex(
        by_accept.headers()["x-genkit-trace-id"].to_str().unwrap(),
        32
    ));
    assert_eq!(by_accept.text().await.unwrap(), expected);
    let by_query = client()
        .post(s.url("/count?stream=true"))
        .json(&json!({"data": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(by_query.text().await.unwrap(), expected);
}

#[tokio::test]
async fn errors_mid_stream_end_with_an_error_frame() {
    let s = start(FlowServer::new(&registry())).await;
    let body = |kind: &'static str| {
        let url = s.url("/breaksMidway?stream=true");
        async move {
            client()
                .post(url)
                .json(&json!({"data": kind}))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let user = body("user").await;
    assert_eq!(
        sse_frames(&user),
        vec![
            "data: {\"message\":1}",
            "data: {\"message\":2}",
            "error: {\"error\":{\"status\":\"RESOURCE_EXHAUSTED\",\"message\":\"quota exceeded\"}}",
        ]
    );
    let internal = body("internal").await;
    assert!(!internal.contains("hunter2"), "{internal}");
    assert_eq!(
        sse_frames(&internal)[2],
        "error: {\"error\":{\"status\":\"INTERNAL\",\"message\":\"Internal Error\"}}"
    );
}

#[tokio::test]
async fn error_statuses_and_bodies() {
    let s = start(FlowServer::new(&registry())).await;
    let post = |path: &str, body: &'static str| {
        let url = s.url(path);
        async move {
            let r = client()
                .post(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(
        post("/denied", r#"{"data":1}"#).await,
        (
            403,
            r#"{"status":"PERMISSION_DENIED","message":"not yours"}"#.into()
        )
    );
    assert_eq!(
        post("/leaky", r#"{"data":1}"#).await,
        (
            500,
            r#"{"status":"INTERNAL","message":"Internal Error"}"#.into()
        )
    );
    // Input that does not match the flow's schema is the caller's fault.
    let (status, body) = post("/hello", r#"{"data":42}"#).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "INVALID_ARGUMENT"
    );
    let (status, body) = post("/hello", r#"{"data":"#).await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&body).unwrap()["status"].clone()
        ),
        (400, json!("INVALID_ARGUMENT"))
    );
    assert_eq!(post("/hello", "[1,2]").await.0, 400);
    let (status, body) = post("/nope", r#"{"data":1}"#).await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&body).unwrap()["status"].clone()
        ),
        (404, json!("NOT_FOUND"))
    );
    let r = client().get(s.url("/hello")).send().await.unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
}

#[tokio::test]
async fn api_key_context_provider() {
    let s = start(
        FlowServer::new(&registry())
            .flow("hello")
            .flow_with_context("context", api_key("s3cret")),
    )
    .await;
    let call = |key: Option<&'static str>| {
        let url = s.url("/context");
        async move {
            let mut req = client().post(url).json(&json!({"data": null}));
            if let Some(k) = key {
                req = req.header("authorization", k);
            }
            let r = req.send().await.unwrap();
            (r.status().as_u16(), r.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(
        call(None).await,
        (
            401,
            json!({"status": "UNAUTHENTICATED", "message": "Unauthenticated"})
        )
    );
    assert_eq!(
        call(Some("wrong")).await,
        (
            403,
            json!({"status": "PERMISSION_DENIED", "message": "Permission Denied"})
        )
    );
    assert_eq!(
        call(Some("s3cret")).await,
        (200, json!({"result": {"auth": {"apiKey": "s3cret"}}}))
    );
    // Refused streaming requests are refused before any frame.
    let r = client()
        .post(s.url("/context?stream=true"))
        .json(&json!({"data": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // A flow without a provider needs no key.
    let r = client()
        .post(s.url("/hello"))
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn default_bearer_and_custom_providers() {
    let bearer = bearer_token(|token: String| async move {
        match token.as_str() {
            "t-alice" => Ok(json!({"uid": "alice"})),
            _ => Err(Error::user_facing(
                StatusCode::PermissionDenied,
                "unknown token",
            )),
        }
    });
    let tenant = from_fn(|req: &genkit_server::context_providers::RequestData| {
        let tenant = req.header("x-tenant");
        let input = req.input.clone();
        async move {
            tokio::task::yield_now().await;
            match tenant {
                Some(t) => Ok(ActionContext::new()
                    .with("tenant", t.into())
                    .with("input", input)),
                None => Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    "x-tenant is required",
                )),
            }
        }
    });
    let s = start(
        FlowServer::new(&registry())
            .context_provider(bearer)
            .flow("context")
            .flow_with_context("hello", tenant),
    )
    .await;
    let r = client()
        .post(s.url("/context"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = client()
        .post(s.url("/context"))
        .bearer_auth("t-bob")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = client()
        .post(s.url("/context"))
        .bearer_auth("t-alice")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": {"auth": {"uid": "alice"}}})
    );
    // The per-flow provider replaces the default one, and sees the input.
    let r = client()
        .post(s.url("/hello"))
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let r = client()
        .post(s.url("/hello"))
        .header("x-tenant", "acme")
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": "Hello, x!"})
    );
}

#[tokio::test]
async fn cors_is_configurable() {
    let cors = CorsLayer::new()
        .allow_origin(
            "https://app.example"
                .parse::<axum::http::HeaderValue>()
                .unwrap(),
        )
        .allow_methods([axum::http::Method::POST])
        .allow_headers([
            axum::http::header::CONTENT_TYPE,
            axum::http::header::AUTHORIZATION,
        ]);
    // The layer's origin is replaced by the listed ones (so that the CORS
    // layer and the request guard agree); a layer without listed origins
    // is refused (see tests/guard.rs).
    let s = start(
        FlowServer::new(&registry())
            .allow_origins(["https://app.example"])
            .cors(cors),
    )
    .await;
    let pre = client()
        .request(reqwest::Method::OPTIONS, s.url("/hello"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 200);
    assert_eq!(
        pre.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let r = client()
        .post(s.url("/hello"))
        .header("origin", "https://app.example")
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    // Other origins are refused outright (they used to run, with no CORS
    // grant: now the request guard stops them before the flow).
    let other = client()
        .post(s.url("/hello"))
        .header("origin", "https://evil.example")
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
    assert!(other.headers().get("access-control-allow-origin").is_none());

    let plain = start(FlowServer::new(&registry())).await;
    let r = client()
        .post(plain.url("/hello"))
        .header("origin", "https://app.example")
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test]
async fn body_limit_answers_413() {
    let s = start(FlowServer::new(&registry()).body_limit(1024)).await;
    let small = json!({"data": "x".repeat(900)});
    let r = client()
        .post(s.url("/hello"))
        .json(&small)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let big = json!({"data": "x".repeat(2000)});
    let r = client()
        .post(s.url("/hello"))
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    // Also without a content-length (chunked upload).
    let chunks = futures::stream::iter(vec![Ok::<_, std::io::Error>(
        serde_json::to_vec(&big).unwrap(),
    )]);
    let r = client()
        .post(s.url("/hello"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
}

#[tokio::test]
async fn selected_flows_and_prefix() {
    let r = registry();
    let s = start(FlowServer::new(&r).flows(["hello"]).path_prefix("/api/")).await;
    let ok = client()
        .post(s.url("/api/hello"))
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    for path in ["/hello", "/api/count"] {
        let r = client()
            .post(s.url(path))
            .json(&json!({"data": 1}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{path}");
    }
    let err = FlowServer::new(&r)
        .flows(["missing"])
        .into_router()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_streams() {
    let mut s = start(FlowServer::new(&registry())).await;
    let resp = client()
        .post(s.url("/ticks?stream=true"))
        .json(&json!({"data": 5}))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert_eq!(&first[..], b"data: {\"message\":0}\n\n");
    s.stop();
    // New connections are refused once shutdown began.
    let mut refused = false;
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(s.addr).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "still accepting connections after shutdown began");
    let mut rest = Vec::new();
    while let Some(chunk) = body.next().await {
        rest.extend_from_slice(&chunk.unwrap());
    }
    let rest = String::from_utf8(rest).unwrap();
    assert!(rest.ends_with("data: {\"result\":5}\n\n"), "{rest}");
    assert_eq!(rest.matches("\"message\"").count(), 4);
    tokio::time::timeout(Duration::from_secs(5), s.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn client_disconnect_drops_the_run() {
    let r = Registry::new();
    let finished = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicBool::new(false));
    let (f, d) = (finished.clone(), dropped.clone());
    struct OnDrop(Arc<AtomicBool>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    define_streaming_flow(&r, "forever", move |_: Value, ctx| {
        let (f, d) = (f.clone(), d.clone());
        async move {
            let _guard = OnDrop(d);
            ctx.send_chunk(0);
            tokio::time::sleep(Duration::from_secs(30)).await;
            f.store(true, Ordering::SeqCst);
            Ok(1)
        }
    })
    .unwrap();
    let s = start(FlowServer::new(&r)).await;
    let resp = client()
        .post(s.url("/forever?stream=true"))
        .json(&json!({"data": 1}))
        .send()
        .await
        .unwrap();
    let mut body = resp.bytes_stream();
    body.next().await.unwrap().unwrap();
    drop(body);
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the run was not dropped with its connection"
    );
    assert!(!finished.load(Ordering::SeqCst));
}
