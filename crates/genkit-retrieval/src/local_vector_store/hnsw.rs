//! The local store's approximate index: an HNSW graph (`hnsw_rs`) over the
//! stored embeddings, used once a store holds `threshold` entries or more.
//!
//! Vectors enter the graph normalised, with the Euclidean distance: on unit
//! vectors it ranks as cosine does (`|a-b|² = 2 - 2cos`), and `hnsw_rs`'s
//! cosine and dot distances assert on rounding (a dot of 1.0000001) where
//! this one cannot ([`LaneL2`], a faster form of its `DistL2`). Vectors of
//! zero or non-finite norm stay out of the graph
//! (exact search scores them 0, so they rank last there too).
//!
//! The graph is not persisted: `hnsw_rs`'s reloader asserts (panics) on a
//! damaged file and ties the graph's lifetime to the loader, so the graph is
//! rebuilt from the store file when the store is first used after a start.

use genkit_core::{Error, Result};
use hnsw_rs::prelude::{Distance, Hnsw};
use std::sync::Arc;

/// The graph's distance: [`LaneL2`] in optimised builds. Debug builds keep
/// `hnsw_rs`'s `DistL2`: the graph code is compiled in this crate either
/// way, but `DistL2`'s body is compiled in `anndists`, which the workspace
/// optimises in debug builds too (`[profile.dev.package.anndists]`), while
/// `LaneL2`'s would be compiled unoptimised here, making the recall test
/// many times slower. Both are the Euclidean distance (see the test below).
#[cfg(not(debug_assertions))]
type Dist = LaneL2;
#[cfg(debug_assertions)]
type Dist = hnsw_rs::prelude::DistL2;

/// The Euclidean distance, summed in eight independent lanes.
///
/// `hnsw_rs`'s `DistL2` is one sequential sum (its SIMD path needs the
/// `simdeez_f` feature and another crate), which the compiler may not
/// reorder, so it runs one float at a time; building and searching the
/// graph is mostly distance computations. Eight partial sums let it use
/// vector instructions: building a graph of 10,000 384-dimensional entries
/// took 1.7x less CPU time (`bench/rust`'s vector_bench). The rounding
/// differs from a single sum only in the last bits.
#[derive(Debug, Default, Clone, Copy)]
#[cfg_attr(debug_assertions, allow(dead_code))]
pub(super) struct LaneL2;

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

/// How the local store's approximate (HNSW) index is built and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswOptions {
    threshold: usize,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
}

impl Default for HnswOptions {
    /// Approximate search from 50,000 entries; 32 links a node, candidate
    /// lists of 200 when building and searching.
    ///
    /// Measured (bench/RESULTS.md, 384-dimensional all-MiniLM-L6-v2
    /// embeddings of documentation sentences, 2 cores): at 100,000 entries
    /// recall@10 against exact search is 0.999 with these lists, a query
    /// takes about 4 ms against an exact scan's 34 ms, and building the
    /// graph takes two to four minutes. Below the threshold exact search
    /// is cheap (about 3 ms at 10,000 entries) and, as the graph is rebuilt
    /// at every start, its build costs more than it saves for most uses;
    /// lower the threshold for a long-running server with many queries. On vectors without
    /// neighbourhood structure (uniform random ones) recall falls with size:
    /// 0.96 at 10,000 entries, 0.49 at 100,000.
    fn default() -> Self {
        Self {
            threshold: 50_000,
            max_connections: 32,
            ef_construction: 200,
            ef_search: 200,
        }
    }
}

impl HnswOptions {
    /// Options that never build the index: exact search at every size.
    pub fn disabled() -> Self {
        Self {
            threshold: usize::MAX,
            ..Self::default()
        }
    }

    /// From how many stored entries the index is built and searched.
    pub fn threshold(mut self, entries: usize) -> Self {
        self.threshold = entries;
        self
    }

    /// Links per node in the graph (`M`; 1 to 256).
    pub fn max_connections(mut self, m: usize) -> Self {
        self.max_connections = m.clamp(1, 256);
        self
    }

