//! The local vector store over a deterministic test embedder (letter
//! counts): exact cosine ranking, persistence and reload, deduplication,
//! refusals that lose nothing, and Genkit JS's files imported. The data
//! file's crash safety and locking: local_vector_store_files.rs.

use genkit_core::{Registry, StatusCode};
use genkit_model::embedder::{EmbedderOptions, define_embedder};
use genkit_model::types::{CommonRetrieverOptions, DocumentData, EmbedResponse, Embedding};
use genkit_retrieval::indexer::{IndexOptions, index};
use genkit_retrieval::local_vector_store::{LocalVectorStoreOptions, define_local_vector_store};
use genkit_retrieval::retriever::{RetrieveOptions, retrieve};
use serde_json::{Value, json};
use std::path::PathBuf;

/// A fresh folder under the system temp dir.
pub(crate) fn temp_dir(name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let dir =
        std::env::temp_dir().join(format!("genkit-lvs-{name}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `letters`: a 26-dimensional vector of letter counts. `dims` is the
/// vector length (to provoke a mismatch).
fn define_letter_embedder(registry: &Registry, name: &str, dims: usize) {
    define_embedder(
        registry,
        EmbedderOptions::new(name),
        move |req, _ctx| async move {
            let embeddings = req
                .input
                .iter()
                .map(|d| {
                    let mut v = vec![0.0f32; dims];
                    for c in d.text().to_lowercase().chars() {
                        if c.is_ascii_lowercase() {
                            let i = (c as usize - 'a' as usize) % dims;
                            v[i] += 1.0;
                        }
                    }
                    Embedding {
                        embedding: v,
                        metadata: None,
                    }
                })
                .collect();
            Ok(EmbedResponse { embeddings })
        },
    )
    .expect("embedder");
}

pub(crate) fn setup(path: &std::path::Path) -> Registry {
    let registry = Registry::new();
    define_letter_embedder(&registry, "letters", 26);
    define_local_vector_store(
        &registry,
        LocalVectorStoreOptions::new("facts", "letters").path(path),
    )
    .expect("store");
    registry
}

pub(crate) const NAME: &str = "devLocalVectorstore/facts";

pub(crate) fn texts(docs: &[DocumentData]) -> Vec<String> {
    docs.iter().map(DocumentData::text).collect()
}

#[tokio::test]
async fn ranks_by_cosine_and_persists_to_its_file() {
    let dir = temp_dir("rank");
    let path = dir.join("facts.json");
    let registry = setup(&path);
    let docs = ["aaaa", "aaab", "bbbb", "abab", "zzzz"].map(DocumentData::from_text);
    index(&registry, IndexOptions::new(NAME, docs))
        .await
        .expect("indexed");
    let top = retrieve(&registry, RetrieveOptions::new(NAME, "aaaa"))
        .await
        .expect("retrieved");
    // k defaults to 3: cosines 1, 0.949, 0.707.
    assert_eq!(texts(&top), ["aaaa", "aaab", "abab"]);
    let k5 = retrieve(
        &registry,
        RetrieveOptions::new(NAME, "b").options(CommonRetrieverOptions { k: Some(10) }),
    )
    .await
    .expect("retrieved");
    assert_eq!(texts(&k5), ["bbbb", "abab", "aaab", "aaaa", "zzzz"]);

    // The data goes to the `.vdb` file beside the configured path.
    let data = std::fs::read(path.with_extension("vdb")).expect("data file");
    assert!(data.starts_with(b"GKVSTOR\x01"));
    assert!(!path.exists());

    // A new instance reads the file.
    let again = setup(&path);
    let top = retrieve(
        &again,
        RetrieveOptions::new(NAME, "zz").options(json!({"k": 1})),
    )
    .await
    .expect("retrieved");
    assert_eq!(texts(&top), ["zzzz"]);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn documents_already_stored_are_skipped() {
    let dir = temp_dir("dedupe");
    let path = dir.join("facts.json");
    let registry = setup(&path);
    let doc = DocumentData::from_text("same")
        .with_metadata(serde_json::Map::from_iter([("n".into(), json!(1))]));
    index(
        &registry,
        IndexOptions::new(NAME, [doc.clone(), doc.clone()]),
    )
    .await
    .expect("indexed");
    index(&registry, IndexOptions::new(NAME, [doc]))
        .await
        .expect("indexed");
    // A new instance finds one entry.
    let all = retrieve(
        &setup(&path),
        RetrieveOptions::new(NAME, "same").options(json!({"k": 10})),
    )
    .await
    .expect("retrieved");
    assert_eq!(texts(&all), ["same"]);
    // An empty store answers nothing; k = 0 nothing.
    let all = retrieve(
        &registry,
        RetrieveOptions::new(NAME, "same").options(json!({"k": 0})),
    )
    .await
    .expect("retrieved");
    assert!(all.is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_corrupt_json_file_is_refused_and_left_alone() {
    let dir = temp_dir("corrupt");
    let path = dir.join("facts.json");
    std::fs::write(&path, "{ not json").expect("written");
    let registry = setup(&path);
    let err = index(
        &registry,
        IndexOptions::new(NAME, [DocumentData::from_text("x")]),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(
        err.message().contains("is not a store file"),
        "{}",
        err.message()
    );
    assert_eq!(std::fs::read_to_string(&path).expect("file"), "{ not json");
    let err = retrieve(&registry, RetrieveOptions::new(NAME, "x"))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn vectors_of_another_length_are_refused() {
    let dir = temp_dir("dims");
    let path = dir.join("facts.json");
    let registry = setup(&path);
    index(
        &registry,
        IndexOptions::new(NAME, [DocumentData::from_text("abc")]),
    )
    .await
    .expect("indexed");
    // A second store on the same file with a 4-dimensional embedder.
    let other = Registry::new();
    define_letter_embedder(&other, "short", 4);
    define_local_vector_store(
        &other,
        LocalVectorStoreOptions::new("facts", "short").path(&path),
    )
    .expect("store");
    let before = std::fs::read(path.with_extension("vdb")).expect("file");
    let err = index(
        &other,
        IndexOptions::new(NAME, [DocumentData::from_text("new")]),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(
        err.message().contains("4 dimensions") || err.message().contains("returned 4"),
        "{}",
        err.message()
    );
    assert_eq!(
        std::fs::read(path.with_extension("vdb")).expect("file"),
        before
    );
    let err = retrieve(&other, RetrieveOptions::new(NAME, "abc"))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_actions_are_listed_as_genkit_jss() {
    let dir = temp_dir("meta");
    let registry = setup(&dir.join("facts.json"));
    let r = registry
        .lookup_action("/retriever/devLocalVectorstore/facts")
        .await
        .expect("lookup")
        .expect("retriever");
    let meta = &r.desc().to_descriptor()["metadata"];
    assert_eq!(meta["info"]["label"], "Local file-based Retriever - facts");
    assert!(meta["retriever"]["customOptions"]["properties"]["k"].is_object());
    let i = registry
        .lookup_action("/indexer/devLocalVectorstore/facts")
        .await
        .expect("lookup");
    assert!(i.is_some());
    // An unknown embedder is reported when the store is used.
    let lonely = Registry::new();
    define_local_vector_store(
        &lonely,
        LocalVectorStoreOptions::new("x", "missing").path(dir.join("x.json")),
    )
    .expect("store");
    let err = retrieve(&lonely, RetrieveOptions::new("devLocalVectorstore/x", "q"))
        .await
        .expect_err("no embedder");
    assert_eq!(err.status(), StatusCode::NotFound);
    let _ = std::fs::remove_dir_all(dir);
}

/// A file written by Genkit JS's `@genkit-ai/dev-local-vectorstore`
/// (recorded by `genkit_js_eval/vectorstore.mjs` with the same letter-count
/// embedder) is read here and answers the same queries with the same
/// documents.
#[tokio::test]
async fn reads_genkit_jss_file_and_answers_as_it_does() {
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../genkit-evaluator/tests/genkit_js_eval/vectorstore.json"
        ))
        .expect("recording"),
    )
    .expect("json");
    let dir = temp_dir("js");
    let path = dir.join("__db_facts.json");
    std::fs::write(&path, recorded["db"].to_string()).expect("written");
    let registry = setup(&path);
    let queries = recorded["queries"].as_array().expect("queries");
    assert_eq!(queries.len(), 4);
    for q in queries {
        let query = q["query"].as_str().expect("query");
        let mut params = RetrieveOptions::new(NAME, query);
        if let Some(k) = q.get("k").and_then(Value::as_u64) {
            params = params.options(json!({"k": k}));
        }
        let docs = retrieve(&registry, params).await.expect("retrieved");
        assert_eq!(
            serde_json::to_value(&docs).expect("json"),
            q["documents"],
            "{query}"
        );
    }
    // Indexing more keeps JS's entries and adds the new one.
    index(
        &registry,
        IndexOptions::new(NAME, [DocumentData::from_text("new")]),
    )
    .await
    .expect("indexed");
    // The JSON file is left as it was; the entries live in the data file:
    // a new instance answers the same without it, with the new entry too.
    let before = recorded["db"].as_object().expect("db");
    assert_eq!(
        std::fs::read_to_string(&path).expect("file"),
        recorded["db"].to_string()
    );
    std::fs::remove_file(&path).expect("removed");
    let again = setup(&path);
    let all = retrieve(
        &again,
        RetrieveOptions::new(NAME, "new").options(json!({"k": 100})),
    )
    .await
    .expect("retrieved");
    assert_eq!(all.len(), before.len() + 1);
    assert_eq!(all[0].text(), "new");
    for q in queries {
        let query = q["query"].as_str().expect("query");
        let mut params = RetrieveOptions::new(NAME, query);
        if let Some(k) = q.get("k").and_then(Value::as_u64) {
            params = params.options(json!({"k": k}));
        }
        let docs = retrieve(&again, params).await.expect("retrieved");
        let docs: Vec<Value> = docs
            .iter()
            .filter(|d| d.text() != "new")
            .map(|d| serde_json::to_value(d).expect("json"))
            .collect();
        let expected: Vec<Value> = q["documents"]
            .as_array()
            .expect("documents")
            .iter()
            .take(docs.len())
            .cloned()
            .collect();
        assert_eq!(docs, expected, "{query} after import");
    }
    let _ = std::fs::remove_dir_all(dir);
}
