//! [`Ollama`]: the plugin kit's [`ProviderPlugin`](genkit_provider::ProviderPlugin) for Ollama's native API,
//! its builder, and what the provider declares.

use crate::config::{EmbedConfig, OllamaConfig};
use crate::convert::request::chat_request;
use crate::convert::response::ChatState;
use crate::error::OllamaError;
use crate::models::{looks_like_embedder, supports};
use crate::wire::{EmbedResponse as WireEmbedResponse, TagsResponse};
use genkit_core::{ActionKind, Result};
use genkit_model::types::GenerateResponse;
use genkit_provider::wire::{put_some, text_embed_body};
use genkit_provider::{
    Chat, Embed, ModelSpec, Provider, ProviderClient, ProviderInfo, StreamFormat, WireCall,
};
use serde_json::Value;

/// Where Ollama listens by default.
pub const DEFAULT_SERVER_ADDRESS: &str = "http://127.0.0.1:11434";
/// The plugin's default name (and model prefix).
pub const DEFAULT_NAME: &str = "ollama";

/// Longest stream line accepted (a line holds one token, or a whole tool call).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

genkit_provider::provider_plugin! {
    /// The Ollama plugin: chat models (`/model/ollama/<model>`) over
    /// Ollama's native `/api/chat` and embedders (`/embedder/ollama/<model>`)
    /// over `/api/embed`. Build it with [`Ollama::builder`] or
    /// [`Ollama::from_env`] (which reads `OLLAMA_HOST`).
    ///
    /// Listing asks the server (`/api/tags`) which models it has; any model
    /// name resolves on demand, so `ollama/llama3.2` works without
    /// configuration. Models given to the builder keep the capabilities
    /// given there (e.g. a model without tool support).
    pub type Ollama;
    /// What the Ollama plugin declares to the kit: Ollama's wire format.
    pub struct OllamaProvider {}
    /// Configures an [`Ollama`] plugin. Defaults: name `ollama`, address
    /// `http://127.0.0.1:11434`, no key, a ten-minute timeout (local models
    /// can be slow to load), no models listed beyond the server's.
    pub struct OllamaBuilder with embedders;
}

impl Provider for OllamaProvider {
    const INFO: ProviderInfo = ProviderInfo {
        base_url_env: Some("OLLAMA_HOST"),
        request_keys: true,
        stream: StreamFormat::Ndjson {
            max_line: MAX_LINE_BYTES,
        },
        ..ProviderInfo::new("Ollama", DEFAULT_NAME, DEFAULT_SERVER_ADDRESS)
    };

    type Model = ModelSpec;
    type Config = OllamaConfig;
    type EmbedOptions = EmbedConfig;
    type Answer = ChatState;

    fn describe_model(&self, spec: ModelSpec) -> ModelSpec {
        spec.with_defaults(supports(), "Ollama")
    }

    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<ChatState>> {
        let Chat { model, request, .. } = chat;
        let body = chat_request(&model.name, request, chat.config, chat.streaming)?;
        let state = ChatState::new(request.messages.clone());
        Ok(WireCall::new("api/chat", body, state))
    }

    fn chat_response(&self, mut state: ChatState, body: &[u8]) -> Result<GenerateResponse> {
        let value: Value = OllamaError::parse_body("the answer", body)?;
        state.on_value(value)?;
        Ok(state.into_response()?)
    }

    /// `POST /api/embed`; options without a field of their own go to `options`.
    fn embed_request(&self, embed: Embed<'_, Self>) -> Result<WireCall<()>> {
        let o = embed.options;
        let mut body = text_embed_body(embed.spec, embed.request, o.version, o.dimensions)?;
        put_some(&mut body, "truncate", o.truncate);
        put_some(&mut body, "keep_alive", o.keep_alive);
        if !o.extra.is_empty() {
            body.insert("options".into(), Value::Object(o.extra));
        }
        Ok(WireCall::new("api/embed", Value::Object(body), ()))
    }

    fn embed_response(&self, body: &[u8]) -> Result<Vec<Vec<f32>>> {
        let parsed: WireEmbedResponse = OllamaError::parse_body("the embed response", body)?;
        Ok(parsed.embeddings)
    }

    /// Every model the server has (`GET /api/tags`); names with `embed` are
    /// embedders. When the server cannot be reached, none (and a warning).
    async fn discover(&self, client: &ProviderClient) -> Vec<(ActionKind, String)> {
        let names = local_models_of(client).await.unwrap_or_else(|e| {
            tracing::warn!("listing the Ollama server's models failed: {e}");
            Vec::new()
        });
        let kind = |name: &str| {
            if looks_like_embedder(name) {
                ActionKind::Embedder
            } else {
                ActionKind::Model
            }
        };
        names.into_iter().map(|name| (kind(&name), name)).collect()
    }
}

/// Names of the models an Ollama plugin's server has (`GET /api/tags`).
pub async fn local_models(plugin: &Ollama) -> Result<Vec<String>> {
    Ok(local_models_of(plugin.client()).await?)
}

async fn local_models_of(client: &ProviderClient) -> std::result::Result<Vec<String>, OllamaError> {
    let response = client.get::<OllamaProvider>("api/tags").await?;
    let body = client.read_body::<OllamaProvider>(response).await?;
    let tags: TagsResponse = OllamaError::parse_body("the tags response", &body)?;
    Ok(tags
        .models
        .iter()
        .filter_map(|m| m.id().map(str::to_owned))
        .collect())
}

impl OllamaBuilder {
    /// The server's address (`http://host:port`, no path): the base URL.
    pub fn server_address(self, address: impl Into<String>) -> Self {
        self.base_url(address)
    }
}
