//! JSON Schema → the OpenAPI subset Gemini accepts for function parameters
//! (and the legacy `responseSchema`): uppercase `type`, `nullable` instead of
//! `null` in type lists, `$ref`s inlined, `anyOf`/`oneOf` of constants folded
//! into `enum`, and keywords Gemini does not know left out.

use serde_json::{Map, Value, json};

use crate::error::GeminiError;

/// `$ref` chains deeper than this are taken to be recursive: Gemini's schema
/// cannot express recursion.
const MAX_DEPTH: usize = 32;

/// Formats Gemini accepts; others (`uint32`, `email`, ...) are dropped.
const FORMATS: [&str; 6] = ["float", "double", "int32", "int64", "enum", "date-time"];

/// Converts a tool's input schema. `None` for an absent schema or one that
/// accepts anything (the function then takes no declared parameters).
pub(crate) fn to_gemini_schema(schema: &Value) -> Result<Option<Value>, GeminiError> {
    convert(schema, schema, 0).map_err(|e| GeminiError::InvalidRequest(format!("schema: {e}")))
}

/// Genkit's `cleanSchema` for the legacy `responseSchema`: drops `$schema`
/// and `additionalProperties` and reduces type lists to their first non-null
/// type.
pub(crate) fn clean_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                if k == "$schema" || k == "additionalProperties" {
                    continue;
                }
                let v = match (k.as_str(), v) {
                    ("type", Value::Array(types)) => types
                        .iter()
                        .find(|t| t.as_str() != Some("null"))
                        .cloned()
                        .unwrap_or(Value::Null),
                    _ => clean_schema(v),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(clean_schema).collect()),
        other => other.clone(),
    }
}

fn convert(root: &Value, node: &Value, depth: usize) -> Result<Option<Value>, String> {
    if depth > MAX_DEPTH {
        return Err("too deeply nested or recursive (Gemini schemas cannot be recursive)".into());
    }
    let Value::Object(schema) = node else {
        // `true` accepts anything; `false` accepts nothing: neither has a type.
        return Ok(None);
    };
    if let Some(reference) = schema.get("$ref") {
        let reference = reference.as_str().ok_or("`$ref` is not a string")?;
        let target = resolve_ref(root, reference)?;
        let resolved = convert(root, target, depth + 1)?;
        return Ok(resolved.map(|mut s| {
            copy_annotations(schema, &mut s);
            s
        }));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = schema.get(key) {
            return convert_union(root, schema, variants, depth);
        }
    }
    if let Some(Value::Array(all)) = schema.get("allOf")
        && all.len() == 1
    {
        let resolved = convert(root, &all[0], depth + 1)?;
        return Ok(resolved.map(|mut s| {
            copy_annotations(schema, &mut s);
            s
        }));
    }

    let (ty, nullable) = schema_type(schema)?;
    let Some(ty) = ty else {
        return Ok(None);
    };
    let mut out = Map::new();
    out.insert("type".into(), json!(ty.to_uppercase()));
    if nullable || schema.get("nullable") == Some(&Value::Bool(true)) {
        out.insert("nullable".into(), json!(true));
    }
    copy_annotations_into(schema, &mut out);
    if let Some(Value::String(format)) = schema.get("format")
        && FORMATS.contains(&format.as_str())
    {
        out.insert("format".into(), json!(format));
    }
    let enum_values = string_values(schema.get("enum")).or_else(|| {
        schema
            .get("const")
            .and_then(Value::as_str)
            .map(|c| vec![c.to_owned()])
    });
    if let Some(values) = enum_values {
        out.insert("enum".into(), json!(values));
    }
    for key in [
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "propertyOrdering",
    ] {
        if let Some(v) = schema.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    match ty {
        "object" => {
            let mut properties = Map::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, prop) in props {
                    if let Some(p) = convert(root, prop, depth + 1)? {
                        properties.insert(name.clone(), p);
                    }
                }
            }
            if let Some(Value::Array(required)) = schema.get("required") {
                let required: Vec<&Value> = required
                    .iter()
                    .filter(|r| r.as_str().is_some_and(|r| properties.contains_key(r)))
                    .collect();
                if !required.is_empty() {
                    out.insert("required".into(), json!(required));
                }
            }
            out.insert("properties".into(), Value::Object(properties));
        }
        "array" => {
            if let Some(items) = schema.get("items")
                && let Some(items) = convert(root, items, depth + 1)?
            {
                out.insert("items".into(), items);
            }
        }
        _ => {}
    }
    Ok(Some(Value::Object(out)))
}

/// `anyOf`/`oneOf`: constants fold into a string `enum`; `null` variants make
/// the result nullable; otherwise the first variant with a type wins (Gemini's
/// function schemas have no unions).
fn convert_union(
    root: &Value,
    schema: &Map<String, Value>,
    variants: &[Value],
    depth: usize,
) -> Result<Option<Value>, String> {
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    let nullable = variants.iter().any(is_null);
    let rest: Vec<&Value> = variants.iter().filter(|v| !is_null(v)).collect();
    let constants: Option<Vec<String>> = rest
        .iter()
        .map(|v| {
            v.get("const")
                .and_then(Value::as_str)
                .map(|c| vec![c.to_owned()])
                .or_else(|| string_values(v.get("enum")))
        })
        .collect::<Option<Vec<_>>>()
        .map(|lists| lists.concat());
    let mut out = match constants {
        Some(values) if !values.is_empty() => {
            let mut m = Map::new();
            m.insert("type".into(), json!("STRING"));
            m.insert("enum".into(), json!(values));
            Value::Object(m)
        }
        _ => {
            let mut found = None;
            for v in rest {
                if let Some(s) = convert(root, v, depth + 1)? {
                    found = Some(s);
                    break;
                }
            }
            match found {
                Some(s) => s,
                None => return Ok(None),
            }
        }
    };
    if nullable && let Value::Object(m) = &mut out {
        m.insert("nullable".into(), json!(true));
    }
    copy_annotations(schema, &mut out);
    Ok(Some(out))
}

