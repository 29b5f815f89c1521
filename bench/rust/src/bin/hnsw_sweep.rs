//! Recall and latency of an `hnsw_rs` HNSW graph (the one the local vector
//! store built before issue 33; it now has its own graph), over
//! a grid of its parameters, on vector_bench's data (384-dim vectors from
//! the same fixed-seed xorshift32): the graph is built the way
//! `genkit-retrieval`'s `local_vector_store::hnsw` built it (unit vectors, its
//! eight-lane L2 distance, `parallel_insert_slice`, 16 layers; `--scalar`:
//! `hnsw_rs`'s own `DistL2`, for comparison), once per (M,
//! efConstruction), and searched with each ef; recall@10 is against exact
//! cosine search. Used to choose `HnswOptions`' defaults; prints one JSON
//! line per combination.
//!
//! `--vectors FILE` takes the data from a file of little-endian `f32`s, 384
//! per vector (`genkit-local-embedder`'s `embed_corpus` example writes real
//! sentence embeddings so: bench/vectors/real_embeddings.sh) instead: the
//! documents are its first N vectors and the queries the 100 after them.
//!
//! Usage: hnsw_sweep N [--m 16,32] [--ef-construction 200] [--ef-search 100,200,400] [--scalar] [--vectors FILE]

use hnsw_rs::prelude::{DistL2, Distance, Hnsw};
use std::collections::HashSet;
use std::time::Instant;

const DIMS: usize = 384;
const QUERIES: usize = 100;
const K: usize = 10;

fn vectors(seed: u32, count: usize) -> Vec<Vec<f32>> {
    genkit_bench::xorshift_vectors(seed, count, DIMS)
}

/// A copy of `genkit-retrieval`'s `LaneL2` (private there): the Euclidean
/// distance summed in eight lanes.
#[derive(Default, Clone, Copy)]
struct LaneL2;

impl Distance<f32> for LaneL2 {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        let mut lanes = [0f32; 8];
        let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
        let tail: f32 = ca
            .remainder()
            .iter()
            .zip(cb.remainder())
            .map(|(x, y)| (x - y) * (x - y))
            .sum();
        for (x, y) in ca.zip(cb) {
            for i in 0..8 {
                let d = x[i] - y[i];
                lanes[i] += d * d;
            }
        }
        (lanes.iter().sum::<f32>() + tail).sqrt()
    }
}

fn unit(v: &[f32]) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

/// The indices of the `K` documents most similar to `q` (both unit vectors).
fn exact(docs: &[Vec<f32>], q: &[f32]) -> HashSet<usize> {
    let mut scored: Vec<(f32, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.iter().zip(q).map(|(a, b)| a * b).sum(), i))
        .collect();
    scored.select_nth_unstable_by(K - 1, |a, b| b.0.total_cmp(&a.0));
    scored[..K].iter().map(|(_, i)| *i).collect()
}

fn file_vectors(path: &str, count: usize) -> Result<Vec<Vec<f32>>, String> {
    genkit_bench::file_vectors(path, count, DIMS)
}

fn list(value: Option<String>, flag: &str) -> Result<Vec<usize>, String> {
    let value = value.ok_or(format!("{flag} needs a value"))?;
    value
        .split(',')
        .map(|s| s.parse().map_err(|_| format!("{flag}: not a number: {s}")))
        .collect()
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let (mut n, mut ms, mut efcs, mut efs) = (None, vec![32], vec![200], vec![50, 100, 200, 400]);
    let mut scalar = false;
    let mut file = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--m" => ms = list(args.next(), "--m")?,
            "--ef-construction" => efcs = list(args.next(), "--ef-construction")?,
            "--ef-search" => efs = list(args.next(), "--ef-search")?,
            "--scalar" => scalar = true,
            "--vectors" => file = Some(args.next().ok_or("--vectors needs a file")?),
            _ => {
                n = Some(
                    arg.parse::<usize>()
                        .map_err(|_| format!("not a count: {arg}"))?,
                )
            }
        }
    }
    let n =
        n.ok_or("usage: hnsw_sweep N [--m 16,32] [--ef-construction 200] [--ef-search 100,200]")?;
    if n < K {
        return Err(format!("N must be at least {K}"));
    }
    let (docs, queries) = match &file {
        Some(path) => {
            let mut docs = file_vectors(path, n + QUERIES)?;
            let queries = docs.split_off(n);
            (docs, queries)
        }
        None => (vectors(0x9e37_79b9, n), vectors(0x85eb_ca6b, QUERIES)),
    };
    let docs: Vec<Vec<f32>> = docs.iter().map(|v| unit(v)).collect();
    let queries: Vec<Vec<f32>> = queries.iter().map(|v| unit(v)).collect();
    let t = Instant::now();
    let truth: Vec<HashSet<usize>> = queries.iter().map(|q| exact(&docs, q)).collect();
    let exact_ms = t.elapsed().as_secs_f64() * 1e3 / QUERIES as f64;
    println!(
        "{}",
        serde_json::json!({"n": n, "data": file.as_deref().unwrap_or("xorshift"), "exact_query_ms": (exact_ms * 100.0).round() / 100.0})
    );
    if scalar {
        sweep(&docs, &queries, &truth, &ms, &efcs, &efs, || DistL2 {});
    } else {
        sweep(&docs, &queries, &truth, &ms, &efcs, &efs, || LaneL2);
    }
    Ok(())
}

/// Builds a graph per (M, efConstruction) and searches it with each ef.
fn sweep<D: Distance<f32> + Send + Sync>(
    docs: &[Vec<f32>],
    queries: &[Vec<f32>],
    truth: &[HashSet<usize>],
    ms: &[usize],
    efcs: &[usize],
    efs: &[usize],
    dist: impl Fn() -> D,
) {
    let n = docs.len();
    for &m in ms {
        for &efc in efcs {
            let graph = Hnsw::<f32, D>::new(m, n, 16, efc, dist());
            let batch: Vec<(&[f32], usize)> = docs
                .iter()
                .enumerate()
                .map(|(i, d)| (d.as_slice(), i))
                .collect();
            let t = Instant::now();
            graph.parallel_insert_slice(&batch);
            let build_ms = t.elapsed().as_millis();
            for &ef in efs {
                let t = Instant::now();
                let hits: usize = queries
                    .iter()
                    .zip(truth)
                    .map(|(q, truth)| {
                        graph
                            .search(q, K, ef.max(K))
                            .iter()
                            .filter(|nb| truth.contains(&nb.d_id))
                            .count()
                    })
                    .sum();
                let query_ms = t.elapsed().as_secs_f64() * 1e3 / QUERIES as f64;
                println!(
                    "{}",
                    serde_json::json!({"n": n, "distance": std::any::type_name::<D>().rsplit("::").next(), "m": m, "ef_construction": efc, "ef_search": ef,
                        "build_ms": build_ms, "query_ms": (query_ms * 1000.0).round() / 1000.0,
                        "recall_at_10": hits as f64 / (QUERIES * K) as f64})
                );
            }
        }
    }
}
