//! [`Anthropic`]: the plugin kit's [`ProviderPlugin`] for the Messages API,
//! its builder, and what the provider declares.

use genkit_ai::types::{GenerateRequest, GenerateResponse};
use genkit_core::Result;
use genkit_provider::{
    KeyHeader, ModelSpec, NoOptions, PluginSetup, Provider, ProviderBuilder, ProviderInfo,
    ProviderPlugin, StreamFormat, WireCall,
};

use crate::config::AnthropicConfig;
use crate::convert::request::{RequestDefaults, to_messages_request};
use crate::convert::response::to_genkit_response;
use crate::error::{AnthropicError, AnthropicErrorBody};
use crate::models::{KNOWN_MODELS, supports};
use crate::stream::{MessageStream, Messages};

/// The Anthropic API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header value this plugin speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The environment variable read for the API key.
pub const API_KEY_ENV_VAR: &str = "ANTHROPIC_API_KEY";

/// `max_tokens` sent when a request's config sets no `maxOutputTokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic plugin: Claude models `anthropic/<model>` through the
/// Messages API. Build it with [`Anthropic::builder`] or
/// [`Anthropic::from_env`].
pub type Anthropic = ProviderPlugin<AnthropicProvider>;

/// What the Anthropic plugin declares to the kit: the Messages API's wire
/// format, and the default `max_tokens`.
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    defaults: RequestDefaults,
}

impl Provider for AnthropicProvider {
    const INFO: ProviderInfo = ProviderInfo {
        display: "Anthropic",
        default_name: "anthropic",
        default_base_url: DEFAULT_BASE_URL,
        base_url_env: None,
        key_env: &[API_KEY_ENV_VAR],
        key_header: KeyHeader::Named("x-api-key"),
        key_required: true,
        request_keys: false,
        headers: &[("anthropic-version", API_VERSION)],
        ignored_config_keys: &["apiVersion"],
        stream: StreamFormat::Sse,
        embedders: false,
    };
    type Builder = AnthropicBuilder;
    type Model = ModelSpec;
    type Config = AnthropicConfig;
    type EmbedOptions = NoOptions;
    type ErrorBody = AnthropicErrorBody;
    type Call = Messages;
    type Stream = MessageStream;

    fn describe_model(&self, spec: ModelSpec) -> ModelSpec {
        let defaults = supports(&spec.name);
        let label = format!("Anthropic - {}", spec.name);
        spec.with_defaults(defaults, || label)
    }

    fn chat_request(
        &self,
        model: &ModelSpec,
        request: &GenerateRequest,
        config: AnthropicConfig,
        streaming: bool,
    ) -> Result<WireCall<Messages>> {
        let name = config.common.model_name(&model.name);
        let body = to_messages_request(request, &config, &name, self.defaults, streaming)?;
        let body = serde_json::to_value(body)
            .map_err(|e| AnthropicError::InvalidRequest(format!("request body: {e}")))?;
        Ok(WireCall::new("v1/messages", body, request.messages.clone()))
    }

    fn chat_response(&self, input: Messages, body: &[u8]) -> Result<GenerateResponse> {
        let message = serde_json::from_slice(body)
            .map_err(|e| AnthropicError::Malformed(format!("the message: {e}")))?;
        Ok(to_genkit_response(message, &input))
    }

    fn chat_stream(&self, input: Messages) -> MessageStream {
        MessageStream::new(input)
    }
}

/// Configures an [`Anthropic`] plugin. Defaults: name `anthropic`, base URL
/// `https://api.anthropic.com` (without `/v1`), the key from
/// `ANTHROPIC_API_KEY`, `max_tokens` 4096, a ten-minute timeout, the
/// catalogue's models listed.
#[derive(Debug, Clone)]
pub struct AnthropicBuilder {
    setup: PluginSetup<ModelSpec>,
    max_tokens: u32,
}

impl Default for AnthropicBuilder {
    fn default() -> Self {
        let models = KNOWN_MODELS.iter().map(|(name, _)| ModelSpec::new(*name));
        Self {
            setup: PluginSetup::new(&AnthropicProvider::INFO, models, []),
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

genkit_provider::provider_builder!(AnthropicBuilder => AnthropicProvider);

impl AnthropicBuilder {
    /// `max_tokens` for requests whose config sets no `maxOutputTokens`
    /// (the Messages API requires one).
    pub fn default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
}

impl ProviderBuilder<AnthropicProvider> for AnthropicBuilder {
    fn setup_mut(&mut self) -> &mut PluginSetup<ModelSpec> {
        &mut self.setup
    }

    fn into_parts(self) -> (AnthropicProvider, PluginSetup<ModelSpec>) {
        let defaults = RequestDefaults {
            max_tokens: self.max_tokens,
        };
        (AnthropicProvider { defaults }, self.setup)
    }
}
