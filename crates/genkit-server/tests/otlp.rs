//! OTLP export (feature `otlp`) to a stand-in collector speaking OTLP/HTTP JSON.
#![cfg(feature = "otlp")]

use genkit_core::flow::define_flow;
use genkit_core::tracing::run;
use genkit_core::{Registry, RunOptions};
use genkit_server::telemetry::BatchConfig;
use genkit_server::telemetry::otlp::{OtlpConfig, Protocol, install};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_collector() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                sink.lock()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                "{}"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let config = OtlpConfig {
        endpoint: Some(url),
        protocol: Protocol::HttpJson,
        batch: BatchConfig::default(),
    };
    let processor = install(&config).unwrap();

    let registry = Registry::new();
    let inner = define_flow(&registry, "inner", |n: u32, _| async move { Ok(n + 1) }).unwrap();
    let outer = define_flow(&registry, "outer", move |n: u32, _| {
        let inner = inner.clone();
        async move { run("step", async move { inner.run(n).await }).await }
    })
    .unwrap();
    let r = outer.run_with(1, RunOptions::default()).await.unwrap();
    assert_eq!(r.output, 2);
    assert!(processor.flush(Duration::from_secs(10)).await);

    let spans: Vec<Value> = received
        .lock()
        .iter()
        .flat_map(|req| req["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
        .inspect(|ss| assert_eq!(ss["scope"]["name"], "genkit-tracer"))
        .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
        .collect();
    let trace_id = r.trace.trace_id.to_string();
    let ours: Vec<&Value> = spans
        .iter()
        .filter(|s| s["traceId"] == trace_id.as_str())
        .collect();
    assert_eq!(ours.len(), 3, "{spans:#?}");
    let by = |name: &str| {
        *ours
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let (outer_s, step, inner_s) = (by("outer"), by("step"), by("inner"));
    assert_eq!(outer_s["spanId"], r.trace.span_id.to_string());
    assert_eq!(step["parentSpanId"], outer_s["spanId"]);
    assert_eq!(inner_s["parentSpanId"], step["spanId"]);
    assert_eq!(
        attr(outer_s, "genkit:name").unwrap()["stringValue"],
        "outer"
    );
    assert_eq!(attr(outer_s, "genkit:isRoot").unwrap()["boolValue"], true);
    assert_eq!(
        attr(inner_s, "genkit:path").unwrap()["stringValue"],
        "/{outer,t:flow}/{step,t:flowStep}/{inner,t:flow,s:flow}"
    );
    assert_eq!(attr(inner_s, "genkit:output").unwrap()["stringValue"], "2");
    assert_eq!(processor.stats().dropped, 0);
}
