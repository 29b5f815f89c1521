//! Retrieval and evaluation actions against what Genkit JS 1.42 does with
//! the same definitions (recorded by `genkit_js/retrieval.mjs` into
//! `genkit_js/retrieval.jsonl`): the metadata the Reflection API lists for
//! each action, what `defineSimpleRetriever` makes of a search function's
//! items, and evaluators' responses.

use genkit_core::{ActionKind, Registry};
use genkit_model::embedder::EmbedderInfo;
use genkit_model::types::{DocumentData, Metadata, Part, RerankerResponse, RetrieverResponse};
use genkit_retrieval::indexer::{IndexerOptions, define_indexer};
use genkit_retrieval::reranker::{RerankerOptions, define_reranker};
use genkit_retrieval::retriever::{
    RetrieveOptions, RetrieverInfo, RetrieverOptions, RetrieverSupports, define_retriever, retrieve,
};
use genkit_retrieval::simple_retriever::{SimpleRetrieverOptions, define_simple_retriever};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn records(what: &str) -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../genkit-generate/tests/genkit_js/retrieval.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("retrieval.jsonl");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|r| r["what"] == what)
        .collect()
}

/// The options type of the recorded definitions (`z.object({k, filter})`).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Options {
    k: Option<f64>,
    filter: Option<String>,
}

/// Defines, in Rust, what retrieval.mjs defines in JS.
pub fn define_recorded_actions(registry: &Registry) {
    define_retriever(
        registry,
        RetrieverOptions::new("plain"),
        |_q, _o: Option<Value>, _c| async { Ok(RetrieverResponse::default()) },
    )
    .expect("plain");
    define_retriever(
        registry,
        RetrieverOptions::new("withOptions").info(RetrieverInfo {
            label: Some("With options".into()),
            supports: Some(RetrieverSupports { media: Some(true) }),
        }),
        |_q, _o: Option<Options>, _c| async { Ok(RetrieverResponse::default()) },
    )
    .expect("withOptions");
    define_indexer(
        registry,
        IndexerOptions::new("store"),
        |_d, _o: Option<Value>, _c| async { Ok(()) },
    )
    .expect("store");
    define_indexer(
        registry,
        IndexerOptions::new("storeWithOptions").embedder_info(EmbedderInfo {
            label: Some("E".into()),
            dimensions: Some(3),
            supports: None,
        }),
        |_d, _o: Option<Options>, _c| async { Ok(()) },
    )
    .expect("storeWithOptions");
    define_reranker(
        registry,
        RerankerOptions::new("rank"),
        |_q, _d, _o: Option<Value>, _c| async { Ok(RerankerResponse::default()) },
    )
    .expect("rank");
    define_reranker(
        registry,
        RerankerOptions::new("rankWithOptions").info(RetrieverInfo {
            label: Some("Rank".into()),
            supports: None,
        }),
        |_q, _d, _o: Option<Options>, _c| async { Ok(RerankerResponse::default()) },
    )
    .expect("rankWithOptions");
}

/// Metadata equal to Genkit JS's, except that a `customOptions` schema is
/// compared by its type and property names (schemars and zod word the same
/// schema differently).
fn assert_same_metadata(key: &str, ours: &Value, theirs: &Value) {
    let strip = |v: &Value| {
        let mut v = v.clone();
        let mut props = None;
        if let Some(m) = v.as_object_mut() {
            for (_, inner) in m.iter_mut() {
                if let Some(o) = inner.as_object_mut()
                    && let Some(schema) = o.remove("customOptions")
                {
                    assert_eq!(schema["type"], "object", "{key}: customOptions type");
                    let mut names: Vec<String> = schema["properties"]
                        .as_object()
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default();
                    names.sort();
                    props = Some(names);
                    o.insert("customOptions".into(), Value::from("<schema>"));
                }
            }
        }
        (v, props)
    };
    let (a, pa) = strip(ours);
    let (b, pb) = strip(theirs);
    assert_eq!(a, b, "{key}: metadata");
    assert_eq!(pa, pb, "{key}: customOptions properties");
}