    /// Candidate list size while inserting (`efConstruction`).
    pub fn ef_construction(mut self, ef: usize) -> Self {
        self.ef_construction = ef.max(1);
        self
    }

    /// Candidate list size while searching (`ef`; at least `k` is used).
    pub fn ef_search(mut self, ef: usize) -> Self {
        self.ef_search = ef.max(1);
        self
    }

    pub(super) fn applies(&self, entries: usize) -> bool {
        entries >= self.threshold
    }
}

/// `v` scaled to unit length, or `None` when its norm is zero or not finite.
fn unit(v: &[f32]) -> Option<Vec<f32>> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !n.is_finite() || n == 0.0 {
        return None;
    }
    let u: Vec<f32> = v.iter().map(|x| x / n).collect();
    u.iter().all(|x| x.is_finite()).then_some(u)
}

/// The graph over a store's entries `0..len`.
pub(super) struct Ann {
    graph: Arc<Hnsw<'static, f32, Dist>>,
    len: usize,
    ef_search: usize,
}

impl Ann {
    /// An empty graph sized for `capacity` entries.
    pub(super) fn new(opts: &HnswOptions, capacity: usize) -> Self {
        Self {
            graph: Arc::new(Hnsw::new(
                opts.max_connections,
                capacity.max(1),
                16,
                opts.ef_construction,
                Dist::default(),
            )),
            len: 0,
            ef_search: opts.ef_search,
        }
    }

    /// How many store entries the graph covers.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Adds the store's next entries (`vectors[i]` is entry `len + i`), on
    /// a blocking thread (insertion is CPU work, parallel on rayon's pool).
    pub(super) async fn extend(&mut self, vectors: Vec<Vec<f32>>) -> Result<()> {
        let first = self.len;
        let count = vectors.len();
        let graph = self.graph.clone();
        tokio::task::spawn_blocking(move || {
            let units: Vec<(Vec<f32>, usize)> = vectors
                .iter()
                .enumerate()
                .filter_map(|(i, v)| unit(v).map(|u| (u, first + i)))
                .collect();
            let batch: Vec<(&[f32], usize)> =
                units.iter().map(|(u, i)| (u.as_slice(), *i)).collect();
            graph.parallel_insert_slice(&batch);
        })
        .await
        .map_err(|e| Error::internal(format!("building the HNSW index: {e}")).with_source(e))?;
        self.len = first + count;
        Ok(())
    }

    /// The store indices of about the `k` entries nearest `query` with
    /// their cosine similarity, best first; `None` when the query has no
    /// direction (the caller searches exactly).
    pub(super) fn search(&self, query: &[f32], k: usize) -> Option<Vec<(f32, usize)>> {
        let q = unit(query)?;
        let found = self.graph.search(&q, k, self.ef_search.max(k));
        Some(
            found
                .into_iter()
                .map(|n| (1.0 - n.distance * n.distance / 2.0, n.d_id))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hnsw_rs::prelude::DistL2;

    #[test]
    fn lane_l2_is_the_euclidean_distance_at_every_length() {
        let mut x = 0x2545_f491_u32;
        let mut coord = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as f32 / u32::MAX as f32 * 2.0 - 1.0
        };
        for len in [0, 1, 7, 8, 9, 17, 384, 385] {
            let a: Vec<f32> = (0..len).map(|_| coord()).collect();
            let b: Vec<f32> = (0..len).map(|_| coord()).collect();
            let exact = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum::<f64>()
                .sqrt();
            let lanes = f64::from(LaneL2.eval(&a, &b));
            let scalar = f64::from(DistL2.eval(&a, &b));
            assert!(
                (lanes - exact).abs() <= 1e-5 * exact.max(1.0),
                "{len}: {lanes} vs {exact}"
            );
            assert!(
                (lanes - scalar).abs() <= 1e-5 * exact.max(1.0),
                "{len}: {lanes} vs {scalar}"
            );
        }
        assert_eq!(LaneL2.eval(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
    }
}
