//! Indexers: actions of kind `indexer` storing documents for retrieval
//! (Genkit's `defineIndexer` / `index`). Typed options as for retrievers.

use genkit_core::action::ActionCtx;
use genkit_core::{Action, ActionDesc, ActionKind, Registry, Result};
use genkit_model::action_support::{
    TypedOptions, call, custom_options_metadata, options_to_value, resolve, with_options_schema,
};
use genkit_model::embedder::EmbedderInfo;
use genkit_model::types::{DocumentData, IndexerRequest};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// How to define an indexer.
#[derive(Debug, Clone, Default)]
pub struct IndexerOptions {
    /// The name (`plugin/name` for plugin indexers).
    pub name: String,
    /// The embedder the indexer uses, listed as `metadata.embedderInfo`.
    pub embedder_info: Option<EmbedderInfo>,
}

impl IndexerOptions {
    /// Options for an indexer named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            embedder_info: None,
        }
    }

    /// Describes the embedder the indexer uses.
    pub fn embedder_info(mut self, info: EmbedderInfo) -> Self {
        self.embedder_info = Some(info);
        self
    }
}

/// The action behind an indexer (its output is nothing: `null`).
pub type IndexerAction = Action<IndexerRequest, ()>;

/// An indexer whose options are `O`. Cheap to clone.
pub struct Indexer<O = Value> {
    action: IndexerAction,
    _o: PhantomData<fn(O)>,
}

impl<O> Clone for Indexer<O> {
    fn clone(&self) -> Self {
        Self {
            action: self.action.clone(),
            _o: PhantomData,
        }
    }
}

impl<O> std::fmt::Debug for Indexer<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("key", &self.action.key())
            .finish()
    }
}

impl<O: Serialize> Indexer<O> {
    /// The action.
    pub fn action(&self) -> &IndexerAction {
        &self.action
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// Stores `documents`.
    pub async fn index(&self, documents: Vec<DocumentData>, options: Option<O>) -> Result<()> {
        let options = options.as_ref().map(options_to_value).transpose()?;
        self.action.run(IndexerRequest { documents, options }).await
    }
}

fn request_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<IndexerRequest>)
}

/// Builds an indexer without registering it. The function gets the
/// documents, the options decoded as `O` and the action context.
pub fn indexer<O, F, Fut>(opts: IndexerOptions, runner: F) -> Indexer<O>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let options = TypedOptions::<O>::new();
    let mut desc = ActionDesc::new(ActionKind::Indexer, opts.name)
        .with_metadata("type", Value::from("indexer"));
    if let Some(info) = &opts.embedder_info {
        desc = desc.with_metadata(
            "embedderInfo",
            serde_json::to_value(info).unwrap_or_default(),
        );
    }
    desc = desc.with_metadata("indexer", custom_options_metadata(options.schema()));
    desc.input_schema = Some(with_options_schema(
        request_schema().clone(),
        options.schema(),
    ));
    let what = format!("indexer {}", desc.name);
    let runner = Arc::new(runner);
    let action = Action::from_desc_typed(desc, move |req: IndexerRequest, ctx| {
        let decoded = options.decode(req.options, &what);
        let runner = runner.clone();
        async move { runner(req.documents, decoded?, ctx).await }
    });
    Indexer {
        action,
        _o: PhantomData,
    }
}

/// Defines an indexer and registers it as `/indexer/<name>`.
pub fn define_indexer<O, F, Fut>(
    registry: &Registry,
    opts: IndexerOptions,
    runner: F,
) -> Result<Indexer<O>>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<()>> + Send + 'static,
{
    let i = indexer(opts, runner);
    registry.register(&i.action)?;
    Ok(i)
}

/// What to store, with which indexer (Genkit's `IndexerParams`).
#[derive(Debug, Clone)]
pub struct IndexOptions {
    indexer: String,
    documents: Vec<DocumentData>,
    options: Option<Result<Value>>,
}

impl IndexOptions {
    /// Stores `documents` with the indexer `indexer` (a name or a key).
    pub fn new(
        indexer: impl Into<String>,
        documents: impl IntoIterator<Item = DocumentData>,
    ) -> Self {
        Self {
            indexer: indexer.into(),
            documents: documents.into_iter().collect(),
            options: None,
        }
    }

    /// Sets the indexer's options.
    pub fn options(mut self, options: impl Serialize) -> Self {
        self.options = Some(options_to_value(&options));
        self
    }
}

/// Stores documents (Genkit's `index`): `NOT_FOUND` when there is no such
/// indexer.
pub async fn index(registry: &Registry, params: IndexOptions) -> Result<()> {
    let action = resolve(registry, ActionKind::Indexer, &params.indexer).await?;
    let request = IndexerRequest {
        documents: params.documents,
        options: params.options.transpose()?,
    };
    // Over JSON an indexer answers `null`; anything else is ignored, as
    // Genkit JS ignores it.
    let _: Value = match genkit_core::Action::<IndexerRequest, ()>::downcast(&action) {
        Some(typed) => {
            typed.run(request).await?;
            Value::Null
        }
        None => call::<IndexerRequest, Value>(&action, request).await?,
    };
    Ok(())
}
