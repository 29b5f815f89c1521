//! Embedders over `POST /embeddings`.

use crate::error::excerpt;
use crate::models::EmbedderSpec;
use crate::plugin::Shared;
use crate::wire::EmbeddingsResponse;
use genkit_ai::embedder::{EmbedderAction, EmbedderOptions, embedder};
use genkit_ai::types::{EmbedRequest, EmbedResponse, Embedding};
use genkit_core::{Error, Result, StatusCode};
use genkit_provider::plugin::{
    check_embedding_count, embed_options, embed_texts, text_embedder_info,
};
use genkit_provider::{ApiKey, until_cancelled};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Options of an embedding request (`EmbedRequest.options`). Unknown keys are
/// sent as they are.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedConfig {
    /// Vector length for models that can shorten their output (`dimensions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<u32>,
    /// An end-user id for abuse monitoring (`user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Model name to send instead of the embedder's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// An API key for this request only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<ApiKey>,
    /// Any other key, sent as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Builds the embedder action for `spec`.
pub(crate) fn build_embedder(shared: Arc<Shared>, spec: EmbedderSpec) -> EmbedderAction {
    let info = text_embedder_info(
        spec.label.clone().unwrap_or_else(|| spec.name.clone()),
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
        Value::from(config.version.clone().unwrap_or_else(|| spec.name.clone())),
    );
    body.insert("input".into(), Value::Array(texts));
    if let Some(d) = config.dimensions {
        body.insert("dimensions".into(), Value::from(d));
    }
    if let Some(u) = &config.user {
        body.insert("user".into(), Value::from(u.clone()));
    }
    body.extend(config.extra);
    let key = shared.request_key(config.api_key.as_ref())?;
    let raw = shared
        .client
        .post_json("embeddings", &Value::Object(body), key)
        .await?;
    let malformed = |detail: String| {
        Error::new(
            StatusCode::Internal,
            format!("malformed response from {}: {detail}", shared.name),
        )
    };
    let parsed: EmbeddingsResponse = serde_json::from_value(raw.clone()).map_err(|e| {
        malformed(format!(
            "not an embeddings response ({e}): {}",
            excerpt(&raw.to_string())
        ))
    })?;
    let mut data = parsed.data;
    check_embedding_count(&shared.name, data.len(), request.input.len())?;
    data.sort_by_key(|d| d.index.unwrap_or(usize::MAX));
    Ok(EmbedResponse {
        embeddings: data
            .into_iter()
            .map(|d| Embedding {
                embedding: d.embedding,
                metadata: None,
            })
            .collect(),
    })
}
