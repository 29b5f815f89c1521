//! Typed model configuration: what `config` in a generate call may hold for
//! Claude models.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::error::AnthropicError;
use genkit_provider::CommonConfig;

/// The `config` of a Claude model call: Genkit's common options (mapped to
/// the Messages API's names), Anthropic's own, and any other key passed into
/// the request body unchanged. A per-request `apiKey` is refused (configs
/// are traced).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnthropicConfig {
    /// Genkit's common options.
    #[serde(flatten)]
    pub common: CommonConfig,
    /// Anthropic's `tool_choice` object (`{"type": "tool", "name": ...}`,
    /// `disable_parallel_tool_use`...); overrides the request's `toolChoice`.
    #[serde(rename = "tool_choice")]
    pub tool_choice: Option<Value>,
    /// Request metadata (`{"user_id": ...}`).
    pub metadata: Option<Value>,
    /// Extended thinking.
    pub thinking: Option<ThinkingConfig>,
    /// `output_config` fields (e.g. `effort`); the plugin adds `format` for
    /// structured output.
    #[serde(rename = "output_config")]
    pub output_config: Option<Map<String, Value>>,
    /// Other request fields, passed through unchanged.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Extended thinking options.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThinkingConfig {
    /// Turns thinking on (with `budgetTokens`) or off.
    pub enabled: Option<bool>,
    /// Tokens the model may spend thinking (at least 1024).
    pub budget_tokens: Option<u32>,
    /// Lets the model decide how much to think (newer models).
    pub adaptive: Option<bool>,
    /// With `adaptive`: `summarized` or `omitted` thinking text.
    pub display: Option<String>,
}

impl ThinkingConfig {
    /// The Messages API's `thinking` object, and the budget it spends.
    pub(crate) fn to_wire(&self) -> Result<Option<(Value, Option<u32>)>, AnthropicError> {
        if self.adaptive == Some(true) {
            if self.enabled == Some(true) {
                return Err(AnthropicError::InvalidRequest(
                    "thinking cannot be both `enabled` and `adaptive`".into(),
                ));
            }
            let mut v = json!({"type": "adaptive"});
            if let Some(d) = &self.display {
                v["display"] = json!(d);
            }
            return Ok(Some((v, None)));
        }
        match (self.enabled, self.budget_tokens) {
            (Some(false), _) => Ok(Some((json!({"type": "disabled"}), None))),
            (Some(true), None) => Err(AnthropicError::InvalidRequest(
                "thinking.budgetTokens is required when thinking is enabled".into(),
            )),
            (_, Some(budget)) => Ok(Some((
                json!({"type": "enabled", "budget_tokens": budget}),
                Some(budget),
            ))),
            (None, None) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_modes() {
        let t = |v: Value| {
            serde_json::from_value::<ThinkingConfig>(v)
                .unwrap()
                .to_wire()
        };
        assert_eq!(
            t(json!({"enabled": true, "budgetTokens": 2048})).unwrap(),
            Some((
                json!({"type": "enabled", "budget_tokens": 2048}),
                Some(2048)
            ))
        );
        assert_eq!(
            t(json!({"enabled": false})).unwrap(),
            Some((json!({"type": "disabled"}), None))
        );
        assert_eq!(
            t(json!({"adaptive": true, "display": "omitted"})).unwrap(),
            Some((json!({"type": "adaptive", "display": "omitted"}), None))
        );
        assert!(t(json!({"enabled": true})).is_err());
        assert!(t(json!({"enabled": true, "adaptive": true})).is_err());
        assert_eq!(t(json!({})).unwrap(), None);
    }

    #[test]
    fn config_keys() {
        let c: AnthropicConfig =
            serde_json::from_value(json!({"topK": 5, "service_tier": "auto"})).unwrap();
        assert_eq!(c.common.top_k, Some(5));
        assert_eq!(
            c.extra,
            Map::from_iter([("service_tier".to_owned(), json!("auto"))])
        );
        assert!(
            serde_json::from_value::<AnthropicConfig>(json!({"maxOutputTokens": "many"})).is_err()
        );
    }
}
