//! An embedded vector store for development and mid-sized sets: an indexer
//! and a retriever pair over any registered embedder, exact (cosine) search
//! or, from [`HnswOptions::threshold`] entries (`hnsw` feature), an HNSW
//! graph — Genkit JS's `@genkit-ai/dev-local-vectorstore`, with its action
//! names (`devLocalVectorstore/<index>`) and default file name
//! (`__db_<index>.json`).
//!
//! # Files
//!
//! For the configured path `P` (default `__db_<index>.json`):
//!
//! - `P` with the extension `.vdb`: the data, an append-only log. It starts
//!   with the 8 bytes `GKVSTOR\x01`; then one frame per `index` call that
//!   stored anything: `GKVF`, the payload's length (u32) and its CRC-32
//!   (u32), then the payload: a record count (u32) and per record its JSON
//!   length (u32), its JSON `{"id", "doc", "metadata"?}` (the document and
//!   the embedding's metadata), its dimension count (u32) and the vector as
//!   f32s. Integers and floats are little-endian. An `index` call appends
//!   one frame and syncs the file before it returns, holding an exclusive
//!   advisory lock on the file (`flock`/`LockFileEx`) so that two processes
//!   never interleave their writes; each handle reads the frames others
//!   appended before writing and before a query.
//! - `P` with the extension `.hnsw`: the HNSW graph (see [`HnswOptions`]
//!   for its layout), a cache rebuilt when missing, stale or damaged.
//! - `P` itself, when it is a JSON store (Genkit JS's layout,
//!   `{id: {doc, embedding}}`, as Genkit JS and earlier versions of this
//!   store write it): imported into the `.vdb` file when that holds no
//!   records yet, and left as it is (it is not updated afterwards).
//!
//! A crash during an append leaves a torn last frame: its length or
//! checksum does not match, and it is cut off on the next open (earlier
//! frames are never rewritten). An invalid frame followed by valid ones is
//! damage, not a torn append: the store refuses to open, naming the file
//! and the byte offset, and writes nothing.
//!
//! Differences from Genkit JS, on purpose: the data is read once (on first
//! use, then only what other processes append) rather than on every query,
//! and appended rather than rewritten; an unreadable file is an error and
//! is never overwritten; a query whose vector length differs from the
//! index's is `FAILED_PRECONDITION` (Genkit JS scores such documents 0);
//! entry ids are an FNV-1a hash of the document's JSON, not MD5. Genkit JS
//! cannot read the `.vdb` file.

#[cfg(feature = "hnsw")]
mod hnsw;
mod log;
#[cfg(feature = "hnsw")]
pub use hnsw::HnswOptions;

use crate::indexer::Indexer;
use crate::retriever::Retriever;
use crate::vector_store::{StoreEmbedder, VectorStore, define_vector_store, document_key};
use genkit_core::action::ActionCtx;
use genkit_core::{Error, Registry, Result};
use genkit_model::types::{CommonRetrieverOptions, DocumentData, Embedding, Metadata};
use log::Log;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::Mutex;

/// The plugin name Genkit JS's store is registered under.
pub const PLUGIN_NAME: &str = "devLocalVectorstore";

/// How many documents a query returns unless its options say `k`.
pub const DEFAULT_K: usize = 3;

/// How to define a local vector store.
#[derive(Debug, Clone)]
pub struct LocalVectorStoreOptions {
    index_name: String,
    embedder: String,
    embedder_options: Option<Value>,
    path: Option<PathBuf>,
    #[cfg(feature = "hnsw")]
    hnsw: HnswOptions,
}

impl LocalVectorStoreOptions {
    /// A store named `index_name` whose documents and queries the embedder
    /// `embedder` embeds.
    pub fn new(index_name: impl Into<String>, embedder: impl Into<String>) -> Self {
        Self {
            index_name: index_name.into(),
            embedder: embedder.into(),
            embedder_options: None,
            path: None,
            #[cfg(feature = "hnsw")]
            hnsw: HnswOptions::default(),
        }
    }

    /// When and how the approximate index is used (by default from 50,000
    /// entries; [`HnswOptions::disabled`] keeps exact search at any size).
    #[cfg(feature = "hnsw")]
    pub fn hnsw(mut self, options: HnswOptions) -> Self {
        self.hnsw = options;
        self
    }

    /// The index name.
    pub fn index_name(&self) -> &str {
        &self.index_name
    }

    /// Options passed to the embedder.
    pub fn embedder_options(mut self, options: Value) -> Self {
        self.embedder_options = Some(options);
        self
    }

