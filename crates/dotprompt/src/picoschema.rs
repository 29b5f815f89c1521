//! Picoschema, Dotprompt's compact schema notation, to JSON Schema.
//!
//! ```yaml
//! name: string, the person's name      # required, with a description
//! age?: integer                        # optional, so also nullable
//! tags(array, labels): string          # array of strings
//! address?(object):                    # nested object
//!   city: string
//! color(enum): [RED, GREEN]            # enum
//! (*): any                             # additionalProperties
//! owner: Person                        # named schema, via the resolver
//! ```

use serde_json::{Map, Value, json};

use crate::error::PicoschemaError;

const SCALAR_TYPES: &[&str] = &["any", "boolean", "integer", "null", "number", "string"];
const WILDCARD: &str = "(*)";

/// Converts a Picoschema (or pass-through JSON Schema) to JSON Schema.
///
/// `resolve` looks up named schemas (any type name that is not a scalar).
/// Returns `None` for an empty schema (`null`, `""`, `false`, `0`).
pub fn to_json_schema(
    schema: &Value,
    resolve: &mut dyn FnMut(&str) -> Option<Value>,
) -> Result<Option<Value>, PicoschemaError> {
    Converter { resolve }.top_level(schema)
}

/// Names of the schemas a Picoschema refers to, in order of first use, so
/// they can be fetched (possibly asynchronously) before conversion.
pub fn referenced_schemas(schema: &Value) -> Result<Vec<String>, PicoschemaError> {
    let mut names: Vec<String> = Vec::new();
    to_json_schema(schema, &mut |name| {
        if !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        Some(Value::Object(Map::new()))
    })?;
    Ok(names)
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

/// Splits `type, description` at the first comma.
fn split_description(input: &str) -> (&str, Option<&str>) {
    match input.split_once(',') {
        Some((ty, desc)) => {
            let desc = desc.trim_start_matches(' ');
            (ty, (!desc.is_empty()).then_some(desc))
        }
        None => (input, None),
    }
}

fn with_description(mut schema: Value, description: Option<&str>) -> Value {
    if let (Some(desc), Value::Object(map)) = (description, &mut schema) {
        map.insert("description".into(), Value::String(desc.to_owned()));
    }
    schema
}

/// Makes a schema nullable the way Dotprompt does: a string `type` becomes
/// `[type, "null"]`.
fn make_nullable(schema: &mut Value) {
    if let Some(ty) = schema.get_mut("type")
        && let Value::String(name) = ty
    {
        *ty = json!([name, "null"]);
    }
}

struct Converter<'a> {
    resolve: &'a mut dyn FnMut(&str) -> Option<Value>,
}

impl Converter<'_> {
    fn named(&mut self, name: &str) -> Result<Value, PicoschemaError> {
        (self.resolve)(name).ok_or_else(|| PicoschemaError::UnknownSchema(name.to_owned()))
    }

    fn top_level(&mut self, schema: &Value) -> Result<Option<Value>, PicoschemaError> {
        if is_empty(schema) {
            return Ok(None);
        }
        if let Value::String(text) = schema {
            let (ty, description) = split_description(text);
            let out = if ty == "any" {
                Value::Object(Map::new())
            } else if SCALAR_TYPES.contains(&ty) {
                json!({ "type": ty })
            } else {
                self.named(ty)?
            };
            return Ok(Some(with_description(out, description)));
        }
        if let Value::Object(map) = schema {
            if looks_like_json_schema(map) {
                return Ok(Some(schema.clone()));
            }
            if map.get("properties").is_some_and(Value::is_object) {
                let mut out = map.clone();
                out.insert("type".into(), json!("object"));
                return Ok(Some(Value::Object(out)));
            }
        }
        self.pico(schema).map(Some)
    }

    fn pico(&mut self, value: &Value) -> Result<Value, PicoschemaError> {
        match value {
            Value::String(text) => {
                let (ty, description) = split_description(text);
                let out = if ty == "any" {
                    Value::Object(Map::new())
                } else if SCALAR_TYPES.contains(&ty) {
                    json!({ "type": ty })
                } else {
                    self.named(ty)?
                };
                Ok(with_description(out, description))
            }
            Value::Object(fields) => self.object(fields),
            Value::Null => self.object(&Map::new()),
            other => Err(PicoschemaError::InvalidValue(other.to_string())),
        }
    }

    fn object(&mut self, fields: &Map<String, Value>) -> Result<Value, PicoschemaError> {
        let mut properties = Map::new();
        let mut required: Vec<Value> = Vec::new();
        let mut additional = Value::Bool(false);

        for (key, value) in fields {
            if key == WILDCARD {
                additional = self.pico(value)?;
                continue;
            }
            let mut pieces = key.split('(');
            let name = pieces.next().unwrap_or_default();
            let type_info = pieces.next();
            let (property, optional) = match name.strip_suffix('?') {
                Some(stripped) => (stripped, true),
                None => (name, false),
            };
            if !optional {
                required.push(Value::String(property.to_owned()));
            }

            let Some(type_info) = type_info else {
                let mut prop = self.pico(value)?;
                if optional {
                    make_nullable(&mut prop);
                }
                properties.insert(property.to_owned(), prop);
                continue;
            };

            let inner = type_info.strip_suffix(')').unwrap_or(type_info);
            let (ty, description) = split_description(inner);
            let prop = match ty {
                "array" => {
                    let kind = if optional {
                        json!(["array", "null"])
                    } else {
                        json!("array")
                    };
                    json!({ "type": kind, "items": self.pico(value)? })
                }
                "object" => {
                    let mut prop = self.pico(value)?;
                    if optional {
                        make_nullable(&mut prop);
                    }
                    prop
                }
                "enum" => {
                    let Value::Array(items) = value else {
                        return Err(PicoschemaError::InvalidEnum(property.to_owned()));
                    };
                    let mut items = items.clone();
                    if optional && !items.contains(&Value::Null) {
                        items.push(Value::Null);
                    }
                    json!({ "enum": items })
                }
                other => return Err(PicoschemaError::InvalidParenthetical(other.to_owned())),
            };
            properties.insert(property.to_owned(), with_description(prop, description));
        }

        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            schema.insert("required".into(), Value::Array(required));
        }
        schema.insert("additionalProperties".into(), additional);
        Ok(Value::Object(schema))
    }
}

