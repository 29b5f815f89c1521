//! Embedders over `POST /embeddings`.

use crate::error::excerpt;
use crate::models::EmbedderSpec;
use crate::plugin::Shared;
use crate::secret::ApiKey;
use crate::wire::EmbeddingsResponse;
use genkit_ai::embedder::{
    EmbedderAction, EmbedderInfo, EmbedderOptions, EmbedderSupports, embedder,
};
use genkit_ai::types::{EmbedRequest, EmbedResponse, Embedding};
use genkit_core::{Error, Result, StatusCode};
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
    let info = EmbedderInfo {
        label: Some(spec.label.clone().unwrap_or_else(|| spec.name.clone())),
        dimensions: spec.dimensions,
        supports: Some(EmbedderSupports {
            input: Some(vec!["text".into()]),
            multilingual: None,
        }),
    };
    let opts = EmbedderOptions::new(format!("{}/{}", shared.name, spec.name))
        .info(info)
        .config_json_schema(genkit_core::schema::schema_for::<EmbedConfig>());
    let spec = Arc::new(spec);
    embedder(opts, move |request: EmbedRequest, ctx| {
        let shared = shared.clone();
        let spec = spec.clone();
        async move {
            let work = embed(&shared, &spec, request);
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(Error::cancelled()),
                r = work => r,
            }
        }
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
    let config: EmbedConfig = match request.options {
        None | Some(Value::Null) => EmbedConfig::default(),
        Some(v) => serde_json::from_value(v).map_err(|e| {
            Error::invalid_argument(format!("invalid options for embedder `{}`: {e}", spec.name))
        })?,
    };
    let mut texts = Vec::with_capacity(request.input.len());
    for (i, doc) in request.input.iter().enumerate() {
        let text = doc.text();
        if text.is_empty() {
            return Err(Error::invalid_argument(format!(
                "document {i} has no text: embedder `{}` embeds text only",
                spec.name
            )));
        }
        texts.push(Value::from(text));
    }
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
    if data.len() != request.input.len() {
        return Err(malformed(format!(
            "{} embeddings for {} documents",
            data.len(),
            request.input.len()
        )));
    }
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
