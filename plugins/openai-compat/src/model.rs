//! Chat models over `POST /chat/completions`, streamed or not.

use crate::config::OpenAiConfig;
use crate::convert::request::chat_request;
use crate::convert::response::from_completion;
use crate::models::ModelSpec;
use crate::plugin::Shared;
use crate::stream::read_stream;
use genkit_ai::model::{Model, ModelCtx, ModelOptions};
use genkit_ai::types::{GenerateRequest, GenerateResponse};
use genkit_core::Result;
use genkit_provider::until_cancelled;
use std::sync::Arc;

/// Builds the model action for `spec`.
pub(crate) fn build_model(shared: Arc<Shared>, spec: ModelSpec) -> Model {
    let mut opts = ModelOptions::new(format!("{}/{}", shared.name, spec.name))
        .supports(spec.supports.clone())
        .config_schema::<OpenAiConfig>();
    if let Some(label) = &spec.label {
        opts = opts.label(label.clone());
    }
    let spec = Arc::new(spec);
    Model::new(opts, move |request, ctx| {
        let shared = shared.clone();
        let spec = spec.clone();
        async move { generate(&shared, &spec, request, ctx).await }
    })
}

/// One model call. Cancelling `ctx.cancel` drops the HTTP request (and
/// closes its connection) at once.
async fn generate(
    shared: &Shared,
    spec: &ModelSpec,
    request: GenerateRequest,
    ctx: ModelCtx,
) -> Result<GenerateResponse> {
    let streaming = ctx.is_streaming();
    let built = chat_request(spec, shared.structured_output, &request, streaming)?;
    let key = shared.request_key(built.api_key.as_ref())?;
    let client = &shared.client;
    let work = async {
        if streaming {
            let events = client
                .post_stream("chat/completions", &built.body, key)
                .await?;
            read_stream(client, events, |chunk| ctx.send_chunk(chunk)).await
        } else {
            let raw = client
                .post_json("chat/completions", &built.body, key)
                .await?;
            from_completion(client.provider(), raw)
        }
    };
    until_cancelled(&ctx.cancel, work).await
}
