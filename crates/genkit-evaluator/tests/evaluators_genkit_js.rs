//! Evaluators against Genkit JS 1.42: `defineEvaluator`'s metadata and
//! responses (recorded by `genkit_js/retrieval.mjs`), and the built-in
//! metrics against `@genkit-ai/evaluator` 1.42's scores for the same data
//! points (recorded by `genkit_js_eval/record.mjs`), and the model-judged
//! metrics (faithfulness, answer relevancy) against its scores, reasoning
//! and judge and embedder requests with the same scripted judge and
//! embedder (recorded by `genkit_js_eval/judged.mjs`; the judge prompts are
//! read from the npm package in `genkit_js_eval/node_modules`).

use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{Error, Registry};
use genkit_evaluator::builtin::{GenkitMetric, define_genkit_evaluators};
use genkit_evaluator::{EvaluateOptions, EvaluatorOptions, define_evaluator, evaluate};
use genkit_model::types::{BaseDataPoint, EvalResponse, Evaluation, Score};
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
        "/../genkit-generate/tests/genkit_js/retrieval.jsonl"
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
    let parent = |r: &genkit_model::types::EvalFnResponse| {
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

/// `@genkit-ai/evaluator`'s own judge prompts, from the npm package that
/// test.sh installs (`npm ci` in tests/genkit_js_eval); not copied here.
fn genkit_prompt_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/genkit_js_eval/node_modules/@genkit-ai/evaluator/prompts");
    assert!(
        dir.join("faithfulness_nli.prompt").exists(),
        "{} is missing: run `npm ci` in tests/genkit_js_eval (test.sh does)",
        dir.display()
    );
    dir
}

/// The scripted judge (`supports` as in judged.mjs) and embedder of a
/// recording; the embedder records what it is asked.
fn define_judge_and_embedder(
    registry: &Registry,
    record: &Value,
) -> (
    genkit_model::testing::ProgrammableModel,
    Arc<parking_lot::Mutex<Vec<Value>>>,
) {
    use genkit_model::model::ModelOptions;
    use genkit_model::types::{GenerateResponse, ModelSupports};
    let mut judge = genkit_model::testing::ProgrammableModel::try_define_with(
        registry,
        ModelOptions::new("judge").supports(ModelSupports {
            multiturn: Some(true),
            system_role: Some(true),
            ..ModelSupports::default()
        }),
    )
    .expect("judge");
    for r in record["judgeResponses"].as_array().expect("responses") {
        judge = match r["error"].as_str() {
            Some(e) => judge.respond_error(Error::internal(e)),
            None => judge.respond(
                serde_json::from_value::<GenerateResponse>(r.clone()).expect("a response"),
            ),
        };
    }
    // JSON in and out, so the vectors stay the doubles JavaScript has (the
    // typed `Embedding` holds f32).
    let vectors = record["vectors"].clone();
    let asked = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = asked.clone();
    let embedder = genkit_core::Action::<Value, Value>::from_desc_typed(
        genkit_core::ActionDesc::new(genkit_core::ActionKind::Embedder, "embedder"),
        move |req: Value, _ctx| {
            log.lock().push(req.clone());
            let embeddings: Vec<Value> = req["input"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|d| json!({"embedding": vectors[d["content"][0]["text"].as_str().unwrap_or_default()]}))
                .collect();
            async move { Ok(json!({ "embeddings": embeddings })) }
        },
    );
    registry.register(&embedder).expect("embedder");
    (judge, asked)
}