/// Whether an object already is JSON Schema: its `type` is a JSON type name
/// (or a list of them).
fn looks_like_json_schema(map: &Map<String, Value>) -> bool {
    let is_type = |v: &Value| {
        v.as_str()
            .is_some_and(|t| SCALAR_TYPES.contains(&t) || t == "object" || t == "array")
    };
    match map.get("type") {
        Some(Value::Array(types)) => !types.is_empty() && types.iter().all(is_type),
        Some(ty) => is_type(ty),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(schema: Value) -> Result<Option<Value>, PicoschemaError> {
        to_json_schema(&schema, &mut |name| {
            (name == "Person").then(|| json!({"type": "object", "description": "a person"}))
        })
    }

    #[test]
    fn scalars_and_descriptions() {
        assert_eq!(
            convert(json!("string")).unwrap(),
            Some(json!({"type": "string"}))
        );
        assert_eq!(
            convert(json!("number,  the n, really")).unwrap(),
            Some(json!({"type": "number", "description": "the n, really"}))
        );
        assert_eq!(
            convert(json!("any, x")).unwrap(),
            Some(json!({"description": "x"}))
        );
        assert_eq!(convert(Value::Null).unwrap(), None);
    }

    #[test]
    fn optional_fields_are_nullable_and_not_required() {
        let out = convert(json!({"a": "string", "b?": "integer", "p?": "Person"}))
            .unwrap()
            .unwrap();
        assert_eq!(out["required"], json!(["a"]));
        assert_eq!(out["properties"]["b"]["type"], json!(["integer", "null"]));
        assert_eq!(out["properties"]["p"]["type"], json!(["object", "null"]));
        assert_eq!(out["additionalProperties"], json!(false));
    }

    #[test]
    fn named_schema_with_description_override() {
        assert_eq!(
            convert(json!("Person, someone")).unwrap(),
            Some(json!({"type": "object", "description": "someone"}))
        );
    }

    #[test]
    fn unknown_named_schema_is_an_error() {
        assert_eq!(
            convert(json!({"a": "Nobody"})),
            Err(PicoschemaError::UnknownSchema("Nobody".into()))
        );
    }

    #[test]
    fn bad_parenthetical_is_an_error() {
        let err = convert(json!({"a(map)": "string"})).unwrap_err();
        assert_eq!(err, PicoschemaError::InvalidParenthetical("map".into()));
        assert!(err.to_string().contains("parenthetical types"));
    }

    #[test]
    fn enum_needs_a_list() {
        assert_eq!(
            convert(json!({"c(enum)": "RED"})),
            Err(PicoschemaError::InvalidEnum("c".into()))
        );
    }

    #[test]
    fn non_object_values_are_errors() {
        assert!(matches!(
            convert(json!({"a": 5})),
            Err(PicoschemaError::InvalidValue(_))
        ));
    }

    #[test]
    fn json_schema_passes_through() {
        let schema = json!({"type": ["string", "null"]});
        assert_eq!(convert(schema.clone()).unwrap(), Some(schema));
    }

    #[test]
    fn collects_referenced_names() {
        let names =
            referenced_schemas(&json!({"a": "Person", "b(array)": "Pet, x", "c": "Person"}))
                .unwrap();
        assert_eq!(names, vec!["Person".to_owned(), "Pet".to_owned()]);
    }
}
