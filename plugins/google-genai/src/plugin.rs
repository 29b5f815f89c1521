//! [`GoogleAi`]: the plugin, and [`GoogleAiOptions`]: how to configure it.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genkit_ai::embedder::EmbedderAction;
use genkit_ai::model::Model;
use genkit_core::{ActionDesc, ActionKind, DynAction, Plugin, Registry, Result};
use genkit_provider::{ApiKey, HttpClientBuilder};

use crate::client::{DEFAULT_BASE_URL, GeminiClient};
use crate::embedder::define_embedder;
use crate::model::{ModelSettings, NAMESPACE, define_model};
use crate::models::{KNOWN_EMBEDDERS, KNOWN_MODELS};

/// The environment variables read for the API key, in order.
pub const API_KEY_ENV_VARS: [&str; 3] =
    ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY"];

/// The request timeout used unless another is configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How to configure [`GoogleAi`]. Start from [`GoogleAiOptions::new`] and
/// chain setters.
#[derive(Clone)]
pub struct GoogleAiOptions {
    api_key: Option<ApiKey>,
    base_url: String,
    timeout: Option<Duration>,
    legacy_response_schema: bool,
    http_client: Option<reqwest::Client>,
}

impl Default for GoogleAiOptions {
    fn default() -> Self {
        Self {
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_owned(),
            timeout: Some(DEFAULT_TIMEOUT),
            legacy_response_schema: false,
            http_client: None,
        }
    }
}

impl std::fmt::Debug for GoogleAiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleAiOptions")
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("legacy_response_schema", &self.legacy_response_schema)
            .finish_non_exhaustive()
    }
}

impl GoogleAiOptions {
    /// Defaults: the key from the environment, the public endpoint, a
    /// 10-minute timeout.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses this API key instead of `GEMINI_API_KEY` / `GOOGLE_API_KEY`.
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sends requests to this base URL (including the API version, e.g.
    /// `https://generativelanguage.googleapis.com/v1beta`).
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

    /// Sends output schemas as the OpenAPI-subset `responseSchema` (cleaned as
    /// Genkit does) instead of `responseJsonSchema`.
    pub fn legacy_response_schema(mut self, legacy: bool) -> Self {
        self.legacy_response_schema = legacy;
        self
    }

    /// Uses this HTTP client (proxies, custom TLS roots...). It should not
    /// follow redirects, so the key header is never sent to another host.
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }
}

/// The Google AI (Gemini API) plugin: models `googleai/<model>` and embedders
/// `googleai/<embedding-model>`.
///
/// Known models and embedders are registered when the plugin initialises;
/// any other name (a new or tuned model) is resolved on first use.
#[derive(Clone)]
pub struct GoogleAi {
    client: Arc<GeminiClient>,
    legacy_response_schema: bool,
}

impl std::fmt::Debug for GoogleAi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleAi")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl GoogleAi {
    /// The plugin with default options (the API key from the environment).
    pub fn new() -> Result<Self> {
        Self::with_options(GoogleAiOptions::default())
    }

    /// The plugin with `options`. A missing API key is reported when a model
    /// is called (`FAILED_PRECONDITION`), not here.
    pub fn with_options(options: GoogleAiOptions) -> Result<Self> {
        let http = match options.http_client {
            Some(c) => c,
            None => HttpClientBuilder::new().build()?,
        };
        let api_key = options
            .api_key
            .or_else(|| ApiKey::from_env_vars(&API_KEY_ENV_VARS));
        let client = GeminiClient::new(http, &options.base_url, api_key, options.timeout);
        Ok(Self {
            client: Arc::new(client),
            legacy_response_schema: options.legacy_response_schema,
        })
    }

    /// The model `googleai/<name>` (e.g. `gemini-2.5-flash`), not registered.
    pub fn model(&self, name: &str) -> Model {
        define_model(
            name,
            ModelSettings {
                client: self.client.clone(),
                legacy_response_schema: self.legacy_response_schema,
            },
        )
    }

    /// The embedder `googleai/<name>` (e.g. `gemini-embedding-001`), not
    /// registered.
    pub fn embedder(&self, name: &str) -> EmbedderAction {
        define_embedder(name, self.client.clone())
    }

    fn known_actions(&self) -> Vec<DynAction> {
        let models = KNOWN_MODELS.iter().map(|m| self.model(m).to_dyn());
        let embedders = KNOWN_EMBEDDERS
            .iter()
            .map(|(e, _)| self.embedder(e).to_dyn());
        models.chain(embedders).collect()
    }
}

#[async_trait]
impl Plugin for GoogleAi {
    fn name(&self) -> &str {
        NAMESPACE
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(self.known_actions())
    }

    async fn resolve(
        &self,
        _registry: &Registry,
        kind: ActionKind,
        name: &str,
    ) -> Result<Option<DynAction>> {
        if name.trim().is_empty() {
            return Ok(None);
        }
        Ok(match kind {
            ActionKind::Model => Some(self.model(name).to_dyn()),
            ActionKind::Embedder => Some(self.embedder(name).to_dyn()),
            _ => None,
        })
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(self
            .known_actions()
            .iter()
            .map(|a| a.desc().clone())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lookup_order_and_blank_values() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let lookup = |vars| ApiKey::from_lookup(&API_KEY_ENV_VARS, env(vars));
        let both = lookup(&[("GOOGLE_API_KEY", "g"), ("GEMINI_API_KEY", "m")]);
        assert_eq!(both, Some(ApiKey::new("m")));
        let blank = lookup(&[("GEMINI_API_KEY", "  "), ("GOOGLE_API_KEY", "g")]);
        assert_eq!(blank, Some(ApiKey::new("g")));
        let last = lookup(&[("GOOGLE_GENAI_API_KEY", "n")]);
        assert_eq!(last, Some(ApiKey::new("n")));
        assert_eq!(lookup(&[]), None);
    }

    #[test]
    fn options_debug_hides_the_key() {
        let options = GoogleAiOptions::new().api_key("AIza-very-secret");
        assert!(!format!("{options:?}").contains("AIza-very-secret"));
    }
}