/// The type (without `null`) and whether `null` is allowed. A schema without
/// `type` is an object if it has properties, an array if it has items, a
/// string if it has an enum, and untyped otherwise.
fn schema_type(schema: &Map<String, Value>) -> Result<(Option<&'static str>, bool), String> {
    let mut nullable = false;
    let name = match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(types)) => {
            let mut chosen = None;
            for t in types {
                match t.as_str() {
                    Some("null") => nullable = true,
                    Some(t) if chosen.is_none() => chosen = Some(t),
                    Some(_) => {
                        return Err(format!(
                            "unions of several types are not supported: {types:?}"
                        ));
                    }
                    None => return Err("`type` lists must hold strings".into()),
                }
            }
            chosen
        }
        Some(other) => return Err(format!("`type` must be a string or a list, not {other}")),
        None if schema.contains_key("properties") => Some("object"),
        None if schema.contains_key("items") => Some("array"),
        None if schema.contains_key("enum") || schema.contains_key("const") => Some("string"),
        None => None,
    };
    let ty = match name {
        None | Some("null") => None,
        Some("string") => Some("string"),
        Some("number") => Some("number"),
        Some("integer") => Some("integer"),
        Some("boolean") => Some("boolean"),
        Some("object") => Some("object"),
        Some("array") => Some("array"),
        Some(other) => return Err(format!("unsupported type `{other}`")),
    };
    Ok((ty, nullable))
}

fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let pointer = reference
        .strip_prefix('#')
        .ok_or_else(|| format!("only local `$ref`s are supported, not `{reference}`"))?;
    root.pointer(pointer)
        .ok_or_else(|| format!("unresolved `$ref` `{reference}`"))
}

/// Copies `description` and `title` from `from` unless `to` has its own.
fn copy_annotations(from: &Map<String, Value>, to: &mut Value) {
    if let Value::Object(to) = to {
        copy_annotations_into(from, to);
    }
}

fn copy_annotations_into(from: &Map<String, Value>, to: &mut Map<String, Value>) {
    for key in ["description", "title"] {
        if let Some(Value::String(v)) = from.get(key) {
            to.entry(key).or_insert_with(|| json!(v));
        }
    }
}

/// The string values of an `enum` list (non-strings are dropped; `None` when
/// there are none).
fn string_values(list: Option<&Value>) -> Option<Vec<String>> {
    let values: Vec<String> = list?
        .as_array()?
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    (!values.is_empty()).then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converts_objects_arrays_refs_and_nullables() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "description": "City name", "minLength": 1},
                "days": {"type": ["integer", "null"], "format": "uint32", "minimum": 0},
                "unit": {"$ref": "#/$defs/Unit"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "anything": true
            },
            "required": ["city", "unit", "anything"],
            "$defs": {
                "Unit": {"oneOf": [
                    {"const": "c", "type": "string", "description": "Celsius"},
                    {"const": "f", "type": "string"}
                ], "description": "Unit"}
            }
        });
        let out = to_gemini_schema(&schema).unwrap().unwrap();
        assert_eq!(
            out,
            json!({
                "type": "OBJECT",
                "title": "Input",
                "properties": {
                    "city": {"type": "STRING", "description": "City name"},
                    "days": {"type": "INTEGER", "nullable": true, "minimum": 0},
                    "unit": {"type": "STRING", "enum": ["c", "f"], "description": "Unit"},
                    "tags": {"type": "ARRAY", "maxItems": 3, "items": {"type": "STRING"}}
                },
                "required": ["city", "unit"]
            })
        );
    }

    #[test]
    fn option_of_struct_is_a_nullable_object() {
        let schema = json!({
            "type": "object",
            "properties": {"inner": {"anyOf": [{"$ref": "#/$defs/In"}, {"type": "null"}]}},
            "$defs": {"In": {"type": "object", "properties": {"x": {"type": "number", "format": "double"}}}}
        });
        let out = to_gemini_schema(&schema).unwrap().unwrap();
        assert_eq!(
            out["properties"]["inner"],
            json!({"type": "OBJECT", "nullable": true, "properties": {"x": {"type": "NUMBER", "format": "double"}}})
        );
    }

    #[test]
    fn any_schema_means_no_parameters_and_recursion_is_an_error() {
        assert_eq!(to_gemini_schema(&json!({})).unwrap(), None);
        assert_eq!(to_gemini_schema(&json!(true)).unwrap(), None);
        assert_eq!(to_gemini_schema(&json!({"type": "null"})).unwrap(), None);
        let recursive = json!({"$ref": "#/$defs/N", "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}});
        assert!(to_gemini_schema(&recursive).is_err());
        assert!(to_gemini_schema(&json!({"type": "date"})).is_err());
    }

    #[test]
    fn clean_schema_matches_genkit() {
        let schema = json!({"$schema": "x", "type": "object", "additionalProperties": false,
            "properties": {"a": {"type": ["string", "null"]}}});
        assert_eq!(
            clean_schema(&schema),
            json!({"type": "object", "properties": {"a": {"type": "string"}}})
        );
    }
}
