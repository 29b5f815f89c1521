//! Durable streams in PostgreSQL (`PostgresStreamManager`): the
//! `StreamManager` contract, and two flow servers on their own pools (two
//! replicas) serving one stream to a client that changes server mid-stream.
#![cfg(feature = "postgres")]

mod support;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use genkit_core::StatusCode;
use genkit_core::streaming::{StreamEvent, StreamManager, subscribe};
use genkit_store_sql::PostgresStreamManager;
use serde_json::{Value, json};

fn chunk(n: i64) -> StreamEvent {
    StreamEvent::Chunk { chunk: json!(n) }
}

async fn manager(test: &str) -> Option<(String, PostgresStreamManager)> {
    let server = support::postgres_server(test)?;
    let url = support::fresh_postgres_db(&server).await;
    let m = PostgresStreamManager::connect(&url).await.unwrap();
    Some((url, m.poll_interval(Duration::from_millis(10))))
}

#[tokio::test]
async fn the_stream_manager_contract() {
    let Some((url, m)) = manager("the_stream_manager_contract").await else {
        return;
    };
    m.open("s", "alice").await.unwrap();
    assert_eq!(
        m.open("s", "bob").await.unwrap_err().status(),
        StatusCode::AlreadyExists
    );
    m.append("s", 0, &[chunk(0), chunk(1)]).await.unwrap();
    // A second writer (another replica) believing the stream shorter is
    // refused and writes nothing.
    let other = PostgresStreamManager::connect(&url).await.unwrap();
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
    m.append(
        "s",
        2,
        &[StreamEvent::Done {
            output: json!("end"),
        }],
    )
    .await
    .unwrap();
    assert_eq!(
        m.append("s", 3, &[chunk(3)]).await.unwrap_err().status(),
        StatusCode::Aborted
    );
    let page = other.read("s", 1).await.unwrap();
    assert_eq!(page.owner, "alice");
    assert_eq!(
        page.events,
        vec![
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

    // Stored as Genkit JS's Firestore stream manager stores events.
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let stored: Vec<String> = sqlx::query_scalar(
        "SELECT event FROM genkit_stream_events WHERE stream_id = 's' ORDER BY idx",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let stored: Vec<Value> = stored
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    assert_eq!(
        stored,
        vec![
            json!({"type": "chunk", "chunk": 0}),
            json!({"type": "chunk", "chunk": 1}),
            json!({"type": "done", "output": "end"})
        ]
    );
    // A damaged row is an error naming the stream, never a wrong event.
    sqlx::query("UPDATE genkit_stream_events SET event = '{' WHERE stream_id = 's' AND idx = 1")
        .execute(&mut conn)
        .await
        .unwrap();
    let e = m.read("s", 0).await.unwrap_err();
    assert_eq!(e.status(), StatusCode::DataLoss);
    assert!(e.to_string().contains("stream `s` event 1"), "{e}");

    // Ended streams go once their time to live has passed.
    let short = PostgresStreamManager::connect(&url)
        .await
        .unwrap()
        .ttl(Duration::ZERO);
    short.open("t", "").await.unwrap();
    assert_eq!(
        short.read("s", 0).await.unwrap_err().status(),
        StatusCode::NotFound
    );
    assert!(short.read("t", 0).await.is_ok());
}

/// A follower on one replica sees what a writer on another appends, live.
#[tokio::test]
async fn a_follower_on_another_replica_sees_appends_live() {
    let Some((url, writer)) = manager("a_follower_on_another_replica_sees_appends_live").await
    else {
        return;
    };
    let reader: Arc<dyn StreamManager> = Arc::new(
        PostgresStreamManager::connect(&url)
            .await
            .unwrap()
            .poll_interval(Duration::from_millis(10)),
    );
    writer.open("s", "").await.unwrap();
    let follow = subscribe(
        reader,
        "s".into(),
        String::new(),
        0,
        Duration::from_secs(10),
    );
    let write = async {
        for i in 0..20u64 {
            writer.append("s", i, &[chunk(i as i64)]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
        writer
            .append("s", 20, &[StreamEvent::Done { output: json!(20) }])
            .await
            .unwrap();
    };
    let (events, ()) = tokio::join!(follow.collect::<Vec<_>>(), write);
    let events: Vec<StreamEvent> = events.into_iter().map(Result::unwrap).collect();
    let mut want: Vec<StreamEvent> = (0..20).map(chunk).collect();
    want.push(StreamEvent::Done { output: json!(20) });
    assert_eq!(events, want);
}

/// Two flow servers, each with its own pool on one database, stand for two
/// replicas behind a load balancer: a client starts a stream on A, its
/// connection is cut after two chunks, and it reads the rest from B, every
/// chunk exactly once and in order.
#[tokio::test]
async fn a_cut_client_resumes_on_another_replica() {
    let Some((url, _)) = manager("a_cut_client_resumes_on_another_replica").await else {
        return;
    };
    let serve = |url: String| async move {
        let registry = genkit_core::Registry::new();
        genkit_core::flow::define_streaming_flow(&registry, "ticks", |n: u32, ctx| async move {
            for i in 0..n {
                ctx.send_chunk(i);
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            Ok(n)
        })
        .unwrap();
        let manager = PostgresStreamManager::connect(&url)
            .await
            .unwrap()
            .poll_interval(Duration::from_millis(10));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = genkit_server::FlowServer::new(&registry).stream_manager(Arc::new(manager));
        tokio::spawn(server.serve_with_shutdown(listener, std::future::pending::<()>()));
        format!("http://{addr}/ticks")
    };
    let a = serve(url.clone()).await;
    let b = serve(url).await;
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
}
