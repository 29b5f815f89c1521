//! The local vector store indexing and querying N documents, the scripted
//! work of bench/vectors/bench.mjs: 384-dim vectors from a fixed-seed
//! xorshift32 (the same as the JS side), looked up by a table embedder so
//! no embedding cost is timed, indexed in batches of 1,000, then 100
//! queries with k = 10, searched exactly and with the HNSW index; recall@10
//! of HNSW against exact. Prints one JSON line per size and mode.
//! Usage: vector_bench 10000 [100000 ...]

use genkit_ai::embedder::{EmbedderOptions, define_embedder};
use genkit_ai::indexer::{IndexOptions, index};
use genkit_ai::local_vector_store::{
    HnswOptions, LocalVectorStoreOptions, define_local_vector_store,
};
use genkit_ai::retriever::{RetrieveOptions, retrieve};
use genkit_ai::types::{CommonRetrieverOptions, DocumentData, EmbedResponse, Embedding};
use genkit_core::Registry;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

const DIMS: usize = 384;
const BATCH: usize = 1000;
const QUERIES: usize = 100;
const K: u32 = 10;

fn vectors(seed: u32, count: usize) -> Vec<Vec<f32>> {
    let mut x = seed;
    (0..count)
        .map(|_| {
            (0..DIMS)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    (f64::from(x) / 4_294_967_296.0 * 2.0 - 1.0) as f32
                })
                .collect()
        })
        .collect()
}

struct Table {
    docs: Vec<Vec<f32>>,
    queries: Vec<Vec<f32>>,
}

fn lookup(t: &Table, text: &str) -> Vec<f32> {
    let table = if text.starts_with('q') {
        &t.queries
    } else {
        &t.docs
    };
    text.get(1..)
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|i| table.get(i).cloned())
        .unwrap_or_else(|| vec![0.0; DIMS])
}

async fn run(n: usize, mode: &str, hnsw: HnswOptions, table: &Arc<Table>) -> Vec<Vec<String>> {
    let dir = std::env::temp_dir().join(format!(
        "genkit-rs-vectors-{}-{mode}-{n}",
        std::process::id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    let registry = Registry::new();
    let t = table.clone();
    define_embedder(
        &registry,
        EmbedderOptions::new("table"),
        move |req, _ctx| {
            let t = t.clone();
            async move {
                let embeddings = req
                    .input
                    .iter()
                    .map(|d| Embedding {
                        embedding: lookup(&t, &d.text()),
                        metadata: None,
                    })
                    .collect();
                Ok(EmbedResponse { embeddings })
            }
        },
    )
    .expect("embedder");
    define_local_vector_store(
        &registry,
        LocalVectorStoreOptions::new("bench", "table")
            .path(dir.join("bench.json"))
            .hnsw(hnsw),
    )
    .expect("store");
    let t0 = Instant::now();
    for s in (0..n).step_by(BATCH) {
        let docs: Vec<DocumentData> = (s..(s + BATCH).min(n))
            .map(|i| DocumentData::from_text(format!("d{i}")))
            .collect();
        index(
            &registry,
            IndexOptions::new("devLocalVectorstore/bench", docs),
        )
        .await
        .expect("indexed");
    }
    let index_ms = t0.elapsed().as_millis();
    let t1 = Instant::now();
    let mut tops = Vec::new();
    for q in 0..QUERIES {
        let found = retrieve(
            &registry,
            RetrieveOptions::new("devLocalVectorstore/bench", format!("q{q}"))
                .options(CommonRetrieverOptions { k: Some(K) }),
        )
        .await
        .expect("retrieved");
        tops.push(found.iter().map(DocumentData::text).collect::<Vec<_>>());
    }
    let query_ms = t1.elapsed().as_secs_f64() * 1000.0 / QUERIES as f64;
    println!(
        "{}",
        serde_json::json!({"side": "rust", "mode": mode, "n": n, "index_ms": index_ms,
            "query_ms": (query_ms * 100.0).round() / 100.0, "first_top": tops[0]})
    );
    let _ = std::fs::remove_dir_all(&dir);
    tops
}

#[tokio::main]
async fn main() {
    for arg in std::env::args().skip(1) {
        let Ok(n) = arg.parse::<usize>() else {
            eprintln!("not a document count: {arg}");
            std::process::exit(2);
        };
        let table = Arc::new(Table {
            docs: vectors(0x9e37_79b9, n),
            queries: vectors(0x85eb_ca6b, QUERIES),
        });
        let exact = run(n, "exact", HnswOptions::disabled(), &table).await;
        let approx = run(n, "hnsw", HnswOptions::default().threshold(1), &table).await;
        let hits: usize = exact
            .iter()
            .zip(&approx)
            .map(|(e, a)| {
                let truth: HashSet<&String> = e.iter().collect();
                a.iter().filter(|t| truth.contains(t)).count()
            })
            .sum();
        println!(
            "{}",
            serde_json::json!({"side": "rust", "n": n,
                "hnsw_recall_at_10": hits as f64 / (QUERIES * K as usize) as f64})
        );
    }
}
