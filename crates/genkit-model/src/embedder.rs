//! Embedders: actions of kind `embedder` turning documents into vectors.

use crate::types::{DocumentData, EmbedRequest, EmbedResponse, Embedding};
use genkit_core::action::ActionCtx;
use genkit_core::{Action, ActionDesc, ActionKind, DynAction, Error, Registry, Result, RunOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::future::Future;

/// What an embedder can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedderInfo {
    /// A human-readable label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Vector length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// Input kinds (`text`, `image`, `video`) and languages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports: Option<EmbedderSupports>,
}

/// Embedder capabilities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedderSupports {
    /// Input kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Vec<String>>,
    /// Whether many languages are supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multilingual: Option<bool>,
}

/// How to define an embedder.
#[derive(Debug, Clone, Default)]
pub struct EmbedderOptions {
    /// The name (`provider/model` for plugin embedders).
    pub name: String,
    /// Capabilities.
    pub info: EmbedderInfo,
    /// JSON schema of the embedder's options.
    pub config_schema: Option<Value>,
}

impl EmbedderOptions {
    /// Options for an embedder named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the capabilities.
    pub fn info(mut self, info: EmbedderInfo) -> Self {
        self.info = info;
        self
    }

    /// Sets the options schema.
    pub fn config_json_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }
}

/// The typed action behind an embedder.
pub type EmbedderAction = Action<EmbedRequest, EmbedResponse>;

/// Builds an embedder action without registering it (plugins return it from `init`).
pub fn embedder<F, Fut>(opts: EmbedderOptions, runner: F) -> EmbedderAction
where
    F: Fn(EmbedRequest, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<EmbedResponse>> + Send + 'static,
{
    let mut desc = ActionDesc::new(ActionKind::Embedder, opts.name)
        .with_metadata("type", Value::from("embedder"))
        .with_metadata("info", serde_json::to_value(&opts.info).unwrap_or_default());
    if let Some(schema) = opts.config_schema {
        desc = desc.with_metadata("embedder", json!({ "customOptions": schema }));
    }
    desc.input_schema = Some(genkit_core::schema::schema_for::<EmbedRequest>());
    desc.output_schema = Some(genkit_core::schema::schema_for::<EmbedResponse>());
    Action::from_desc_typed(desc, runner)
}

/// Defines an embedder and registers it as `/embedder/<name>`.
pub fn define_embedder<F, Fut>(
    registry: &Registry,
    opts: EmbedderOptions,
    runner: F,
) -> Result<EmbedderAction>
where
    F: Fn(EmbedRequest, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<EmbedResponse>> + Send + 'static,
{
    let action = embedder(opts, runner);
    registry.register(&action)?;
    Ok(action)
}

async fn lookup_embedder(registry: &Registry, name: &str) -> Result<DynAction> {
    let key = if name.starts_with('/') {
        name.to_owned()
    } else {
        format!("/embedder/{name}")
    };
    registry
        .lookup_action(&key)
        .await?
        .ok_or_else(|| Error::not_found(format!("Unable to resolve embedder {name}")))
}

/// Embeds documents with the embedder `name`; one or more embeddings per
/// document, in order.
pub async fn embed_many(
    registry: &Registry,
    name: &str,
    documents: Vec<DocumentData>,
    options: Option<Value>,
) -> Result<Vec<Embedding>> {
    let action = lookup_embedder(registry, name).await?;
    let request = EmbedRequest {
        input: documents,
        options,
    };
    let out = action
        .run_json(serde_json::to_value(&request)?, RunOptions::default())
        .await?;
    let response: EmbedResponse = serde_json::from_value(out.output).map_err(|e| {
        Error::internal(format!("embedder {name} returned an invalid response: {e}")).with_source(e)
    })?;
    Ok(response.embeddings)
}

/// Embeds one text with the embedder `name`.
pub async fn embed(registry: &Registry, name: &str, text: &str) -> Result<Vec<Embedding>> {
    embed_many(registry, name, vec![DocumentData::from_text(text)], None).await
}
