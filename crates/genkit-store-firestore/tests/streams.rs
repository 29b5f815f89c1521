//! Durable streams in Firestore (`FirestoreStreamManager`) on the emulator:
//! the `StreamManager` contract, racing writers, a live follower, and
//! interop both ways with Genkit JS 1.42's `FirestoreStreamManager`.

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use genkit_core::StatusCode;
use genkit_core::streaming::{StreamEvent, StreamManager, subscribe};
use genkit_store_firestore::FirestoreStreamManager;
use serde_json::{Value, json};

fn chunk(n: i64) -> StreamEvent {
    StreamEvent::Chunk { chunk: json!(n) }
}

fn manager(host: &str, collection: &str) -> FirestoreStreamManager {
    FirestoreStreamManager::builder()
        .emulator_host(host)
        .project_id(support::PROJECT)
        .collection(collection)
        .poll_interval(Duration::from_millis(20))
        .build()
        .unwrap()
}

/// The stream document as Genkit JS reads it.
async fn js_doc(host: &str, collection: &str, id: &str) -> Value {
    let (ok, out) = support::node(host, "streams.mjs", &["doc", collection, id], "").await;
    assert!(ok, "reading the document failed: {out}");
    support::last_json(&out)
}

/// What Genkit JS's `subscribe` reported, one callback per item.
async fn js_subscribe(host: &str, collection: &str, id: &str) -> Vec<Value> {
    let (ok, out) = support::node(host, "streams.mjs", &["subscribe", collection, id], "").await;
    assert!(ok, "Genkit JS's subscribe failed: {out}");
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_manager_contract() {
    let Some(host) = support::emulator("the_stream_manager_contract") else {
        return;
    };
    let collection = support::fresh_collection("streams");
    let m = manager(&host, &collection);
    m.open("s", "alice").await.unwrap();
    assert_eq!(
        m.open("s", "bob").await.unwrap_err().status(),
        StatusCode::AlreadyExists
    );
    m.append("s", 0, &[chunk(0), chunk(1)]).await.unwrap();
    // A second writer (another replica) believing the stream shorter is
    // refused and writes nothing.
    let other = manager(&host, &collection);
    assert_eq!(
        other
            .append("s", 1, &[chunk(9)])
            .await
            .unwrap_err()
            .status(),
        StatusCode::Aborted
    );
    let bad_order = m
        .append("s", 2, &[StreamEvent::Done { output: json!(1) }, chunk(2)])
        .await
        .unwrap_err();
    assert_eq!(bad_order.status(), StatusCode::InvalidArgument);
    // Equal chunks stay two events (each has its own uuid).
    m.append("s", 2, &[chunk(1)]).await.unwrap();
    m.append(
        "s",
        3,
        &[StreamEvent::Done {
            output: json!("end"),
        }],
    )
    .await
    .unwrap();
    assert_eq!(
        m.append("s", 4, &[chunk(4)]).await.unwrap_err().status(),
        StatusCode::Aborted,
        "an ended stream takes no more events"
    );
    let page = other.read("s", 1).await.unwrap();
    assert_eq!(page.owner, "alice");
    assert_eq!(
        page.events,
        vec![
            chunk(1),
            chunk(1),
            StreamEvent::Done {
                output: json!("end")
            }
        ]
    );
    assert_eq!(other.read("s", 7).await.unwrap().events, vec![]);
    assert_eq!(
        m.read("nope", 0).await.unwrap_err().status(),
        StatusCode::NotFound
    );
    assert_eq!(
        m.append("nope", 0, &[chunk(0)]).await.unwrap_err().status(),
        StatusCode::NotFound
    );
    assert_eq!(
        m.open("a/b", "").await.unwrap_err().status(),
        StatusCode::InvalidArgument
    );

    // Stored as Genkit JS's FirestoreStreamManager stores a stream.
    let doc = js_doc(&host, &collection, "s").await;
    assert_eq!(doc["createdAt"], json!({"timestamp": true}));
    assert_eq!(doc["rsOwner"], "alice");
    let stream = doc["stream"].as_array().expect("a stream array");
    assert_eq!(stream.len(), 4);
    for (event, n) in stream[..3].iter().zip([0, 1, 1]) {
        assert_eq!(event["type"], "chunk");
        assert_eq!(event["chunk"], n);
        let uuid = event["uuid"].as_str().expect("a uuid");
        assert_eq!(uuid.len(), 36, "{uuid}");
    }
    assert_ne!(stream[1]["uuid"], stream[2]["uuid"]);
    assert_eq!(stream[3], json!({"type": "done", "output": "end"}));

    // A damaged event is an error naming the stream, never a wrong event.
    m.open("bad", "").await.unwrap();
    let damaged = json!({"stream": [{"type": "chunk", "chunk": 1}, {"type": "weird"}]});
    let path = format!("{collection}/bad");
    let (ok, out) = support::node(&host, "set_doc.mjs", &[&path], &damaged.to_string()).await;
    assert!(ok, "{out}");
    let e = m.read("bad", 0).await.unwrap_err();
    assert_eq!(e.status(), StatusCode::DataLoss);
    assert!(e.to_string().contains("stream `bad` event 1"), "{e}");
}

/// Two writers appending at the same index at once: on the emulator (no
/// transaction isolation) the append marker lets exactly one through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_writers_at_one_index_fork_nothing() {
    let Some(host) = support::emulator("racing_writers_at_one_index_fork_nothing") else {
        return;
    };
    let collection = support::fresh_collection("streams-race");
    let a = manager(&host, &collection);
    let b = manager(&host, &collection);
    for round in 0..5 {
        let id = format!("r{round}");
        a.open(&id, "").await.unwrap();
        let (one, two) = ([chunk(1)], [chunk(2)]);
        let (ra, rb) = tokio::join!(a.append(&id, 0, &one), b.append(&id, 0, &two));
        let won = [&ra, &rb].iter().filter(|r| r.is_ok()).count();
        assert_eq!(won, 1, "round {round}: {ra:?} {rb:?}");
        for r in [ra, rb] {
            if let Err(e) = r {
                assert_eq!(e.status(), StatusCode::Aborted, "{e}");
            }
        }
        assert_eq!(a.read(&id, 0).await.unwrap().events.len(), 1);
    }
}

