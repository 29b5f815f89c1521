//! Claude models as Genkit model actions: config parsing, the call (plain or
//! streamed), cancellation, and the conversion of the answer.

use std::sync::Arc;

use genkit_ai::model::{Model, ModelCtx, ModelOptions};
use genkit_ai::types::{GenerateRequest, GenerateResponse};
use genkit_provider::until_cancelled;

use crate::client::AnthropicClient;
use crate::config::{AnthropicConfig, parse_config};
use crate::convert::request::{RequestDefaults, to_messages_request};
use crate::convert::response::to_genkit_response;
use crate::models::supports;
use crate::stream::read_stream;

/// The namespace of the plugin's actions.
pub(crate) const NAMESPACE: &str = "anthropic";

/// Settings shared by all models of a plugin instance.
#[derive(Debug, Clone)]
pub(crate) struct ModelSettings {
    pub client: Arc<AnthropicClient>,
    pub defaults: RequestDefaults,
}

/// The model `anthropic/<name>`.
pub(crate) fn define_model(name: &str, settings: ModelSettings) -> Model {
    let options = ModelOptions::new(format!("{NAMESPACE}/{name}"))
        .label(format!("Anthropic - {name}"))
        .supports(supports(name))
        .config_schema::<AnthropicConfig>();
    let name: Arc<str> = Arc::from(name);
    Model::new(options, move |request, ctx| {
        let name = name.clone();
        let settings = settings.clone();
        async move { run(&name, &settings, request, ctx).await }
    })
}

async fn run(
    name: &str,
    settings: &ModelSettings,
    request: GenerateRequest,
    ctx: ModelCtx,
) -> genkit_core::Result<GenerateResponse> {
    let config = parse_config(request.config.as_ref())?;
    let model = config.version.clone().unwrap_or_else(|| name.to_owned());
    let streaming = ctx.is_streaming();
    let body = to_messages_request(&request, &config, &model, settings.defaults, streaming)?;
    let client = &settings.client;
    let call = async {
        if streaming {
            let events = client.stream_message(&body).await?;
            read_stream(events, |chunk| ctx.send_chunk(chunk)).await
        } else {
            client.create_message(&body).await
        }
    };
    let message = until_cancelled(&ctx.cancel, call).await?;
    Ok(to_genkit_response(message, &request.messages))
}
