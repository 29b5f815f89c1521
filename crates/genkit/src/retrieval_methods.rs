//! The facade's retrieval actions: retrievers, indexers, rerankers and
//! simple retrievers (Genkit's `defineRetriever`, `defineIndexer`,
//! `defineReranker`, `defineSimpleRetriever`, `retrieve`, `index`,
//! `rerank`).

use std::future::Future;

use crate::retrieval::indexer::{IndexOptions, Indexer, IndexerOptions, define_indexer, index};
use crate::retrieval::local_vector_store::{
    LocalVectorStore, LocalVectorStoreOptions, define_local_vector_store,
};
use crate::retrieval::reranker::{
    RerankOptions, Reranker, RerankerOptions, define_reranker, rerank,
};
use crate::retrieval::retriever::{
    RetrieveOptions, Retriever, RetrieverOptions, define_retriever, retrieve,
};
use crate::retrieval::simple_retriever::{SimpleRetrieverOptions, define_simple_retriever};
use crate::types::{DocumentData, RankedDocumentData, RerankerResponse, RetrieverResponse};
use genkit_core::Result;
use genkit_core::action::ActionCtx;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::genkit::{Genkit, registered};

impl Genkit {
    /// Defines a retriever, registered as `/retriever/<name>`. The options
    /// type `O` (the function's `Option<O>` argument) is listed as the
    /// retriever's `customOptions` and checks callers' options.
    ///
    /// # Panics
    /// If a retriever with this name is already defined or the name is invalid.
    /// The fallible path is
    /// [`genkit::retrieval::retriever::define_retriever`](crate::retrieval::retriever::define_retriever),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_retriever<O, F, Fut>(&self, opts: RetrieverOptions, runner: F) -> Retriever<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RetrieverResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "retriever",
            &name,
            define_retriever(self.registry(), opts, runner),
        )
    }

    /// Defines a retriever over any search function returning items of
    /// type `T`, mapped to documents as the options say (Genkit's
    /// `defineSimpleRetriever`).
    ///
    /// # Panics
    /// If a retriever with this name is already defined or the name is invalid.
    /// The fallible path is
    /// [`genkit::retrieval::simple_retriever::define_simple_retriever`](crate::retrieval::simple_retriever::define_simple_retriever),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_simple_retriever<T, O, F, Fut>(
        &self,
        opts: SimpleRetrieverOptions<T>,
        search: F,
    ) -> Retriever<O>
    where
        T: Serialize + Send + Sync + 'static,
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Option<O>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<T>>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "retriever",
            &name,
            define_simple_retriever(self.registry(), opts, search),
        )
    }

    /// Defines an indexer, registered as `/indexer/<name>`.
    ///
    /// # Panics
    /// If an indexer with this name is already defined or the name is invalid.
    /// The fallible path is
    /// [`genkit::retrieval::indexer::define_indexer`](crate::retrieval::indexer::define_indexer),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_indexer<O, F, Fut>(&self, opts: IndexerOptions, runner: F) -> Indexer<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "indexer",
            &name,
            define_indexer(self.registry(), opts, runner),
        )
    }

    /// Defines a reranker, registered as `/reranker/<name>`.
    ///
    /// # Panics
    /// If a reranker with this name is already defined or the name is invalid.
    /// The fallible path is
    /// [`genkit::retrieval::reranker::define_reranker`](crate::retrieval::reranker::define_reranker),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_reranker<O, F, Fut>(&self, opts: RerankerOptions, runner: F) -> Reranker<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RerankerResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "reranker",
            &name,
            define_reranker(self.registry(), opts, runner),
        )
    }

    /// Defines a local vector store (Genkit JS's dev-local-vectorstore): the
    /// indexer and retriever `devLocalVectorstore/<index>` over a registered
    /// embedder, exact cosine search, persisted to a JSON file.
    ///
    /// # Panics
    /// If either action's name is taken or invalid. The fallible path is
    /// [`genkit::retrieval::local_vector_store::define_local_vector_store`](crate::retrieval::local_vector_store::define_local_vector_store),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_local_vector_store(&self, opts: LocalVectorStoreOptions) -> LocalVectorStore {
        let name = format!("devLocalVectorstore/{}", opts.index_name());
        registered(
            "local vector store",
            &name,
            define_local_vector_store(self.registry(), opts),
        )
    }

    /// Retrieves documents with a registered retriever; `NOT_FOUND` if
    /// there is none of that name.
    pub async fn retrieve(&self, params: RetrieveOptions) -> Result<Vec<DocumentData>> {
        retrieve(self.registry(), params).await
    }

    /// Stores documents with a registered indexer.
    pub async fn index(&self, params: IndexOptions) -> Result<()> {
        index(self.registry(), params).await
    }

    /// Scores documents against a query with a registered reranker.
    pub async fn rerank(&self, params: RerankOptions) -> Result<Vec<RankedDocumentData>> {
        rerank(self.registry(), params).await
    }
}
