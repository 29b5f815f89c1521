//! The local vector store indexing and querying N documents, the scripted
//! work of bench/vectors/bench.mjs: 384-dim vectors looked up by a table
//! embedder so no embedding cost is timed, indexed in batches of 1,000,
//! then 100 queries with k = 10, searched exactly and with the HNSW index;
//! recall@10 of HNSW against exact. Prints one JSON line per size and mode,
//! with wall and CPU time of each phase (CPU time counts every thread, so
//! the figures stay readable on a loaded machine) and the peak RSS of the
//! mode (reset between modes through `/proc/self/clear_refs`).
//!
//! The vectors: by default from a fixed-seed xorshift32 (the same as the JS
//! side; uniform random, a graph index's worst case); with `--vectors FILE`
//! the first N vectors of FILE (little-endian `f32`s, 384 a vector: the
//! MiniLM embeddings of bench/vectors/run.sh) are the documents and the 100
//! after them the queries.
//!
//! The HNSW mode uses the store's default parameters from the first entry
//! (`--threshold` to start it elsewhere); `--m`, `--ef-construction` and
//! `--ef-search` change them. With several `--ef-search` values the graph
//! is built with the first, then the store is opened again on the same
//! files for each other value (the graph read from its file) and queried.
//!
//! Usage: vector_bench [--vectors FILE] [--threshold T] [--m M]
//!     [--ef-construction E] [--ef-search E1,E2,...] 10000 [100000 ...]

use genkit_core::Registry;
use genkit_model::embedder::{EmbedderOptions, define_embedder};
use genkit_model::types::{CommonRetrieverOptions, DocumentData, EmbedResponse, Embedding};
use genkit_retrieval::indexer::{IndexOptions, index};
use genkit_retrieval::local_vector_store::{
    HnswOptions, LocalVectorStoreOptions, define_local_vector_store,
};
use genkit_retrieval::retriever::{RetrieveOptions, retrieve};
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
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

/// A registry with the table embedder and the store `bench` at `dir`.
fn store(dir: &Path, hnsw: HnswOptions, table: &Arc<Table>) -> Registry {
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
    registry
}

async fn query(registry: &Registry, q: usize) -> Vec<String> {
    let found = retrieve(
        registry,
        RetrieveOptions::new("devLocalVectorstore/bench", format!("q{q}"))
            .options(CommonRetrieverOptions { k: Some(K) }),
    )
    .await
    .expect("retrieved");
    found.iter().map(DocumentData::text).collect()
}

/// The 100 queries' tops, timed: (tops, wall ms and CPU ms a query).
async fn queries(registry: &Registry) -> (Vec<Vec<String>>, f64, Option<f64>) {
    let c0 = cpu_ms();
    let t0 = Instant::now();
    let mut tops = Vec::new();
    for q in 0..QUERIES {
        tops.push(query(registry, q).await);
    }
    let wall = t0.elapsed().as_secs_f64() * 1000.0 / QUERIES as f64;
    let cpu = c0
        .zip(cpu_ms())
        .map(|(a, b)| ((b - a) / QUERIES as f64 * 100.0).round() / 100.0);
    (tops, (wall * 100.0).round() / 100.0, cpu)
}

fn recall(exact: &[Vec<String>], approx: &[Vec<String>]) -> f64 {
    let hits: usize = exact
        .iter()
        .zip(approx)
        .map(|(e, a)| {
            let truth: HashSet<&String> = e.iter().collect();
            a.iter().filter(|t| truth.contains(t)).count()
        })
        .sum();
    hits as f64 / (QUERIES * K as usize) as f64
}

/// Indexes the `n` documents into a new store at `dir` and queries it.
async fn run(
    n: usize,
    hnsw: HnswOptions,
    table: &Arc<Table>,
    dir: &Path,
) -> (Vec<Vec<String>>, serde_json::Value) {
    let _ = std::fs::remove_dir_all(dir);
    let _ = std::fs::create_dir_all(dir);
    let registry = store(dir, hnsw, table);
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
    let index_cpu_ms = c0.zip(cpu_ms()).map(|(a, b)| (b - a).round());
    let (tops, query_ms, query_cpu_ms) = queries(&registry).await;
    // The data file and, once built, the graph file beside it.
    let file_mb = ["bench.vdb", "bench.hnsw"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len() as f64 / 1e6)
        .reduce(|a, b| a + b)
        .map(f64::round);
    let line = json!({"side": "rust", "n": n, "index_ms": index_ms,
        "index_cpu_ms": index_cpu_ms, "query_ms": query_ms,
        "query_cpu_ms": query_cpu_ms, "peak_rss_mb": peak_rss_mb(), "file_mb": file_mb,
        "first_top": tops[0]});
    (tops, line)
}

