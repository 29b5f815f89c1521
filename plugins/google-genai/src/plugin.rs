//! [`GoogleAi`]: the plugin kit's [`ProviderPlugin`](genkit_provider::ProviderPlugin) for the Gemini API,
//! its builder, and what the provider declares.

use genkit_core::Result;
use genkit_model::embedder::EmbedderInfo;
use genkit_model::types::GenerateResponse;
use genkit_provider::http::USER_AGENT;
use genkit_provider::{
    Chat, Embed, EmbedderSpec, KeyHeader, ModelSpec, Provider, ProviderInfo, WireCall,
};

use crate::config::{EmbedConfig, GeminiConfig};
use crate::convert::request::{RequestShape, to_gemini_part, to_gemini_request};
use crate::convert::response::to_genkit_response;
use crate::convert::{ToolNames, model_path};
use crate::error::GeminiError;
use crate::models::{KNOWN_EMBEDDERS, KNOWN_MODELS, ModelKind, embedder_info};
use crate::stream::Events;
use crate::wire::{BatchEmbedContentsRequest, Content, EmbedAnswer, EmbedContentRequest};

/// The Gemini API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Where `from_env` reads another server from, as Google's Gen AI SDKs do:
/// the server without the API version (`/v1beta` is appended); the key is
/// sent there.
pub const BASE_URL_ENV_VAR: &str = "GOOGLE_GEMINI_BASE_URL";

/// The API version path appended to [`BASE_URL_ENV_VAR`]'s server.
const API_VERSION_PATH: &str = "v1beta";

/// The environment variables read for the API key, in order.
pub const API_KEY_ENV_VARS: [&str; 3] =
    ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY"];

genkit_provider::provider_plugin! {
    /// The Google AI (Gemini API) plugin: models `googleai/<model>` and
    /// embedders `googleai/<embedding-model>`. Build it with
    /// [`GoogleAi::builder`] or [`GoogleAi::from_env`].
    pub type GoogleAi;
    /// What the Google AI plugin declares to the kit: the Gemini API's wire
    /// format, and its own settings.
    pub struct GoogleAiProvider {
        /// Sends output schemas as the OpenAPI-subset `responseSchema`
        /// (cleaned as Genkit does) instead of `responseJsonSchema`.
        legacy_response_schema: bool = false,
    }
    /// Configures a [`GoogleAi`] plugin. Defaults: name `googleai`, base URL
    /// `https://generativelanguage.googleapis.com/v1beta` (with the API
    /// version), the key from `GEMINI_API_KEY`, `GOOGLE_API_KEY` or
    /// `GOOGLE_GENAI_API_KEY`, a ten-minute timeout, the catalogue's models
    /// and embedders listed.
    pub struct GoogleAiBuilder with embedders;
}

impl Provider for GoogleAiProvider {
    const INFO: ProviderInfo = ProviderInfo {
        key_header: KeyHeader::Named("x-goog-api-key"),
        base_url_env: Some(BASE_URL_ENV_VAR),
        base_url_env_path: API_VERSION_PATH,
        key_env: &API_KEY_ENV_VARS,
        key_required: true,
        headers: &[("x-goog-api-client", USER_AGENT)],
        ignored_config_keys: &["baseUrl", "apiVersion"],
        models: KNOWN_MODELS,
        embedder_names: KNOWN_EMBEDDERS,
        ..ProviderInfo::new("GoogleAi", "googleai", DEFAULT_BASE_URL)
    };

    type Model = ModelSpec;
    type Config = GeminiConfig;
    type EmbedOptions = EmbedConfig;
    type Answer = Events;

    fn describe_model(&self, spec: ModelSpec) -> ModelSpec {
        let defaults = ModelKind::of(&spec.name).supports();
        spec.with_defaults(defaults, "Google AI")
    }

    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<Events>> {
        let (request, config) = (chat.request, chat.config);
        let version = config.common.model_name(&chat.model.name);
        let kind = ModelKind::of(&version);
        let shape = RequestShape {
            legacy_response_schema: self.legacy_response_schema,
            default_modalities: kind.default_modalities(),
            strip_thoughts: kind == ModelKind::Gemma,
        };
        let body = to_gemini_request(request, &config, shape)?;
        let path = if chat.streaming {
            format!("{}:streamGenerateContent?alt=sse", model_path(&version))
        } else {
            format!("{}:generateContent", model_path(&version))
        };
        let answer = Events::new(ToolNames::new(request.tools()), request.messages.clone());
        WireCall::json(path, &body, answer)
    }

    fn chat_response(&self, answer: Events, body: &[u8]) -> Result<GenerateResponse> {
        let response = GeminiError::parse_body("the response", body)?;
        Ok(to_genkit_response(
            response,
            &answer.messages,
            &answer.names,
        )?)
    }

    fn embedder_info(&self, spec: &EmbedderSpec) -> EmbedderInfo {
        embedder_info(&spec.name)
    }

    /// One document goes to `embedContent`, several to one
    /// `batchEmbedContents` call (where each names the model).
    fn embed_request(&self, embed: Embed<'_, Self>) -> Result<WireCall<()>> {
        let options = embed.options;
        let version = options.version.unwrap_or_else(|| embed.spec.name.clone());
        let path = model_path(&version);
        let model = format!("models/{}", version.trim_start_matches("models/"));
        let mut requests = Vec::with_capacity(embed.request.input.len());
        for doc in &embed.request.input {
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
    fn embed_response(&self, body: &[u8]) -> Result<Vec<Vec<f32>>> {
        Ok(match GeminiError::parse_body("the embeddings", body)? {
            EmbedAnswer::One(one) => vec![one.embedding.values],
            EmbedAnswer::Batch(batch) => batch.embeddings.into_iter().map(|e| e.values).collect(),
        })
    }
}
