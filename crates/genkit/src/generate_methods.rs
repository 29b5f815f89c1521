//! Calling models and embedders through the instance: `generate` and its
//! streaming and typed forms, embeddings, background operations, and named
//! steps of a flow.

use crate::embedder::{embed, embed_many};
use crate::generate::{
    GenerateOptions, GenerateStream, TypedGenerateStream, generate, generate_stream,
};
use crate::model::check_operation;
use crate::types::{DocumentData, Embedding, GenerateResponse, Operation};
use genkit_core::Result;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;

use crate::genkit::Genkit;

impl Genkit {
    /// Generates a response, running requested tools until the model answers.
    pub fn generate(
        &self,
        options: GenerateOptions,
    ) -> impl Future<Output = Result<GenerateResponse>> + Send + 'static {
        generate(self.registry(), options)
    }

    /// Generates a response as a stream of chunks, then the response.
    pub fn generate_stream(&self, options: GenerateOptions) -> GenerateStream {
        generate_stream(self.registry(), options)
    }

    /// Generates structured output of type `T` in one call: the output
    /// schema comes from `T` and the parsed `T` is returned (a model output
    /// that does not fit is `INVALID_ARGUMENT`).
    pub async fn generate_as<T>(&self, options: GenerateOptions) -> Result<T>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let response = generate(self.registry(), options.output::<T>()).await?;
        response.output::<T>()
    }

    /// Streams structured output of type `T`: chunks carry the partial
    /// output ([`GenerateChunk::output_as`](crate::generate::GenerateChunk::output_as)),
    /// and [`TypedGenerateStream::output`] gives the final `T`.
    pub fn generate_stream_as<T>(&self, options: GenerateOptions) -> TypedGenerateStream<T>
    where
        T: DeserializeOwned + JsonSchema,
    {
        TypedGenerateStream::new(generate_stream(self.registry(), options.output::<T>()))
    }

    /// Embeds a text.
    pub async fn embed(&self, embedder: &str, text: &str) -> Result<Vec<Embedding>> {
        embed(self.registry(), embedder, text).await
    }

    /// Embeds documents.
    pub async fn embed_many(
        &self,
        embedder: &str,
        documents: Vec<DocumentData>,
    ) -> Result<Vec<Embedding>> {
        embed_many(self.registry(), embedder, documents, None).await
    }

    /// Polls a background model's operation.
    pub async fn check_operation(&self, operation: Operation) -> Result<Operation> {
        check_operation(self.registry(), operation).await
    }

    /// Runs a named step of a flow, recorded as a child span.
    pub async fn run<T, F>(&self, name: &str, step: F) -> Result<T>
    where
        T: Serialize,
        F: Future<Output = Result<T>>,
    {
        genkit_core::tracing::run(name, step).await
    }
}
