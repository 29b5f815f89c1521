//! Rerankers: actions of kind `reranker` scoring documents against a query
//! (Genkit's `defineReranker` / `rerank`). Typed options as for retrievers.

use crate::retriever::RetrieverInfo;
use genkit_core::action::ActionCtx;
use genkit_core::{Action, ActionDesc, ActionKind, Registry, Result};
use genkit_model::action_support::{
    TypedOptions, call, custom_options_metadata, options_to_value, resolve, with_options_schema,
};
use genkit_model::types::{DocumentData, RankedDocumentData, RerankerRequest, RerankerResponse};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// What a reranker can do (Genkit's `RerankerInfo`: the same shape as a
/// retriever's).
pub type RerankerInfo = RetrieverInfo;

/// How to define a reranker.
#[derive(Debug, Clone, Default)]
pub struct RerankerOptions {
    /// The name (`plugin/name` for plugin rerankers).
    pub name: String,
    /// Capabilities, listed as `metadata.info`.
    pub info: Option<RerankerInfo>,
}

impl RerankerOptions {
    /// Options for a reranker named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            info: None,
        }
    }

    /// Sets the capabilities.
    pub fn info(mut self, info: RerankerInfo) -> Self {
        self.info = Some(info);
        self
    }
}

/// The action behind a reranker.
pub type RerankerAction = Action<RerankerRequest, RerankerResponse>;

/// A reranker whose options are `O`. Cheap to clone.
pub struct Reranker<O = Value> {
    action: RerankerAction,
    _o: PhantomData<fn(O)>,
}

impl<O> Clone for Reranker<O> {
    fn clone(&self) -> Self {
        Self {
            action: self.action.clone(),
            _o: PhantomData,
        }
    }
}

impl<O> std::fmt::Debug for Reranker<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reranker")
            .field("key", &self.action.key())
            .finish()
    }
}

impl<O: Serialize> Reranker<O> {
    /// The action.
    pub fn action(&self) -> &RerankerAction {
        &self.action
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// Scores `documents` against `query`.
    pub async fn rerank(
        &self,
        query: impl Into<DocumentData>,
        documents: Vec<DocumentData>,
        options: Option<O>,
    ) -> Result<Vec<RankedDocumentData>> {
        let options = options.as_ref().map(options_to_value).transpose()?;
        let request = RerankerRequest {
            query: query.into(),
            documents,
            options,
        };
        Ok(self.action.run(request).await?.documents)
    }
}

fn request_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<RerankerRequest>)
}

fn response_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<RerankerResponse>)
}

/// Builds a reranker without registering it. The function gets the query,
/// the documents, the options decoded as `O` and the action context.
pub fn reranker<O, F, Fut>(opts: RerankerOptions, runner: F) -> Reranker<O>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(DocumentData, Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RerankerResponse>> + Send + 'static,
{
    let options = TypedOptions::<O>::new();
    let mut desc = ActionDesc::new(ActionKind::Reranker, opts.name)
        .with_metadata("type", Value::from("reranker"));
    if let Some(info) = &opts.info {
        desc = desc.with_metadata("info", serde_json::to_value(info).unwrap_or_default());
    }
    desc = desc.with_metadata("reranker", custom_options_metadata(options.schema()));
    desc.input_schema = Some(with_options_schema(
        request_schema().clone(),
        options.schema(),
    ));
    desc.output_schema = Some(response_schema().clone());
    let what = format!("reranker {}", desc.name);
    let runner = Arc::new(runner);
    let action = Action::from_desc_typed(desc, move |req: RerankerRequest, ctx| {
        let decoded = options.decode(req.options, &what);
        let runner = runner.clone();
        async move { runner(req.query, req.documents, decoded?, ctx).await }
    });
    Reranker {
        action,
        _o: PhantomData,
    }
}

/// Defines a reranker and registers it as `/reranker/<name>`.
pub fn define_reranker<O, F, Fut>(
    registry: &Registry,
    opts: RerankerOptions,
    runner: F,
) -> Result<Reranker<O>>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(DocumentData, Vec<DocumentData>, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RerankerResponse>> + Send + 'static,
{
    let r = reranker(opts, runner);
    registry.register(&r.action)?;
    Ok(r)
}

/// What to rerank, with which reranker (Genkit's `RerankerParams`).
#[derive(Debug, Clone)]
pub struct RerankOptions {
    reranker: String,
    query: DocumentData,
    documents: Vec<DocumentData>,
    options: Option<Result<Value>>,
}

impl RerankOptions {
    /// Scores `documents` against `query` with the reranker `reranker` (a
    /// name or a key).
    pub fn new(
        reranker: impl Into<String>,
        query: impl Into<DocumentData>,
        documents: impl IntoIterator<Item = DocumentData>,
    ) -> Self {
        Self {
            reranker: reranker.into(),
            query: query.into(),
            documents: documents.into_iter().collect(),
            options: None,
        }
    }

    /// Sets the reranker's options.
    pub fn options(mut self, options: impl Serialize) -> Self {
        self.options = Some(options_to_value(&options));
        self
    }
}

/// Reranks documents (Genkit's `rerank`): `NOT_FOUND` when there is no
/// such reranker.
pub async fn rerank(registry: &Registry, params: RerankOptions) -> Result<Vec<RankedDocumentData>> {
    let action = resolve(registry, ActionKind::Reranker, &params.reranker).await?;
    let request = RerankerRequest {
        query: params.query,
        documents: params.documents,
        options: params.options.transpose()?,
    };
    let response: RerankerResponse = call(&action, request).await?;
    Ok(response.documents)
}
