//! Tracing of a tool loop: one nested `generate` util span per turn, model
//! and tool spans under it (devtools-protocol §3).

use genkit_ai::generate::{GenerateOptions, generate};
use genkit_ai::testing::ProgrammableModel;
use genkit_ai::tool::define_tool;
use genkit_core::flow::define_flow;
use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{Registry, RunOptions};
use serde_json::{Value, json};
use std::sync::Arc;

#[tokio::test]
async fn each_turn_nests_a_generate_span_with_model_and_tool_spans() {
    let store = Arc::new(InMemoryTraceStore::default());
    add_span_processor(store.clone());
    let reg = Registry::new();
    define_tool(&reg, "lookup", "looks up", |_: Value, _ctx| async {
        Ok(json!("found"))
    })
    .unwrap();
    ProgrammableModel::define(&reg, "toolModel")
        .respond_tool_call("lookup", json!({}))
        .respond_text("answer");
    let r2 = reg.clone();
    let flow = define_flow(&reg, "toolFlow", move |q: String, _| {
        let reg = r2.clone();
        async move {
            Ok(generate(
                &reg,
                GenerateOptions::prompt(q).model("toolModel").tool("lookup"),
            )
            .await?
            .text())
        }
    })
    .unwrap();
    let r = flow
        .run_with("q".into(), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(r.output, "answer");
    let trace = store.get(&r.trace.trace_id.to_string()).unwrap();
    let mut paths: Vec<_> = trace
        .spans
        .values()
        .map(|s| s.attr_str("genkit:path").unwrap().to_owned())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        vec![
            "/{toolFlow,t:flow}",
            "/{toolFlow,t:flow}/{generate,t:util}",
            "/{toolFlow,t:flow}/{generate,t:util}/{generate,t:util}",
            "/{toolFlow,t:flow}/{generate,t:util}/{generate,t:util}/{toolModel,t:action,s:model}",
            "/{toolFlow,t:flow}/{generate,t:util}/{lookup,t:action,s:tool}",
            "/{toolFlow,t:flow}/{generate,t:util}/{toolModel,t:action,s:model}",
        ]
    );
    // The generate span records its options as input and the response as output.
    let turn_span = trace
        .spans
        .values()
        .find(|s| s.attr_str("genkit:path") == Some("/{toolFlow,t:flow}/{generate,t:util}"))
        .unwrap();
    assert_eq!(turn_span.attr_str("genkit:type"), Some("util"));
    let input: Value = serde_json::from_str(turn_span.attr_str("genkit:input").unwrap()).unwrap();
    assert_eq!(input["model"], "toolModel");
    let output: Value = serde_json::from_str(turn_span.attr_str("genkit:output").unwrap()).unwrap();
    assert_eq!(output["message"]["content"][0]["text"], "answer");
}
