//! JSON schemas: derived from Rust types (schemars, draft-07 like Genkit's
//! Zod-generated schemas) and compiled once into validators (jsonschema).

use crate::error::{Error, Result};
use crate::status::StatusCode;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use schemars::JsonSchema;
use serde_json::Value;

/// The draft-07 JSON schema of `T`, with every subschema inlined (models and
/// tools see one self-contained schema, as Genkit sends them).
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft07();
    settings.inline_subschemas = true;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    // schemars adds the type's Rust name as `title`; Genkit schemas carry none.
    if let Value::Object(map) = &mut value {
        map.remove("title");
    }
    value
}

/// Whether a schema accepts every value (`{}`, `true`, or only annotations),
/// in which case validation is skipped.
pub fn accepts_anything(schema: &Value) -> bool {
    match schema {
        Value::Bool(b) => *b,
        Value::Object(map) => map
            .keys()
            .all(|k| matches!(k.as_str(), "$schema" | "description" | "title" | "$id")),
        _ => false,
    }
}

/// A compiled JSON schema.
pub struct SchemaValidator {
    validator: Option<jsonschema::Validator>,
    /// The schema, for error messages.
    schema: Value,
}

impl std::fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaValidator")
            .field("trivial", &self.validator.is_none())
            .finish()
    }
}

impl SchemaValidator {
    /// Compiles `schema` (draft-07 unless it names another `$schema`).
    pub fn compile(schema: &Value) -> Result<Self> {
        if accepts_anything(schema) {
            return Ok(Self {
                validator: None,
                schema: Value::Null,
            });
        }
        let compiled = if schema.get("$schema").is_some() {
            jsonschema::validator_for(schema)
        } else {
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft7)
                .build(schema)
        };
        compiled
            .map(|v| Self {
                validator: Some(v),
                schema: schema.clone(),
            })
            .map_err(|e| {
                Error::invalid_argument(format!("invalid JSON schema: {e}")).with_source(e)
            })
    }

    /// Validates `value`; on failure the error is `INVALID_ARGUMENT` and lists
    /// every violation with its path, e.g. `- city: must be string`, then the
    /// data and the schema, with details `{errors: [{path, message}], schema}`
    /// (as Genkit JS words and details it).
    pub fn validate(&self, value: &Value) -> Result<()> {
        let Some(v) = &self.validator else {
            return Ok(());
        };
        if v.is_valid(value) {
            return Ok(());
        }
        let mut lines = Vec::new();
        let mut errors = Vec::new();
        for err in v.iter_errors(value) {
            let path = display_path(&err.instance_path().to_string());
            let message = ajv_message(&err);
            lines.push(format!("- {path}: {message}"));
            errors.push(serde_json::json!({"path": path, "message": message}));
        }
        let pretty = |v: &Value| {
            truncate(
                &serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()),
                2000,
            )
        };
        Err(Error::new(
            StatusCode::InvalidArgument,
            format!(
                "Schema validation failed. Parse Errors:\n\n{}\n\nProvided data:\n\n{}\n\nRequired JSON schema:\n\n{}",
                lines.join("\n"),
                pretty(value),
                pretty(&self.schema),
            ),
        )
        .with_details(serde_json::json!({ "errors": errors, "schema": self.schema })))
    }
}

