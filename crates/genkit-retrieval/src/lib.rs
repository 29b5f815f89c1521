//! Genkit for Rust retrieval: the actions of a retrieval-augmented app.
//!
//! - [`retriever`]: actions of kind `retriever` (`define_retriever` / `retrieve`).
//! - [`indexer`]: actions of kind `indexer` (`define_indexer` / `index`).
//! - [`reranker`]: actions of kind `reranker` (`define_reranker` / `rerank`).
//! - [`simple_retriever`]: a retriever over your own data source, with the
//!   query and document mapping done for you.
//! - [`chunk`]: splitting text and Markdown into documents for indexing.
//! - [`local_vector_store`]: a file-backed vector store for development and
//!   small sets (exact cosine search; an HNSW index with the `hnsw` feature).
//! - [`vector_store`]: what vector store plugins share: registering their
//!   indexer and retriever pair, embedding documents and queries.
//!
//! Documents and the wire types are in `genkit_model::types`; embedders in
//! `genkit_model::embedder`.

#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod chunk;
pub mod indexer;
pub mod local_vector_store;
pub mod reranker;
pub mod retriever;
pub mod simple_retriever;
pub mod vector_store;
