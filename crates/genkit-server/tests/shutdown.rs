//! SIGTERM with a never-ending stream open: the runtime process (flow server
//! and dev tooling) exits once the drain deadline has passed, after sending
//! the spans still queued for the telemetry server.

mod common;

use common::{FakeTelemetryServer, RuntimeProcess, client};
use futures::StreamExt;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_then_flushes_queued_traces() {
    // A slow telemetry server: each post takes 700 ms, so spans queue up in
    // the exporter and are still queued when the signal arrives.
    let (fake, url) = FakeTelemetryServer::start_with_delay(Duration::from_millis(700)).await;
    let drain = Duration::from_millis(1000);
    let mut rt = RuntimeProcess::start(
        true,
        &[
            ("GENKIT_TELEMETRY_SERVER", &url),
            ("GENKIT_TEST_DRAIN_MS", "1000"),
        ],
    )
    .await;
    let r = client()
        .post(rt.flow_url("/forever?stream=true"))
        .json(&json!({"data": null}))
        .send()
        .await
        .unwrap();
    let forever_trace = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut stream = r.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(std::str::from_utf8(&first).unwrap().contains("started"));
    let mut traces = Vec::new();
    for i in 0..20 {
        let r = client()
            .post(rt.flow_url("/hello"))
            .json(&json!({"data": format!("n{i}")}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        traces.push(
            r.headers()["x-genkit-trace-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    let signalled = Instant::now();
    rt.signal("TERM");
    // The stream is cut at the drain deadline.
    let cut = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = stream.next().await {}
        signalled.elapsed()
    })
    .await
    .expect("the stream was not closed");
    assert!(cut >= drain - Duration::from_millis(100), "{cut:?}");
    assert!(cut < drain + Duration::from_millis(1500), "{cut:?}");
    rt.wait().await;
    let exited = signalled.elapsed();
    // The drain, then at most the shutdown flush of the exporter.
    assert!(
        exited < drain + genkit_server::serving::SHUTDOWN_FLUSH_TIMEOUT + Duration::from_secs(1),
        "{exited:?}"
    );
    // Every finished request's trace arrived, and the cut stream's too.
    for t in &traces {
        assert_eq!(fake.merged(t).len(), 1, "trace {t} was not flushed");
    }
    let forever = fake.merged(&forever_trace);
    let root = forever
        .values()
        .next()
        .expect("the cut stream's trace was not flushed");
    assert_eq!(root["attributes"]["genkit:name"], "forever");
    assert_eq!(root["attributes"]["genkit:state"], "error");
}