/// A follower on one manager sees what a writer on another appends, live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_sees_appends_live() {
    let Some(host) = support::emulator("a_follower_sees_appends_live") else {
        return;
    };
    let collection = support::fresh_collection("streams-live");
    let writer = manager(&host, &collection);
    let reader: Arc<dyn StreamManager> = Arc::new(manager(&host, &collection));
    writer.open("live", "carol").await.unwrap();
    writer.append("live", 0, &[chunk(0)]).await.unwrap();
    let mut follow = Box::pin(subscribe(
        reader.clone(),
        "live".into(),
        "carol".into(),
        0,
        Duration::from_secs(30),
    ));
    assert_eq!(follow.next().await.unwrap().unwrap(), chunk(0));
    writer.append("live", 1, &[chunk(1)]).await.unwrap();
    assert_eq!(follow.next().await.unwrap().unwrap(), chunk(1));
    let err = json!({"status": "INTERNAL", "message": "boom"});
    writer
        .append("live", 2, &[StreamEvent::Error { err: err.clone() }])
        .await
        .unwrap();
    assert_eq!(
        follow.next().await.unwrap().unwrap(),
        StreamEvent::Error { err }
    );
    assert!(follow.next().await.is_none());
    // Someone else's stream reads as unknown.
    let mut stranger = Box::pin(subscribe(
        reader,
        "live".into(),
        "mallory".into(),
        0,
        Duration::from_secs(30),
    ));
    assert_eq!(
        stranger.next().await.unwrap().unwrap_err().status(),
        StatusCode::NotFound
    );
}

/// A stream written by this crate is read by Genkit JS's `subscribe`: all
/// its chunks, then its output (or its error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_js_subscribes_to_a_rust_stream() {
    let Some(host) = support::emulator("genkit_js_subscribes_to_a_rust_stream") else {
        return;
    };
    let collection = support::fresh_collection("streams-to-js");
    let m = manager(&host, &collection);
    m.open("done", "").await.unwrap();
    let chunks = [json!({"text": "a"}), json!({"text": "a"}), json!([1, "b"])];
    let events: Vec<StreamEvent> = chunks
        .iter()
        .map(|c| StreamEvent::Chunk { chunk: c.clone() })
        .collect();
    m.append("done", 0, &events[..1]).await.unwrap();
    m.append("done", 1, &events[1..]).await.unwrap();
    m.append(
        "done",
        3,
        &[StreamEvent::Done {
            output: json!({"answer": 42}),
        }],
    )
    .await
    .unwrap();
    let seen = js_subscribe(&host, &collection, "done").await;
    let mut expected: Vec<Value> = chunks.iter().map(|c| json!({"chunk": c})).collect();
    expected.push(json!({"done": {"answer": 42}}));
    assert_eq!(seen, expected);

    m.open("failed", "").await.unwrap();
    let err = json!({"status": "INTERNAL", "message": "boom"});
    m.append(
        "failed",
        0,
        &[chunk(7), StreamEvent::Error { err: err.clone() }],
    )
    .await
    .unwrap();
    let seen = js_subscribe(&host, &collection, "failed").await;
    assert_eq!(seen, vec![json!({"chunk": 7}), json!({"error": err})]);
}

