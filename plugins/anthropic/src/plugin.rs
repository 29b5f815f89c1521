//! [`Anthropic`]: the plugin, and [`AnthropicOptions`]: how to configure it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genkit_ai::model::Model;
use genkit_core::{ActionDesc, ActionKind, DynAction, Plugin, Registry, Result};
use genkit_provider::{ApiKey, HttpClientBuilder};

use crate::client::{AnthropicClient, DEFAULT_BASE_URL};
use crate::convert::request::RequestDefaults;
use crate::model::{ModelSettings, NAMESPACE, define_model};
use crate::models::KNOWN_MODELS;

/// The environment variable read for the API key.
pub const API_KEY_ENV_VAR: &str = "ANTHROPIC_API_KEY";

/// `max_tokens` sent when a request's config sets no `maxOutputTokens`.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The request timeout used unless another is configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How to configure [`Anthropic`]. Start from [`AnthropicOptions::new`] and
/// chain setters.
#[derive(Clone)]
pub struct AnthropicOptions {
    api_key: Option<ApiKey>,
    base_url: String,
    timeout: Option<Duration>,
    max_tokens: u32,
    http_client: Option<reqwest::Client>,
}

impl Default for AnthropicOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_owned(),
            timeout: Some(DEFAULT_TIMEOUT),
            max_tokens: DEFAULT_MAX_TOKENS,
            http_client: None,
        }
    }
}

impl std::fmt::Debug for AnthropicOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicOptions")
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

impl AnthropicOptions {
    /// Defaults: the key from `ANTHROPIC_API_KEY`, the public endpoint,
    /// `max_tokens` 4096, a 10-minute timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses this API key instead of `ANTHROPIC_API_KEY`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sends requests to this base URL (without `/v1`), e.g. a proxy.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Fails requests that take longer than `timeout` (streamed ones
    /// included) with `DEADLINE_EXCEEDED`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Lets requests run as long as they take (cancellation still applies).
    pub fn no_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// `max_tokens` for requests whose config sets no `maxOutputTokens`
    /// (the Messages API requires one).
    pub fn default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Uses this HTTP client (proxies, custom TLS roots...). It should not
    /// follow redirects, so the key header is never sent to another host.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }
}

/// The Anthropic plugin: Claude models `anthropic/<model>` through the
/// Messages API.
///
/// Known models are registered when the plugin initialises; any other name
/// (a dated snapshot, a new model) is resolved on first use.
#[derive(Clone)]
pub struct Anthropic {
    settings: ModelSettings,
}

impl std::fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anthropic")
            .field("client", &self.settings.client)
            .field("max_tokens", &self.settings.defaults.max_tokens)
            .finish()
    }
}

impl Anthropic {
    /// The plugin with default options (the API key from
    /// `ANTHROPIC_API_KEY`).
    pub fn new() -> Result<Self> {
        Self::with_options(AnthropicOptions::default())
    }

    /// The plugin with `options`. A missing API key is reported when a model
    /// is called (`FAILED_PRECONDITION`), not here.
    pub fn with_options(options: AnthropicOptions) -> Result<Self> {
        let http = match options.http_client {
            Some(c) => c,
            None => HttpClientBuilder::new().build()?,
        };
        let api_key = options
            .api_key
            .or_else(|| ApiKey::from_env(API_KEY_ENV_VAR));
        let client = AnthropicClient::new(http, &options.base_url, api_key, options.timeout);
        Ok(Self {
            settings: ModelSettings {
                client: Arc::new(client),
                defaults: RequestDefaults {
                    max_tokens: options.max_tokens,
                },
            },
        })
    }

    /// The model `anthropic/<name>` (e.g. `claude-sonnet-4-5`), not
    /// registered.
    pub fn model(&self, name: &str) -> Model {
        define_model(name, self.settings.clone())
    }

    fn known_models(&self) -> Vec<DynAction> {
        KNOWN_MODELS
            .iter()
            .map(|(name, _)| self.model(name).to_dyn())
            .collect()
    }
}

#[async_trait]
impl Plugin for Anthropic {
    fn name(&self) -> &str {
        NAMESPACE
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(self.known_models())
    }

    async fn resolve(
        &self,
        _registry: &Registry,
        kind: ActionKind,
        name: &str,
    ) -> Result<Option<DynAction>> {
        if kind != ActionKind::Model || name.trim().is_empty() {
            return Ok(None);
        }
        Ok(Some(self.model(name).to_dyn()))
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(self
            .known_models()
            .iter()
            .map(|a| a.desc().clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show_in_debug_output() {
        let options = AnthropicOptions::new().api_key("sk-ant-secret");
        let plugin = Anthropic::with_options(options.clone()).expect("plugin");
        let text = format!("{options:?} {plugin:?}");
        assert!(!text.contains("sk-ant-secret"), "{text}");
        assert!(text.contains("ApiKey(<redacted>)"), "{text}");
    }
}
