//! Retrievers: actions of kind `retriever` finding documents for a query
//! (Genkit's `defineRetriever` / `retrieve`).
//!
//! A retriever's options are typed: the function's `Option<O>` argument
//! fixes `O`, whose JSON schema is listed as the retriever's
//! `customOptions` (the Dev UI's options form) and checks what callers send.
//!
//! ```
//! # async fn demo() -> genkit_core::Result<()> {
//! use genkit_retrieval::retriever::{RetrieveOptions, RetrieverOptions, define_retriever, retrieve};
//! use genkit_model::types::{CommonRetrieverOptions, DocumentData, RetrieverResponse};
//!
//! let registry = genkit_core::Registry::new();
//! let facts = ["Rust has no garbage collector.", "Genkit actions are traced."];
//! define_retriever(
//!     &registry,
//!     RetrieverOptions::new("facts"),
//!     move |query: DocumentData, options: Option<CommonRetrieverOptions>, _ctx| async move {
//!         let k = options.and_then(|o| o.k).unwrap_or(3) as usize;
//!         let words: Vec<String> = query.text().to_lowercase().split_whitespace().map(String::from).collect();
//!         let docs = facts
//!             .iter()
//!             .filter(|f| words.iter().any(|w| f.to_lowercase().contains(w.as_str())))
//!             .take(k)
//!             .map(|f| DocumentData::from_text(*f))
//!             .collect::<Vec<_>>();
//!         Ok(RetrieverResponse::new(docs))
//!     },
//! )?;
//! let docs = retrieve(&registry, RetrieveOptions::new("facts", "garbage").options(CommonRetrieverOptions { k: Some(1) })).await?;
//! assert_eq!(docs[0].text(), "Rust has no garbage collector.");
//! # Ok(()) }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(demo()).unwrap();
//! ```

use genkit_core::action::ActionCtx;
use genkit_core::{Action, ActionDesc, ActionKind, Registry, Result};
use genkit_model::action_support::{
    TypedOptions, call, custom_options_metadata, options_to_value, resolve, with_options_schema,
};
use genkit_model::types::{DocumentData, RetrieverRequest, RetrieverResponse};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// What a retriever (or reranker) can do (Genkit's `RetrieverInfo`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrieverInfo {
    /// A human-readable label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports: Option<RetrieverSupports>,
}

/// Retriever capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrieverSupports {
    /// Whether queries may hold media.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<bool>,
}

/// How to define a retriever.
#[derive(Debug, Clone, Default)]
pub struct RetrieverOptions {
    /// The name (`plugin/name` for plugin retrievers).
    pub name: String,
    /// Capabilities, listed as `metadata.info`.
    pub info: Option<RetrieverInfo>,
}

impl RetrieverOptions {
    /// Options for a retriever named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            info: None,
        }
    }

    /// Sets the capabilities.
    pub fn info(mut self, info: RetrieverInfo) -> Self {
        self.info = Some(info);
        self
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.info.get_or_insert_with(RetrieverInfo::default).label = Some(label.into());
        self
    }
}

/// The action behind a retriever.
pub type RetrieverAction = Action<RetrieverRequest, RetrieverResponse>;

/// A retriever whose options are `O`. Cheap to clone.
pub struct Retriever<O = Value> {
    action: RetrieverAction,
    _o: PhantomData<fn(O)>,
}

impl<O> Clone for Retriever<O> {
    fn clone(&self) -> Self {
        Self {
            action: self.action.clone(),
            _o: PhantomData,
        }
    }
}

impl<O> std::fmt::Debug for Retriever<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retriever")
            .field("key", &self.action.key())
            .finish()
    }
}

impl<O: Serialize> Retriever<O> {
    /// The action (register it, or list its description).
    pub fn action(&self) -> &RetrieverAction {
        &self.action
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// Finds documents for `query`.
    pub async fn retrieve(
        &self,
        query: impl Into<DocumentData>,
        options: Option<O>,
    ) -> Result<Vec<DocumentData>> {
        let options = options.as_ref().map(options_to_value).transpose()?;
        let request = RetrieverRequest {
            query: query.into(),
            options,
        };
        Ok(self.action.run(request).await?.documents)
    }
}

fn request_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<RetrieverRequest>)
}

fn response_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<RetrieverResponse>)
}

/// Builds a retriever without registering it (plugins return it from `init`).
///
/// The function gets the query, the request's options decoded as `O`
/// (`None` when absent; options that do not fit `O` are refused with
/// `INVALID_ARGUMENT` before it runs) and the action context.
pub fn retriever<O, F, Fut>(opts: RetrieverOptions, runner: F) -> Retriever<O>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(DocumentData, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RetrieverResponse>> + Send + 'static,
{
    let options = TypedOptions::<O>::new();
    let mut desc = ActionDesc::new(ActionKind::Retriever, opts.name)
        .with_metadata("type", Value::from("retriever"));
    if let Some(info) = &opts.info {
        desc = desc.with_metadata("info", serde_json::to_value(info).unwrap_or_default());
    }
    desc = desc.with_metadata("retriever", custom_options_metadata(options.schema()));
    desc.input_schema = Some(with_options_schema(
        request_schema().clone(),
        options.schema(),
    ));
    desc.output_schema = Some(response_schema().clone());
    let what = format!("retriever {}", desc.name);
    let runner = Arc::new(runner);
    let action = Action::from_desc_typed(desc, move |req: RetrieverRequest, ctx| {
        let decoded = options.decode(req.options, &what);
        let runner = runner.clone();
        async move { runner(req.query, decoded?, ctx).await }
    });
    Retriever {
        action,
        _o: PhantomData,
    }
}

/// Defines a retriever and registers it as `/retriever/<name>`.
pub fn define_retriever<O, F, Fut>(
    registry: &Registry,
    opts: RetrieverOptions,
    runner: F,
) -> Result<Retriever<O>>
where
    O: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(DocumentData, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<RetrieverResponse>> + Send + 'static,
{
    let r = retriever(opts, runner);
    registry.register(&r.action)?;
    Ok(r)
}

/// What to retrieve, from which retriever (Genkit's `RetrieverParams`).
#[derive(Debug, Clone)]
pub struct RetrieveOptions {
    retriever: String,
    query: DocumentData,
    options: Option<Result<Value>>,
}

impl RetrieveOptions {
    /// Asks the retriever `retriever` (a name, or a key `/retriever/...`)
    /// for documents matching `query` (a text or a document).
    pub fn new(retriever: impl Into<String>, query: impl Into<DocumentData>) -> Self {
        Self {
            retriever: retriever.into(),
            query: query.into(),
            options: None,
        }
    }

    /// Sets the retriever's options (its own options type, or JSON).
    pub fn options(mut self, options: impl Serialize) -> Self {
        self.options = Some(options_to_value(&options));
        self
    }
}

/// Retrieves documents (Genkit's `retrieve`): `NOT_FOUND` when there is no
/// such retriever.
pub async fn retrieve(registry: &Registry, params: RetrieveOptions) -> Result<Vec<DocumentData>> {
    let action = resolve(registry, ActionKind::Retriever, &params.retriever).await?;
    let request = RetrieverRequest {
        query: params.query,
        options: params.options.transpose()?,
    };
    let response: RetrieverResponse = call(&action, request).await?;
    Ok(response.documents)
}
