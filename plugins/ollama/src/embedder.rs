//! Embedders over `POST /api/embed`.

use crate::error::excerpt;
use crate::models::EmbedderSpec;
use crate::plugin::Shared;
use crate::wire::EmbedResponse as WireEmbedResponse;
use genkit_ai::embedder::{EmbedderAction, EmbedderOptions, embedder};
use genkit_ai::types::{EmbedRequest, EmbedResponse, Embedding};
use genkit_core::{Error, Result};
use genkit_provider::plugin::{
    check_embedding_count, embed_options, embed_texts, text_embedder_info,
};
use genkit_provider::until_cancelled;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Options of an embedding request (`EmbedRequest.options`). Unknown keys
/// go to Ollama's `options` (e.g. `num_ctx`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedConfig {
    /// Truncate inputs longer than the context instead of failing (`truncate`,
    /// Ollama's default is true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate: Option<bool>,
    /// Vector length for models that can shorten their output (`dimensions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// How long the model stays loaded (`keep_alive`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive: Option<Value>,
    /// Model to send instead of the embedder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Any other key, put in `options`.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Builds the embedder action for `spec`.
pub(crate) fn build_embedder(shared: Arc<Shared>, spec: EmbedderSpec) -> EmbedderAction {
    let info = text_embedder_info(
        spec.label
            .clone()
            .unwrap_or_else(|| format!("Ollama - {}", spec.name)),
        spec.dimensions,
    );
    let opts = EmbedderOptions::new(format!("{}/{}", shared.name, spec.name))
        .info(info)
        .config_json_schema(genkit_core::schema::schema_for::<EmbedConfig>());
    let spec = Arc::new(spec);
    embedder(opts, move |request: EmbedRequest, ctx| {
        let shared = shared.clone();
        let spec = spec.clone();
        async move { until_cancelled(&ctx.cancel, embed(&shared, &spec, request)).await }
    })
}

async fn embed(
    shared: &Shared,
    spec: &EmbedderSpec,
    request: EmbedRequest,
) -> Result<EmbedResponse> {
    if request.input.is_empty() {
        return Ok(EmbedResponse {
            embeddings: Vec::new(),
        });
    }
    let config: EmbedConfig = embed_options(&request, &spec.name)?;
    let texts = embed_texts(&request, &spec.name)?;
    let mut body = Map::new();
    body.insert(
        "model".into(),
        Value::from(config.version.unwrap_or_else(|| spec.name.clone())),
    );
    body.insert("input".into(), Value::Array(texts));
    if let Some(t) = config.truncate {
        body.insert("truncate".into(), Value::Bool(t));
    }
    if let Some(d) = config.dimensions {
        body.insert("dimensions".into(), Value::from(d));
    }
    if let Some(k) = config.keep_alive {
        body.insert("keep_alive".into(), k);
    }
    if !config.extra.is_empty() {
        body.insert("options".into(), Value::Object(config.extra));
    }
    let raw = shared
        .client
        .post_json("/api/embed", &Value::Object(body))
        .await?;
    let malformed = |detail: String| {
        Error::internal(format!("malformed response from {}: {detail}", shared.name))
    };
    let parsed: WireEmbedResponse = serde_json::from_value(raw.clone()).map_err(|e| {
        malformed(format!(
            "not an embed response ({e}): {}",
            excerpt(&raw.to_string())
        ))
    })?;
    check_embedding_count(&shared.name, parsed.embeddings.len(), request.input.len())?;
    Ok(EmbedResponse {
        embeddings: parsed
            .embeddings
            .into_iter()
            .map(|embedding| Embedding {
                embedding,
                metadata: None,
            })
            .collect(),
    })
}
