//! [`OpenAiCompatible`]: the plugin kit's [`ProviderPlugin`](genkit_provider::ProviderPlugin) for the Chat
//! Completions and Embeddings API, its builder, and what the provider
//! declares.

use crate::config::{EmbedConfig, OpenAiConfig, StructuredOutputStyle};
use crate::convert::request::chat_body;
use crate::convert::response::from_completion;
use crate::error::ProviderError;
use crate::models::{ModelSpec, openai_embedders, openai_models};
use crate::stream::StreamState;
use crate::wire::EmbeddingsResponse;
use genkit_core::Result;
use genkit_model::embedder::EmbedderInfo;
use genkit_model::types::GenerateResponse;
use genkit_provider::plugin::text_embedder_info;
use genkit_provider::wire::{put_some, text_embed_body};
use genkit_provider::{Chat, Embed, EmbedderSpec, Provider, ProviderInfo, WireCall};
use serde_json::Value;

/// OpenAI's API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The plugin's default name (and model prefix).
pub const DEFAULT_NAME: &str = "openai";
/// Where the key comes from when none is given (for OpenAI's own API).
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Where `from_env` reads another base URL from, as OpenAI's SDKs do (a
/// proxy or a compatible server; `OPENAI_API_KEY` is sent there).
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";

genkit_provider::provider_plugin! {
    /// The OpenAI-compatible plugin: chat models (`/model/<name>/<model>`)
    /// and embedders (`/embedder/<name>/<model>`) of OpenAI or any server
    /// speaking its Chat Completions and Embeddings API (llama.cpp, vLLM, LM
    /// Studio, Ollama's `/v1`, OpenRouter, ...). Build it with
    /// [`OpenAiCompatible::builder`] or [`OpenAiCompatible::from_env`].
    pub type OpenAiCompatible;
    /// What the OpenAI-compatible plugin declares to the kit: the Chat
    /// Completions wire format, and its own settings.
    pub struct OpenAiProvider {
        /// How structured output is requested (see [`StructuredOutputStyle`]).
        structured_output: StructuredOutputStyle = StructuredOutputStyle::JsonSchema,
    }
    /// Configures an [`OpenAiCompatible`] plugin.
    ///
    /// Defaults: name `openai`, base URL `https://api.openai.com/v1`,
    /// OpenAI's model and embedder lists, a ten-minute timeout, `json_schema`
    /// structured output. The key is the one given to `api_key`, else — only
    /// when the base URL is OpenAI's — `OPENAI_API_KEY` (so a key meant for OpenAI is never sent
    /// to another server by accident). Without a key no `Authorization`
    /// header is sent; OpenAI's own API then fails with
    /// `FAILED_PRECONDITION` before any request.
    pub struct OpenAiCompatibleBuilder with embedders;
}

impl Provider for OpenAiProvider {
    const INFO: ProviderInfo = ProviderInfo {
        base_url_env: Some(BASE_URL_ENV),
        key_env: &[API_KEY_ENV],
        key_required: true,
        request_keys: true,
        ..ProviderInfo::new("OpenAiCompatible", DEFAULT_NAME, DEFAULT_BASE_URL)
    };

    type Model = ModelSpec;
    type Config = OpenAiConfig;
    fn default_models() -> Vec<ModelSpec> {
        openai_models()
    }
    type EmbedOptions = EmbedConfig;
    type Answer = StreamState;

    fn default_embedders() -> Vec<EmbedderSpec> {
        openai_embedders()
    }

    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<StreamState>> {
        let Chat { model, request, .. } = chat;
        let style = self.structured_output;
        let body = chat_body(model, style, request, chat.config, chat.streaming)?;
        Ok(WireCall::new("chat/completions", body, StreamState::new()))
    }

    fn chat_response(&self, _: StreamState, body: &[u8]) -> Result<GenerateResponse> {
        let raw: Value = ProviderError::parse_body("the answer", body)?;
        Ok(from_completion(raw)?)
    }

    fn embedder_info(&self, spec: &EmbedderSpec) -> EmbedderInfo {
        let label = spec.label.clone().unwrap_or_else(|| spec.name.clone());
        text_embedder_info(label, spec.dimensions)
    }

    /// `POST /embeddings`; other options are sent as they are.
    fn embed_request(&self, embed: Embed<'_, Self>) -> Result<WireCall<()>> {
        let o = embed.options;
        let mut body = text_embed_body(embed.spec, embed.request, o.version, o.dimensions)?;
        put_some(&mut body, "user", o.user);
        body.extend(o.extra);
        Ok(WireCall::new("embeddings", Value::Object(body), ()))
    }

    /// The vectors in document (`index`) order.
    fn embed_response(&self, body: &[u8]) -> Result<Vec<Vec<f32>>> {
        let parsed: EmbeddingsResponse = ProviderError::parse_body("the embeddings", body)?;
        let mut data = parsed.data;
        data.sort_by_key(|d| d.index.unwrap_or(usize::MAX));
        Ok(data.into_iter().map(|d| d.embedding).collect())
    }
}
