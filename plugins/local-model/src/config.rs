//! The model's `config`: Genkit's common generation options and how they
//! map to a sampler.

use candle_transformers::generation::Sampling;
use genkit_core::{Error, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The sampling defaults when a request sets none: llama.cpp's.
const DEFAULT_TEMPERATURE: f64 = 0.8;
const DEFAULT_TOP_K: u32 = 40;
const DEFAULT_TOP_P: f64 = 0.95;

/// Generation options for a local model (Genkit's common config plus
/// `seed`). Unset sampling options take llama.cpp's defaults (temperature
/// 0.8, top-k 40, top-p 0.95); temperature 0 decodes greedily.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalModelConfig {
    /// Sampling temperature; 0 picks the most likely token every time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Most tokens to generate (default: up to the context length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sample among the k most likely tokens (0 = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Sample among the most likely tokens whose probabilities add up to p
    /// (1 = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Texts that end the answer (not included in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Seed of the sampler, for reproducible sampling (default: random).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

impl LocalModelConfig {
    /// Reads a request's `config` (absent = defaults); other Genkit fields
    /// such as `version` are ignored.
    pub fn from_request(config: Option<&Value>) -> Result<Self> {
        let config = match config {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(c) => c,
        };
        let parsed: Self = serde_json::from_value(config.clone())
            .map_err(|e| Error::invalid_argument(format!("invalid model config: {e}")))?;
        parsed.validate()?;
        Ok(parsed)
    }

    fn validate(&self) -> Result<()> {
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::invalid_argument(format!(
                "temperature must be a number ≥ 0, got {t}"
            )));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(Error::invalid_argument(format!(
                "topP must be in (0, 1], got {p}"
            )));
        }
        Ok(())
    }

    /// The sampler these options describe.
    pub fn sampling(&self) -> Sampling {
        let temperature = self.temperature.unwrap_or(DEFAULT_TEMPERATURE);
        if temperature == 0.0 {
            return Sampling::ArgMax;
        }
        let k = self.top_k.unwrap_or(DEFAULT_TOP_K) as usize;
        let p = self.top_p.unwrap_or(DEFAULT_TOP_P);
        match (k > 0, p < 1.0) {
            (true, true) => Sampling::TopKThenTopP { k, p, temperature },
            (true, false) => Sampling::TopK { k, temperature },
            (false, true) => Sampling::TopP { p, temperature },
            (false, false) => Sampling::All { temperature },
        }
    }

    /// The stop sequences, empty ones dropped.
    pub fn stops(&self) -> Vec<String> {
        self.stop_sequences
            .iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn greedy_at_temperature_zero() {
        let c =
            LocalModelConfig::from_request(Some(&json!({"temperature": 0, "topK": 5}))).unwrap();
        assert_eq!(c.sampling(), Sampling::ArgMax);
    }

    #[test]
    fn defaults_are_llama_cpp_s() {
        let c = LocalModelConfig::from_request(None).unwrap();
        assert_eq!(
            c.sampling(),
            Sampling::TopKThenTopP {
                k: 40,
                p: 0.95,
                temperature: 0.8
            }
        );
    }

    #[test]
    fn options_map_to_samplers() {
        let c = |v: Value| LocalModelConfig::from_request(Some(&v)).unwrap().sampling();
        assert_eq!(
            c(json!({"temperature": 0.5, "topK": 0, "topP": 1})),
            Sampling::All { temperature: 0.5 }
        );
        assert_eq!(
            c(json!({"temperature": 0.5, "topK": 3, "topP": 1})),
            Sampling::TopK {
                k: 3,
                temperature: 0.5
            }
        );
        assert_eq!(
            c(json!({"temperature": 0.5, "topK": 0, "topP": 0.5})),
            Sampling::TopP {
                p: 0.5,
                temperature: 0.5
            }
        );
    }

    #[test]
    fn common_fields_parse_and_bad_values_fail() {
        let c = LocalModelConfig::from_request(Some(&json!({
            "maxOutputTokens": 7, "stopSequences": ["\n", ""], "seed": 42, "version": "x"
        })))
        .unwrap();
        assert_eq!(c.max_output_tokens, Some(7));
        assert_eq!(c.stops(), vec!["\n".to_owned()]);
        assert_eq!(c.seed, Some(42));
        for bad in [
            json!({"temperature": -1}),
            json!({"topP": 0}),
            json!({"topK": "x"}),
        ] {
            assert!(LocalModelConfig::from_request(Some(&bad)).is_err(), "{bad}");
        }
    }
}
