//! Evaluators against Genkit JS 1.42: `defineEvaluator`'s metadata and
//! responses (recorded by `genkit_js/retrieval.mjs`), and the built-in
//! metrics against `@genkit-ai/evaluator` 1.42's scores for the same data
//! points (recorded by `genkit_js_eval/record.mjs`).

use genkit_ai::evaluator::builtin::{GenkitMetric, define_genkit_evaluators};
use genkit_ai::evaluator::{EvaluateOptions, EvaluatorOptions, define_evaluator, evaluate};
use genkit_ai::types::{BaseDataPoint, EvalResponse, Evaluation, Score};
use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{Error, Registry};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

fn lines(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("recording");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .collect()
}

fn retrieval_records(what: &str) -> Vec<Value> {
    lines(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/genkit_js/retrieval.jsonl"
    ))
    .into_iter()
    .filter(|r| r["what"] == what)
    .collect()
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
struct Options {
    k: Option<f64>,
    filter: Option<String>,
}

fn define_recorded(registry: &Registry) {
    define_evaluator(
        registry,
        EvaluatorOptions::new("exact", "Exact", "output equals reference"),
        |p, _o: Option<Value>, _c| async move { Ok(Score::pass_fail(p.output == p.reference)) },
    )
    .expect("exact");
    define_evaluator(
        registry,
        EvaluatorOptions::new("free", "Free", "never billed").is_billed(false),
        |_p, _o: Option<Options>, _c| async move {
            Ok(vec![
                Score {
                    id: Some("a".into()),
                    score: Some(1.0.into()),
                    ..Score::default()
                },
                Score {
                    id: Some("b".into()),
                    score: Some("x".into()),
                    ..Score::default()
                },
            ])
        },
    )
    .expect("free");
    define_evaluator(
        registry,
        EvaluatorOptions::new("failing", "Failing", "always throws"),
        |_p, _o: Option<Value>, _c| async move { Err::<Score, _>(Error::internal("judge unavailable")) },
    )
    .expect("failing");
}

/// `response` with trace and span ids checked (32 and 16 hex digits, each
/// test case its own span) and replaced by `<id>`; numbers as f64.
fn normalized(response: &EvalResponse) -> Value {
    let mut spans = std::collections::HashSet::new();
    let mut v = serde_json::to_value(response).expect("json");
    for r in v.as_array_mut().expect("array") {
        let t = r["traceId"].as_str().expect("traceId");
        let s = r["spanId"].as_str().expect("spanId");
        assert_eq!((t.len(), s.len()), (32, 16));
        assert!(spans.insert(s.to_owned()), "one span per test case");
        r["traceId"] = json!("<id>");
        r["spanId"] = json!("<id>");
    }
    numbers_as_f64(v)
}

fn numbers_as_f64(v: Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.into_iter().map(numbers_as_f64).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, numbers_as_f64(v))).collect())
        }
        other => other,
    }
}

/// JS lists object keys in insertion order; compare as sets of fields.
fn sorted(v: Value) -> Value {
    serde_json::from_str::<Value>(&v.to_string())
        .map(numbers_as_f64)
        .expect("json")
}

