//! Renders a prompt with a partial and an `{{#each}}` over 100 items, the
//! same prompt `bench/dotprompt/bench.mjs` renders with npm `dotprompt`.
//!
//! `dotprompt/render` renders from source (the compiled template comes from
//! the cache); `dotprompt/compiled` renders a `PromptFunction`.

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use dotprompt::{DataArgument, Dotprompt, DotpromptOptions};
use futures::executor::block_on;
use serde_json::{Value, json};

/// Shared with the JS benchmark so both render exactly the same thing.
const SPEC: &str = include_str!("../../../bench/dotprompt/prompt.json");

fn setup() -> (Dotprompt, String, DataArgument) {
    let spec: Value = serde_json::from_str(SPEC).expect("prompt.json is JSON");
    let source = spec["source"].as_str().expect("source").to_owned();
    let partials: HashMap<String, String> =
        serde_json::from_value(spec["partials"].clone()).expect("partials");
    let count = spec["items"].as_u64().expect("items");
    let items: Vec<Value> = (0..count)
        .map(|i| json!({"title": format!("item {i}"), "score": i}))
        .collect();
    let data =
        serde_json::from_value(json!({"input": {"name": "Ada", "items": items}})).expect("data");
    let dotprompt = Dotprompt::new(DotpromptOptions {
        partials,
        ..DotpromptOptions::default()
    })
    .expect("valid partials");
    (dotprompt, source, data)
}

fn render(c: &mut Criterion) {
    let (dotprompt, source, data) = setup();
    let rendered = block_on(dotprompt.render(&source, &data, None)).expect("renders");
    assert_eq!(rendered.messages.len(), 2);

    let mut group = c.benchmark_group("dotprompt");
    group.bench_function("render", |b| {
        b.iter(|| block_on(dotprompt.render(black_box(&source), black_box(&data), None)))
    });
    let compiled = block_on(dotprompt.compile(&source)).expect("compiles");
    group.bench_function("compiled", |b| {
        b.iter(|| block_on(compiled.render(black_box(&data), None)))
    });
    group.finish();
}

// criterion's macro defines an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, render);
}
use group::benches;
criterion_main!(benches);
