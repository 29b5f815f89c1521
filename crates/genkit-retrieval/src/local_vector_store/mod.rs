//! An embedded vector store for development and small sets: an indexer and a
//! retriever pair over any registered embedder, exact (cosine) search, kept
//! in memory and persisted to one JSON file — Genkit JS's
//! `@genkit-ai/dev-local-vectorstore`, with its action names
//! (`devLocalVectorstore/<index>`), its default file (`__db_<index>.json`)
//! and its file layout (`{id: {doc, embedding}}`): it reads the files
//! Genkit JS writes (checked against a recording) and writes the same layout.
//!
//! Differences from Genkit JS, on purpose: the file is read once (on first
//! use) rather than on every query, and written atomically (a temporary
//! file renamed over it), so a failed write loses nothing; an unreadable
//! file is an error and is never overwritten; a query whose vector length
//! differs from the index's is `FAILED_PRECONDITION` (Genkit JS scores such
//! documents 0); entry ids are an FNV-1a hash of the document's JSON, not MD5.
//!
//! With the `hnsw` feature, a store of [`HnswOptions::threshold`] entries or
//! more (50,000 by default) answers queries from an approximate HNSW index
//! instead of scanning every entry; smaller stores are searched exactly.
//! The index lives in memory: it is rebuilt from the store file when the
//! store is first used after a start (see [`HnswOptions`]).

#[cfg(feature = "hnsw")]
mod hnsw;
#[cfg(feature = "hnsw")]
pub use hnsw::HnswOptions;

use crate::indexer::Indexer;
use crate::retriever::Retriever;
use crate::vector_store::{StoreEmbedder, VectorStore, define_vector_store, document_key};
use genkit_core::action::ActionCtx;
use genkit_core::{Error, Registry, Result};
use genkit_model::types::{CommonRetrieverOptions, DocumentData, Embedding};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
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

    /// When and how the approximate index is used (by default from 10,000
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
    /// working directory, as in Genkit JS).
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    fn file(&self) -> PathBuf {
        self.path
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("__db_{}.json", self.index_name)))
    }
}

/// One stored document, in the file's layout.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    doc: DocumentData,
    embedding: Embedding,
}

#[derive(Default)]
struct Store {
    ids: Vec<String>,
    entries: Vec<Entry>,
    norms: Vec<f32>,
    by_id: HashMap<String, usize>,
    #[cfg(feature = "hnsw")]
    ann: Option<hnsw::Ann>,
}

fn norm(v: &[f32]) -> f32 {
    v.iter().map(|x| x * x).sum::<f32>().sqrt()
}

/// The entry's id: the document's [`document_key`].
fn entry_id(doc: &DocumentData) -> Result<String> {
    Ok(document_key(&serde_json::to_vec(doc)?))
}

impl Store {
    fn load(path: &Path) -> Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => {
                return Err(Error::failed_precondition(format!(
                    "reading the vector store {}: {e}",
                    path.display()
                )));
            }
        };
        let map: Map<String, Value> = serde_json::from_str(&text).map_err(|e| {
            Error::failed_precondition(format!(
                "the vector store {} is not a store file: {e}",
                path.display()
            ))
            .with_source(e)
        })?;
        let mut store = Self::default();
        for (id, value) in map {
            let entry: Entry = serde_json::from_value(value).map_err(|e| {
                Error::failed_precondition(format!(
                    "entry {id} of the vector store {}: {e}",
                    path.display()
                ))
                .with_source(e)
            })?;
            store.push(id, entry);
        }
        Ok(store)
    }

    fn push(&mut self, id: String, entry: Entry) {
        self.by_id.insert(id.clone(), self.entries.len());
        self.norms.push(norm(&entry.embedding.embedding));
        self.ids.push(id);
        self.entries.push(entry);
    }

    fn truncate(&mut self, len: usize) {
        for id in self.ids.drain(len..) {
            self.by_id.remove(&id);
        }
        self.entries.truncate(len);
        self.norms.truncate(len);
    }

    fn dimensions(&self) -> Option<usize> {
        self.entries.first().map(|e| e.embedding.embedding.len())
    }

    /// Writes the store next to `path` and renames it over `path`.
    ///
    /// The entries are streamed to the file straight from the store, in
    /// insertion order: no JSON tree or whole-file string is built (every
    /// index call rewrites the file, so at 100,000 entries of 384
    /// dimensions that copy cost seconds per call and gigabytes of memory),
    /// and vectors are written as the f32 values they are (`0.1`, not the
    /// widened `0.10000000149011612`), about half the bytes.
    fn save(&self, path: &Path) -> Result<()> {
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "store.json".into());
        let tmp = path.with_file_name(format!(".{file_name}.tmp"));
        let written = std::fs::File::create(&tmp)
            .and_then(|file| {
                let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
                serde_json::to_writer_pretty(&mut out, &FileView(self))
                    .map_err(std::io::Error::other)?;
                std::io::Write::flush(&mut out)
            })
            .and_then(|()| std::fs::rename(&tmp, path));
        written.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::failed_precondition(format!("writing the vector store {}: {e}", path.display()))
                .with_source(e)
        })
    }

    /// The `k` entries most similar to `query`, best first (ties in
    /// insertion order).
    fn search(&self, query: &[f32], k: usize) -> Result<Vec<DocumentData>> {
        if let Some(d) = self.dimensions()
            && d != query.len()
        {
            return Err(Error::failed_precondition(format!(
                "the query embedding has {} dimensions, the index's have {d}",
                query.len()
            )));
        }
        #[cfg(feature = "hnsw")]
        if let Some(ann) = &self.ann
            && ann.len() == self.entries.len()
            && let Some(mut found) = ann.search(query, k)
        {
            found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            found.truncate(k);
            return Ok(found
                .into_iter()
                .filter_map(|(_, i)| self.entries.get(i).map(|e| e.doc.clone()))
                .collect());
        }
        let qn = norm(query);
        let mut scored: Vec<(f32, usize)> = self
            .entries
            .iter()
            .zip(&self.norms)
            .enumerate()
            .map(|(i, (e, n))| {
                let dot: f32 = e
                    .embedding
                    .embedding
                    .iter()
                    .zip(query)
                    .map(|(a, b)| a * b)
                    .sum();
                let s = dot / (n * qn);
                (if s.is_finite() { s } else { 0.0 }, i)
            })
            .collect();
        let order = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if k < scored.len() {
            if k == 0 {
                return Ok(Vec::new());
            }
            scored.select_nth_unstable_by(k - 1, order);
            scored.truncate(k);
        }
        scored.sort_by(order);
        Ok(scored
            .into_iter()
            .map(|(_, i)| self.entries[i].doc.clone())
            .collect())
    }
}

