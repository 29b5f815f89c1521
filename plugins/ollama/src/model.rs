//! Chat models over `POST /api/chat`, streamed or not.

use crate::config::OllamaConfig;
use crate::convert::request::chat_request;
use crate::convert::response::ChatState;
use crate::models::ModelSpec;
use crate::plugin::Shared;
use crate::stream::read_stream;
use genkit_ai::model::{Model, ModelCtx, ModelOptions};
use genkit_ai::types::{GenerateRequest, GenerateResponse};
use genkit_core::Result;
use genkit_provider::until_cancelled;
use std::sync::Arc;

const CHAT_PATH: &str = "/api/chat";

/// Builds the model action for `spec`.
pub(crate) fn build_model(shared: Arc<Shared>, spec: ModelSpec) -> Model {
    let label = spec
        .label
        .clone()
        .unwrap_or_else(|| format!("Ollama - {}", spec.name));
    let opts = ModelOptions::new(format!("{}/{}", shared.name, spec.name))
        .label(label)
        .supports(spec.supports.clone())
        .config_schema::<OllamaConfig>();
    let name: Arc<str> = Arc::from(spec.name);
    Model::new(opts, move |request, ctx| {
        let shared = shared.clone();
        let name = name.clone();
        async move { generate(&shared, &name, request, ctx).await }
    })
}

/// One model call. Cancelling `ctx.cancel` drops the HTTP request at once.
async fn generate(
    shared: &Shared,
    model: &str,
    request: GenerateRequest,
    ctx: ModelCtx,
) -> Result<GenerateResponse> {
    let streaming = ctx.is_streaming();
    let body = chat_request(model, &request, streaming)?;
    let client = &shared.client;
    let work = async {
        if streaming {
            let lines = client.post_stream(CHAT_PATH, &body).await?;
            read_stream(client, lines, &request.messages, |chunk| {
                ctx.send_chunk(chunk)
            })
            .await
        } else {
            let raw = client.post_json(CHAT_PATH, &body).await?;
            let mut state = ChatState::new(client.provider());
            state.on_value(raw)?;
            state.finish(&request.messages)
        }
    };
    until_cancelled(&ctx.cancel, work).await
}
