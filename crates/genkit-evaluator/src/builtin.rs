//! Built-in evaluators that need no model: Genkit JS's
//! `@genkit-ai/evaluator` metrics `REGEX` and `DEEP_EQUAL` (same names,
//! labels, checks and scores), and two of Genkit for Rust's own,
//! `JSON_VALID` and `JSON_SCHEMA`. Register them with
//! [`define_genkit_evaluators`]; each is `/evaluator/genkitEval/<metric>`.

use super::{Evaluator, EvaluatorOptions, define_evaluator};
use genkit_core::schema::SchemaValidator;
use genkit_core::{Error, Registry, Result};
use genkit_model::types::{EvalDataPoint, EvalStatus, Score, is_truthy};
use serde_json::Value;

/// The plugin name Genkit JS's evaluators are registered under.
pub const PLUGIN_NAME: &str = "genkitEval";

/// A built-in metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenkitMetric {
    /// The output (as text; JSON for non-strings) matches the regular
    /// expression given as the reference.
    Regex,
    /// The output equals the reference, deeply.
    DeepEqual,
    /// The output is JSON: a string that parses, or any structured value.
    JsonValid,
    /// The output (parsed when a string) conforms to the JSON schema given
    /// as the reference (an object, or a string holding one).
    JsonSchema,
}

impl GenkitMetric {
    /// The metric's name as Genkit spells it (`REGEX`, `DEEP_EQUAL`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Regex => "REGEX",
            Self::DeepEqual => "DEEP_EQUAL",
            Self::JsonValid => "JSON_VALID",
            Self::JsonSchema => "JSON_SCHEMA",
        }
    }

    /// The evaluator's name: `genkitEval/<metric in lower case>`.
    pub fn evaluator_name(self) -> String {
        format!("{PLUGIN_NAME}/{}", self.as_str().to_lowercase())
    }

    fn options(self) -> EvaluatorOptions {
        let (display, definition) = match self {
            Self::Regex => (
                "RegExp",
                "Tests output against the regexp provided as reference",
            ),
            Self::DeepEqual => (
                "Deep Equals",
                "Tests equality of output against the provided reference",
            ),
            Self::JsonValid => ("JSON Valid", "Tests that the output is valid JSON"),
            Self::JsonSchema => (
                "JSON Schema",
                "Tests output against the JSON schema provided as reference",
            ),
        };
        // Genkit JS lists every built-in as billed (it sets no `isBilled`).
        EvaluatorOptions::new(self.evaluator_name(), display, definition)
    }

    /// Scores one test case.
    pub fn score(self, point: &EvalDataPoint) -> Result<Score> {
        match self {
            Self::Regex => regex(point),
            Self::DeepEqual => deep_equal(point),
            Self::JsonValid => json_valid(point),
            Self::JsonSchema => json_schema(point),
        }
    }
}

/// Registers the evaluators of `metrics`.
pub fn define_genkit_evaluators(
    registry: &Registry,
    metrics: &[GenkitMetric],
) -> Result<Vec<Evaluator>> {
    if metrics.is_empty() {
        return Err(Error::invalid_argument(
            "No metrics configured in genkitEval plugin",
        ));
    }
    metrics
        .iter()
        .map(|&metric| {
            define_evaluator(
                registry,
                metric.options(),
                move |point, _o: Option<Value>, _ctx| {
                    let score = metric.score(&point);
                    async move { score }
                },
            )
        })
        .collect()
}

/// Genkit JS's check: a missing or falsy output or reference is an error.
fn output_and_reference(point: &EvalDataPoint) -> Result<(&Value, &Value)> {
    let output = point
        .output
        .as_ref()
        .filter(|v| is_truthy(v))
        .ok_or_else(|| Error::invalid_argument("Output was not provided"))?;
    let reference = point
        .reference
        .as_ref()
        .filter(|v| is_truthy(v))
        .ok_or_else(|| Error::invalid_argument("Reference was not provided"))?;
    Ok((output, reference))
}

fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn regex(point: &EvalDataPoint) -> Result<Score> {
    let (output, reference) = output_and_reference(point)?;
    let Value::String(pattern) = reference else {
        return Err(Error::invalid_argument(
            "Reference must be a string (regex)",
        ));
    };
    let re = regex::Regex::new(pattern).map_err(|e| {
        Error::invalid_argument(format!("Invalid regular expression: {e}")).with_source(e)
    })?;
    Ok(Score::pass_fail(re.is_match(&as_text(output))))
}

/// Where `a` and `b` differ (`None`: equal). Numbers compare by value, so
/// `1` equals `1.0`, as in JavaScript.
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    let here = || {
        Some(format!(
            "at {}: output {a} differs from reference {b}",
            if path.is_empty() { "(root)" } else { path }
        ))
    };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => (x.as_f64() != y.as_f64()).then(here).flatten(),
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return here();
            }
            x.iter()
                .zip(y)
                .enumerate()
                .find_map(|(i, (p, q))| difference(p, q, &format!("{path}[{i}]")))
        }
        (Value::Object(x), Value::Object(y)) => {
            if x.len() != y.len() || x.keys().any(|k| !y.contains_key(k)) {
                return here();
            }
            x.iter().find_map(|(k, p)| {
                y.get(k)
                    .and_then(|q| difference(p, q, &format!("{path}.{k}")))
            })
        }
        _ => (a != b).then(here).flatten(),
    }
}

fn deep_equal(point: &EvalDataPoint) -> Result<Score> {
    let (output, reference) = output_and_reference(point)?;
    Ok(match difference(output, reference, "") {
        None => Score::pass_fail(true),
        Some(why) => Score::pass_fail(false)
            .reasoning(format!("Expected values to be strictly deep-equal: {why}")),
    })
}

