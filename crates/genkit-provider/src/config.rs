//! [`CommonConfig`]: Genkit's common generation options
//! (`GenerationCommonConfig`), which every provider's model config embeds
//! with `#[serde(flatten)]` before its own fields.

use crate::ApiKey;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The generation options every Genkit model understands, under their
/// Genkit names (`temperature`, `maxOutputTokens`, `topK`, `topP`,
/// `stopSequences`, `version`, `apiKey`). Each provider maps them onto its
/// wire format; the key is redacted in `Debug` output.
#[serde_with::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommonConfig {
    /// The model name to send instead of the action's (a version or snapshot).
    pub version: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_output_tokens: Option<u32>,
    /// Top-k sampling.
    pub top_k: Option<u32>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Sequences that stop generation.
    pub stop_sequences: Option<Vec<String>>,
    /// An API key for this request only. Plugins whose requests are traced
    /// with their config refuse it (see [`ProviderInfo::request_keys`](crate::ProviderInfo)).
    pub api_key: Option<ApiKey>,
}

impl CommonConfig {
    /// `version`, else `model`: the model name to send.
    pub fn model_name(&self, model: &str) -> String {
        self.version.clone().unwrap_or_else(|| model.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    #[derive(Debug, Default, Deserialize)]
    struct ProviderConfig {
        #[serde(flatten)]
        common: CommonConfig,
        #[serde(default)]
        seed: Option<i64>,
        #[serde(flatten)]
        extra: Map<String, Value>,
    }

    #[test]
    fn flattened_fields_go_to_the_common_part_first() {
        let c: ProviderConfig = serde_json::from_value(json!({
            "temperature": 0.5, "maxOutputTokens": 9, "stopSequences": ["x"],
            "apiKey": "sk-1", "seed": 3, "logit_bias": {}
        }))
        .unwrap();
        assert_eq!(c.common.temperature, Some(0.5));
        assert_eq!(c.common.max_output_tokens, Some(9));
        assert_eq!(c.common.api_key, Some(ApiKey::new("sk-1")));
        assert_eq!(c.seed, Some(3));
        assert_eq!(c.extra.keys().collect::<Vec<_>>(), ["logit_bias"]);
        assert_eq!(c.common.model_name("m"), "m");
        assert!(!format!("{c:?}").contains("sk-1"));
    }
}
