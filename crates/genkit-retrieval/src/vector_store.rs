//! What every vector store plugin does the same way: register its indexer
//! and retriever pair, embed the documents it stores and the queries it
//! answers, and key documents by their content.
//!
//! A store implements [`VectorStore`] (store documents, find the nearest to
//! a query) and registers it with [`define_vector_store`]; the
//! [`local_vector_store`](crate::local_vector_store) and `genkit-pgvector`
//! are built so.

use std::future::Future;
use std::sync::Arc;

use genkit_core::action::ActionCtx;
use genkit_core::{Error, Registry, Result};
use genkit_model::embedder::embed_many;
use genkit_model::types::{DocumentData, Embedding, RetrieverResponse};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::indexer::{Indexer, IndexerOptions, define_indexer};
use crate::retriever::{Retriever, RetrieverOptions, define_retriever};

/// A vector store's two operations, which [`define_vector_store`] registers
/// as an indexer and a retriever.
pub trait VectorStore: Send + Sync + 'static {
    /// The retriever's options (their JSON schema is the retriever's
    /// options schema).
    type RetrieverOptions: DeserializeOwned + JsonSchema + Send + 'static;

    /// Stores `documents` (the indexer; its options are ignored).
    fn index(
        &self,
        ctx: &ActionCtx,
        documents: Vec<DocumentData>,
    ) -> impl Future<Output = Result<()>> + Send;

    /// The documents nearest to `query`, best first (the retriever).
    fn retrieve(
        &self,
        ctx: &ActionCtx,
        query: DocumentData,
        options: Option<Self::RetrieverOptions>,
    ) -> impl Future<Output = Result<Vec<DocumentData>>> + Send;
}

/// A vector store's registered actions.
#[derive(Debug, Clone)]
pub struct VectorStoreActions<O> {
    /// `/indexer/<plugin>/<index>`.
    pub indexer: Indexer,
    /// `/retriever/<plugin>/<index>`, with the store's options.
    pub retriever: Retriever<O>,
}

/// Registers `store` as the indexer and the retriever `<plugin>/<index_name>`,
/// the retriever labelled `retriever_label` (the Developer UI shows it).
pub fn define_vector_store<S: VectorStore>(
    registry: &Registry,
    plugin: &str,
    index_name: &str,
    retriever_label: String,
    store: Arc<S>,
) -> Result<VectorStoreActions<S::RetrieverOptions>> {
    let name = format!("{plugin}/{index_name}");
    let s = store.clone();
    let retriever = define_retriever(
        registry,
        RetrieverOptions::new(name.clone()).label(retriever_label),
        move |query, options: Option<S::RetrieverOptions>, ctx| {
            let s = s.clone();
            async move {
                let documents = s.retrieve(&ctx, query, options).await?;
                Ok(RetrieverResponse::new(documents))
            }
        },
    )?;
    let indexer = define_indexer(
        registry,
        IndexerOptions::new(name),
        move |documents, _options: Option<Value>, ctx| {
            let s = store.clone();
            async move { s.index(&ctx, documents).await }
        },
    )?;
    Ok(VectorStoreActions { indexer, retriever })
}

/// How a store embeds: the registered embedder `embedder`, called with
/// `options`.
#[derive(Debug, Clone, Copy)]
pub struct StoreEmbedder<'a> {
    /// The embedder's name.
    pub embedder: &'a str,
    /// The options passed to it.
    pub options: Option<&'a Value>,
}

impl StoreEmbedder<'_> {
    async fn embed(&self, ctx: &ActionCtx, docs: Vec<DocumentData>) -> Result<Vec<Embedding>> {
        embed_many(
            ctx.require_registry()?,
            self.embedder,
            docs,
            self.options.cloned(),
        )
        .await
    }

    /// Each document with its embedding. When the embedder returns several
    /// embeddings for some document, the documents are embedded one by one
    /// and each embedding is stored with a copy of its document carrying the
    /// embedding's metadata as `embedMetadata` (Genkit's
    /// `getEmbeddingDocuments`).
    pub async fn documents(
        &self,
        ctx: &ActionCtx,
        docs: Vec<DocumentData>,
    ) -> Result<Vec<(DocumentData, Embedding)>> {
        let embeddings = self.embed(ctx, docs.clone()).await?;
        if embeddings.len() == docs.len() {
            return Ok(docs.into_iter().zip(embeddings).collect());
        }
        let mut out = Vec::new();
        for doc in docs {
            for embedding in self.embed(ctx, vec![doc.clone()]).await? {
                let mut doc = doc.clone();
                if let Some(m) = &embedding.metadata {
                    doc.metadata
                        .get_or_insert_with(Map::new)
                        .insert("embedMetadata".into(), Value::Object(m.clone()));
                }
                out.push((doc, embedding));
            }
        }
        Ok(out)
    }

    /// The query's embedding (its first, if the embedder returns several);
    /// `INTERNAL` when the embedder returns none.
    pub async fn query(&self, ctx: &ActionCtx, query: DocumentData) -> Result<Embedding> {
        self.embed(ctx, vec![query])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::internal(format!("embedder {} returned no embedding", self.embedder))
            })
    }
}

/// A document's key in a store: the 128-bit FNV-1a hash of its JSON, as 32
/// hex digits, so a document indexed twice is stored once.
pub fn document_key(document_json: &[u8]) -> String {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for &b in document_json {
        h ^= u128::from(b);
        h = h.wrapping_mul(0x0000000001000000000000000000013B);
    }
    format!("{h:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_keys_are_fnv1a_128() {
        // FNV-1a of the empty input is the offset basis; of "a", the
        // published test vector.
        assert_eq!(document_key(b""), "6c62272e07bb014262b821756295c58d");
        assert_eq!(document_key(b"a"), "d228cb696f1a8caf78912b704e4a8964");
        assert_ne!(document_key(b"{\"x\":1}"), document_key(b"{\"x\":2}"));
    }
}