/// A stream written by Genkit JS's `open().write()/done()` is read by this
/// crate, owned by the anonymous caller (Genkit JS records no owner).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_genkit_js_stream_is_read_here() {
    let Some(host) = support::emulator("a_genkit_js_stream_is_read_here") else {
        return;
    };
    let collection = support::fresh_collection("streams-from-js");
    let input = json!({"chunks": [{"text": "x"}, {"text": "x"}, 3], "output": {"ok": true}});
    let (ok, out) = support::node(
        &host,
        "streams.mjs",
        &["write", &collection, "js"],
        &input.to_string(),
    )
    .await;
    assert!(ok, "Genkit JS's writer failed: {out}");
    let m: Arc<dyn StreamManager> = Arc::new(manager(&host, &collection));
    let page = m.read("js", 0).await.unwrap();
    assert_eq!(page.owner, "");
    assert_eq!(
        page.events,
        vec![
            StreamEvent::Chunk {
                chunk: json!({"text": "x"})
            },
            StreamEvent::Chunk {
                chunk: json!({"text": "x"})
            },
            chunk(3),
            StreamEvent::Done {
                output: json!({"ok": true})
            },
        ]
    );
    // Followed like any stream.
    let followed: Vec<StreamEvent> = subscribe(
        m.clone(),
        "js".into(),
        String::new(),
        2,
        Duration::from_secs(30),
    )
    .map(|e| e.unwrap())
    .collect()
    .await;
    assert_eq!(followed, page.events[2..].to_vec());

    let input = json!({"chunks": ["partial"], "error": "it broke"});
    let (ok, out) = support::node(
        &host,
        "streams.mjs",
        &["write", &collection, "js-error"],
        &input.to_string(),
    )
    .await;
    assert!(ok, "Genkit JS's writer failed: {out}");
    let page = m.read("js-error", 0).await.unwrap();
    assert_eq!(page.events.len(), 2);
    assert_eq!(
        page.events[0],
        StreamEvent::Chunk {
            chunk: json!("partial")
        }
    );
    match &page.events[1] {
        StreamEvent::Error { err } => assert_eq!(err["message"], "it broke", "{err}"),
        other => panic!("not an error event: {other:?}"),
    }
}

/// Two flow servers, each with its own manager on one Firestore, stand for
/// two replicas behind a load balancer: a client starts a stream on A, its
/// connection is cut after two chunks, and it reads the rest from B, every
/// chunk exactly once and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_client_resumes_on_another_replica() {
    let Some(host) = support::emulator("a_cut_client_resumes_on_another_replica") else {
        return;
    };
    let collection = support::fresh_collection("streams-replicas");
    let serve = |manager: FirestoreStreamManager| async move {
        let registry = genkit_core::Registry::new();
        genkit_core::flow::define_streaming_flow(&registry, "ticks", |n: u32, ctx| async move {
            for i in 0..n {
                ctx.send_chunk(i);
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            Ok(n)
        })
        .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = genkit_server::FlowServer::new(&registry).stream_manager(Arc::new(manager));
        tokio::spawn(server.serve_with_shutdown(listener, std::future::pending::<()>()));
        format!("http://{addr}/ticks")
    };
    let a = serve(manager(&host, &collection)).await;
    let b = serve(manager(&host, &collection)).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let first = http
        .post(&a)
        .header("accept", "text/event-stream")
        .json(&json!({"data": 10}))
        .send()
        .await
        .unwrap();
    let id = first.headers()["x-genkit-stream-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut body = first.bytes_stream();
    let mut got = String::new();
    while got.matches("\n\n").count() < 2 {
        got.push_str(&String::from_utf8_lossy(
            &body.next().await.unwrap().unwrap(),
        ));
    }
    drop(body);
    let seen = got.matches("\n\n").count();
    let rest = http
        .post(&b)
        .header("accept", "text/event-stream")
        .header("x-genkit-stream-id", &id)
        .header("x-genkit-stream-offset", seen.to_string())
        .json(&json!({"data": 10}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let all = format!("{got}{rest}");
    let mut want: String = (0..10)
        .map(|i| format!("data: {{\"message\":{i}}}\n\n"))
        .collect();
    want.push_str("data: {\"result\":10}\n\n");
    assert_eq!(all, want);
    // Genkit JS follows the same stream from the start.
    let seen = js_subscribe(&host, &collection, &id).await;
    let mut expected: Vec<Value> = (0..10).map(|i| json!({"chunk": i})).collect();
    expected.push(json!({"done": 10}));
    assert_eq!(seen, expected);
}
