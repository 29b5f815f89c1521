//! Tracing: span trees, `genkit:*` attributes, failure sources, and TraceData
//! that validates against Genkit's schema.

use genkit_core::tracing::{InMemoryTraceStore, SpanData, TraceData, add_span_processor, run};
use genkit_core::{Error, Registry, RunOptions, StatusCode, flow::define_flow};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

fn store() -> &'static Arc<InMemoryTraceStore> {
    static STORE: OnceLock<Arc<InMemoryTraceStore>> = OnceLock::new();
    STORE.get_or_init(|| {
        let s = Arc::new(InMemoryTraceStore::default());
        add_span_processor(s.clone());
        s
    })
}

fn conformance_dir() -> PathBuf {
    genkit_conformance::genkit_dir()
}

fn validate_against(def: &str, value: &Value) {
    let path = conformance_dir().join("genkit-schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).unwrap();
    let root = json!({"$ref": format!("#/$defs/{def}"), "$defs": schema["$defs"]});
    let v = jsonschema::validator_for(&root).unwrap();
    let errors: Vec<String> = v
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{def} invalid: {errors:#?}\n{value:#}");
}

fn by_name<'a>(trace: &'a TraceData, name: &str) -> &'a SpanData {
    trace
        .spans
        .values()
        .find(|s| s.display_name == name)
        .unwrap_or_else(|| panic!("no span {name} in {:#?}", trace.spans.keys()))
}

#[tokio::test]
async fn nested_spans_form_a_tree_with_paths() {
    let store = store();
    let reg = Registry::new();
    let inner = define_flow(&reg, "inner", |n: u32, _| async move { Ok(n * 2) }).unwrap();
    let outer = define_flow(&reg, "outer", move |n: u32, _| {
        let inner = inner.clone();
        async move {
            let doubled = inner.run(n).await?;
            let stepped = run("addOne", async move { Ok(doubled + 1) }).await?;
            Ok(stepped)
        }
    })
    .unwrap();
    let r = outer.run_with(20, RunOptions::default()).await.unwrap();
    assert_eq!(r.output, 41);

    let trace = store
        .get(&r.trace.trace_id.to_string())
        .expect("trace stored");
    assert_eq!(trace.spans.len(), 3);
    let root = by_name(&trace, "outer");
    let inner = by_name(&trace, "inner");
    let step = by_name(&trace, "addOne");

    assert_eq!(root.span_id, r.trace.span_id.to_string());
    assert_eq!(root.parent_span_id, None);
    assert_eq!(inner.parent_span_id.as_deref(), Some(root.span_id.as_str()));
    assert_eq!(step.parent_span_id.as_deref(), Some(root.span_id.as_str()));
    for s in [root, inner, step] {
        assert_eq!(s.trace_id, r.trace.trace_id.to_string());
        assert_eq!(s.span_id.len(), 16);
        assert!(s.end_time >= s.start_time);
        assert_eq!(s.attr_str("genkit:state"), Some("success"));
    }

    assert_eq!(root.attr_str("genkit:path"), Some("/{outer,t:flow}"));
    assert_eq!(
        inner.attr_str("genkit:path"),
        Some("/{outer,t:flow}/{inner,t:flow,s:flow}")
    );
    assert_eq!(
        step.attr_str("genkit:path"),
        Some("/{outer,t:flow}/{addOne,t:flowStep}")
    );

    assert_eq!(root.attributes["genkit:isRoot"], json!(true));
    assert!(inner.attributes.get("genkit:isRoot").is_none());
    assert_eq!(root.attr_str("genkit:type"), Some("action"));
    assert_eq!(root.attr_str("genkit:metadata:subtype"), Some("flow"));
    assert_eq!(root.attr_str("genkit:name"), Some("outer"));
    assert_eq!(root.attr_str("genkit:key"), Some("/flow/outer"));
    assert_eq!(root.attr_str("genkit:input"), Some("20"));
    assert_eq!(root.attr_str("genkit:output"), Some("41"));
    assert_eq!(inner.attr_str("genkit:input"), Some("20"));
    assert_eq!(inner.attr_str("genkit:output"), Some("40"));
    assert_eq!(step.attr_str("genkit:type"), Some("flowStep"));
    assert_eq!(step.attr_str("genkit:output"), Some("41"));

    assert_eq!(trace.display_name.as_deref(), Some("outer"));
    validate_against("TraceData", &serde_json::to_value(&trace).unwrap());
}

#[tokio::test]
async fn errors_mark_the_failure_source_only() {
    let store = store();
    let reg = Registry::new();
    let failing = define_flow(&reg, "failing", |_: (), _| async move {
        Err::<(), _>(Error::new(StatusCode::NotFound, "no such thing"))
    })
    .unwrap();
    let outer = define_flow(&reg, "calls_failing", move |_: (), _| {
        let failing = failing.clone();
        async move { failing.run(()).await }
    })
    .unwrap();
    let err = outer.run(()).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    let trace_id = err.trace_id().expect("error knows its trace").to_owned();
    let trace = store.get(&trace_id).unwrap();
    let src = by_name(&trace, "failing");
    let root = by_name(&trace, "calls_failing");
    assert_eq!(src.attr_str("genkit:state"), Some("error"));
    assert_eq!(src.attributes["genkit:isFailureSource"], json!(true));
    assert_eq!(root.attr_str("genkit:state"), Some("error"));
    assert!(root.attributes.get("genkit:isFailureSource").is_none());
    let status = src.status.as_ref().unwrap();
    assert_eq!(status.code, 2);
    assert_eq!(status.message.as_deref(), Some("NOT_FOUND: no such thing"));
    let event = &src.time_events.as_ref().unwrap().time_event[0];
    assert_eq!(event.annotation.description, "exception");
    assert!(
        event
            .annotation
            .attributes
            .contains_key("exception.stacktrace")
    );
    validate_against("TraceData", &serde_json::to_value(&trace).unwrap());
}

#[tokio::test]
async fn context_is_recorded_redacted_and_labels_applied() {
    let store = store();
    let reg = Registry::new();
    let f = define_flow(&reg, "ctx", |_: (), _| async move { Ok(()) }).unwrap();
    let ctx = genkit_core::ActionContext::from_value(
        json!({"auth": {"token": "secret"}, "tenant": "t1"}),
    );
    let labels = [("team".to_string(), "core".to_string())]
        .into_iter()
        .collect();
    let r = f
        .run_with((), RunOptions::new().context(ctx).telemetry_labels(labels))
        .await
        .unwrap();
    let trace = store.get(&r.trace.trace_id.to_string()).unwrap();
    let span = by_name(&trace, "ctx");
    let recorded = span.attr_str("genkit:metadata:context").unwrap();
    assert!(!recorded.contains("secret"));
    assert!(recorded.contains("t1"));
    assert_eq!(span.attr_str("team"), Some("core"));
}

#[tokio::test]
async fn separate_runs_get_separate_traces() {
    store();
    let reg = Registry::new();
    let f = define_flow(&reg, "solo", |_: (), _| async move { Ok(()) }).unwrap();
    let a = f.run_with((), RunOptions::default()).await.unwrap();
    let b = f.run_with((), RunOptions::default()).await.unwrap();
    assert_ne!(a.trace.trace_id, b.trace.trace_id);
}
