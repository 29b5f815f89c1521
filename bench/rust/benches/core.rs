//! Calling a trivial flow (input echoed) through the registry, without and
//! with a span processor. Peer: bench/js/flow_echo.mjs.

use criterion::{Criterion, criterion_group, criterion_main};
use genkit_bench::{call_flow_echo, flow_echo, install_exporter};

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let ai = flow_echo();
    let mut group = c.benchmark_group("flow_echo");
    group.bench_function("no_exporter", |b| {
        b.to_async(&rt).iter(|| call_flow_echo(&ai))
    });
    install_exporter();
    group.bench_function("with_exporter", |b| {
        b.to_async(&rt).iter(|| call_flow_echo(&ai))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
