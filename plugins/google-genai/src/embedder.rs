//! Gemini embedding models as Genkit embedders: one document goes to
//! `embedContent`, several to one `batchEmbedContents` call.

use std::sync::Arc;

use genkit_ai::embedder::{EmbedderAction, EmbedderOptions, embedder};
use genkit_ai::types::{EmbedRequest, EmbedResponse, Embedding};
use genkit_core::action::ActionCtx;
use genkit_provider::until_cancelled;

use crate::client::GeminiClient;
use crate::config::{EmbedConfig, parse_config};
use crate::convert::request::to_gemini_part;
use crate::error::GeminiError;
use crate::model::NAMESPACE;
use crate::models::embedder_info;
use crate::wire::{BatchEmbedContentsRequest, Content, EmbedContentRequest};

/// The embedder `googleai/<name>`.
pub(crate) fn define_embedder(name: &str, client: Arc<GeminiClient>) -> EmbedderAction {
    let options = EmbedderOptions::new(format!("{NAMESPACE}/{name}"))
        .info(embedder_info(name))
        .config_json_schema(genkit_core::schema::schema_for::<EmbedConfig>());
    let name: Arc<str> = Arc::from(name);
    embedder(options, move |request, ctx: ActionCtx| {
        let name = name.clone();
        let client = client.clone();
        async move { run(&name, &client, request, ctx).await }
    })
}

async fn run(
    name: &str,
    client: &GeminiClient,
    request: EmbedRequest,
    ctx: ActionCtx,
) -> genkit_core::Result<EmbedResponse> {
    let config: EmbedConfig = parse_config(request.options.as_ref(), "embedder")?;
    let version = config.version.clone().unwrap_or_else(|| name.to_owned());
    let mut requests = Vec::with_capacity(request.input.len());
    for doc in &request.input {
        let parts = doc
            .content
            .iter()
            .map(to_gemini_part)
            .collect::<Result<Vec<_>, _>>()?;
        requests.push(EmbedContentRequest {
            model: None,
            content: Content { role: None, parts },
            task_type: config.task_type.clone(),
            title: config.title.clone(),
            output_dimensionality: config.output_dimensionality,
        });
    }
    let call = async {
        match requests.len() {
            0 => Ok(Vec::new()),
            1 => {
                let only = &requests[0];
                let response = client.embed_content(&version, only).await?;
                Ok(vec![response.embedding.values])
            }
            n => {
                let model = format!("models/{}", version.trim_start_matches("models/"));
                let batch = BatchEmbedContentsRequest {
                    requests: requests
                        .into_iter()
                        .map(|r| EmbedContentRequest {
                            model: Some(model.clone()),
                            ..r
                        })
                        .collect(),
                };
                let response = client.batch_embed_contents(&version, &batch).await?;
                if response.embeddings.len() != n {
                    return Err(GeminiError::Decode(format!(
                        "asked for {n} embeddings, got {}",
                        response.embeddings.len()
                    )));
                }
                Ok(response.embeddings.into_iter().map(|e| e.values).collect())
            }
        }
    };
    let vectors = until_cancelled(&ctx.cancel, call).await?;
    Ok(EmbedResponse {
        embeddings: vectors
            .into_iter()
            .map(|embedding| Embedding {
                embedding,
                metadata: None,
            })
            .collect(),
    })
}
