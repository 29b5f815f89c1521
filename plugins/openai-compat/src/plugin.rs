//! [`OpenAiCompatible`]: the plugin, its builder, and what it registers.

use crate::client::Client;
use crate::config::StructuredOutputStyle;
use crate::embedder::build_embedder;
use crate::model::build_model;
use crate::models::{EmbedderSpec, ModelSpec, openai_embedders, openai_models};
use async_trait::async_trait;
use genkit_core::{
    ActionDesc, ActionKind, DynAction, Error, IntoDynAction, Plugin, Registry, Result,
};
use genkit_provider::ApiKey;
use genkit_provider::plugin::{SpecList, header_map, validate_http_url, validate_name};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// OpenAI's API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The plugin's default name (and model prefix).
pub const DEFAULT_NAME: &str = "openai";
/// Where the key comes from when none is given (for OpenAI's own API).
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// The default request timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What every model and embedder of one plugin instance shares.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) client: Client,
    pub(crate) structured_output: StructuredOutputStyle,
    require_api_key: bool,
    models: SpecList<ModelSpec>,
    embedders: SpecList<EmbedderSpec>,
    listed: OnceLock<Vec<ActionDesc>>,
}

impl Shared {
    /// The key override to send with, after checking that some key exists
    /// when the server needs one.
    pub(crate) fn request_key<'a>(&self, over: Option<&'a ApiKey>) -> Result<Option<&'a ApiKey>> {
        if over.is_none() && self.require_api_key && !self.client.has_api_key() {
            return Err(Error::failed_precondition(format!(
                "plugin `{}` has no API key: set {API_KEY_ENV}, call `.api_key(..)` on the \
                 builder, or pass `apiKey` in the request config",
                self.name
            )));
        }
        Ok(over)
    }
}

/// The OpenAI-compatible plugin: chat models (`/model/<name>/<model>`) and
/// embedders (`/embedder/<name>/<model>`) of OpenAI or any server speaking
/// its Chat Completions and Embeddings API (llama.cpp, vLLM, LM Studio,
/// Ollama's `/v1`, OpenRouter, ...).
///
/// Models and embedders in its lists are listed with their capabilities
/// (without initialising anything); each action is built on its first
/// lookup, and any other name resolves too, with generic capabilities.
#[derive(Clone)]
pub struct OpenAiCompatible {
    shared: Arc<Shared>,
}

impl fmt::Debug for OpenAiCompatible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiCompatible")
            .field("name", &self.shared.name)
            .field("client", &self.shared.client)
            .field("models", &self.shared.models.as_slice().len())
            .field("embedders", &self.shared.embedders.as_slice().len())
            .finish()
    }
}

impl OpenAiCompatible {
    /// A builder with OpenAI's defaults.
    pub fn builder() -> OpenAiCompatibleBuilder {
        OpenAiCompatibleBuilder::default()
    }

    /// OpenAI itself, keyed by `OPENAI_API_KEY`.
    pub fn openai() -> Result<Self> {
        Self::builder().build()
    }

    /// The plugin name (the models' prefix).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The full name of one of its models or embedders: `<plugin>/<model>`.
    pub fn model_name(&self, model: &str) -> String {
        format!("{}/{model}", self.shared.name)
    }

    /// The models it lists.
    pub fn models(&self) -> &[ModelSpec] {
        self.shared.models.as_slice()
    }

    /// The embedders it lists.
    pub fn embedders(&self) -> &[EmbedderSpec] {
        self.shared.embedders.as_slice()
    }

    fn listed_actions(&self) -> Vec<DynAction> {
        let s = &self.shared;
        let models = s
            .models
            .as_slice()
            .iter()
            .map(|m| build_model(s.clone(), m.clone()).into_dyn());
        let embedders = s
            .embedders
            .as_slice()
            .iter()
            .map(|e| build_embedder(s.clone(), e.clone()).into_dyn());
        models.chain(embedders).collect()
    }
}

#[async_trait]
impl Plugin for OpenAiCompatible {
    fn name(&self) -> &str {
        &self.shared.name
    }

    /// Registers nothing up front: every model and embedder (listed or not)
    /// is built on its first lookup, so a plugin with a long list costs
    /// nothing until used.
    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(Vec::new())
    }

    async fn resolve(
        &self,
        _registry: &Registry,
        kind: ActionKind,
        name: &str,
    ) -> Result<Option<DynAction>> {
        let s = &self.shared;
        Ok(match kind {
            ActionKind::Model => {
                Some(build_model(s.clone(), s.models.get_or_unlisted(name)).into_dyn())
            }
            ActionKind::Embedder => {
                Some(build_embedder(s.clone(), s.embedders.get_or_unlisted(name)).into_dyn())
            }
            _ => None,
        })
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(self
            .shared
            .listed
            .get_or_init(|| {
                self.listed_actions()
                    .iter()
                    .map(|a| a.desc().clone())
                    .collect()
            })
            .clone())
    }
}