/// A violation worded as Genkit JS's validator (Ajv) words it, so callers
/// and tools matching on Genkit's messages see the same text.
fn ajv_message(err: &jsonschema::ValidationError<'_>) -> String {
    use ValidationErrorKind as K;
    match err.kind() {
        K::Type { kind } => {
            let types: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            format!("must be {}", types.join(","))
        }
        K::Required { property } => match property {
            Value::String(name) => format!("must have required property '{name}'"),
            other => format!("must have required property '{other}'"),
        },
        K::AdditionalProperties { .. } => "must NOT have additional properties".to_owned(),
        K::Enum { .. } => "must be equal to one of the allowed values".to_owned(),
        K::Constant { .. } => "must be equal to constant".to_owned(),
        K::AnyOf { .. } => "must match a schema in anyOf".to_owned(),
        K::OneOfNotValid { .. } | K::OneOfMultipleValid { .. } => {
            "must match exactly one schema in oneOf".to_owned()
        }
        K::Not { .. } => "must NOT be valid".to_owned(),
        K::FalseSchema => "boolean schema is false".to_owned(),
        K::Format { format } => format!("must match format \"{format}\""),
        K::Pattern { pattern } => format!("must match pattern \"{pattern}\""),
        K::Minimum { limit } => format!("must be >= {limit}"),
        K::Maximum { limit } => format!("must be <= {limit}"),
        K::ExclusiveMinimum { limit } => format!("must be > {limit}"),
        K::ExclusiveMaximum { limit } => format!("must be < {limit}"),
        K::MultipleOf { multiple_of } => format!("must be multiple of {multiple_of}"),
        K::MinLength { limit } => format!("must NOT have fewer than {limit} characters"),
        K::MaxLength { limit } => format!("must NOT have more than {limit} characters"),
        K::MinItems { limit } => format!("must NOT have fewer than {limit} items"),
        K::MaxItems { limit } => format!("must NOT have more than {limit} items"),
        K::AdditionalItems { limit } => format!("must NOT have more than {limit} items"),
        K::MinProperties { limit } => format!("must NOT have fewer than {limit} properties"),
        K::MaxProperties { limit } => format!("must NOT have more than {limit} properties"),
        K::UniqueItems => "must NOT have duplicate items".to_owned(),
        K::Contains => "must contain at least 1 valid item(s)".to_owned(),
        K::PropertyNames { .. } => "property name must be valid".to_owned(),
        K::UnevaluatedProperties { .. } => "must NOT have unevaluated properties".to_owned(),
        K::UnevaluatedItems { .. } => "must NOT have unevaluated items".to_owned(),
        // Keywords Genkit's schemas do not use (content*, regex engine
        // failures, references): the validator's own wording.
        _ => err.to_string(),
    }
}

/// JSON pointer `/a/0/b` to Genkit's display form `a.0.b`, `(root)` for the root.
fn display_path(pointer: &str) -> String {
    let trimmed = pointer.trim_start_matches('/');
    if trimmed.is_empty() {
        "(root)".to_owned()
    } else {
        trimmed.replace('/', ".")
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        n: u32,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Outer {
        /// A city.
        city: String,
        inner: Vec<Inner>,
    }

    #[test]
    fn derived_schema_is_draft07_and_inline() {
        let s = schema_for::<Outer>();
        assert_eq!(s["$schema"], "http://json-schema.org/draft-07/schema#");
        assert!(s.get("definitions").is_none(), "{s}");
        assert_eq!(s["properties"]["city"]["description"], "A city.");
        assert!(s.get("title").is_none());
    }

    #[test]
    fn violations_name_their_path() {
        let v = SchemaValidator::compile(&schema_for::<Outer>()).unwrap();
        v.validate(&json!({"city": "Paris", "inner": [{"n": 1}]}))
            .unwrap();
        let err = v
            .validate(&json!({"city": 5, "inner": [{"n": "x"}]}))
            .unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert!(
            err.message().contains("- city: must be string"),
            "{}",
            err.message()
        );
        assert!(
            err.message().contains("- inner.0.n: must be integer"),
            "{}",
            err.message()
        );
        // Genkit JS's details: each violation, and the schema.
        let details = err.details().expect("details");
        assert_eq!(
            details["errors"][0],
            json!({"path": "city", "message": "must be string"})
        );
        assert_eq!(details["schema"], schema_for::<Outer>());
        let missing = v.validate(&json!({"city": "Paris"})).unwrap_err();
        assert!(
            missing
                .message()
                .contains("- (root): must have required property 'inner'"),
            "{}",
            missing.message()
        );
        let root = SchemaValidator::compile(&json!({"type": "string"}))
            .unwrap()
            .validate(&json!(1))
            .unwrap_err();
        assert!(root.message().contains("- (root):"), "{}", root.message());
    }

    #[test]
    fn trivial_and_invalid_schemas() {
        assert!(accepts_anything(&json!({})));
        assert!(accepts_anything(&json!(true)));
        assert!(!accepts_anything(&json!({"type": "string"})));
        let err = SchemaValidator::compile(&json!({"type": 12})).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
    }
}
