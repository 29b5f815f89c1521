//! Picoschema (or JSON Schema) of any JSON converts to JSON Schema or fails
//! with an error: no panic, no unbounded recursion. Every schema name the
//! conversion asks for is one `referenced_schemas` lists, and a converted
//! schema is a JSON object.
#![no_main]

use dotprompt::picoschema::{referenced_schemas, to_json_schema};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let mut asked = Vec::new();
    let converted = to_json_schema(&schema, &mut |name| {
        asked.push(name.to_owned());
        // Every name but one resolves, so references both resolve and fail.
        (name != "Missing")
            .then(|| json!({"type": "object", "properties": {"id": {"type": "string"}}}))
    });
    let referenced = referenced_schemas(&schema);
    if let Ok(Some(converted)) = &converted {
        assert!(converted.is_object(), "not a schema object: {converted}");
        // The conversion ran to the end, so the listing must too.
        let referenced = referenced
            .as_ref()
            .expect("a schema that converts lists its references");
        for name in &asked {
            assert!(
                referenced.contains(name),
                "`{name}` resolved but not listed in {referenced:?}"
            );
        }
    }
});
