//! The facade's retrieval actions: retrievers, indexers, rerankers and
//! simple retrievers (Genkit's `defineRetriever`, `defineIndexer`,
//! `defineReranker`, `defineSimpleRetriever`, `retrieve`, `index`,
//! `rerank`).

use std::future::Future;

use crate::indexer::{IndexOptions, Indexer, IndexerOptions, define_indexer, index};
use crate::local_vector_store::{
    LocalVectorStore, LocalVectorStoreOptions, define_local_vector_store,
};
use crate::reranker::{RerankOptions, Reranker, RerankerOptions, define_reranker, rerank};
use crate::retriever::{RetrieveOptions, Retriever, RetrieverOptions, define_retriever, retrieve};
use crate::simple_retriever::{SimpleRetrieverOptions, define_simple_retriever};
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
    pub fn define_retriever<O, F, Fut>(&self, opts: RetrieverOptions, runner: F) -> Retriever<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RetrieverResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("retriever", &name, self.try_define_retriever(opts, runner))
    }

    /// Like [`define_retriever`](Self::define_retriever), returning the
    /// error instead of panicking.
    pub fn try_define_retriever<O, F, Fut>(
        &self,
        opts: RetrieverOptions,
        runner: F,
    ) -> Result<Retriever<O>>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RetrieverResponse>> + Send + 'static,
    {
        define_retriever(self.registry(), opts, runner)
    }

    /// Defines a retriever over any search function returning items of
    /// type `T`, mapped to documents as the options say (Genkit's
    /// `defineSimpleRetriever`).
    ///
    /// # Panics
    /// If a retriever with this name is already defined or the name is invalid.
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
            self.try_define_simple_retriever(opts, search),
        )
    }

    /// Like [`define_simple_retriever`](Self::define_simple_retriever),
    /// returning the error instead of panicking.
    pub fn try_define_simple_retriever<T, O, F, Fut>(
        &self,
        opts: SimpleRetrieverOptions<T>,
        search: F,
    ) -> Result<Retriever<O>>
    where
        T: Serialize + Send + Sync + 'static,
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Option<O>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<T>>> + Send + 'static,
    {
        define_simple_retriever(self.registry(), opts, search)
    }

    /// Defines an indexer, registered as `/indexer/<name>`.
    ///
    /// # Panics
    /// If an indexer with this name is already defined or the name is invalid.
    pub fn define_indexer<O, F, Fut>(&self, opts: IndexerOptions, runner: F) -> Indexer<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("indexer", &name, self.try_define_indexer(opts, runner))
    }

    /// Like [`define_indexer`](Self::define_indexer), returning the error
    /// instead of panicking.
    pub fn try_define_indexer<O, F, Fut>(
        &self,
        opts: IndexerOptions,
        runner: F,
    ) -> Result<Indexer<O>>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<()>> + Send + 'static,
    {
        define_indexer(self.registry(), opts, runner)
    }

    /// Defines a reranker, registered as `/reranker/<name>`.
    ///
    /// # Panics
    /// If a reranker with this name is already defined or the name is invalid.
    pub fn define_reranker<O, F, Fut>(&self, opts: RerankerOptions, runner: F) -> Reranker<O>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RerankerResponse>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered("reranker", &name, self.try_define_reranker(opts, runner))
    }

    /// Like [`define_reranker`](Self::define_reranker), returning the error
    /// instead of panicking.
    pub fn try_define_reranker<O, F, Fut>(
        &self,
        opts: RerankerOptions,
        runner: F,
    ) -> Result<Reranker<O>>
    where
        O: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(DocumentData, Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<RerankerResponse>> + Send + 'static,
    {
        define_reranker(self.registry(), opts, runner)
    }

    /// Defines a local vector store (Genkit JS's dev-local-vectorstore): the
    /// indexer and retriever `devLocalVectorstore/<index>` over a registered
    /// embedder, exact cosine search, persisted to a JSON file.
    ///
    /// # Panics
    /// If either action's name is taken or invalid.
    pub fn define_local_vector_store(&self, opts: LocalVectorStoreOptions) -> LocalVectorStore {
        let name = format!("devLocalVectorstore/{}", opts.index_name());
        registered(
            "local vector store",
            &name,
            self.try_define_local_vector_store(opts),
        )
    }

    /// Like [`define_local_vector_store`](Self::define_local_vector_store),
    /// returning the error instead of panicking.
    pub fn try_define_local_vector_store(
        &self,
        opts: LocalVectorStoreOptions,
    ) -> Result<LocalVectorStore> {
        define_local_vector_store(self.registry(), opts)
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
