//! Durable streaming (`FlowServer::stream_manager`): a client whose
//! connection drops reconnects, to the same server or to another one on the
//! same stream store, and reads the stream again; Genkit JS's `streamFlow({
//! streamId })` resumes against us.

mod common;

use common::{client, start};
use futures::StreamExt;
use genkit_core::flow::define_streaming_flow;
use genkit_core::streaming::{InMemoryStreamManager, StreamManager};
use genkit_core::{ActionContext, Error, Registry, StatusCode};
use genkit_server::FlowServer;
use genkit_server::context_providers::from_fn;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// A registry with `gated` (three chunks, then waits for a permit of
/// `gate`, three more chunks and its output), `ticks` (a chunk every
/// 100 ms) and `breaks` (two chunks, then an internal error).
fn registry(gate: Arc<Semaphore>) -> Registry {
    let r = Registry::new();
    define_streaming_flow(&r, "gated", move |_: Value, ctx| {
        let gate = gate.clone();
        async move {
            for i in 0..3 {
                ctx.send_chunk(json!({"i": i}));
            }
            gate.acquire()
                .await
                .map_err(|_| Error::internal("gate closed"))?
                .forget();
            for i in 3..6 {
                ctx.send_chunk(json!({"i": i}));
            }
            Ok(json!("all six"))
        }
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
    define_streaming_flow(&r, "breaks", |_: Value, ctx| async move {
        ctx.send_chunk(1);
        ctx.send_chunk(2);
        Err::<Value, _>(Error::internal("database password is hunter2"))
    })
    .unwrap();
    r
}

/// Reads SSE frames from `body` until `n` frames have arrived (or it ends).
async fn frames<S>(body: &mut S, n: usize) -> Vec<String>
where
    S: futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin,
{
    let mut buf = String::new();
    loop {
        let count = buf.matches("\n\n").count();
        if count >= n {
            break;
        }
        match body.next().await {
            Some(Ok(b)) => buf.push_str(&String::from_utf8_lossy(&b)),
            _ => break,
        }
    }
    buf.split_terminator("\n\n").map(str::to_owned).collect()
}

fn chunk_frame(i: u32) -> String {
    format!("data: {{\"message\":{{\"i\":{i}}}}}")
}

async fn post(url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = client()
        .post(url)
        .header("accept", "text/event-stream")
        .json(&json!({"data": null}));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.unwrap()
}

/// Two servers on one stream store stand for two replicas behind a load
/// balancer: the client starts on A, loses its connection after three
/// chunks, and reconnects to B, which serves the rest exactly once (and,
/// without an offset, the whole stream, as Genkit JS does).
#[tokio::test]
async fn a_client_that_reconnects_to_another_server_gets_every_chunk_once() {
    let store: Arc<dyn StreamManager> = Arc::new(InMemoryStreamManager::new());
    let gate = Arc::new(Semaphore::new(0));
    let a = start(FlowServer::new(&registry(gate.clone())).stream_manager(store.clone())).await;
    let b = start(
        FlowServer::new(&registry(Arc::new(Semaphore::new(0)))).stream_manager(store.clone()),
    )
    .await;

    let first = post(&a.url("/gated"), &[]).await;
    assert_eq!(first.status(), 200);
    let id = first
        .headers()
        .get("x-genkit-stream-id")
        .expect("a stream id")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(first.headers().get("x-genkit-trace-id").is_some());
    let mut body = first.bytes_stream();
    let seen = frames(&mut body, 3).await;
    assert_eq!(seen, (0..3).map(chunk_frame).collect::<Vec<_>>());
    // The connection drops; the run goes on without it.
    drop(body);
    tokio::time::sleep(Duration::from_millis(50)).await;
    gate.add_permits(1);

    let resumed = post(
        &b.url("/gated"),
        &[("x-genkit-stream-id", &id), ("x-genkit-stream-offset", "3")],
    )
    .await;
    assert_eq!(resumed.status(), 200);
    assert!(resumed.headers().get("x-genkit-stream-id").is_none());
    let text = resumed.text().await.unwrap();
    let mut want: Vec<String> = (3..6).map(chunk_frame).collect();
    want.push(r#"data: {"result":"all six"}"#.to_owned());
    assert_eq!(common::sse_frames(&text), want);

    // Without an offset: the whole stream, from either server.
    for server in [&a, &b] {
        let text = post(&server.url("/gated"), &[("x-genkit-stream-id", &id)])
            .await
            .text()
            .await
            .unwrap();
        let mut want: Vec<String> = (0..6).map(chunk_frame).collect();
        want.push(r#"data: {"result":"all six"}"#.to_owned());
        assert_eq!(common::sse_frames(&text), want);
    }
    // An offset past the chunks still ends the stream.
    let text = post(
        &b.url("/gated"),
        &[
            ("x-genkit-stream-id", &id),
            ("x-genkit-stream-offset", "99"),
        ],
    )
    .await
    .text()
    .await
    .unwrap();
    assert_eq!(
        common::sse_frames(&text),
        vec![r#"data: {"result":"all six"}"#]
    );
}

/// A resumed stream follows the run live: the reader joins while the run
/// waits, and gets the rest as it happens.
#[tokio::test]
async fn a_reader_follows_a_run_still_in_progress() {
    let store: Arc<dyn StreamManager> = Arc::new(InMemoryStreamManager::new());
    let gate = Arc::new(Semaphore::new(0));
    let s = start(FlowServer::new(&registry(gate.clone())).stream_manager(store)).await;
    let first = post(&s.url("/gated"), &[]).await;
    let id = first.headers()["x-genkit-stream-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut body = first.bytes_stream();
    assert_eq!(frames(&mut body, 3).await.len(), 3);
    let reader = post(&s.url("/gated"), &[("x-genkit-stream-id", &id)]).await;
    let mut reader_body = reader.bytes_stream();
    assert_eq!(
        frames(&mut reader_body, 3).await,
        (0..3).map(chunk_frame).collect::<Vec<_>>()
    );
    gate.add_permits(1);
    let rest = frames(&mut reader_body, 4).await;
    assert_eq!(rest.len(), 4, "{rest:?}");
    assert_eq!(rest[3], r#"data: {"result":"all six"}"#);
    // The first client got the same.
    assert_eq!(frames(&mut body, 4).await, rest);
}

/// A failed run's stream ends with its error in public form: an internal
/// error's message stays on the server.
#[tokio::test]
async fn a_failed_run_replays_its_public_error() {
    let store: Arc<dyn StreamManager> = Arc::new(InMemoryStreamManager::new());
    let s =
        start(FlowServer::new(&registry(Arc::new(Semaphore::new(0)))).stream_manager(store)).await;
    let first = post(&s.url("/breaks"), &[]).await;
    let id = first.headers()["x-genkit-stream-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let live = first.text().await.unwrap();
    let replay = post(&s.url("/breaks"), &[("x-genkit-stream-id", &id)])
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(replay, live);
    assert!(replay.ends_with(
        "error: {\"error\":{\"status\":\"INTERNAL\",\"message\":\"Internal Error\"}}\n\n"
    ));
    assert!(!replay.contains("hunter2"));
}

/// Unknown ids, and another caller's streams, are `204 No Content` (as in
/// Genkit JS); a bad offset or id is a 400 naming the header.
#[tokio::test]
async fn streams_are_private_and_headers_are_checked() {
    let store: Arc<dyn StreamManager> = Arc::new(InMemoryStreamManager::new());
    let by_user = from_fn(|req: &genkit_server::context_providers::RequestData| {
        let user = req
            .headers
            .get("x-user")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        async move {
            match user {
                Some(u) => Ok(ActionContext::new().with_auth(json!({"uid": u}))),
                None => Err(Error::user_facing(
                    StatusCode::Unauthenticated,
                    "who are you?",
                )),
            }
        }
    });
    let s = start(
        FlowServer::new(&registry(Arc::new(Semaphore::new(0))))
            .stream_manager(store)
            .context_provider(by_user),
    )
    .await;
    let first = post(&s.url("/breaks"), &[("x-user", "alice")]).await;
    let id = first.headers()["x-genkit-stream-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = first.text().await.unwrap();

    let alice = post(
        &s.url("/breaks"),
        &[("x-user", "alice"), ("x-genkit-stream-id", &id)],
    )
    .await;
    assert_eq!(alice.status(), 200);
    assert!(alice.text().await.unwrap().contains("\"message\":2"));
    let bob = post(
        &s.url("/breaks"),
        &[("x-user", "bob"), ("x-genkit-stream-id", &id)],
    )
    .await;
    assert_eq!(bob.status(), 204);
    assert_eq!(bob.text().await.unwrap(), "");
    let nobody = post(&s.url("/breaks"), &[("x-genkit-stream-id", &id)]).await;
    assert_eq!(nobody.status(), 401);
    let unknown = post(
        &s.url("/breaks"),
        &[
            ("x-user", "alice"),
            ("x-genkit-stream-id", "no-such-stream"),
        ],
    )
    .await;
    assert_eq!(unknown.status(), 204);

    let bad = post(
        &s.url("/breaks"),
        &[
            ("x-user", "alice"),
            ("x-genkit-stream-id", &id),
            ("x-genkit-stream-offset", "x"),
        ],
    )
    .await;
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("x-genkit-stream-offset"));
}

/// Without a stream manager the header means nothing (as in Genkit JS): the
/// flow runs, and no stream id is handed out. Non-streaming requests never
/// get one.
#[tokio::test]
async fn durable_streaming_is_opt_in_and_only_for_streams() {
    let plain = start(FlowServer::new(&registry(Arc::new(Semaphore::new(0))))).await;
    let r = post(&plain.url("/ticks"), &[("x-genkit-stream-id", "abc")]).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-genkit-stream-id").is_none());
    let _ = r.text().await.unwrap();

    let store = Arc::new(InMemoryStreamManager::new());
    let durable = start(
        FlowServer::new(&registry(Arc::new(Semaphore::new(0)))).stream_manager(store.clone()),
    )
    .await;
    let r = client()
        .post(durable.url("/ticks"))
        .json(&json!({"data": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-genkit-stream-id").is_none());
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"result": 1}));
    assert!(store.is_empty());
}

/// Genkit JS's client (`streamFlow` from `genkit/beta/client`, pinned in
/// `tests/js/package.json`) starts a stream, aborts its connection after two
/// chunks, and resumes with `streamFlow({ streamId })`. Skips (saying so)
/// only when `node` or `npm` is not installed.
#[tokio::test]
async fn genkit_js_stream_flow_resumes_against_us() {
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js");
    let has = |cmd: &str| {
        std::process::Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        eprintln!("SKIPPED: node and npm are required for the streamFlow test (not found on PATH)");
        return;
    }
    if !js.join("node_modules/genkit/package.json").exists() {
        let st = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&js)
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js.display());
    }
    let store: Arc<dyn StreamManager> = Arc::new(InMemoryStreamManager::new());
    let a = start(
        FlowServer::new(&registry(Arc::new(Semaphore::new(0)))).stream_manager(store.clone()),
    )
    .await;
    let b =
        start(FlowServer::new(&registry(Arc::new(Semaphore::new(0)))).stream_manager(store)).await;
    let out = tokio::process::Command::new("node")
        .arg(js.join("durable_stream_test.mjs"))
        .arg(a.url("/ticks"))
        .arg(b.url("/ticks"))
        .current_dir(&js)
        .output()
        .await
        .expect("running node");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("3 passed, 0 failed"), "{stdout}");
}
