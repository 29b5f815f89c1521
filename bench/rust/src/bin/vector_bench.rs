//! The local vector store indexing and querying N documents, the scripted
//! work of bench/vectors/bench.mjs: 384-dim vectors from a fixed-seed
//! xorshift32 (the same as the JS side), looked up by a table embedder so
//! no embedding cost is timed, indexed in batches of 1,000, then 100
//! queries with k = 10, searched exactly and with the HNSW index; recall@10
//! of HNSW against exact. Prints one JSON line per size and mode, with
//! wall and CPU time of each phase (CPU time counts every thread, so the
//! figures stay readable on a loaded machine) and the peak RSS of the mode
//! (reset between modes through `/proc/self/clear_refs`).
//! Usage: vector_bench 10000 [100000 ...]

use genkit_core::Registry;
use genkit_model::embedder::{EmbedderOptions, define_embedder};
use genkit_model::types::{CommonRetrieverOptions, DocumentData, EmbedResponse, Embedding};
use genkit_retrieval::indexer::{IndexOptions, index};
use genkit_retrieval::local_vector_store::{
    HnswOptions, LocalVectorStoreOptions, define_local_vector_store,
};
use genkit_retrieval::retriever::{RetrieveOptions, retrieve};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

const DIMS: usize = 384;
const BATCH: usize = 1000;
const QUERIES: usize = 100;
const K: u32 = 10;

fn vectors(seed: u32, count: usize) -> Vec<Vec<f32>> {
    genkit_bench::xorshift_vectors(seed, count, DIMS)
}

/// User plus system CPU time of the whole process so far, in milliseconds
/// (`/proc/self/stat`, clock ticks of 10 ms); `None` off Linux.
fn cpu_ms() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the line.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks * 10.0)
}

/// The process's peak resident set since start or the last reset, in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some((kb / 1024.0).round())
}

/// Resets the peak RSS to the current RSS, so each mode reports its own.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
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
    reset_peak_rss();
    let c0 = cpu_ms();
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
    let c1 = cpu_ms();
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
    let c2 = cpu_ms();
    // The data file and, once built, the graph file beside it.
    let file_mb = ["bench.vdb", "bench.hnsw"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len() as f64 / 1e6)
        .reduce(|a, b| a + b)
        .map(f64::round);
    let index_cpu_ms = c0.zip(c1).map(|(a, b)| (b - a).round());
    let query_cpu_ms = c1
        .zip(c2)
        .map(|(a, b)| ((b - a) / QUERIES as f64 * 100.0).round() / 100.0);
    println!(
        "{}",
        serde_json::json!({"side": "rust", "mode": mode, "n": n, "index_ms": index_ms,
            "index_cpu_ms": index_cpu_ms, "query_ms": (query_ms * 100.0).round() / 100.0,
            "query_cpu_ms": query_cpu_ms, "peak_rss_mb": peak_rss_mb(), "file_mb": file_mb, "first_top": tops[0]})
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