fn json_valid(point: &EvalDataPoint) -> Result<Score> {
    let output = point
        .output
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("Output was not provided"))?;
    Ok(match output {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(_) => Score::pass_fail(true),
            Err(e) => Score::pass_fail(false).reasoning(format!("Output is not JSON: {e}")),
        },
        _ => Score::pass_fail(true),
    })
}

fn json_schema(point: &EvalDataPoint) -> Result<Score> {
    let output = point
        .output
        .as_ref()
        .ok_or_else(|| Error::invalid_argument("Output was not provided"))?;
    let schema = match point.reference.as_ref() {
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).map_err(|e| {
            Error::invalid_argument(format!("Reference must be a JSON schema: {e}")).with_source(e)
        })?,
        Some(v @ (Value::Object(_) | Value::Bool(_))) => v.clone(),
        _ => return Err(Error::invalid_argument("Reference must be a JSON schema")),
    };
    let validator = SchemaValidator::compile(&schema).map_err(|e| {
        Error::invalid_argument(format!("Reference must be a JSON schema: {}", e.message()))
    })?;
    let value = match output {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Score::pass_fail(false).reasoning(format!("Output is not JSON: {e}")));
            }
        },
        other => other.clone(),
    };
    Ok(match validator.validate(&value) {
        Ok(()) => Score::pass_fail(true),
        Err(e) => {
            // The violations, without the data and schema Genkit's message
            // appends.
            let why = e
                .message()
                .split("\n\nProvided data:")
                .next()
                .unwrap_or_default();
            Score::new(false, EvalStatus::Fail).reasoning(why.trim().to_owned())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::{BaseDataPoint, ScoreValue};
    use serde_json::json;

    fn point(output: Value, reference: Value) -> EvalDataPoint {
        EvalDataPoint::from_base(
            BaseDataPoint::new("q").output(output).reference(reference),
            || "t".into(),
        )
    }

    fn passes(metric: GenkitMetric, output: Value, reference: Value) -> bool {
        let s = metric.score(&point(output, reference)).expect("scored");
        assert_eq!(
            s.status == Some(EvalStatus::Pass),
            s.score == Some(ScoreValue::Bool(true))
        );
        s.score == Some(ScoreValue::Bool(true))
    }

    #[test]
    fn regex_matches_text_or_json() {
        assert!(passes(
            GenkitMetric::Regex,
            json!("Paris is big"),
            json!("^Paris")
        ));
        assert!(!passes(
            GenkitMetric::Regex,
            json!("in Paris"),
            json!("^Paris")
        ));
        assert!(passes(
            GenkitMetric::Regex,
            json!({"a": 1}),
            json!("\"a\":1")
        ));
        let err = GenkitMetric::Regex
            .score(&point(json!("x"), json!(3)))
            .expect_err("not a pattern");
        assert_eq!(err.message(), "Reference must be a string (regex)");
        let err = GenkitMetric::Regex
            .score(&point(json!("x"), json!("(")))
            .expect_err("bad pattern");
        assert!(err.message().starts_with("Invalid regular expression"));
        let err = GenkitMetric::Regex
            .score(&point(json!(""), json!("x")))
            .expect_err("no output");
        assert_eq!(err.message(), "Output was not provided");
    }

    #[test]
    fn deep_equal_compares_structure_and_numbers_by_value() {
        assert!(passes(
            GenkitMetric::DeepEqual,
            json!({"a": [1, {"b": 2.0}]}),
            json!({"a": [1.0, {"b": 2}]})
        ));
        assert!(!passes(
            GenkitMetric::DeepEqual,
            json!({"a": [1, 2]}),
            json!({"a": [1, 3]})
        ));
        assert!(!passes(
            GenkitMetric::DeepEqual,
            json!({"a": 1}),
            json!({"a": 1, "b": 2})
        ));
        assert!(!passes(GenkitMetric::DeepEqual, json!("1"), json!(1)));
        let s = GenkitMetric::DeepEqual
            .score(&point(json!({"a": [1, 2]}), json!({"a": [1, 3]})))
            .expect("scored");
        let why = s.details.and_then(|d| d.reasoning).expect("reasoning");
        assert!(
            why.contains("at .a[1]: output 2 differs from reference 3"),
            "{why}"
        );
    }

    #[test]
    fn json_validity() {
        assert!(passes(
            GenkitMetric::JsonValid,
            json!("{\"a\": [1, 2]}"),
            json!(null)
        ));
        assert!(!passes(
            GenkitMetric::JsonValid,
            json!("{a: 1}"),
            json!(null)
        ));
        assert!(passes(
            GenkitMetric::JsonValid,
            json!({"a": 1}),
            json!(null)
        ));
    }

    #[test]
    fn json_schema_conformance() {
        let schema =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        assert!(passes(
            GenkitMetric::JsonSchema,
            json!("{\"n\": 3}"),
            schema.clone()
        ));
        assert!(passes(
            GenkitMetric::JsonSchema,
            json!({"n": 3}),
            json!(schema.to_string())
        ));
        assert!(!passes(
            GenkitMetric::JsonSchema,
            json!({"n": "three"}),
            schema.clone()
        ));
        assert!(!passes(
            GenkitMetric::JsonSchema,
            json!("not json"),
            schema.clone()
        ));
        let s = GenkitMetric::JsonSchema
            .score(&point(json!({}), schema))
            .expect("scored");
        let why = s.details.and_then(|d| d.reasoning).expect("reasoning");
        assert!(why.contains("must have required property 'n'"), "{why}");
        let err = GenkitMetric::JsonSchema
            .score(&point(json!({}), json!(5)))
            .expect_err("no schema");
        assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    }
}
