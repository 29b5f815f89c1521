//! Calling a trivial flow (input echoed) through the registry, without and
//! with a span processor installed. The peer is bench/js/flow_echo.mjs.

use criterion::{Criterion, criterion_group, criterion_main};
use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{Registry, RunOptions, flow::define_flow};
use serde_json::json;
use std::sync::Arc;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let reg = Registry::new();
    let echo = define_flow(&reg, "echo", |s: String, _| async move { Ok(s) }).unwrap();

    let mut group = c.benchmark_group("flow_echo");
    group.bench_function("registry_json/no_exporter", |b| {
        b.to_async(&rt).iter(|| async {
            let action = reg.lookup_action("/flow/echo").await.unwrap().unwrap();
            action
                .run_json(json!("hello"), RunOptions::default())
                .await
                .unwrap()
        })
    });
    group.bench_function("direct_typed/no_exporter", |b| {
        b.to_async(&rt)
            .iter(|| async { echo.run("hello".to_owned()).await.unwrap() })
    });

    add_span_processor(Arc::new(InMemoryTraceStore::with_capacity(1000)));
    group.bench_function("registry_json/with_exporter", |b| {
        b.to_async(&rt).iter(|| async {
            let action = reg.lookup_action("/flow/echo").await.unwrap().unwrap();
            action
                .run_json(json!("hello"), RunOptions::default())
                .await
                .unwrap()
        })
    });
    group.bench_function("direct_typed/with_exporter", |b| {
        b.to_async(&rt)
            .iter(|| async { echo.run("hello".to_owned()).await.unwrap() })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
