//! Validating values against `$defs/<name>` of Genkit's genkit-schema.json.

use serde_json::{Value, json};

/// The `$defs` of genkit-schema.json.
pub fn schema_defs() -> Value {
    let path = genkit_conformance::genkit_dir().join("genkit-schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("genkit-schema.json is JSON");
    schema["$defs"].clone()
}

/// The violations of `value` against `$defs/<def>` (empty: valid).
pub fn violations(defs: &Value, def: &str, value: &Value) -> Vec<String> {
    assert!(defs.get(def).is_some(), "no $def {def}");
    let schema = json!({"$ref": format!("#/$defs/{def}"), "$defs": defs});
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics unless `value` is valid against `$defs/<def>`.
pub fn assert_valid(defs: &Value, def: &str, value: &Value) {
    let errors = violations(defs, def, value);
    assert!(
        errors.is_empty(),
        "{def} rejected {}:\n{}",
        serde_json::to_string_pretty(value).unwrap_or_default(),
        errors.join("\n")
    );
}
