//! JSON Schema → what Claude's structured outputs accept: every object closed
//! (`additionalProperties: false`), `$schema` dropped, `oneOf` read as
//! `anyOf`, and the constraints the API does not support (numeric bounds,
//! string lengths, item counts above one, unknown formats) left out, as
//! Anthropic's SDKs do.

use serde_json::{Map, Value, json};

/// Formats structured outputs support.
const FORMATS: [&str; 10] = [
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Keywords the API rejects in structured-output schemas.
const UNSUPPORTED: [&str; 9] = [
    "$schema",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
];

/// Keywords whose value is one schema.
const SCHEMA_KEYS: [&str; 4] = ["items", "additionalItems", "not", "contains"];
/// Keywords whose value is a list of schemas.
const SCHEMA_LIST_KEYS: [&str; 3] = ["anyOf", "allOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAP_KEYS: [&str; 3] = ["properties", "$defs", "definitions"];

/// The schema as structured outputs want it.
pub(crate) fn to_output_schema(schema: &Value) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in m {
        let key = key.as_str();
        if UNSUPPORTED.contains(&key) {
            continue;
        }
        let converted = match key {
            "oneOf" => {
                out.insert("anyOf".into(), list(value));
                continue;
            }
            "format" if value.as_str().is_some_and(|f| !FORMATS.contains(&f)) => continue,
            "minItems" if value.as_u64().is_some_and(|n| n > 1) => continue,
            "additionalProperties" => continue,
            k if SCHEMA_KEYS.contains(&k) => to_output_schema(value),
            k if SCHEMA_LIST_KEYS.contains(&k) => list(value),
            k if SCHEMA_MAP_KEYS.contains(&k) => map(value),
            _ => value.clone(),
        };
        out.insert(key.to_owned(), converted);
    }
    let is_object = m.get("type").is_some_and(|t| {
        t.as_str() == Some("object")
            || t.as_array()
                .is_some_and(|ts| ts.iter().any(|t| t.as_str() == Some("object")))
    }) || m.contains_key("properties");
    if is_object {
        out.insert("additionalProperties".into(), json!(false));
    }
    Value::Object(out)
}

fn list(value: &Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(items.iter().map(to_output_schema).collect()),
        other => other.clone(),
    }
}

fn map(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), to_output_schema(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closes_objects_and_drops_unsupported_constraints() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Forecast",
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "format": "hostname"},
                "celsius": {"type": "number", "format": "double", "minimum": -100},
                "days": {"type": "array", "items": {"$ref": "#/$defs/Day"}, "minItems": 1, "maxItems": 7},
                "unit": {"oneOf": [{"const": "c"}, {"const": "f"}]}
            },
            "required": ["city"],
            "$defs": {"Day": {"type": "object", "properties": {"n": {"type": "integer", "format": "uint32"}}}}
        });
        assert_eq!(
            to_output_schema(&schema),
            json!({
                "title": "Forecast",
                "type": "object",
                "properties": {
                    "city": {"type": "string", "format": "hostname"},
                    "celsius": {"type": "number"},
                    "days": {"type": "array", "items": {"$ref": "#/$defs/Day"}, "minItems": 1},
                    "unit": {"anyOf": [{"const": "c"}, {"const": "f"}]}
                },
                "required": ["city"],
                "$defs": {"Day": {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": false}},
                "additionalProperties": false
            })
        );
    }
}