    /// Where the store is persisted (default `__db_<index>.json` in the
    /// working directory, as in Genkit JS). The data goes to this path with
    /// the extension `.vdb` and the graph to `.hnsw` (see the module docs);
    /// a JSON store at this path itself is imported on first use.
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The data file: the path with the extension `.vdb` (see the module
    /// docs), e.g. to move a store built under another name into place.
    pub fn data_file(&self) -> PathBuf {
        Paths::new(&self.file()).data
    }

    /// The HNSW graph file beside the data: the path with the extension
    /// `.hnsw` (a cache; absent until the store is large enough).
    pub fn graph_file(&self) -> PathBuf {
        Paths::new(&self.file()).graph
    }

    fn file(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("__db_{}.json", self.index_name)))
    }
}

/// One stored document: its id, the document, the embedding's metadata
/// and the vector.
pub(super) struct Record {
    id: String,
    doc: DocumentData,
    metadata: Option<Metadata>,
    vector: Vec<f32>,
}

/// The dot product: the search's and the graph's inner loop (about 70% of
/// building the graph's CPU time in a profile). On x86-64 CPUs with AVX2
/// and FMA (checked once at run time; no `unsafe`) the lanes below become
/// four 256-bit fused multiply-adds a step; elsewhere the baseline build's
/// vector instructions.
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return simd.vectorize(
            #[inline(always)]
            || dot_lanes::<true>(a, b),
        );
    }
    dot_lanes::<false>(a, b)
}

/// The dot products of `q` with four rows at once, so that the four rows'
/// loads from memory overlap: in a large store the rows a graph search
/// reads are scattered and mostly not in the cache, and waiting for them
/// is most of a distance's cost. Dispatched as [`dot`] is.
#[cfg(feature = "hnsw")]
pub(super) fn dot4(q: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        return simd.vectorize(
            #[inline(always)]
            || dot4_lanes::<true>(q, rows),
        );
    }
    dot4_lanes::<false>(q, rows)
}

/// [`dot4`]: per row 16 lanes (eight vector accumulators in all), each
/// row's lanes in an array of its own (an array of arrays was not
/// vectorized).
#[cfg(feature = "hnsw")]
#[inline(always)]
fn dot4_lanes<const FMA: bool>(q: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
    const LANES: usize = 16;
    let n = rows.iter().fold(q.len(), |n, r| n.min(r.len()));
    let whole = n - n % LANES;
    let (mut a0, mut a1, mut a2, mut a3) =
        ([0f32; LANES], [0f32; LANES], [0f32; LANES], [0f32; LANES]);
    let steps = q[..whole]
        .chunks_exact(LANES)
        .zip(rows[0][..whole].chunks_exact(LANES))
        .zip(rows[1][..whole].chunks_exact(LANES))
        .zip(rows[2][..whole].chunks_exact(LANES))
        .zip(rows[3][..whole].chunks_exact(LANES));
    for ((((x, y0), y1), y2), y3) in steps {
        for i in 0..LANES {
            a0[i] = madd::<FMA>(x[i], y0[i], a0[i]);
            a1[i] = madd::<FMA>(x[i], y1[i], a1[i]);
            a2[i] = madd::<FMA>(x[i], y2[i], a2[i]);
            a3[i] = madd::<FMA>(x[i], y3[i], a3[i]);
        }
    }
    let mut out = [a0, a1, a2, a3].map(|a| a.iter().sum::<f32>());
    for (o, row) in out.iter_mut().zip(rows) {
        *o += q[whole..n]
            .iter()
            .zip(&row[whole..n])
            .map(|(x, y)| x * y)
            .sum::<f32>();
    }
    out
}

/// `acc + x * y`, fused when `FMA`.
#[inline(always)]
fn madd<const FMA: bool>(x: f32, y: f32, acc: f32) -> f32 {
    if FMA { x.mul_add(y, acc) } else { acc + x * y }
}

