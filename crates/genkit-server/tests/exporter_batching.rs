//! The batching exporter: bounded queue, batches formed while sending, drops
//! counted when full, and never blocking the code that ends spans.

use futures::future::BoxFuture;
use genkit_core::tracing::{RecordedSpan, SpanId, SpanProcessor, SpanType, TraceId};
use genkit_server::telemetry::{
    BatchConfig, BatchProcessor, ExportError, SpanSink, TelemetryServerUrl, TraceServerSink,
};
use parking_lot::Mutex;
use serde_json::Map;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn span(trace: TraceId, name: &str, end: Option<f64>) -> Arc<RecordedSpan> {
    Arc::new(RecordedSpan {
        trace_id: trace,
        span_id: SpanId::random(),
        parent_span_id: None,
        name: name.into(),
        span_type: SpanType::Action,
        subtype: Some("flow".into()),
        key: Some(format!("/flow/{name}").into()),
        labels: None,
        path: format!("/{{{name},t:flow}}").into(),
        start_time: 1.0,
        end_time: end,
        input: None,
        output: None,
        context: None,
        attributes: Map::new(),
        failure: None,
    })
}

/// Records batch sizes; the first export takes `first_delay`.
struct Recorder {
    batches: Mutex<Vec<usize>>,
    first_delay: Duration,
}

impl SpanSink for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn export(&self, spans: Vec<Arc<RecordedSpan>>) -> BoxFuture<'_, Result<(), ExportError>> {
        Box::pin(async move {
            let first = {
                let mut b = self.batches.lock();
                b.push(spans.len());
                b.len() == 1
            };
            if first {
                tokio::time::sleep(self.first_delay).await;
            }
            Ok(())
        })
    }
}

/// Never finishes an export.
struct Stuck;

