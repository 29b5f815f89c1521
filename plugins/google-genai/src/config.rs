//! Typed model and embedder configuration: what `config` in a generate call
//! (or `options` of an embed call) may hold for Gemini.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use genkit_provider::CommonConfig;

/// The `config` of a Gemini model call: Genkit's common options (mapped to
/// `generationConfig`), Gemini's own, and any other key (`seed`,
/// `imageConfig`...) passed into `generationConfig` unchanged. A per-request
/// `apiKey` is refused (configs are traced).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeminiConfig {
    /// Genkit's common options.
    #[serde(flatten)]
    pub common: CommonConfig,
    /// Number of candidates to generate.
    pub candidate_count: Option<u32>,
    /// Safety filter thresholds per harm category.
    pub safety_settings: Option<Vec<SafetySetting>>,
    /// Thinking (reasoning) options.
    pub thinking_config: Option<ThinkingConfig>,
    /// How the model uses the declared functions; overrides the request's
    /// `toolChoice`.
    pub function_calling_config: Option<FunctionCallingConfig>,
    /// Output modalities (`TEXT`, `IMAGE`, `AUDIO`).
    pub response_modalities: Option<Vec<String>>,
    /// Lets the model write and run code (`true` or a `codeExecution` object).
    pub code_execution: Option<Value>,
    /// Grounding with Google Search (`true` or a `googleSearch` object).
    pub google_search: Option<Value>,
    /// Legacy name of `googleSearch` used by older models.
    pub google_search_retrieval: Option<Value>,
    /// Lets the model read URLs found in the prompt (`true` or an object).
    pub url_context: Option<Value>,
    /// Retrieval from File Search stores (a `fileSearch` object).
    pub file_search: Option<Value>,
    /// Further Gemini `tools` entries, sent as given.
    pub tools: Option<Vec<Value>>,
    /// Fields merged into `toolConfig`.
    pub tool_config: Option<Map<String, Value>>,
    /// `toolConfig.retrievalConfig` (location and language for grounding).
    pub retrieval_config: Option<Value>,
    /// A context cache to use (`cachedContents/...`).
    pub cached_content: Option<String>,
    /// Service tier (`standard`, `flex`, `priority`).
    pub service_tier: Option<String>,
    /// Other `generationConfig` fields, passed through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A safety filter threshold for one harm category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SafetySetting {
    /// Harm category, e.g. `HARM_CATEGORY_HATE_SPEECH`.
    pub category: String,
    /// Threshold, e.g. `BLOCK_ONLY_HIGH` or `BLOCK_NONE`.
    pub threshold: String,
    /// Other fields (e.g. `method`), passed through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SafetySetting {
    /// A threshold for a category.
    pub fn new(category: impl Into<String>, threshold: impl Into<String>) -> Self {
        Self {
            category: category.into(),
            threshold: threshold.into(),
            extra: Map::new(),
        }
    }
}

/// Thinking options (`generationConfig.thinkingConfig`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Return thought summaries (as Genkit `reasoning` parts).
    pub include_thoughts: Option<bool>,
    /// Gemini 2.5: thinking budget in tokens (0 disables, -1 is automatic).
    pub thinking_budget: Option<i32>,
    /// Gemini 3: thinking level (`MINIMAL`, `LOW`, `MEDIUM`, `HIGH`).
    pub thinking_level: Option<String>,
    /// Other fields, passed through.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How the model may call the declared functions.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunctionCallingConfig {
    /// `AUTO`, `ANY`, `NONE` or `MODE_UNSPECIFIED` (Genkit's `auto`,
    /// `required`, `none` are accepted too).
    pub mode: Option<String>,
    /// With `ANY`: the functions the model may choose from.
    pub allowed_function_names: Option<Vec<String>>,
}

/// Options of a Gemini embedding call (`options` of an embed request).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmbedConfig {
    /// The intended use, e.g. `RETRIEVAL_DOCUMENT`, `RETRIEVAL_QUERY`,
    /// `SEMANTIC_SIMILARITY`.
    pub task_type: Option<String>,
    /// A title for `RETRIEVAL_DOCUMENT` inputs.
    pub title: Option<String>,
    /// Truncate the vectors to this many dimensions.
    pub output_dimensionality: Option<u32>,
    /// The model version to call instead of the embedder's own name.
    pub version: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_known_and_passthrough_keys() {
        let c: GeminiConfig = serde_json::from_value(
            json!({"temperature": 0.5, "seed": 7, "thinkingConfig": {"thinkingBudget": 0}}),
        )
        .unwrap();
        assert_eq!(c.common.temperature, Some(0.5));
        assert_eq!(c.extra.get("seed"), Some(&json!(7)));
        assert_eq!(c.thinking_config.and_then(|t| t.thinking_budget), Some(0));
        assert!(serde_json::from_value::<GeminiConfig>(json!({"temperature": "hot"})).is_err());
    }
}
