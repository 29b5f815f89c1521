//! The flow server against slow, greedy and buggy peers ([`ServeOptions`]):
//! trickled headers, idle keep-alive connections, the concurrency limit, the
//! request timeout, panicking flows and context providers, and the drain
//! deadline of graceful shutdown.

mod common;

use common::{client, start};
use futures::StreamExt;
use genkit_core::action::{ActionCtx, BidiAction, BidiInputs};
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::{ActionContext, ActionDesc, ActionKind, Registry};
use genkit_server::context_providers::{ContextProvider, RequestData};
use genkit_server::{FlowServer, ServeOptions};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

const INTERNAL: &str = r#"{"status":"INTERNAL","message":"Internal Error"}"#;

fn registry(gate: Arc<Semaphore>) -> Registry {
    let r = Registry::new();
    define_flow(&r, "hello", |name: String, _| async move {
        Ok(format!("Hello, {name}!"))
    })
    .unwrap();
    define_streaming_flow(&r, "held", move |_: Value, ctx| {
        let gate = gate.clone();
        async move {
            ctx.send_chunk(json!("holding"));
            let _pass = gate.acquire().await;
            Ok(json!("released"))
        }
    })
    .unwrap();
    define_flow(&r, "sleepy", |ms: u64, _| async move {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        Ok(ms)
    })
    .unwrap();
    define_streaming_flow(&r, "ticks", |n: u64, ctx| async move {
        for i in 0..n {
            ctx.send_chunk(json!(i));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(n)
    })
    .unwrap();
    define_flow(&r, "panics", |_: Value, _| async move {
        if true {
            panic!("flow bug");
        }
        Ok(json!(null))
    })
    .unwrap();
    define_streaming_flow(&r, "panicsLater", |_: Value, ctx| async move {
        ctx.send_chunk(json!("first"));
        tokio::task::yield_now().await;
        if true {
            panic!("flow bug mid-stream");
        }
        Ok(json!(null))
    })
    .unwrap();
    define_streaming_flow(&r, "forever", |_: Value, ctx| async move {
        ctx.send_chunk(json!("started"));
        std::future::pending::<()>().await;
        Ok(json!(null))
    })
    .unwrap();
    r
}

/// A connection that sends a request's headers one byte every 500 ms (for at
/// most 60 s); when the server closed it, counted from the connect.
async fn trickle(addr: SocketAddr) -> Option<Duration> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await.ok()?;
    s.write_all(b"POST /hello HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: ")
        .await
        .ok()?;
    let mut buf = [0u8; 512];
    for _ in 0..120 {
        tokio::select! {
            r = s.read(&mut buf) => match r {
                Ok(0) | Err(_) => return Some(started.elapsed()),
                Ok(_) => continue,
            },
            () = tokio::time::sleep(Duration::from_millis(500)) => {
                if s.write_all(b"a").await.is_err() {
                    return Some(started.elapsed());
                }
            }
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_trickling_connections_are_closed_in_time() {
    // Default options: the header-read timeout is 10 s.
    let mut server = start(FlowServer::new(&registry(Arc::new(Semaphore::new(0))))).await;
    let addr = server.addr;
    let clients: Vec<_> = (0..1000).map(|_| tokio::spawn(trickle(addr))).collect();
    let mut slowest = Duration::ZERO;
    for c in clients {
        let closed = c
            .await
            .unwrap()
            .expect("a trickling connection stayed open");
        slowest = slowest.max(closed);
    }
    assert!(slowest < Duration::from_secs(30), "{slowest:?}");
    assert!(
        slowest >= Duration::from_secs(9),
        "closed too early: {slowest:?}"
    );
    // The server still serves.
    let r = client()
        .post(server.url("/hello"))
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    server.stop();
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn idle_keep_alive_connections_are_closed() {
    let server = FlowServer::new(&registry(Arc::new(Semaphore::new(0))))
        .serve_options(ServeOptions::new().header_read_timeout(Duration::from_millis(500)));
    let server = start(server).await;
    let mut s = TcpStream::connect(server.addr).await.unwrap();
    let body = br#"{"data":"x"}"#;
    let head = format!(
        "POST /hello HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let idle_since = loop {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before answering");
        got.extend_from_slice(&buf[..n]);
        if got.ends_with(br#"{"result":"Hello, x!"}"#) {
            break Instant::now();
        }
    };
    // Kept alive, then closed once idle for the header-read timeout.
    let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
        .await
        .expect("the idle connection stayed open")
        .unwrap_or(0);
    assert_eq!(n, 0);
    let idle = idle_since.elapsed();
    assert!(idle >= Duration::from_millis(400), "{idle:?}");
}

#[tokio::test]
async fn requests_over_the_concurrency_limit_get_503() {
    let gate = Arc::new(Semaphore::new(0));
    let server = FlowServer::new(&registry(gate.clone()))
        .serve_options(ServeOptions::new().concurrency_limit(2));
    let mut server = start(server).await;
    // Two streams in flight take both places, for as long as they stream.
    let mut streams = Vec::new();
    for _ in 0..2 {
        let r = client()
            .post(server.url("/held?stream=true"))
            .json(&json!({"data": null}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let mut body = r.bytes_stream();
        let first = body.next().await.unwrap().unwrap();
        assert!(std::str::from_utf8(&first).unwrap().contains("holding"));
        streams.push(body);
    }
    for _ in 0..3 {
        let r = client()
            .post(server.url("/hello"))
            .json(&json!({"data": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["status"], "UNAVAILABLE");
    }
    // The streams end; their places are free again.
    gate.add_permits(2);
    for mut s in streams {
        let mut rest = Vec::new();
        while let Some(chunk) = s.next().await {
            rest.extend_from_slice(&chunk.unwrap());
        }
        assert!(
            String::from_utf8(rest)
                .unwrap()
                .contains(r#"{"result":"released"}"#)
        );
    }
    for _ in 0..10 {
        let r = client()
            .post(server.url("/hello"))
            .json(&json!({"data": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    server.stop();
    server.task.await.unwrap().unwrap();
}

/// An agent turn goes on when its client leaves (as in Genkit JS), and
/// keeps its place under the concurrency limit until it ends: a client
/// cannot start turns without bound by hanging up on each.
#[tokio::test]
async fn an_agent_turn_counts_against_the_limit_until_it_ends() {
    let gate = Arc::new(Semaphore::new(0));
    let registry = registry(gate.clone());
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let done = Arc::new(std::sync::Mutex::new(Some(done_tx)));
    let turn_gate = gate.clone();
    let agent = BidiAction::from_desc(
        ActionDesc::new(ActionKind::Agent, "heldAgent"),
        move |_init: Value, mut inputs: BidiInputs<Value>, ctx: ActionCtx<Value>| {
            let (gate, done) = (turn_gate.clone(), done.clone());
            async move {
                let _input = inputs.next().await;
                ctx.send_chunk(json!("holding"));
                let _pass = gate.acquire().await;
                if let Some(tx) = done.lock().unwrap().take() {
                    let _ = tx.send(());
                }
                Ok(json!({"finishReason": "stop"}))
            }
        },
    )
    .unwrap();
    registry.register(&agent).unwrap();
    let server = FlowServer::new(&registry)
        .agent("heldAgent")
        .flow("hello")
        .serve_options(ServeOptions::new().concurrency_limit(1));
    let mut server = start(server).await;
    let r = client()
        .post(server.url("/heldAgent?stream=true"))
        .json(&json!({"data": {"message": {"role": "user", "content": [{"text": "go"}]}}, "init": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut body = r.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("holding"));
    drop(body);
    // Give the server time to see the closed connection (before the turn
    // counted, its place was free again from then on).
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..3 {
        let r = client()
            .post(server.url("/hello"))
            .json(&json!({"data": "x"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()["retry-after"], "1");
        let v: Value = r.json().await.unwrap();
        assert_eq!(
            v,
            json!({"status": "UNAVAILABLE", "message": "the server is at its concurrency limit; retry later"})
        );
    }
    // The turn ends; its place is free again.
    gate.add_permits(1);
    tokio::time::timeout(Duration::from_secs(10), done_rx)
        .await
        .expect("the turn ran to its end")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = client()
            .post(server.url("/hello"))
            .json(&json!({"data": "x"}))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(Instant::now() < deadline, "the ended turn kept its place");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop();
    server.task.await.unwrap().unwrap();
}

/// A detached agent turn (a real `genkit-agent` agent) goes on after its
/// request is answered, and keeps that request's place under the
/// concurrency limit until it ends: detaching is no way around the limit.
#[tokio::test]
async fn a_detached_agent_turn_counts_against_the_limit_until_it_ends() {
    use genkit_agent::store::InMemorySessionStore;
    use genkit_agent::types::AgentResult;
    use genkit_agent::{AgentOptions, define_agent};
    let registry = registry(Arc::new(Semaphore::new(0)));
    let release = Arc::new(tokio::sync::Notify::new());
    let ended = Arc::new(tokio::sync::Notify::new());
    let (r, e) = (release.clone(), ended.clone());
    let store = Arc::new(InMemorySessionStore::new());
    define_agent(
        &registry,
        "detaching",
        AgentOptions::new().store(store),
        move |_session, _input| {
            let (release, ended) = (r.clone(), e.clone());
            async move {
                release.notified().await;
                ended.notify_one();
                Ok(AgentResult::default())
            }
        },
    )
    .unwrap();
    let server = FlowServer::new(&registry)
        .agent("detaching")
        .flow("hello")
        .serve_options(ServeOptions::new().concurrency_limit(1));
    let mut server = start(server).await;
    let hello = async || {
        client()
            .post(server.url("/hello"))
            .json(&json!({"data": "x"}))
            .send()
            .await
            .unwrap()
            .status()
    };
    assert_eq!(hello().await, 200, "the limit is free before the turn");
    let r = client()
        .post(server.url("/detaching"))
        .json(&json!({
            "data": {"message": {"role": "user", "content": [{"text": "go"}]}, "detach": true},
            "init": {}
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let out: Value = r.json().await.unwrap();
    assert_eq!(out["result"]["finishReason"], "detached", "{out}");
    // Answered, yet the turn still runs: its place is taken.
    for _ in 0..3 {
        assert_eq!(hello().await, 503);
    }
    release.notify_one();
    tokio::time::timeout(Duration::from_secs(10), ended.notified())
        .await
        .expect("the detached turn ran to its end");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = hello().await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(Instant::now() < deadline, "the ended turn kept its place");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.stop();
    server.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_request_timeout_answers_504_but_does_not_cut_streams() {
    let server = FlowServer::new(&registry(Arc::new(Semaphore::new(0))))
        .serve_options(ServeOptions::new().request_timeout(Duration::from_millis(300)));
    let server = start(server).await;
    let started = Instant::now();
    let r = client()
        .post(server.url("/sleepy"))
        .json(&json!({"data": 10_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 504);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["status"], "DEADLINE_EXCEEDED");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A stream lasting longer than the timeout runs to its end.
    let r = client()
        .post(server.url("/ticks"))
        .header("accept", "text/event-stream")
        .json(&json!({"data": 8}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body = r.text().await.unwrap();
    assert!(body.ends_with("data: {\"result\":8}\n\n"), "{body}");
    assert!(started.elapsed() >= Duration::from_millis(800));
}

struct PanickingProvider;

impl ContextProvider for PanickingProvider {
    fn provide<'a>(
        &'a self,
        _request: &'a RequestData,
    ) -> futures::future::BoxFuture<'a, genkit_core::Result<ActionContext>> {
        Box::pin(async {
            if true {
                panic!("provider bug");
            }
            Ok(ActionContext::new())
        })
    }
}

#[tokio::test]
async fn panics_answer_genkits_internal_error() {
    let server = FlowServer::new(&registry(Arc::new(Semaphore::new(0))))
        .flows(["hello", "panics", "panicsLater"])
        .flow_with_context("sleepy", PanickingProvider);
    let server = start(server).await;
    for _ in 0..2 {
        let r = client()
            .post(server.url("/panics"))
            .json(&json!({"data": null}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 500);
        assert_eq!(r.text().await.unwrap(), INTERNAL);
    }
    // A panic in a context provider (outside the run).
    let r = client()
        .post(server.url("/sleepy"))
        .json(&json!({"data": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 500);
    assert_eq!(r.text().await.unwrap(), INTERNAL);
    // A panic mid-stream ends the stream with the internal error frame.
    let r = client()
        .post(server.url("/panicsLater?stream=true"))
        .json(&json!({"data": null}))
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    assert_eq!(
        body,
        format!("data: {{\"message\":\"first\"}}\n\nerror: {{\"error\":{INTERNAL}}}\n\n")
    );
    // The server is fine.
    let r = client()
        .post(server.url("/hello"))
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn shutdown_closes_a_never_ending_stream_at_the_drain_deadline() {
    let drain = Duration::from_millis(800);
    let server = FlowServer::new(&registry(Arc::new(Semaphore::new(0))))
        .serve_options(ServeOptions::new().drain_timeout(drain));
    let mut server = start(server).await;
    let r = client()
        .post(server.url("/forever?stream=true"))
        .json(&json!({"data": null}))
        .send()
        .await
        .unwrap();
    let mut body = r.bytes_stream();
    let first = body.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("started"));
    // A finished request in flight at the signal is answered.
    let quick = tokio::spawn(
        client()
            .post(server.url("/sleepy"))
            .json(&json!({"data": 300}))
            .send(),
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stopped = Instant::now();
    server.stop();
    tokio::time::timeout(drain + Duration::from_secs(6), &mut server.task)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
    let took = stopped.elapsed();
    assert!(took >= drain - Duration::from_millis(50), "{took:?}");
    assert!(took < drain + Duration::from_secs(1), "{took:?}");
    let quick = quick.await.unwrap().unwrap();
    assert_eq!(quick.status(), 200);
    assert_eq!(quick.text().await.unwrap(), r#"{"result":300}"#);
    // The stream was cut.
    while let Some(Ok(_)) = body.next().await {}
    // No new connections after shutdown.
    assert!(TcpStream::connect(server.addr).await.is_err());
}