/// The dot product summed in 32 independent lanes, so that the compiler
/// can keep several vector accumulators in flight (one sequential sum may
/// not be reordered; a single vector of lanes waits on its own adds); the
/// rounding differs from a sequential sum only in the last bits. `FMA`:
/// fused multiply-adds (only where the CPU has them: elsewhere `mul_add`
/// is a slow library call).
#[inline(always)]
fn dot_lanes<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 32;
    let mut lanes = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            lanes[i] = madd::<FMA>(x[i], y[i], lanes[i]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

fn norm(v: &[f32]) -> f32 {
    dot(v, v).sqrt()
}

/// The entry's id: the document's [`document_key`].
fn entry_id(doc: &DocumentData) -> Result<String> {
    Ok(document_key(&serde_json::to_vec(doc)?))
}

/// The store's files for the configured path.
struct Paths {
    data: PathBuf,
    legacy: Option<PathBuf>,
    graph: PathBuf,
}

impl Paths {
    fn new(path: &Path) -> Self {
        let data = path.with_extension("vdb");
        Self {
            legacy: (data != path).then(|| path.to_path_buf()),
            graph: path.with_extension("hnsw"),
            data,
        }
    }
}

/// The records of a JSON store (`{id: {doc, embedding}}`) at `path`; none
/// when there is no file.
fn read_legacy(path: &Path) -> Result<Vec<Record>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::failed_precondition(format!(
                "reading the vector store {}: {e}",
                path.display()
            ))
            .with_source(e));
        }
    };
    #[derive(serde::Deserialize)]
    struct Entry {
        doc: DocumentData,
        embedding: Embedding,
    }
    let map: Map<String, Value> = serde_json::from_str(&text).map_err(|e| {
        Error::failed_precondition(format!(
            "the vector store {} is not a store file: {e}",
            path.display()
        ))
        .with_source(e)
    })?;
    let mut records = Vec::with_capacity(map.len());
    for (id, value) in map {
        let entry: Entry = serde_json::from_value(value).map_err(|e| {
            Error::failed_precondition(format!(
                "entry {id} of the vector store {}: {e}",
                path.display()
            ))
            .with_source(e)
        })?;
        records.push(Record {
            id,
            doc: entry.doc,
            metadata: entry.embedding.metadata,
            vector: entry.embedding.embedding,
        });
    }
    tracing::info!(
        "vector store {}: importing {} entries",
        path.display(),
        records.len()
    );
    Ok(records)
}

/// A store in memory: its records' documents and vectors, and its log.
struct Store {
    log: Log,
    data_path: PathBuf,
    ids: Vec<String>,
    docs: Vec<DocumentData>,
    by_id: HashMap<String, usize>,
    dims: Option<usize>,
    /// Entry `i`'s vector is `vectors[i * dims..(i + 1) * dims]`.
    vectors: Vec<f32>,
    norms: Vec<f32>,
    #[cfg(feature = "hnsw")]
    graph: Option<hnsw::Graph>,
}

impl Store {
    fn open(paths: &Paths) -> Result<Self> {
        let legacy = paths.legacy.clone();
        let (log, records) = Log::open(&paths.data, || match &legacy {
            Some(p) => read_legacy(p),
            None => Ok(Vec::new()),
        })?;
        let mut store = Self {
            log,
            data_path: paths.data.clone(),
            ids: Vec::new(),
            docs: Vec::new(),
            by_id: HashMap::new(),
            dims: None,
            vectors: Vec::new(),
            norms: Vec::new(),
            #[cfg(feature = "hnsw")]
            graph: None,
        };
        store.take_in(records)?;
        Ok(store)
    }

    #[cfg_attr(not(feature = "hnsw"), allow(dead_code))]
    fn len(&self) -> usize {
        self.docs.len()
    }

    /// Adds records read from the file (or just appended to it).
    fn take_in(&mut self, records: Vec<Record>) -> Result<()> {
        self.vectors
            .reserve(records.len() * self.dims.unwrap_or_default());
        for r in records {
            let dims = *self.dims.get_or_insert(r.vector.len());
            if r.vector.len() != dims {
                return Err(Error::failed_precondition(format!(
                    "the vector store {} holds vectors of {dims} and of {} dimensions",
                    self.data_path.display(),
                    r.vector.len()
                )));
            }
            self.by_id.insert(r.id.clone(), self.docs.len());
            self.norms.push(norm(&r.vector));
            self.vectors.extend_from_slice(&r.vector);
            self.ids.push(r.id);
            self.docs.push(r.doc);
        }
        Ok(())
    }

