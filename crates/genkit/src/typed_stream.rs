//! The stream of `generate_stream_as::<T>()`: the usual chunks, then the
//! final output parsed as `T`.

use crate::generate::{GenerateChunk, GenerateStream};
use crate::types::GenerateResponse;
use futures::Stream;
use genkit_core::Result;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A [`GenerateStream`] whose final output is a `T`.
pub struct TypedGenerateStream<T> {
    inner: GenerateStream,
    _output: PhantomData<fn() -> T>,
}

impl<T: DeserializeOwned> TypedGenerateStream<T> {
    pub(crate) fn new(inner: GenerateStream) -> Self {
        Self {
            inner,
            _output: PhantomData,
        }
    }

    /// Runs to completion (dropping chunks not yet read) and returns the
    /// output parsed as `T`.
    pub async fn output(self) -> Result<T> {
        self.inner.response().await?.output::<T>()
    }

    /// Runs to completion and returns the whole response.
    pub async fn response(self) -> Result<GenerateResponse> {
        self.inner.response().await
    }
}

impl<T> Stream for TypedGenerateStream<T> {
    type Item = Result<GenerateChunk>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().inner).poll_next(cx)
    }
}