#[tokio::test]
async fn action_metadata_is_what_genkit_js_lists() {
    let registry = Registry::new();
    define_recorded_actions(&registry);
    let recorded: Vec<Value> = records("metadata")
        .into_iter()
        .filter(|r| {
            !r["key"]
                .as_str()
                .is_some_and(|k| k.starts_with("/evaluator/"))
        })
        .collect();
    assert!(recorded.len() >= 6);
    let mut seen = 0;
    for r in &recorded {
        let key = r["key"].as_str().expect("key");
        let action = registry
            .lookup_action(key)
            .await
            .expect("lookup")
            .unwrap_or_else(|| panic!("{key} is defined"));
        let ours = action.desc().to_descriptor();
        assert_same_metadata(key, &ours["metadata"], &r["metadata"]);
        seen += 1;
    }
    assert_eq!(seen, 6);
    // Every retrieval action is listed under its kind.
    for kind in [
        ActionKind::Retriever,
        ActionKind::Indexer,
        ActionKind::Reranker,
    ] {
        assert!(recorded.iter().any(|r| {
            r["key"]
                .as_str()
                .is_some_and(|k| k.starts_with(&format!("/{kind}/")))
        }));
    }
}

#[derive(Serialize)]
struct Item {
    id: u32,
    text: String,
    tag: String,
}

fn items() -> Vec<Item> {
    vec![
        Item {
            id: 1,
            text: "one".into(),
            tag: "a".into(),
        },
        Item {
            id: 2,
            text: "two".into(),
            tag: "b".into(),
        },
    ]
}

async fn run_simple<T: Serialize + Send + Sync + 'static>(
    opts: SimpleRetrieverOptions<T>,
    make: fn() -> Vec<T>,
) -> Value {
    let registry = Registry::new();
    let name = opts.name.clone();
    define_simple_retriever(&registry, opts, move |_q, _o: Option<Value>| async move {
        Ok(make())
    })
    .expect("defined");
    match retrieve(&registry, RetrieveOptions::new(name, "q")).await {
        Ok(docs) => json!({"documents": docs}),
        Err(e) => json!({"error": {"status": e.status().to_string(), "message": e.message()}}),
    }
}

#[tokio::test]
async fn simple_retriever_maps_items_as_genkit_js() {
    let recorded = records("simpleRetriever");
    for r in &recorded {
        let case = r["case"].as_str().expect("case");
        let ours = match case {
            "contentKey" => {
                run_simple(SimpleRetrieverOptions::new(case).content_key("text"), items).await
            }
            "contentKeyMetadataKeys" => {
                run_simple(
                    SimpleRetrieverOptions::new(case)
                        .content_key("text")
                        .metadata_keys(["tag"]),
                    items,
                )
                .await
            }
            "strings" => {
                run_simple(SimpleRetrieverOptions::<String>::new(case), || {
                    vec!["alpha".into(), "beta".into()]
                })
                .await
            }
            "contentFn" => {
                run_simple(
                    SimpleRetrieverOptions::new(case)
                        .content_fn(|i: &Item| format!("#{}: {}", i.id, i.text))
                        .metadata_fn(|i: &Item| {
                            let mut m = Metadata::new();
                            m.insert("n".into(), json!(i.id));
                            Some(m)
                        }),
                    items,
                )
                .await
            }
            "contentFnParts" => {
                run_simple(
                    SimpleRetrieverOptions::new(case)
                        .content_fn(|i: &Item| vec![Part::text(i.text.clone()), Part::text("!")]),
                    items,
                )
                .await
            }
            "noContentOption" => run_simple(SimpleRetrieverOptions::new(case), items).await,
            "nullItem" => {
                run_simple(
                    SimpleRetrieverOptions::<Option<Item>>::new(case).content_key("text"),
                    || vec![items().into_iter().next(), None],
                )
                .await
            }
            other => panic!("unknown case {other}"),
        };
        if let Some(docs) = r.get("documents") {
            assert_eq!(&ours["documents"], docs, "{case}");
            let parsed: Vec<DocumentData> =
                serde_json::from_value(docs.clone()).expect("documents");
            assert!(!parsed.is_empty());
        } else {
            assert_eq!(ours["error"]["status"], r["error"]["status"], "{case}");
            // Genkit JS prefixes the status to the message.
            let theirs = r["error"]["message"].as_str().expect("message");
            assert_eq!(
                format!(
                    "INVALID_ARGUMENT: {}",
                    ours["error"]["message"].as_str().expect("message")
                ),
                theirs,
                "{case}"
            );
        }
    }
    assert_eq!(recorded.len(), 7);
}