    #[cfg(feature = "hnsw")]
    fn view(&self) -> hnsw::Vectors<'_> {
        hnsw::Vectors {
            data: &self.vectors,
            dims: self.dims.unwrap_or_default(),
            norms: &self.norms,
        }
    }

    /// The `k` entries most similar to `query`, best first (ties in
    /// insertion order).
    fn search(&self, query: &[f32], k: usize) -> Result<Vec<DocumentData>> {
        let Some(dims) = self.dims else {
            return Ok(Vec::new());
        };
        if dims != query.len() {
            return Err(Error::failed_precondition(format!(
                "the query embedding has {} dimensions, the index's have {dims}",
                query.len()
            )));
        }
        // The graph, when it covers every entry and finds enough of them
        // (it holds no vectors without a direction; exact search ranks
        // those last).
        #[cfg(feature = "hnsw")]
        if let Some(graph) = &self.graph
            && graph.len() == self.len()
            && let Some(mut found) = graph.search(&self.view(), query, k)
            && found.len() >= k.min(self.len())
        {
            found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            found.truncate(k);
            return Ok(found
                .into_iter()
                .filter_map(|(_, i)| self.docs.get(i).cloned())
                .collect());
        }
        if k == 0 || dims == 0 {
            return Ok(self.docs.iter().take(k).cloned().collect());
        }
        let qn = norm(query);
        let mut scored: Vec<(f32, usize)> = self
            .vectors
            .chunks_exact(dims)
            .zip(&self.norms)
            .enumerate()
            .map(|(i, (v, n))| {
                let s = dot(v, query) / (n * qn);
                (if s.is_finite() { s } else { 0.0 }, i)
            })
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if k < scored.len() {
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_by(order);
        Ok(scored
            .into_iter()
            .map(|(_, i)| self.docs[i].clone())
            .collect())
    }
}

/// Runs CPU-heavy work (building the graph) without stalling the async
/// runtime's other tasks where the runtime allows it.
#[cfg(feature = "hnsw")]
fn cpu_work<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

struct Shared {
    opts: LocalVectorStoreOptions,
    paths: Paths,
    store: Mutex<Option<Store>>,
}

impl Shared {
    fn embedder(&self) -> StoreEmbedder<'_> {
        StoreEmbedder {
            embedder: &self.opts.embedder,
            options: self.opts.embedder_options.as_ref(),
        }
    }

    /// Embeds and stores `docs` (documents already stored are skipped).
    async fn embed_and_store(&self, ctx: &ActionCtx, docs: Vec<DocumentData>) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let embedded = self.embedder().documents(ctx, docs).await?;
        let mut guard = self.store.lock().await;
        let store = self.loaded(&mut guard)?;
        let known = &store.by_id;
        let dims = store.dims;
        let (theirs, ours) = store.log.append_with(|theirs| {
            let mut dims = dims.or_else(|| theirs.first().map(|r| r.vector.len()));
            let mut seen: HashSet<String> = theirs.iter().map(|r| r.id.clone()).collect();
            let mut ours = Vec::new();
            for (doc, embedding) in &embedded {
                let len = embedding.embedding.len();
                if let Some(d) = dims
                    && d != len
                {
                    return Err(Error::failed_precondition(format!(
                        "the embedder returned {len} dimensions, the index's have {d}"
                    )));
                }
                dims = Some(len);
                let id = entry_id(doc)?;
                if known.contains_key(&id) || !seen.insert(id.clone()) {
                    continue;
                }
                ours.push(Record {
                    id,
                    doc: doc.clone(),
                    metadata: embedding.metadata.clone(),
                    vector: embedding.embedding.clone(),
                });
            }
            Ok(ours)
        })?;
        let taken = store.take_in(theirs).and_then(|()| store.take_in(ours));
        if let Err(e) = taken {
            // Memory no longer mirrors the file: read it again next time.
            *guard = None;
            return Err(e);
        }
        self.sync_index(store);
        Ok(())
    }

    /// The store, read from its files on first use and brought up to what
    /// other handles appended since.
    fn loaded<'a>(&self, slot: &'a mut Option<Store>) -> Result<&'a mut Store> {
        if let Some(store) = slot.as_mut() {
            match store.log.refresh() {
                Ok(Some(records)) if records.is_empty() => {}
                Ok(Some(records)) => {
                    if let Err(e) = store.take_in(records) {
                        *slot = None;
                        return Err(e);
                    }
                    self.sync_index(store);
                }
                Ok(None) => *slot = None,
                Err(e) => return Err(e),
            }
        }
        if slot.is_none() {
            let mut store = Store::open(&self.paths)?;
            self.sync_index(&mut store);
            *slot = Some(store);
        }
        slot.as_mut()
            .ok_or_else(|| Error::internal("vector store not loaded"))
    }

    /// Brings the graph up to the store's entries once the store is large
    /// enough: from the graph file when it is usable, otherwise built; and
    /// writes the graph file when it lags (see `Graph::wants_saving`).
    #[cfg(feature = "hnsw")]
    fn sync_index(&self, store: &mut Store) {
        let n = store.len();
        if !self.opts.hnsw.applies(n) {
            return;
        }
        let dims = store.dims.unwrap_or_default();
        if store.graph.is_none() {
            store.graph = Some(self.read_graph(store, dims));
        }
        let view = hnsw::Vectors {
            data: &store.vectors,
            dims,
            norms: &store.norms,
        };
        let Some(graph) = store.graph.as_mut() else {
            return;
        };
        cpu_work(|| graph.extend(&view));
        if graph.wants_saving()
            && let Some(frame) = store.log.frames.last().copied()
            && frame.records == graph.len()
            && let Err(e) = cpu_work(|| graph.save(&self.paths.graph, frame, dims))
        {
            tracing::warn!(
                "vector store {}: writing its graph {}: {e}",
                self.opts.index_name,
                self.paths.graph.display()
            );
        }
    }

    /// The graph file's graph, or a new one (with the reason logged).
    #[cfg(feature = "hnsw")]
    fn read_graph(&self, store: &Store, dims: usize) -> hnsw::Graph {
        let why = match std::fs::read(&self.paths.graph) {
            Ok(bytes) => {
                match hnsw::Graph::load(&bytes, &self.opts.hnsw, dims, &store.log.frames) {
                    Ok(g) if g.len() <= store.len() => return g,
                    Ok(_) => "it covers more records than the store holds".to_string(),
                    Err(why) => why,
                }
            }
            Err(e) => e.to_string(),
        };
        tracing::info!(
            "vector store {}: building its graph ({} not used: {why})",
            self.opts.index_name,
            self.paths.graph.display()
        );
        hnsw::Graph::new(&self.opts.hnsw)
    }

    #[cfg(not(feature = "hnsw"))]
    fn sync_index(&self, _store: &mut Store) {}

    /// The `k` stored documents nearest to `query`.
    async fn nearest(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        k: usize,
    ) -> Result<Vec<DocumentData>> {
        let query = self.embedder().query(ctx, query).await?;
        let mut guard = self.store.lock().await;
        self.loaded(&mut guard)?.search(&query.embedding, k)
    }
}