#[tokio::test]
async fn judged_metrics_score_and_ask_as_genkit_ai_evaluator() {
    use genkit_evaluator::{
        AnswerRelevancyOptions, FaithfulnessOptions, define_answer_relevancy, define_faithfulness,
    };
    let recorded = lines(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/genkit_js_eval/judged.jsonl"
    ));
    assert_eq!(recorded.len(), 2);
    let prompts = genkit_prompt_dir();
    for r in recorded {
        let registry = Registry::new();
        let (judge, embedded) = define_judge_and_embedder(&registry, &r);
        let metric = r["metric"].as_str().expect("metric");
        let evaluator = match metric {
            "FAITHFULNESS" => define_faithfulness(
                &registry,
                FaithfulnessOptions::new("judge")
                    .judge_config(r["judgeConfig"].clone())
                    .prompt_dir(&prompts),
            ),
            "ANSWER_RELEVANCY" => define_answer_relevancy(
                &registry,
                AnswerRelevancyOptions::new("judge", "embedder")
                    .judge_config(r["judgeConfig"].clone())
                    .embedder_options(r["embedderOptions"].clone())
                    .prompt_dir(&prompts),
            ),
            other => panic!("unknown metric {other}"),
        }
        .expect("defined");
        assert_eq!(evaluator.name(), r["evaluator"]);
        assert_eq!(
            evaluator.action().desc().to_descriptor()["metadata"],
            r["metadata"],
            "{metric}"
        );
        let dataset: Vec<BaseDataPoint> =
            serde_json::from_value(r["dataset"].clone()).expect("dataset");
        let response = evaluate(
            &registry,
            EvaluateOptions::new(evaluator.name(), dataset).eval_run_id("run"),
        )
        .await
        .expect("evaluated");
        let ours = normalized(&response);
        let theirs = r["response"].as_array().expect("array");
        assert_eq!(ours.as_array().map(Vec::len), Some(theirs.len()));
        for (o, t) in ours.as_array().expect("array").iter().zip(theirs) {
            let id = t["testCaseId"].as_str().expect("id");
            let (mut o, mut t) = (o.clone(), t.clone());
            // The JSON schema validators (ajv, jsonschema) word their
            // findings differently: the list of them is left out.
            for v in [&mut o, &mut t] {
                if let Some(e) = v["evaluation"]["error"].as_str()
                    && let Some((head, rest)) = e.split_once("Parse Errors:")
                    && let Some((_, tail)) = rest.split_once("\n\nProvided data:")
                {
                    v["evaluation"]["error"] = json!(format!("{head}Parse Errors: ...{tail}"));
                }
            }
            assert_eq!(sorted(o), sorted(t), "{metric} {id}");
        }
        // The judge was asked what Genkit JS asks it, word for word.
        let asked: Vec<Value> = judge
            .requests()
            .iter()
            .map(|q| serde_json::to_value(q).expect("json"))
            .collect();
        let expected = r["judgeRequests"].as_array().expect("requests");
        assert_eq!(asked.len(), expected.len(), "{metric}: judge calls");
        for (i, (o, t)) in asked.iter().zip(expected).enumerate() {
            assert_eq!(
                sorted(o.clone()),
                sorted(t.clone()),
                "{metric}: judge request {i}"
            );
        }
        let embedded = embedded.lock().clone();
        assert_eq!(
            sorted(Value::Array(embedded)),
            sorted(r["embedRequests"].clone()),
            "{metric}: embedder requests"
        );
    }
}

/// `genkit eval:flow` (genkit-cli 1.43, `@genkit-ai/tools-common`'s default
/// flow extractors) reads a test case's input and output from the root
/// span's `genkit:input` / `genkit:output`, and its context from every span
/// whose `genkit:metadata:subtype` is `retriever`: the texts of the
/// documents in its `genkit:output`. A Rust RAG flow's trace carries them
/// (tests/eval_cli.rs in genkit-server runs the CLI itself on one).
#[tokio::test]
async fn retriever_spans_carry_what_genkit_eval_flow_reads() {
    use genkit_model::types::{DocumentData, RetrieverResponse};
    use genkit_retrieval::retriever::{
        RetrieveOptions, RetrieverOptions, define_retriever, retrieve,
    };
    let store = Arc::new(InMemoryTraceStore::default());
    add_span_processor(store.clone());
    let registry = Registry::new();
    define_retriever(
        &registry,
        RetrieverOptions::new("docs"),
        |q: DocumentData, _o: Option<Value>, _c| async move {
            Ok(RetrieverResponse {
                documents: vec![
                    DocumentData::from_text(format!("about {}", q.text())),
                    DocumentData::from_text("second"),
                ],
            })
        },
    )
    .expect("retriever");
    let r = registry.clone();
    let flow = genkit_core::flow::define_flow(&registry, "rag", move |q: String, _c| {
        let r = r.clone();
        async move {
            let docs = retrieve(&r, RetrieveOptions::new("docs", q.as_str())).await?;
            let more = retrieve(&r, RetrieveOptions::new("docs", "more")).await?;
            Ok(format!("{} docs", docs.len() + more.len()))
        }
    })
    .expect("flow");
    let out = flow
        .run_json(json!("paris"), Default::default())
        .await
        .expect("ran");
    let trace = store
        .get(&out.trace.trace_id.to_string())
        .expect("trace recorded");
    let parse = |v: Option<&Value>| -> Value {
        v.and_then(Value::as_str)
            .map(|s| serde_json::from_str(s).expect("JSON attribute"))
            .unwrap_or(Value::Null)
    };
    let root = trace
        .spans
        .values()
        .find(|s| s.parent_span_id.is_none())
        .expect("root span");
    assert_eq!(parse(root.attributes.get("genkit:input")), json!("paris"));
    assert_eq!(parse(root.attributes.get("genkit:output")), json!("4 docs"));
    let mut retrievers: Vec<_> = trace
        .spans
        .values()
        .filter(|s| s.attributes.get("genkit:metadata:subtype") == Some(&json!("retriever")))
        .collect();
    retrievers.sort_by(|a, b| a.start_time.total_cmp(&b.start_time));
    assert_eq!(retrievers.len(), 2);
    let mut context = Vec::new();
    for s in retrievers {
        assert_eq!(s.attributes["genkit:type"], "action");
        assert_eq!(s.attributes["genkit:name"], "docs");
        assert_eq!(s.display_name, "docs");
        let output = parse(s.attributes.get("genkit:output"));
        for d in output["documents"].as_array().expect("documents") {
            for c in d["content"].as_array().expect("content") {
                if let Some(t) = c["text"].as_str() {
                    context.push(t.to_owned());
                }
            }
        }
    }
    assert_eq!(context, ["about paris", "second", "about more", "second"]);
}

