//! Tracing of a tool loop: one nested `generate` util span per turn, model
//! and tool spans under it (devtools-protocol §3).

use genkit_core::flow::define_flow;
use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{Registry, RunOptions};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::define_tool;
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

/// What each turn records is kept as values and encoded by the processor:
/// the texts are the turns' own options, requests and responses.
#[tokio::test]
async fn turn_model_and_tool_spans_record_each_turns_own_values() {
    let store = Arc::new(InMemoryTraceStore::default());
    add_span_processor(store.clone());
    let reg = Registry::new();
    define_tool(&reg, "lookup", "looks up", |i: Value, _ctx| async move {
        Ok(json!({"found": i["q"]}))
    })
    .unwrap();
    ProgrammableModel::define(&reg, "twoTurns")
        .respond_tool_call("lookup", json!({"q": 1}))
        .respond_tool_call("lookup", json!({"q": 2}))
        .respond_text("done");
    let r2 = reg.clone();
    let flow = define_flow(&reg, "twoTurnFlow", move |q: String, _| {
        let reg = r2.clone();
        async move {
            Ok(generate(
                &reg,
                GenerateOptions::prompt(q).model("twoTurns").tool("lookup"),
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
    assert_eq!(r.output, "done");
    let trace = store.get(&r.trace.trace_id.to_string()).unwrap();
    let json_attr = |s: &genkit_core::tracing::SpanData, k: &str| -> Value {
        serde_json::from_str(s.attr_str(k).unwrap_or("null")).unwrap()
    };
    let mut turns: Vec<_> = trace.spans_named("generate").collect();
    turns.sort_by_key(|s| s.attr_str("genkit:path").map(str::len));
    let counts: Vec<usize> = turns
        .iter()
        .map(|s| {
            json_attr(s, "genkit:input")["messages"]
                .as_array()
                .unwrap()
                .len()
        })
        .collect();
    assert_eq!(counts, vec![1, 3, 5], "each turn records its own history");
    for s in &turns {
        let out = json_attr(s, "genkit:output");
        assert_eq!(out["message"]["content"][0]["text"], "done");
        assert_eq!(out["request"]["messages"].as_array().unwrap().len(), 5);
    }
    let mut models: Vec<_> = trace.spans_named("twoTurns").collect();
    models.sort_by_key(|s| s.attr_str("genkit:path").map(str::len));
    let model_inputs: Vec<Value> = models
        .iter()
        .map(|s| json_attr(s, "genkit:input"))
        .collect();
    let counts: Vec<usize> = model_inputs
        .iter()
        .map(|i| i["messages"].as_array().unwrap().len())
        .collect();
    assert_eq!(counts, vec![1, 3, 5]);
    for i in &model_inputs {
        assert_eq!(i["tools"][0]["name"], "lookup");
    }
    assert_eq!(
        model_inputs[2]["messages"][4]["content"][0]["toolResponse"]["output"],
        json!({"found": 2})
    );
    let outputs: Vec<Value> = models
        .iter()
        .map(|s| json_attr(s, "genkit:output"))
        .collect();
    assert_eq!(
        outputs[0]["message"]["content"][0]["toolRequest"]["input"],
        json!({"q": 1})
    );
    assert_eq!(outputs[2]["message"]["content"][0]["text"], "done");
    let mut tools: Vec<_> = trace.spans_named("lookup").collect();
    tools.sort_by_key(|s| s.attr_str("genkit:path").map(str::len));
    assert_eq!(json_attr(tools[0], "genkit:input"), json!({"q": 1}));
    assert_eq!(json_attr(tools[0], "genkit:output"), json!({"found": 1}));
    assert_eq!(json_attr(tools[1], "genkit:input"), json!({"q": 2}));
    assert!(trace.spans.values().all(|s| s.truncated.is_none()));
}

/// A model call that fails still ends its spans: the turn's `generate`
/// span and the model's both carry the error.
#[tokio::test]
async fn a_failed_model_call_ends_the_turn_and_model_spans_with_its_error() {
    let store = Arc::new(InMemoryTraceStore::default());
    add_span_processor(store.clone());
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "downModel")
        .respond_error(genkit_core::Error::internal("the model is down"));
    let r2 = reg.clone();
    let flow = define_flow(&reg, "downFlow", move |q: String, _| {
        let reg = r2.clone();
        async move {
            Ok(
                generate(&reg, GenerateOptions::prompt(q).model("downModel"))
                    .await?
                    .text(),
            )
        }
    })
    .unwrap();
    let err = flow
        .run_with("q".into(), RunOptions::default())
        .await
        .unwrap_err();
    assert!(err.message().contains("the model is down"), "{err}");
    let trace = store
        .trace_ids()
        .into_iter()
        .filter_map(|id| store.get(&id))
        .find(|t| {
            t.spans
                .values()
                .any(|s| s.attr_str("genkit:path") == Some("/{downFlow,t:flow}"))
        })
        .expect("the failed flow's trace");
    for path in [
        "/{downFlow,t:flow}/{generate,t:util}",
        "/{downFlow,t:flow}/{generate,t:util}/{downModel,t:action,s:model}",
    ] {
        let span = trace
            .spans
            .values()
            .find(|s| s.attr_str("genkit:path") == Some(path))
            .unwrap_or_else(|| panic!("no span {path}"));
        assert_eq!(span.attr_str("genkit:state"), Some("error"), "{path}");
        let status = span.status.as_ref().expect("a status");
        assert_eq!(status.code, 2, "{path}");
        assert!(
            status
                .message
                .as_deref()
                .is_some_and(|m| m.contains("the model is down")),
            "{path}: {status:?}"
        );
        assert!(span.end_time > 0.0, "{path} ended");
    }
}