impl VectorStore for Shared {
    type RetrieverOptions = CommonRetrieverOptions;

    async fn index(&self, ctx: &ActionCtx, documents: Vec<DocumentData>) -> Result<()> {
        self.embed_and_store(ctx, documents).await
    }

    async fn retrieve(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        options: Option<CommonRetrieverOptions>,
    ) -> Result<Vec<DocumentData>> {
        let k = options.and_then(|o| o.k).map_or(DEFAULT_K, |k| k as usize);
        self.nearest(ctx, query, k).await
    }
}

/// A local vector store's indexer and retriever.
#[derive(Debug, Clone)]
pub struct LocalVectorStore {
    /// `/indexer/devLocalVectorstore/<index>`.
    pub indexer: Indexer,
    /// `/retriever/devLocalVectorstore/<index>`, options `{k}` (3 by default).
    pub retriever: Retriever<CommonRetrieverOptions>,
}

/// Defines a local vector store: registers the indexer and the retriever
/// `devLocalVectorstore/<index>`.
pub fn define_local_vector_store(
    registry: &Registry,
    opts: LocalVectorStoreOptions,
) -> Result<LocalVectorStore> {
    let shared = Arc::new(Shared {
        paths: Paths::new(&opts.file()),
        opts: opts.clone(),
        store: Mutex::new(None),
    });
    let actions = define_vector_store(
        registry,
        PLUGIN_NAME,
        &opts.index_name,
        format!("Local file-based Retriever - {}", opts.index_name),
        shared,
    )?;
    Ok(LocalVectorStore {
        indexer: actions.indexer,
        retriever: actions.retriever,
    })
}

#[cfg(test)]
mod tests {
    use super::dot;

    /// A plain sequential sum in f64, the reference.
    fn reference(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    #[test]
    fn the_vector_kernels_agree_with_a_plain_sum_at_every_length() {
        let mut x = 0x1234_5678_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as f32 / u32::MAX as f32 * 2.0 - 1.0
        };
        for len in [0, 1, 5, 15, 16, 17, 31, 32, 33, 100, 384, 385] {
            let q: Vec<f32> = (0..len).map(|_| next()).collect();
            let rows: Vec<Vec<f32>> = (0..4).map(|_| (0..len).map(|_| next()).collect()).collect();
            let tolerance = 1e-5 * (1.0 + len as f64);
            for row in &rows {
                let want = reference(&q, row);
                assert!(
                    (f64::from(dot(&q, row)) - want).abs() < tolerance,
                    "dot, {len}"
                );
            }
            #[cfg(feature = "hnsw")]
            {
                let four = super::dot4(&q, [&rows[0], &rows[1], &rows[2], &rows[3]]);
                for (row, got) in rows.iter().zip(four) {
                    let want = reference(&q, row);
                    assert!((f64::from(got) - want).abs() < tolerance, "dot4, {len}");
                }
            }
        }
    }
}