/// Opens the store at `dir` again with `hnsw` (its graph read from the
/// graph file) and queries it; the opening (the first query, untimed among
/// the 100) is reported apart.
async fn reopen(
    n: usize,
    hnsw: HnswOptions,
    table: &Arc<Table>,
    dir: &Path,
) -> (Vec<Vec<String>>, serde_json::Value) {
    let registry = store(dir, hnsw, table);
    let t0 = Instant::now();
    query(&registry, 0).await;
    let open_ms = t0.elapsed().as_millis();
    let (tops, query_ms, query_cpu_ms) = queries(&registry).await;
    let line = json!({"side": "rust", "n": n, "open_ms": open_ms, "query_ms": query_ms,
        "query_cpu_ms": query_cpu_ms, "first_top": tops[0]});
    (tops, line)
}

fn emit(mut line: serde_json::Value, extra: serde_json::Value) {
    if let (Some(l), Some(e)) = (line.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            l.insert(k.clone(), v.clone());
        }
    }
    println!("{line}");
}

struct Args {
    file: Option<String>,
    threshold: usize,
    m: Option<usize>,
    ef_construction: Option<usize>,
    ef_search: Vec<usize>,
    sizes: Vec<usize>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        file: None,
        threshold: 1,
        m: None,
        ef_construction: None,
        ef_search: Vec::new(),
        sizes: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        let number = |v: String| v.parse::<usize>().map_err(|e| format!("{v}: {e}"));
        match arg.as_str() {
            "--vectors" => a.file = Some(value()?),
            "--threshold" => a.threshold = number(value()?)?,
            "--m" => a.m = Some(number(value()?)?),
            "--ef-construction" => a.ef_construction = Some(number(value()?)?),
            "--ef-search" => {
                a.ef_search = value()?
                    .split(',')
                    .map(|v| number(v.to_string()))
                    .collect::<Result<_, _>>()?;
            }
            _ => a.sizes.push(number(arg)?),
        }
    }
    Ok(a)
}

#[tokio::main]
async fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "{e}\nusage: vector_bench [--vectors FILE] [--threshold T] [--m M] [--ef-construction E] [--ef-search E1,E2,...] N..."
            );
            std::process::exit(2);
        }
    };
    let mut hnsw = HnswOptions::default().threshold(args.threshold);
    if let Some(m) = args.m {
        hnsw = hnsw.max_connections(m);
    }
    if let Some(ef) = args.ef_construction {
        hnsw = hnsw.ef_construction(ef);
    }
    let efs: Vec<Option<usize>> = if args.ef_search.is_empty() {
        vec![None]
    } else {
        args.ef_search.iter().copied().map(Some).collect()
    };
    let data = args.file.as_deref().map_or("random", |_| "minilm");
    for &n in &args.sizes {
        let table = Arc::new(match &args.file {
            Some(path) => {
                let mut docs =
                    genkit_bench::file_vectors(path, n + QUERIES, DIMS).unwrap_or_else(|e| {
                        eprintln!("{e}");
                        std::process::exit(2);
                    });
                let queries = docs.split_off(n);
                Table { docs, queries }
            }
            None => Table {
                docs: vectors(0x9e37_79b9, n),
                queries: vectors(0x85eb_ca6b, QUERIES),
            },
        });
        let dir = |mode: &str| -> PathBuf {
            std::env::temp_dir().join(format!(
                "genkit-rs-vectors-{}-{mode}-{n}",
                std::process::id()
            ))
        };
        let (exact, line) = run(n, HnswOptions::disabled(), &table, &dir("exact")).await;
        emit(line, json!({"mode": "exact", "vectors": data}));
        let _ = std::fs::remove_dir_all(dir("exact"));
        for (i, ef) in efs.iter().enumerate() {
            let opts = ef.map_or(hnsw, |e| hnsw.ef_search(e));
            let (approx, line) = if i == 0 {
                run(n, opts, &table, &dir("hnsw")).await
            } else {
                reopen(n, opts, &table, &dir("hnsw")).await
            };
            let r = recall(&exact, &approx);
            // The first (built) run is the `hnsw` row of bench/report.py;
            // the other candidate-list sizes are rows of their own.
            let mode = if i == 0 {
                "hnsw".to_string()
            } else {
                format!("hnsw ef={}", ef.unwrap_or_default())
            };
            emit(
                line,
                json!({"mode": mode, "vectors": data, "threshold": args.threshold,
                "m": args.m, "ef_construction": args.ef_construction, "ef_search": ef,
                "recall_at_10": r}),
            );
            if i == 0 {
                println!(
                    "{}",
                    json!({"side": "rust", "n": n, "hnsw_recall_at_10": r, "ef_search": ef})
                );
            }
        }
        let _ = std::fs::remove_dir_all(dir("hnsw"));
    }
}
