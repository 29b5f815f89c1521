//! [`Anthropic`]: the plugin kit's [`ProviderPlugin`](genkit_provider::ProviderPlugin) for the Messages API,
//! its builder, and what the provider declares.

use genkit_core::Result;
use genkit_model::types::GenerateResponse;
use genkit_provider::{Chat, KeyHeader, ModelSpec, Provider, ProviderInfo, WireCall};

use crate::config::AnthropicConfig;
use crate::convert::request::{RequestDefaults, to_messages_request};
use crate::convert::response::to_genkit_response;
use crate::error::AnthropicError;
use crate::models::{KNOWN_MODELS, supports};
use crate::stream::MessageStream;

/// The Anthropic API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header value this plugin speaks.
pub const API_VERSION: &str = "2023-06-01";

/// The environment variable read for the API key.
pub const API_KEY_ENV_VAR: &str = "ANTHROPIC_API_KEY";

/// Where `from_env` reads another base URL from (without `/v1`), as
/// Anthropic's SDKs do; `ANTHROPIC_API_KEY` is sent there.
pub const BASE_URL_ENV_VAR: &str = "ANTHROPIC_BASE_URL";

/// `max_tokens` sent when a request's config sets no `maxOutputTokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

genkit_provider::provider_plugin! {
    /// The Anthropic plugin: Claude models `anthropic/<model>` through the
    /// Messages API. Build it with [`Anthropic::builder`] or
    /// [`Anthropic::from_env`].
    pub type Anthropic;
    /// What the Anthropic plugin declares to the kit: the Messages API's
    /// wire format, and its own settings.
    pub struct AnthropicProvider {
        /// `max_tokens` for requests whose config sets no `maxOutputTokens`
        /// (the Messages API requires one).
        default_max_tokens: u32 = DEFAULT_MAX_TOKENS,
    }
    /// Configures an [`Anthropic`] plugin. Defaults: name `anthropic`, base
    /// URL `https://api.anthropic.com` (without `/v1`), the key from
    /// `ANTHROPIC_API_KEY`, `max_tokens` 4096, a ten-minute timeout, the
    /// catalogue's models listed.
    pub struct AnthropicBuilder;
}

impl Provider for AnthropicProvider {
    const INFO: ProviderInfo = ProviderInfo {
        key_header: KeyHeader::Named("x-api-key"),
        base_url_env: Some(BASE_URL_ENV_VAR),
        key_env: &[API_KEY_ENV_VAR],
        key_required: true,
        headers: &[("anthropic-version", API_VERSION)],
        ignored_config_keys: &["apiVersion"],
        models: KNOWN_MODELS,
        ..ProviderInfo::new("Anthropic", "anthropic", DEFAULT_BASE_URL)
    };

    type Model = ModelSpec;
    type Config = AnthropicConfig;
    type EmbedOptions = ();
    type Answer = MessageStream;

    fn describe_model(&self, spec: ModelSpec) -> ModelSpec {
        let defaults = supports(&spec.name);
        spec.with_defaults(defaults, "Anthropic")
    }

    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<MessageStream>> {
        let (request, config) = (chat.request, chat.config);
        let name = config.common.model_name(&chat.model.name);
        let defaults = RequestDefaults {
            max_tokens: self.default_max_tokens,
        };
        let body = to_messages_request(request, &config, &name, defaults, chat.streaming)?;
        let answer = MessageStream::new(request.messages.clone());
        WireCall::json("v1/messages", &body, answer)
    }

    fn chat_response(&self, answer: MessageStream, body: &[u8]) -> Result<GenerateResponse> {
        let message = AnthropicError::parse_body("the message", body)?;
        Ok(to_genkit_response(message, &answer.input))
    }
}