/// Configures an [`OpenAiCompatible`] plugin.
///
/// Defaults: name `openai`, base URL `https://api.openai.com/v1`, OpenAI's
/// model and embedder lists, a 10-minute timeout, `json_schema` structured
/// output. The key is the one given to [`api_key`](Self::api_key), else the
/// variable named by [`api_key_env`](Self::api_key_env), else — only when
/// the base URL is OpenAI's — `OPENAI_API_KEY` (so a key meant for OpenAI is
/// never sent to another server by accident). Without a key no
/// `Authorization` header is sent; OpenAI's own API then fails with
/// `FAILED_PRECONDITION` before any request.
#[derive(Clone)]
pub struct OpenAiCompatibleBuilder {
    name: String,
    base_url: String,
    api_key: Option<ApiKey>,
    api_key_env: Option<String>,
    require_api_key: Option<bool>,
    headers: Vec<(String, String)>,
    timeout: Duration,
    models: SpecList<ModelSpec>,
    embedders: SpecList<EmbedderSpec>,
    structured_output: StructuredOutputStyle,
}

impl fmt::Debug for OpenAiCompatibleBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiCompatibleBuilder")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("api_key_env", &self.api_key_env)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("models", &self.models.as_slice().len())
            .field("embedders", &self.embedders.as_slice().len())
            .field("structured_output", &self.structured_output)
            .finish()
    }
}

impl Default for OpenAiCompatibleBuilder {
    fn default() -> Self {
        Self {
            name: DEFAULT_NAME.into(),
            base_url: DEFAULT_BASE_URL.into(),
            api_key: None,
            api_key_env: None,
            require_api_key: None,
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            models: SpecList::new(openai_models()),
            embedders: SpecList::new(openai_embedders()),
            structured_output: StructuredOutputStyle::default(),
        }
    }
}

impl OpenAiCompatibleBuilder {
    /// The plugin name: the namespace of its actions (`<name>/<model>`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The API's base URL, up to and including the version (`…/v1`).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The API key (sent as `Authorization: Bearer …`).
    pub fn api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Reads the key from the environment variable `var` when no key is given.
    pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
        self.api_key_env = Some(var.into());
        self
    }

    /// Whether a request without any key fails with `FAILED_PRECONDITION`
    /// instead of going out (default: only for OpenAI's own base URL).
    pub fn require_api_key(mut self, required: bool) -> Self {
        self.require_api_key = Some(required);
        self
    }

    /// Adds a header to every request (e.g. `OpenAI-Organization`, or
    /// `api-key` for Azure). Values are treated as secrets.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The request timeout: the longest wait for a response's headers, for a
    /// whole non-streamed response, and between two events of a stream.
    /// Exceeding it is `DEADLINE_EXCEEDED`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Replaces the list of known chat models.
    pub fn models(mut self, models: impl IntoIterator<Item = ModelSpec>) -> Self {
        self.models = SpecList::new(models);
        self
    }

    /// Adds (or replaces, by name) one known chat model.
    pub fn model(mut self, model: ModelSpec) -> Self {
        self.models.upsert(model);
        self
    }

    /// Replaces the list of known embedders.
    pub fn embedders(mut self, embedders: impl IntoIterator<Item = EmbedderSpec>) -> Self {
        self.embedders = SpecList::new(embedders);
        self
    }

    /// Adds (or replaces, by name) one known embedder.
    pub fn embedder(mut self, embedder: EmbedderSpec) -> Self {
        self.embedders.upsert(embedder);
        self
    }

    /// How structured output is requested (see [`StructuredOutputStyle`]).
    pub fn structured_output(mut self, style: StructuredOutputStyle) -> Self {
        self.structured_output = style;
        self
    }

    /// Builds the plugin. Fails with `INVALID_ARGUMENT` for an empty name, a
    /// base URL that is not `http(s)`, or an invalid header.
    pub fn build(self) -> Result<OpenAiCompatible> {
        validate_name(&self.name)?;
        validate_http_url("base URL", &self.base_url)?;
        let is_openai = self.base_url.trim_end_matches('/') == DEFAULT_BASE_URL;
        let api_key = self
            .api_key
            .or_else(|| self.api_key_env.as_deref().and_then(ApiKey::from_env))
            .or_else(|| is_openai.then(|| ApiKey::from_env(API_KEY_ENV)).flatten());
        let headers = header_map(&self.headers)?;
        let client = Client::new(
            self.name.clone(),
            &self.base_url,
            api_key,
            headers,
            self.timeout,
        )?;
        Ok(OpenAiCompatible {
            shared: Arc::new(Shared {
                name: self.name,
                client,
                structured_output: self.structured_output,
                require_api_key: self.require_api_key.unwrap_or(is_openai),
                models: self.models,
                embedders: self.embedders,
                listed: OnceLock::new(),
            }),
        })
    }
}
