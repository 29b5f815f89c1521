//! The local store's approximate index: an HNSW graph (`hnsw_rs`) over the
//! stored embeddings, used once a store holds `threshold` entries or more.
//!
//! Vectors enter the graph normalised, with the Euclidean distance: on unit
//! vectors it ranks as cosine does (`|a-b|² = 2 - 2cos`), and `hnsw_rs`'s
//! cosine and dot distances assert on rounding (a dot of 1.0000001) where
//! this one cannot. Vectors of zero or non-finite norm stay out of the graph
//! (exact search scores them 0, so they rank last there too).
//!
//! The graph is not persisted: `hnsw_rs`'s reloader asserts (panics) on a
//! damaged file and ties the graph's lifetime to the loader, so the graph is
//! rebuilt from the store file when the store is first used after a start.

use genkit_core::{Error, Result};
use hnsw_rs::prelude::{DistL2, Hnsw};
use std::sync::Arc;

/// How the local store's approximate (HNSW) index is built and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswOptions {
    threshold: usize,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
}

impl Default for HnswOptions {
    /// Approximate search from 10,000 entries; 32 links a node, candidate
    /// lists of 200 when building and searching (recall@10 above 0.99 on
    /// random 384-dimensional vectors).
    fn default() -> Self {
        Self {
            threshold: 10_000,
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
    graph: Arc<Hnsw<'static, f32, DistL2>>,
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
                DistL2 {},
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
        .map_err(|e| Error::internal(format!("building the HNSW index: {e}")))?;
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
