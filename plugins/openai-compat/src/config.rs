//! [`OpenAiConfig`]: the `config` a request to an OpenAI-compatible model
//! accepts, and how each field maps onto the Chat Completions body.

use genkit_provider::CommonConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Model configuration. Genkit's common fields (`temperature`,
/// `maxOutputTokens`, `topP`, `stopSequences`, `version`, `apiKey`) plus
/// OpenAI's own. Every other key is sent as it is (e.g. `"logit_bias"`,
/// `"parallel_tool_calls"`, `"top_k"` for llama.cpp servers, or a named
/// `"tool_choice"`), and wins over a mapped field with the same wire name.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OpenAiConfig {
    /// Genkit's common options; `maxOutputTokens` is `max_tokens` (or
    /// `max_completion_tokens` where models need it), `topK` is not sent
    /// (servers that take it get a `"top_k"` key).
    #[serde(flatten)]
    pub common: CommonConfig,
    /// Token limit including reasoning tokens (`max_completion_tokens`).
    pub max_completion_tokens: Option<u32>,
    /// Seed for deterministic sampling (`seed`).
    pub seed: Option<i64>,
    /// Penalises tokens by how often they appeared, -2–2 (`frequency_penalty`).
    pub frequency_penalty: Option<f64>,
    /// Penalises tokens that appeared at all, -2–2 (`presence_penalty`).
    pub presence_penalty: Option<f64>,
    /// Reasoning effort of reasoning models, e.g. `low`, `medium`, `high`
    /// (`reasoning_effort`).
    pub reasoning_effort: Option<String>,
    /// An end-user id for abuse monitoring (`user`).
    pub user: Option<String>,
    /// Return log probabilities of output tokens (`logprobs`).
    pub log_probs: Option<bool>,
    /// How many most likely tokens to return per position, 0–20 (`top_logprobs`).
    pub top_log_probs: Option<u32>,
    /// Detail level of image inputs (`image_url.detail`).
    pub visual_detail_level: Option<VisualDetailLevel>,
    /// Any other key, sent as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How closely the model looks at images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VisualDetailLevel {
    /// The model decides.
    Auto,
    /// A low-resolution view (cheaper).
    Low,
    /// A high-resolution view.
    High,
}

/// Options of an embedding request (`EmbedRequest.options`). Unknown keys are
/// sent as they are.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedConfig {
    /// Vector length for models that can shorten their output (`dimensions`).
    pub dimensions: Option<u32>,
    /// An end-user id for abuse monitoring (`user`).
    pub user: Option<String>,
    /// Model name to send instead of the embedder's.
    pub version: Option<String>,
    /// An API key for this request only.
    pub api_key: Option<genkit_provider::ApiKey>,
    /// Any other key, sent as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How a JSON schema for structured output is put in `response_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StructuredOutputStyle {
    /// OpenAI's form: `{"type": "json_schema", "json_schema": {"name":
    /// "output", "schema": …}}` (OpenAI, vLLM, llama.cpp's `llama-server`).
    #[default]
    JsonSchema,
    /// `{"type": "json_object", "schema": …}`: the form llama-cpp-python's
    /// server (and Anyscale-style servers) accept; they reject `json_schema`.
    JsonObjectWithSchema,
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_provider::RequestConfig;
    use serde_json::json;

    #[test]
    fn known_and_unknown_keys() {
        let c = OpenAiConfig::from_value(Some(&json!({
            "temperature": 0.5, "maxOutputTokens": 10, "apiKey": "sk-x",
            "logit_bias": {"1": 2}, "version": null
        })))
        .unwrap();
        assert_eq!(c.common.temperature, Some(0.5));
        assert_eq!(c.common.max_output_tokens, Some(10));
        assert_eq!(c.common.api_key.as_ref().map(|k| k.expose()), Some("sk-x"));
        assert_eq!(c.extra.get("logit_bias"), Some(&json!({"1": 2})));
        assert!(!c.extra.contains_key("version"));
        assert!(!format!("{c:?}").contains("sk-x"));
    }

    #[test]
    fn wrong_types_are_errors() {
        assert!(OpenAiConfig::from_value(Some(&json!({"temperature": "hot"}))).is_err());
        assert!(OpenAiConfig::from_value(Some(&json!([1]))).is_err());
        assert_eq!(
            OpenAiConfig::from_value(None).unwrap(),
            OpenAiConfig::default()
        );
    }
}
