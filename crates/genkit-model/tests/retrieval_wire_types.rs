//! The retrieval and evaluation wire types against Genkit's shared schema:
//! every value serializes to what `$defs/<Type>` accepts, and back.

#[path = "support/genkit_schema.rs"]
mod genkit_schema;

use genkit_model::types::*;
use genkit_schema::{assert_valid, schema_defs, violations};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn check<T>(defs: &Value, def: &str, value: &T) -> Value
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).expect("serializes");
    assert_valid(defs, def, &json);
    let back: T = serde_json::from_value(json.clone()).expect("deserializes");
    assert_eq!(&back, value, "{def} round trip");
    json
}

fn meta(v: Value) -> Metadata {
    match v {
        Value::Object(m) => m,
        _ => Metadata::new(),
    }
}

fn doc(text: &str) -> DocumentData {
    DocumentData::from_text(text)
}

#[test]
fn retriever_types_match_the_schema() {
    let defs = schema_defs();
    let bare = check(
        &defs,
        "RetrieverRequest",
        &RetrieverRequest {
            query: doc("q"),
            options: None,
        },
    );
    assert_eq!(bare, json!({"query": {"content": [{"text": "q"}]}}));
    check(
        &defs,
        "RetrieverRequest",
        &RetrieverRequest {
            query: DocumentData::from_media("https://x/a.png", Some("image/png"))
                .with_metadata(meta(json!({"lang": "en"}))),
            options: Some(json!({"k": 3})),
        },
    );
    let resp = check(
        &defs,
        "RetrieverResponse",
        &RetrieverResponse::new(vec![
            doc("a"),
            doc("b").with_metadata(meta(json!({"id": 2}))),
        ]),
    );
    assert_eq!(resp["documents"][1]["metadata"]["id"], 2);
    check(
        &defs,
        "CommonRetrieverOptions",
        &CommonRetrieverOptions { k: Some(4) },
    );
    check(
        &defs,
        "CommonRetrieverOptions",
        &CommonRetrieverOptions::default(),
    );
    check(
        &defs,
        "CommonRerankerOptions",
        &CommonRerankerOptions { k: Some(2) },
    );
}

#[test]
fn reranker_types_match_the_schema() {
    let defs = schema_defs();
    check(
        &defs,
        "RerankerRequest",
        &RerankerRequest {
            query: doc("q"),
            documents: vec![doc("a"), doc("b")],
            options: Some(json!({"k": 1})),
        },
    );
    let ranked = RankedDocumentData::new(
        doc("a").with_metadata(meta(json!({"src": "x", "score": 9}))),
        0.5,
    );
    let json = check(&defs, "RankedDocumentData", &ranked);
    // The old score is replaced, the other metadata kept beside the new one.
    assert_eq!(json["metadata"], json!({"score": 0.5, "src": "x"}));
    check(
        &defs,
        "RerankerResponse",
        &RerankerResponse::from(vec![ranked.clone()]),
    );
    assert_eq!(
        ranked.clone().into_document().metadata,
        Some(meta(json!({"src": "x", "score": 0.5})))
    );
    // A ranked document needs a numeric score.
    let no_score: Result<RankedDocumentData, _> =
        serde_json::from_value(json!({"content": [], "metadata": {"src": "x"}}));
    assert!(no_score.is_err());
}

#[test]
fn indexer_request_round_trips() {
    let req = IndexerRequest {
        documents: vec![doc("a")],
        options: None,
    };
    let json = serde_json::to_value(&req).expect("serializes");
    assert_eq!(json, json!({"documents": [{"content": [{"text": "a"}]}]}));
    // Each document is a DocumentData as the shared schema defines it.
    assert_valid(&schema_defs(), "DocumentData", &json["documents"][0]);
}

#[test]
fn evaluation_types_match_the_schema() {
    let defs = schema_defs();
    let point = BaseDataPoint::new("q")
        .output(json!({"answer": 1}))
        .reference("a")
        .context(["c1", "c2"])
        .test_case_id("t1");
    check(&defs, "BaseDataPoint", &point);
    check(&defs, "BaseDataPoint", &BaseDataPoint::default());
    let eval_point = EvalDataPoint::from_base(BaseDataPoint::new("q"), || "generated".into());
    let json = check(&defs, "BaseEvalDataPoint", &eval_point);
    assert_eq!(json["testCaseId"], "generated");
    check(
        &defs,
        "EvalRequest",
        &EvalRequest {
            dataset: vec![point.clone()],
            eval_run_id: "run".into(),
            options: Some(json!({"strict": true})),
            batch_size: None,
        },
    );
    for score in [
        Score::pass_fail(true),
        Score::new(0.25, EvalStatus::Unknown)
            .reasoning("because")
            .id("m1"),
        Score::new("label", EvalStatus::Fail),
        Score::error("no output"),
    ] {
        check(&defs, "Score", &score);
    }
    let responses: EvalResponse = vec![
        EvalFnResponse::new("t1", Score::pass_fail(false)),
        EvalFnResponse {
            sample_index: Some(1),
            trace_id: Some("abc".into()),
            span_id: Some("def".into()),
            ..EvalFnResponse::new("t2", vec![Score::new(1.0, EvalStatus::Pass).id("a")])
        },
    ];
    check(&defs, "EvalResponse", &responses);
    // Statuses are Genkit's exact strings.
    assert_eq!(
        serde_json::to_value(EvalStatus::Pass).expect("json"),
        json!("PASS")
    );
    // Details keep extra fields.
    let detailed: Score =
        serde_json::from_value(json!({"details": {"reasoning": "r", "extra": [1]}}))
            .expect("score");
    assert_eq!(
        serde_json::to_value(&detailed).expect("json"),
        json!({"details": {"reasoning": "r", "extra": [1]}})
    );
    // The shared schema knows no `batchSize`: Genkit JS's extension is only
    // sent when set.
    let batched = serde_json::to_value(EvalRequest {
        dataset: vec![],
        eval_run_id: "r".into(),
        options: None,
        batch_size: Some(2),
    })
    .expect("json");
    assert!(!violations(&defs, "EvalRequest", &batched).is_empty());
}