impl SpanSink for Stuck {
    fn name(&self) -> &'static str {
        "stuck"
    }
    fn export(&self, _: Vec<Arc<RecordedSpan>>) -> BoxFuture<'_, Result<(), ExportError>> {
        Box::pin(futures::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_arriving_during_an_export_form_the_next_batches() {
    let sink = Arc::new(Recorder {
        batches: Mutex::default(),
        first_delay: Duration::from_millis(500),
    });
    let p = BatchProcessor::spawn(
        sink.clone(),
        BatchConfig {
            queue_capacity: 1000,
            max_batch: 64,
            realtime: false,
            ..BatchConfig::default()
        },
    )
    .unwrap();
    let t = TraceId::random();
    p.on_end(&span(t, "first", Some(2.0)));
    // Wait until the worker is busy with the first span.
    while sink.batches.lock().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for i in 0..150 {
        p.on_end(&span(t, &format!("s{i}"), Some(2.0)));
    }
    assert!(p.flush(Duration::from_secs(5)).await);
    let batches = sink.batches.lock().clone();
    assert_eq!(batches, vec![1, 64, 64, 22]);
    let stats = p.stats();
    assert_eq!(
        (stats.queued, stats.exported, stats.dropped, stats.failed),
        (151, 151, 0, 0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_receiver_never_blocks_and_overflow_is_counted() {
    let p = BatchProcessor::spawn(
        Arc::new(Stuck),
        BatchConfig {
            queue_capacity: 16,
            max_batch: 4,
            realtime: true,
            ..BatchConfig::default()
        },
    )
    .unwrap();
    assert!(p.wants_start_events());
    let t = TraceId::random();
    let s = span(t, "x", None);
    let started = Instant::now();
    for _ in 0..20_000 {
        p.on_start(&s);
        p.on_end(&s);
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_secs(1),
        "enqueueing took {elapsed:?}"
    );
    let stats = p.stats();
    assert_eq!(stats.queued + stats.dropped, 40_000);
    assert!(stats.queued <= 16 + 4, "{stats:?}");
    // A flush gives up at its deadline instead of hanging.
    let t0 = Instant::now();
    assert!(!p.flush(Duration::from_millis(100)).await);
    assert!(t0.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_telemetry_server_fails_quietly() {
    // A listener that accepts and never answers, then a closed port.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((c, _)) = silent.accept().await {
            held.push(c);
        }
    });
    let sink = Arc::new(TraceServerSink::new(
        TelemetryServerUrl::new(Some(url)),
        Duration::from_millis(300),
    ));
    let p = BatchProcessor::spawn(
        sink,
        BatchConfig {
            queue_capacity: 8,
            max_batch: 8,
            realtime: false,
            ..BatchConfig::default()
        },
    )
    .unwrap();
    let t0 = Instant::now();
    for i in 0..1000 {
        p.on_end(&span(TraceId::random(), &format!("s{i}"), Some(2.0)));
    }
    assert!(t0.elapsed() < Duration::from_millis(500));
    assert!(p.flush(Duration::from_secs(5)).await);
    let stats = p.stats();
    assert!(
        stats.dropped > 0 && stats.failed > 0 && stats.exported == 0,
        "{stats:?}"
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = TelemetryServerUrl::new(Some(format!("http://{closed}")));
    let p = BatchProcessor::spawn(
        Arc::new(TraceServerSink::new(url, Duration::from_secs(1))),
        BatchConfig::default(),
    )
    .unwrap();
    p.on_end(&span(TraceId::random(), "x", Some(2.0)));
    assert!(p.flush(Duration::from_secs(5)).await);
    assert_eq!(p.stats().failed, 1);
}

#[test]
fn spans_group_by_trace_and_later_records_win() {
    let (a, b) = (TraceId::random(), TraceId::random());
    let root = span(a, "root", None);
    let ended = Arc::new(RecordedSpan {
        end_time: Some(5.0),
        ..(*root).clone()
    });
    let traces = genkit_server::telemetry::genkit_exporter::group_traces(&[
        root,
        span(b, "other", Some(3.0)),
        ended,
    ]);
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[0].trace_id, a.to_string());
    assert_eq!(traces[0].spans.len(), 1);
    assert_eq!(traces[0].end_time, Some(5.0));
    assert_eq!(traces[0].display_name.as_deref(), Some("root"));
    assert_eq!(traces[1].trace_id, b.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_is_bounded_in_bytes_and_releases_them_after_export() {
    // A sink that never finishes: nothing leaves the queue.
    let p = BatchProcessor::spawn(
        Arc::new(Stuck),
        BatchConfig {
            queue_capacity: 1000,
            queue_bytes: 1024 * 1024,
            max_batch: 1000,
            ..BatchConfig::default()
        },
    )
    .unwrap();
    let big = |trace| {
        let mut s = (*span(trace, "big", Some(2.0))).clone();
        s.output = Some(format!("\"{}\"", "x".repeat(100_000)).into());
        Arc::new(s)
    };
    for _ in 0..100 {
        p.on_end(&big(TraceId::random()));
    }
    let stats = p.stats();
    // About 100 KB each: ten fit in 1 MiB, the other ninety are dropped.
    assert!((9..=10).contains(&stats.queued), "{stats:?}");
    assert_eq!(stats.queued + stats.dropped, 100, "{stats:?}");
    assert!(stats.pending_bytes <= 1024 * 1024, "{stats:?}");

    // With a sink that accepts, the bytes are given back after each batch.
    let sink = Arc::new(Recorder {
        batches: Mutex::default(),
        first_delay: Duration::ZERO,
    });
    let p = BatchProcessor::spawn(
        sink,
        BatchConfig {
            queue_bytes: 1024 * 1024,
            ..BatchConfig::default()
        },
    )
    .unwrap();
    for _ in 0..5 {
        for _ in 0..5 {
            p.on_end(&big(TraceId::random()));
        }
        assert!(p.flush(Duration::from_secs(5)).await);
    }
    let stats = p.stats();
    assert_eq!((stats.exported, stats.dropped), (25, 0), "{stats:?}");
    assert_eq!(stats.pending_bytes, 0, "{stats:?}");
}
