//! [`Ollama`]: the plugin, its builder, and what it lists and resolves.

use crate::client::Client;
use crate::embedder::build_embedder;
use crate::error::{OllamaError, excerpt};
use crate::model::build_model;
use crate::models::{EmbedderSpec, ModelSpec, looks_like_embedder};
use crate::wire::TagsResponse;
use async_trait::async_trait;
use genkit_core::{
    ActionDesc, ActionKind, DynAction, Error, IntoDynAction, Plugin, Registry, Result,
};
use genkit_provider::plugin::{SpecList, header_map, validate_http_url, validate_name};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Where Ollama listens by default.
pub const DEFAULT_SERVER_ADDRESS: &str = "http://127.0.0.1:11434";
/// The plugin's default name (and model prefix).
pub const DEFAULT_NAME: &str = "ollama";
/// The default request timeout (local models can be slow to load).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// What every model and embedder of one plugin instance shares.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) client: Client,
    models: SpecList<ModelSpec>,
    embedders: SpecList<EmbedderSpec>,
}

/// The Ollama plugin: chat models (`/model/ollama/<model>`) over Ollama's
/// native `/api/chat` and embedders (`/embedder/ollama/<model>`) over
/// `/api/embed`.
///
/// Listing asks the server (`/api/tags`) which models it has; any model
/// name resolves on demand, so `ollama/llama3.2` works without
/// configuration. Models given to the builder keep the capabilities given
/// there (e.g. a model without tool support).
#[derive(Clone)]
pub struct Ollama {
    shared: Arc<Shared>,
}

impl fmt::Debug for Ollama {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ollama")
            .field("name", &self.shared.name)
            .field("client", &self.shared.client)
            .field("models", &self.shared.models.as_slice().len())
            .field("embedders", &self.shared.embedders.as_slice().len())
            .finish()
    }
}

impl Ollama {
    /// A builder with the defaults (`ollama`, `http://127.0.0.1:11434`).
    pub fn builder() -> OllamaBuilder {
        OllamaBuilder::default()
    }

    /// The plugin name (the models' prefix).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The full name of a model or embedder: `<plugin>/<model>`.
    pub fn model_name(&self, model: &str) -> String {
        format!("{}/{model}", self.shared.name)
    }

    /// Names of the models the server has (`GET /api/tags`).
    pub async fn local_models(&self) -> Result<Vec<String>> {
        let raw = self.shared.client.get_json("/api/tags").await?;
        let tags: TagsResponse = serde_json::from_value(raw.clone()).map_err(|e| {
            Error::from(OllamaError::Malformed {
                provider: self.shared.name.clone(),
                detail: format!("not a tags response ({e}): {}", excerpt(&raw.to_string())),
            })
        })?;
        Ok(tags
            .models
            .iter()
            .filter_map(|m| m.id().map(str::to_owned))
            .collect())
    }

    fn model_desc(&self, spec: ModelSpec) -> ActionDesc {
        build_model(self.shared.clone(), spec)
            .into_dyn()
            .desc()
            .clone()
    }

    fn embedder_desc(&self, spec: EmbedderSpec) -> ActionDesc {
        build_embedder(self.shared.clone(), spec)
            .into_dyn()
            .desc()
            .clone()
    }
}

#[async_trait]
impl Plugin for Ollama {
    fn name(&self) -> &str {
        &self.shared.name
    }

    /// Registers nothing up front: models and embedders are built on their
    /// first lookup.
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

    /// The configured models and embedders, plus every model the server has
    /// (names with `embed` are listed as embedders). When the server cannot
    /// be reached, only the configured ones are listed (and a warning logged).
    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        let s = &self.shared;
        let mut descs: Vec<ActionDesc> = s
            .models
            .as_slice()
            .iter()
            .map(|m| self.model_desc(m.clone()))
            .chain(
                s.embedders
                    .as_slice()
                    .iter()
                    .map(|e| self.embedder_desc(e.clone())),
            )
            .collect();
        match self.local_models().await {
            Ok(names) => {
                for name in names {
                    let known = s.models.contains(&name) || s.embedders.contains(&name);
                    if known {
                        continue;
                    }
                    descs.push(if looks_like_embedder(&name) {
                        self.embedder_desc(EmbedderSpec::new(name))
                    } else {
                        self.model_desc(ModelSpec::new(name))
                    });
                }
            }
            Err(e) => tracing::warn!(plugin = %s.name, "listing the server's models failed: {e}"),
        }
        Ok(descs)
    }
}

/// Configures an [`Ollama`] plugin.
#[derive(Clone)]
pub struct OllamaBuilder {
    name: String,
    server_address: String,
    headers: Vec<(String, String)>,
    timeout: Duration,
    models: SpecList<ModelSpec>,
    embedders: SpecList<EmbedderSpec>,
}

impl fmt::Debug for OllamaBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OllamaBuilder")
            .field("name", &self.name)
            .field("server_address", &self.server_address)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("models", &self.models.as_slice())
            .field("embedders", &self.embedders.as_slice())
            .finish()
    }
}

impl Default for OllamaBuilder {
    fn default() -> Self {
        Self {
            name: DEFAULT_NAME.into(),
            server_address: DEFAULT_SERVER_ADDRESS.into(),
            headers: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            models: SpecList::default(),
            embedders: SpecList::default(),
        }
    }
}

impl OllamaBuilder {
    /// The plugin name: the namespace of its actions.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The server's address (`http://host:port`, no path).
    pub fn server_address(mut self, address: impl Into<String>) -> Self {
        self.server_address = address.into();
        self
    }

    /// Adds a header to every request (e.g. credentials of a proxy in front
    /// of Ollama). Values are treated as secrets.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The request timeout: the longest wait for a response's headers, for a
    /// whole non-streamed response, and between two lines of a stream.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Adds (or replaces, by name) a chat model with its capabilities.
    pub fn model(mut self, model: ModelSpec) -> Self {
        self.models.upsert(model);
        self
    }

    /// Adds (or replaces, by name) an embedder.
    pub fn embedder(mut self, embedder: EmbedderSpec) -> Self {
        self.embedders.upsert(embedder);
        self
    }

    /// Builds the plugin. Fails with `INVALID_ARGUMENT` for an empty name, an
    /// address that is not `http(s)`, or an invalid header.
    pub fn build(self) -> Result<Ollama> {
        validate_name(&self.name)?;
        validate_http_url("server address", &self.server_address)?;
        let client = Client::new(
            self.name.clone(),
            &self.server_address,
            header_map(&self.headers)?,
            self.timeout,
        )?;
        Ok(Ollama {
            shared: Arc::new(Shared {
                name: self.name,
                client,
                models: self.models,
                embedders: self.embedders,
            }),
        })
    }
}