/// The built-in judge prompts (our wording) get the same inputs and ask for
/// the same JSON; a status override replaces the threshold; a prompt
/// directory without the files is refused when the evaluator is defined.
#[tokio::test]
async fn builtin_judge_prompts_and_status_override() {
    use genkit_evaluator::{
        AnswerRelevancyOptions, FaithfulnessOptions, define_answer_relevancy, define_faithfulness,
    };
    use genkit_model::types::EvalStatus;
    let registry = Registry::new();
    let record = json!({
        "judgeResponses": [
            {"message": {"role": "model", "content": [{"text": "{\"statements\": [\"Rome is in Italy.\"]}"}]}, "finishReason": "stop"},
            {"message": {"role": "model", "content": [{"text": "{\"responses\": [{\"statement\": \"Rome is in Italy.\", \"reason\": \"said\", \"verdict\": true}]}"}]}, "finishReason": "stop"},
            {"message": {"role": "model", "content": [{"text": "{\"question\": \"Where is Rome?\", \"answered\": true, \"noncommittal\": false}"}]}, "finishReason": "stop"},
        ],
        "vectors": {"Where is Rome?": [1.0, 0.0], "In which country is Rome?": [1.0, 0.0]},
    });
    let (judge, _) = define_judge_and_embedder(&registry, &record);
    define_faithfulness(
        &registry,
        FaithfulnessOptions::new("judge").status_override(|s| {
            if s.score == Some(1.0.into()) {
                EvalStatus::Unknown
            } else {
                EvalStatus::Pass
            }
        }),
    )
    .expect("faithfulness");
    define_answer_relevancy(&registry, AnswerRelevancyOptions::new("judge", "embedder"))
        .expect("answer relevancy");
    let point = BaseDataPoint::new("In which country is Rome?")
        .output("Rome is in Italy.")
        .context(["Rome is the capital of Italy.", "Italy is in Europe."])
        .test_case_id("t");
    let faith = evaluate(
        &registry,
        EvaluateOptions::new("genkitEval/faithfulness", [point.clone()]),
    )
    .await
    .expect("evaluated");
    assert_eq!(
        faith[0].evaluation,
        Evaluation::One(Score::new(1.0, EvalStatus::Unknown).reasoning("said"))
    );
    let relevancy = evaluate(
        &registry,
        EvaluateOptions::new("genkitEval/answer_relevancy", [point]),
    )
    .await
    .expect("evaluated");
    assert_eq!(
        relevancy[0].evaluation,
        Evaluation::One(Score::new(1.0, EvalStatus::Pass).reasoning("Cosine similarity"))
    );
    let asked: Vec<String> = judge
        .requests()
        .iter()
        .map(|r| {
            r.messages[0].content[0]
                .as_text()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(asked.len(), 3);
    assert!(
        asked[0].contains("In which country is Rome?") && asked[0].contains("Rome is in Italy.")
    );
    // Context items go in as JSON, one per line; statements one per line.
    assert!(
        asked[1].contains("\"Rome is the capital of Italy.\"\n\"Italy is in Europe.\""),
        "{}",
        asked[1]
    );
    assert!(asked[1].contains("statement: Rome is in Italy."));
    assert!(asked[2].contains("\"Rome is the capital of Italy.\" \"Italy is in Europe.\""));
    // The schema reaches the model in the format instructions.
    let requests = judge.requests();
    let instructions = requests[1].messages[0].content[1]
        .as_text()
        .unwrap_or_default();
    assert!(
        instructions.contains(r#""required":["responses"]"#),
        "{instructions}"
    );
    let empty = tempfile_dir();
    let err = define_faithfulness(
        &Registry::new(),
        FaithfulnessOptions::new("judge").prompt_dir(&empty),
    )
    .expect_err("no prompt files");
    assert!(
        err.message().contains("faithfulness_long_form.prompt"),
        "{}",
        err.message()
    );
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("genkit-eval-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
