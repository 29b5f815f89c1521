//! Genkit embed requests → `embedContent` / `batchEmbedContents`, and their
//! answers → vectors.

use genkit_ai::types::EmbedRequest;
use genkit_core::Result;
use genkit_provider::{EmbedderSpec, WireCall};

use super::model_path;
use super::request::to_gemini_part;
use crate::config::EmbedConfig;
use crate::error::GeminiError;
use crate::wire::{
    BatchEmbedContentsRequest, BatchEmbedContentsResponse, Content, EmbedContentRequest,
    EmbedContentResponse,
};

/// One document goes to `embedContent`, several to one `batchEmbedContents`
/// call (where each names the model).
pub(crate) fn embed_call(
    spec: &EmbedderSpec,
    request: &EmbedRequest,
    options: EmbedConfig,
) -> Result<WireCall<()>> {
    let version = options.version.clone().unwrap_or_else(|| spec.name.clone());
    let path = model_path(&version);
    let model = format!("models/{}", version.trim_start_matches("models/"));
    let mut requests = Vec::with_capacity(request.input.len());
    for doc in &request.input {
        let parts = doc.content.iter().map(to_gemini_part);
        requests.push(EmbedContentRequest {
            model: Some(model.clone()),
            content: Content {
                role: None,
                parts: parts.collect::<std::result::Result<_, _>>()?,
            },
            task_type: options.task_type.clone(),
            title: options.title.clone(),
            output_dimensionality: options.output_dimensionality,
        });
    }
    match requests.as_mut_slice() {
        [only] => {
            only.model = None;
            WireCall::json(format!("{path}:embedContent"), only, ())
        }
        _ => {
            let batch = BatchEmbedContentsRequest { requests };
            WireCall::json(format!("{path}:batchEmbedContents"), &batch, ())
        }
    }
}

/// The vectors of an `embedContent` or `batchEmbedContents` answer.
pub(crate) fn embeddings(body: &[u8]) -> Result<Vec<Vec<f32>>> {
    Ok(match GeminiError::parse_body("the embeddings", body)? {
        EmbedAnswer::One(one) => vec![one.embedding.values],
        EmbedAnswer::Batch(batch) => batch.embeddings.into_iter().map(|e| e.values).collect(),
    })
}

/// `embedContent` answers one `embedding`, `batchEmbedContents` a list.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum EmbedAnswer {
    One(EmbedContentResponse),
    Batch(BatchEmbedContentsResponse),
}
