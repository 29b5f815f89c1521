//! The pgvector store against a real PostgreSQL with pgvector (test.sh
//! starts one: tests-support/pgvector/start.sh, `GENKIT_TEST_PGVECTOR_URL`).
//! Without it the tests skip, except under `CI=true`, where they fail.

use genkit_core::{Registry, StatusCode};
use genkit_model::embedder::{EmbedderOptions, define_embedder};
use genkit_model::types::{DocumentData, EmbedResponse, Embedding};
use genkit_pgvector::{PgVectorOptions, define_pgvector_store};
use genkit_retrieval::indexer::{IndexOptions, index};
use genkit_retrieval::retriever::{RetrieveOptions, retrieve};
use serde_json::{Map, json};
use sqlx::postgres::PgPoolOptions;

const URL_VAR: &str = "GENKIT_TEST_PGVECTOR_URL";

fn server(test: &str) -> Option<String> {
    match std::env::var(URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !ci,
                "{test}: {URL_VAR} is not set under CI; test.sh starts PostgreSQL with pgvector \
                 (tests-support/pgvector/start.sh) and must export it"
            );
            eprintln!("SKIPPED {test}: {URL_VAR} is not set (tests-support/pgvector/start.sh)");
            None
        }
    }
}

/// A table name no other run uses.
fn table(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("t_{test}_{}_{nanos}", std::process::id())
}

/// `letters`: letter counts over `dims` dimensions (texts with no letter
/// embed to a vector of ones, so every query has a direction).
fn define_letters(registry: &Registry, name: &str, dims: usize) {
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
                            v[(c as usize - 'a' as usize) % dims] += 1.0;
                        }
                    }
                    if v.iter().all(|x| *x == 0.0) {
                        v.fill(1.0);
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

async fn setup(url: &str, test: &str) -> (Registry, sqlx::PgPool, String) {
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(url)
        .await
        .expect("connect");
    let registry = Registry::new();
    define_letters(&registry, "letters", 26);
    define_letters(&registry, "short", 3);
    let table = table(test);
    define_pgvector_store(
        &registry,
        PgVectorOptions::new("facts", "letters", pool.clone()).table(&table),
    )
    .expect("store");
    define_pgvector_store(
        &registry,
        PgVectorOptions::new("short", "short", pool.clone()).table(&table),
    )
    .expect("store");
    (registry, pool, table)
}

fn texts(docs: &[DocumentData]) -> Vec<String> {
    docs.iter().map(DocumentData::text).collect()
}

fn doc(text: &str, topic: &str) -> DocumentData {
    DocumentData::from_text(text).with_metadata(Map::from_iter([("topic".into(), json!(topic))]))
}

#[tokio::test]
async fn indexes_and_retrieves_by_cosine_with_k_and_a_metadata_filter() {
    let Some(url) = server("indexes_and_retrieves") else {
        return;
    };
    let (registry, pool, table) = setup(&url, "rank").await;
    let docs = vec![
        doc("aaaa", "a"),
        doc("aaab", "a"),
        doc("bbbb", "b"),
        doc("abab", "b"),
        doc("zzzz", "z"),
    ];
    index(&registry, IndexOptions::new("pgvector/facts", docs.clone()))
        .await
        .expect("indexed");
    // Indexing the same documents again stores nothing new.
    index(&registry, IndexOptions::new("pgvector/facts", docs.clone()))
        .await
        .expect("indexed again");
    let (count,): (i64,) = sqlx::query_as(&format!("SELECT count(*) FROM \"{table}\""))
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(count, 5);

    // k defaults to 3: cosines 1, 0.949, 0.707.
    let top = retrieve(&registry, RetrieveOptions::new("pgvector/facts", "aaaa"))
        .await
        .expect("retrieved");
    assert_eq!(texts(&top), ["aaaa", "aaab", "abab"]);
    // Documents come back whole, metadata included.
    assert_eq!(top[0], docs[0]);

    let all = retrieve(
        &registry,
        RetrieveOptions::new("pgvector/facts", "b").options(json!({"k": 10})),
    )
    .await
    .expect("retrieved");
    assert_eq!(texts(&all), ["bbbb", "abab", "aaab", "aaaa", "zzzz"]);

    let only_b = retrieve(
        &registry,
        RetrieveOptions::new("pgvector/facts", "aaaa")
            .options(json!({"k": 10, "filter": {"topic": "b"}})),
    )
    .await
    .expect("retrieved");
    assert_eq!(texts(&only_b), ["abab", "bbbb"]);
}

#[tokio::test]
async fn refusals_are_clear_and_write_nothing() {
    let Some(url) = server("refusals") else {
        return;
    };
    let (registry, pool, table) = setup(&url, "refuse").await;
    index(
        &registry,
        IndexOptions::new("pgvector/facts", [doc("aaaa", "a")]),
    )
    .await
    .expect("indexed");
    // Another embedder's length on the same table.
    let err = index(
        &registry,
        IndexOptions::new("pgvector/short", [doc("bbbb", "b")]),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(err.to_string().contains("3 dimensions"), "{err}");
    let err = retrieve(&registry, RetrieveOptions::new("pgvector/short", "b"))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    let (count,): (i64,) = sqlx::query_as(&format!("SELECT count(*) FROM \"{table}\""))
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(count, 1);

    // Unknown options are refused by the schema, not ignored.
    let err = retrieve(
        &registry,
        RetrieveOptions::new("pgvector/facts", "a").options(json!({"limit": 2})),
    )
    .await
    .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");

    // A table name that could inject SQL is refused when defining.
    let bad = define_pgvector_store(
        &registry,
        PgVectorOptions::new("bad", "letters", pool.clone()).table("x\"; DROP TABLE y; --"),
    );
    assert_eq!(
        bad.expect_err("refused").status(),
        StatusCode::InvalidArgument
    );
}
