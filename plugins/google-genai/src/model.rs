//! Gemini models as Genkit model actions: config parsing, the call (plain or
//! streamed), cancellation, and the conversion of the answer.

use std::sync::Arc;

use genkit_ai::model::{Model, ModelCtx, ModelOptions};
use genkit_ai::types::{GenerateRequest, GenerateResponse};
use genkit_provider::until_cancelled;

use crate::client::GeminiClient;
use crate::config::{GeminiConfig, parse_config};
use crate::convert::ToolNames;
use crate::convert::request::{RequestShape, to_gemini_request};
use crate::convert::response::to_genkit_response;
use crate::models::ModelKind;
use crate::stream::read_stream;

/// The namespace of the plugin's actions.
pub(crate) const NAMESPACE: &str = "googleai";

/// Settings shared by all models of a plugin instance.
#[derive(Debug, Clone)]
pub(crate) struct ModelSettings {
    pub client: Arc<GeminiClient>,
    pub legacy_response_schema: bool,
}

/// The model `googleai/<name>`.
pub(crate) fn define_model(name: &str, settings: ModelSettings) -> Model {
    let kind = ModelKind::of(name);
    let options = ModelOptions::new(format!("{NAMESPACE}/{name}"))
        .label(format!("Google AI - {name}"))
        .supports(kind.supports())
        .config_schema::<GeminiConfig>();
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
    let config: GeminiConfig = parse_config(request.config.as_ref(), "model")?;
    let version = config.version.clone().unwrap_or_else(|| name.to_owned());
    let kind = ModelKind::of(&version);
    let shape = RequestShape {
        legacy_response_schema: settings.legacy_response_schema,
        default_modalities: kind.default_modalities(),
        strip_thoughts: kind == ModelKind::Gemma,
    };
    let body = to_gemini_request(&request, &config, shape)?;
    let names = ToolNames::new(request.tools());
    let client = &settings.client;
    let call = async {
        if ctx.is_streaming() {
            let events = client.stream_generate_content(&version, &body).await?;
            read_stream(events, &names, |chunk| ctx.send_chunk(chunk)).await
        } else {
            client.generate_content(&version, &body).await
        }
    };
    let response = until_cancelled(&ctx.cancel, call).await?;
    Ok(to_genkit_response(response, &request.messages, &names)?)
}
