//! Generate with a scripted model: plain, three tool turns of two tools, a
//! 1000-chunk stream. Peers: bench/js/generate_{plain,tools,stream}.mjs.

use criterion::{Criterion, criterion_group, criterion_main};
use genkit_bench::*;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("generate");
    let plain = generate_plain();
    group.bench_function("plain", |b| {
        b.to_async(&rt).iter(|| call_generate_plain(&plain))
    });
    let (ai, a, t) = generate_tools();
    group.bench_function("tools", |b| {
        b.to_async(&rt).iter(|| call_generate_tools(&ai, &a, &t))
    });
    let streaming = generate_stream();
    group.bench_function("stream_1000", |b| {
        b.to_async(&rt).iter(|| call_generate_stream(&streaming))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
