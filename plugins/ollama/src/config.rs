//! [`OllamaConfig`]: the `config` an Ollama model accepts, and where each
//! field goes in an `/api/chat` request.

use genkit_provider::CommonConfig;
use genkit_provider::wire::put_some;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Model configuration: Genkit's common fields, mapped to Ollama's
/// `options`, plus Ollama's top-level `keepAlive` and `think`. Every other
/// key is put in `options` as it is (e.g. `num_ctx`, `repeat_penalty`,
/// `min_p`, `mirostat`). A request's `apiKey` is sent as a bearer token
/// (for a server behind an authenticating proxy).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OllamaConfig {
    /// Genkit's common options, in `options` (`num_predict`, `stop`...).
    #[serde(flatten)]
    pub common: CommonConfig,
    /// Seed for reproducible sampling (`options.seed`).
    pub seed: Option<i64>,
    /// Context window in tokens (`options.num_ctx`).
    pub num_ctx: Option<u32>,
    /// How long the model stays loaded after the request, e.g. `"5m"` or
    /// seconds (`keep_alive`).
    pub keep_alive: Option<Value>,
    /// Thinking for reasoning models: `true`/`false` or a level such as
    /// `"high"` (`think`). Thinking comes back as reasoning parts.
    pub think: Option<Value>,
    /// Any other key, put in `options` as it is.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl OllamaConfig {
    /// The `options` object: mapped fields, then the other keys (which win).
    pub(crate) fn options(&self) -> Map<String, Value> {
        let mut o = Map::new();
        let c = &self.common;
        put_some(&mut o, "temperature", c.temperature);
        put_some(&mut o, "num_predict", c.max_output_tokens);
        put_some(&mut o, "top_k", c.top_k);
        put_some(&mut o, "top_p", c.top_p);
        put_some(&mut o, "stop", c.stop_sequences.clone());
        put_some(&mut o, "seed", self.seed);
        put_some(&mut o, "num_ctx", self.num_ctx);
        o.extend(self.extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        o
    }
}

/// Options of an embedding request (`EmbedRequest.options`). Unknown keys
/// go to Ollama's `options` (e.g. `num_ctx`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedConfig {
    /// Truncate inputs longer than the context instead of failing (`truncate`,
    /// Ollama's default is true).
    pub truncate: Option<bool>,
    /// Vector length for models that can shorten their output (`dimensions`).
    pub dimensions: Option<u32>,
    /// How long the model stays loaded (`keep_alive`).
    pub keep_alive: Option<Value>,
    /// Model to send instead of the embedder's.
    pub version: Option<String>,
    /// Any other key, put in `options`.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_provider::RequestConfig;
    use serde_json::json;

    #[test]
    fn options_mapping() {
        let c = OllamaConfig::from_value(Some(&json!({
            "temperature": 0.1, "maxOutputTokens": 5, "topK": 3, "topP": 0.5,
            "stopSequences": ["x"], "seed": 1, "numCtx": 4096, "keepAlive": "1m",
            "think": true, "repeat_penalty": 1.2, "apiKey": "k", "version": null
        })))
        .unwrap();
        assert_eq!(
            Value::Object(c.options()),
            json!({"temperature": 0.1, "num_predict": 5, "top_k": 3, "top_p": 0.5,
                   "stop": ["x"], "seed": 1, "num_ctx": 4096, "repeat_penalty": 1.2})
        );
        assert_eq!(c.keep_alive, Some(json!("1m")));
        assert_eq!(c.think, Some(json!(true)));
        assert!(OllamaConfig::from_value(Some(&json!({"topK": "many"}))).is_err());
    }
}
