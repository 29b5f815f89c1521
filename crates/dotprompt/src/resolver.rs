//! Name resolvers for partials, schemas and tools, which may be asynchronous.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use crate::error::BoxError;
use crate::types::ToolDefinition;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

type ResolveFn<T> = dyn Fn(String) -> BoxFuture<'static, Result<Option<T>, BoxError>> + Send + Sync;

/// Looks up a named item on demand; `Ok(None)` means "not found".
pub struct Resolver<T> {
    resolve: Arc<ResolveFn<T>>,
}

/// Resolves partial names to their template source.
pub type PartialResolver = Resolver<String>;
/// Resolves schema names to JSON Schema.
pub type SchemaResolver = Resolver<Value>;
/// Resolves tool names to their definitions.
pub type ToolResolver = Resolver<ToolDefinition>;

impl<T: Send + 'static> Resolver<T> {
    /// An asynchronous resolver, e.g. one that reads files or asks a registry.
    pub fn new<F, Fut>(resolve: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<T>, BoxError>> + Send + 'static,
    {
        Self {
            resolve: Arc::new(move |name| Box::pin(resolve(name))),
        }
    }

    /// A synchronous, infallible resolver, e.g. a map lookup.
    pub fn from_fn<F>(resolve: F) -> Self
    where
        F: Fn(&str) -> Option<T> + Send + Sync + 'static,
    {
        Self {
            resolve: Arc::new(move |name| {
                let found = resolve(&name);
                Box::pin(std::future::ready(Ok(found)))
            }),
        }
    }

    /// Resolves `name`.
    pub async fn resolve(&self, name: &str) -> Result<Option<T>, BoxError> {
        (self.resolve)(name.to_owned()).await
    }
}

impl<T> Clone for Resolver<T> {
    fn clone(&self) -> Self {
        Self {
            resolve: Arc::clone(&self.resolve),
        }
    }
}

impl<T> fmt::Debug for Resolver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}