/// A store as its file's JSON object, `{id: {doc, embedding}}`.
struct FileView<'a>(&'a Store);

impl Serialize for FileView<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.ids.iter().zip(&self.0.entries))
    }
}

struct Shared {
    opts: LocalVectorStoreOptions,
    file: PathBuf,
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
        let entries: Vec<Entry> = self
            .embedder()
            .documents(ctx, docs)
            .await?
            .into_iter()
            .map(|(doc, embedding)| Entry { doc, embedding })
            .collect();
        let mut guard = self.store.lock().await;
        let store = self.loaded(&mut guard).await?;
        let before = store.entries.len();
        let mut dims = store.dimensions();
        for entry in entries {
            let len = entry.embedding.embedding.len();
            if dims.is_some_and(|d| d != len) {
                store.truncate(before);
                return Err(Error::failed_precondition(format!(
                    "the embedder returned {len} dimensions, the index's have {}",
                    dims.unwrap_or_default()
                )));
            }
            dims = Some(len);
            let id = entry_id(&entry.doc)?;
            if !store.by_id.contains_key(&id) {
                store.push(id, entry);
            }
        }
        if store.entries.len() == before {
            return Ok(());
        }
        if let Err(e) = store.save(&self.file) {
            // Memory stays what the file holds.
            store.truncate(before);
            return Err(e);
        }
        self.sync_index(store).await;
        Ok(())
    }

    /// The store, read from its file on first use.
    async fn loaded<'a>(&self, slot: &'a mut Option<Store>) -> Result<&'a mut Store> {
        if slot.is_none() {
            let mut store = Store::load(&self.file)?;
            self.sync_index(&mut store).await;
            *slot = Some(store);
        }
        slot.as_mut()
            .ok_or_else(|| Error::internal("vector store not loaded"))
    }

    /// Brings the approximate index up to the store's entries once the
    /// store is large enough; on failure queries fall back to exact search.
    #[cfg(feature = "hnsw")]
    async fn sync_index(&self, store: &mut Store) {
        let n = store.entries.len();
        if !self.opts.hnsw.applies(n) {
            return;
        }
        let ann = store
            .ann
            .get_or_insert_with(|| hnsw::Ann::new(&self.opts.hnsw, n));
        let from = ann.len();
        if from >= n {
            return;
        }
        let vectors = store.entries[from..]
            .iter()
            .map(|e| e.embedding.embedding.clone())
            .collect();
        if let Err(e) = ann.extend(vectors).await {
            tracing::warn!(
                "vector store {}: {e}; searching exactly",
                self.opts.index_name
            );
            store.ann = None;
        }
    }

    #[cfg(not(feature = "hnsw"))]
    async fn sync_index(&self, _store: &mut Store) {}

    /// The `k` stored documents nearest to `query`.
    async fn nearest(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        k: usize,
    ) -> Result<Vec<DocumentData>> {
        let query = self.embedder().query(ctx, query).await?;
        let mut guard = self.store.lock().await;
        self.loaded(&mut guard).await?.search(&query.embedding, k)
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
        file: opts.file(),
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
