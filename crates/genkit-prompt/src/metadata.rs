//! The metadata a prompt's actions are listed with, in Genkit's shape:
//! `{"type": ..., "prompt": {"name", "variant", "model", "config",
//! "input": {"schema", "default"}, "output": {"format", "schema"}, "tools",
//! "toolChoice", "maxTurns", "use", "template", "raw", ...}}` plus the prompt's own
//! metadata entries.

use genkit_core::ActionKind;
use serde_json::{Map, Value};

use super::config::{PromptDef, PromptMessages};
use super::core::Resolved;
use genkit_model::tool::ToolArg;

/// The listed metadata of the `kind` action of a prompt. `resolved` is
/// `None` while named schemas cannot be resolved yet (schemas are left out).
pub(crate) fn action_metadata(
    def: &PromptDef,
    resolved: Option<&Resolved>,
    kind: ActionKind,
) -> Map<String, Value> {
    let mut metadata = def.metadata.clone();
    let mut prompt = match metadata.get("prompt") {
        Some(Value::Object(given)) => given.clone(),
        _ => Map::new(),
    };
    prompt.extend(def.prompt_metadata.clone());
    prompt.insert("name".into(), Value::from(def.name.clone()));
    if let Some(variant) = &def.variant {
        prompt.insert("variant".into(), Value::from(variant.clone()));
    }
    if let Some(description) = &def.description {
        prompt.insert("description".into(), Value::from(description.clone()));
    }
    if let Some(model) = &def.model {
        prompt.insert("model".into(), Value::from(model.name.clone()));
    }
    if let Some(config) = &def.config {
        prompt.insert("config".into(), config.clone());
    }

    // As Genkit JS lists them: `metadata` always there (the prompt's own
    // entries are listed beside `prompt`), and a null input schema when the
    // prompt has none.
    prompt
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let mut input = Map::new();
    input.insert(
        "schema".into(),
        resolved
            .and_then(|r| r.input_schema.clone())
            .unwrap_or(Value::Null),
    );
    if let Some(defaults) = &def.default_input {
        input.insert("default".into(), defaults.clone());
    }
    prompt.insert("input".into(), Value::Object(input));

    let mut output = Map::new();
    if let Some(format) = &def.output.format {
        output.insert("format".into(), Value::from(format.clone()));
    }
    if let Some(schema) = resolved.and_then(|r| r.output_schema.clone()) {
        output.insert("schema".into(), schema);
    }
    if !output.is_empty() {
        prompt.insert("output".into(), Value::Object(output));
    }

    let tools = def
        .tools
        .iter()
        .map(|t| match t {
            ToolArg::Name(name) => Value::from(name.clone()),
            ToolArg::Action(action) => Value::from(action.name()),
        })
        .collect();
    prompt.insert("tools".into(), Value::Array(tools));
    if let Some(choice) = def.tool_choice
        && let Ok(choice) = serde_json::to_value(choice)
    {
        prompt.insert("toolChoice".into(), choice);
    }
    if let Some(turns) = def.max_turns {
        prompt.insert("maxTurns".into(), Value::from(turns));
    }
    if let Some(on) = def.return_tool_requests {
        prompt.insert("returnToolRequests".into(), Value::from(on));
    }
    // A file without frontmatter has no `raw` (as Genkit JS lists it).
    if prompt
        .get("raw")
        .is_some_and(|raw| raw == &Value::Object(Map::new()))
    {
        prompt.remove("raw");
    }
    let uses = def
        .middleware
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect();
    prompt.insert("use".into(), Value::Array(uses));
    if let Some(PromptMessages::Template(template)) = &def.messages {
        prompt
            .entry("template")
            .or_insert_with(|| Value::from(template.clone()));
    }

    metadata.insert("prompt".into(), Value::Object(prompt));
    metadata.insert("type".into(), Value::from(kind.as_str()));
    metadata
}