#[tokio::test]
async fn define_evaluator_metadata_and_responses_are_genkit_jss() {
    let registry = Registry::new();
    define_recorded(&registry);
    for r in retrieval_records("metadata") {
        let key = r["key"].as_str().expect("key");
        if !key.starts_with("/evaluator/") {
            continue;
        }
        let action = registry
            .lookup_action(key)
            .await
            .expect("lookup")
            .expect("defined");
        let mut ours = action.desc().to_descriptor()["metadata"].clone();
        let mut theirs = r["metadata"].clone();
        // customOptions: zod and schemars word the schema differently.
        for m in [&mut ours, &mut theirs] {
            if let Some(schema) = m["evaluator"]
                .as_object_mut()
                .and_then(|e| e.remove("customOptions"))
            {
                let mut props: Vec<String> = schema["properties"]
                    .as_object()
                    .expect("props")
                    .keys()
                    .cloned()
                    .collect();
                props.sort();
                m["evaluator"]["customOptions"] = json!(props);
            }
        }
        assert_eq!(ours, theirs, "{key}");
    }
    let cases = retrieval_records("evaluate");
    assert_eq!(cases.len(), 4);
    for c in cases {
        let name = c["case"].as_str().expect("case");
        let dataset: Vec<BaseDataPoint> =
            serde_json::from_value(c["dataset"].clone()).expect("dataset");
        let (evaluator, batch) = match name {
            "exactBatch2" => ("exact", Some(2)),
            other => (other, None),
        };
        let mut params = EvaluateOptions::new(evaluator, dataset).eval_run_id("run1");
        if let Some(b) = batch {
            params = params.batch_size(b);
        }
        if evaluator == "free" {
            params = params.options(json!({"k": 1}));
        }
        let response = evaluate(&registry, params).await.expect("evaluated");
        assert_eq!(
            sorted(normalized(&response)),
            sorted(c["response"].clone()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn builtin_metrics_score_as_genkit_ai_evaluator() {
    let registry = Registry::new();
    define_genkit_evaluators(&registry, &[GenkitMetric::Regex, GenkitMetric::DeepEqual])
        .expect("defined");
    let recorded = lines(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/genkit_js_eval/recorded.jsonl"
    ));
    assert_eq!(recorded.len(), 2);
    for r in recorded {
        let evaluator = r["evaluator"].as_str().expect("evaluator");
        let action = registry
            .lookup_action(&format!("/evaluator/{evaluator}"))
            .await
            .expect("lookup")
            .expect("defined");
        assert_eq!(
            action.desc().to_descriptor()["metadata"],
            r["metadata"],
            "{evaluator}"
        );
        let dataset: Vec<BaseDataPoint> =
            serde_json::from_value(r["dataset"].clone()).expect("dataset");
        let response = evaluate(
            &registry,
            EvaluateOptions::new(evaluator, dataset).eval_run_id("run"),
        )
        .await
        .expect("evaluated");
        let ours = normalized(&response);
        let theirs = r["response"].as_array().expect("array");
        assert_eq!(ours.as_array().map(Vec::len), Some(theirs.len()));
        for (o, t) in ours.as_array().expect("array").iter().zip(theirs) {
            let id = t["testCaseId"].as_str().expect("id");
            let (mut o, mut t) = (o.clone(), t.clone());
            // Node's assert wording is its own: the reasoning is compared by
            // its presence and first line.
            for v in [&mut o, &mut t] {
                if let Some(why) = v["evaluation"]["details"]["reasoning"].as_str() {
                    let first = why.split(':').next().unwrap_or_default().to_owned();
                    v["evaluation"]["details"]["reasoning"] = json!(first);
                }
            }
            assert_eq!(sorted(o), sorted(t), "{evaluator} {id}");
        }
    }
}

#[tokio::test]
async fn each_test_case_runs_in_its_own_span_and_batches_in_one() {
    let store = Arc::new(InMemoryTraceStore::default());
    add_span_processor(store.clone());
    let registry = Registry::new();
    define_recorded(&registry);
    let dataset = vec![
        BaseDataPoint::new("q")
            .output("a")
            .reference("a")
            .test_case_id("t1"),
        BaseDataPoint::new("q").output("a").reference("b"),
        BaseDataPoint::new("q").output("b").reference("b"),
    ];
    let response = evaluate(
        &registry,
        EvaluateOptions::new("exact", dataset)
            .eval_run_id("r")
            .batch_size(2),
    )
    .await
    .expect("evaluated");
    assert_eq!(response.len(), 3);
    // A test case without an id gets a UUID.
    assert_eq!(response[0].test_case_id, "t1");
    let generated = &response[1].test_case_id;
    assert_eq!(generated.len(), 36);
    assert_eq!(generated.as_bytes()[14], b'4');
    assert_eq!(
        response.iter().map(|r| r.sample_index).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2)]
    );
    let trace_id = response[0].trace_id.clone().expect("trace id");
    assert!(
        response
            .iter()
            .all(|r| r.trace_id.as_ref() == Some(&trace_id))
    );
    let trace = store.get(&trace_id).expect("recorded");
    let span_of = |id: &str| trace.spans.get(id).unwrap_or_else(|| panic!("span {id}"));
    for r in &response {
        let span = span_of(r.span_id.as_deref().expect("span id"));
        assert_eq!(span.display_name, format!("Test Case {}", r.test_case_id));
        assert_eq!(span.attributes["genkit:metadata:evaluator:evalRunId"], "r");
    }
    // The two test cases of the first batch are children of one `Batch 0` span.
    let parent = |r: &genkit_ai::types::EvalFnResponse| {
        span_of(r.span_id.as_deref().expect("id"))
            .parent_span_id
            .clone()
    };
    let batch = span_of(parent(&response[0]).as_deref().expect("parent"));
    assert_eq!(batch.display_name, "Batch 0");
    assert_eq!(parent(&response[0]), parent(&response[1]));
    // The last batch has one test case: no batch span, as in Genkit JS.
    let last_parent = span_of(parent(&response[2]).as_deref().expect("parent"));
    assert_eq!(last_parent.display_name, "exact");
    assert!(matches!(response[2].evaluation, Evaluation::One(_)));
}

#[tokio::test]
async fn options_and_unknown_evaluators_are_refused() {
    let registry = Registry::new();
    define_recorded(&registry);
    let err = evaluate(
        &registry,
        EvaluateOptions::new("free", []).options(json!({"k": "one"})),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    assert!(
        err.message().contains("evaluator free") && err.message().contains("- k:"),
        "{}",
        err.message()
    );
    let err = evaluate(&registry, EvaluateOptions::new("nope", []))
        .await
        .expect_err("missing");
    assert_eq!(err.status(), genkit_core::StatusCode::NotFound);
    let err = define_genkit_evaluators(&registry, &[]).expect_err("no metrics");
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
}
