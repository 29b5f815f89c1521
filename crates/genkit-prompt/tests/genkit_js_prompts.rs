//! Prompt files behave as in Genkit JS. `genkit_js/prompts.mjs` loaded
//! `genkit_js/prompts/` into Genkit JS and recorded, for each case, the
//! `/prompt/<name>` action's metadata, input schema and output (the model
//! request), the `/executable-prompt/<name>` output (generate options), and
//! a generate run through the prompt (the requests a scripted model got and
//! the response). Here the same folder is loaded and all of it must come
//! out the same, apart from what [`as_expected_here`] sets aside (each with
//! its reason).

use genkit_core::{ActionContext, Registry, RunOptions};
use genkit_generate::{GenerateOptions, define_generate_action};
use genkit_model::model::ModelOptions;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, Message, ModelSupports};
use genkit_prompt::{load_prompt_folder, prompt};
use serde_json::{Value, json};
use std::path::PathBuf;

#[path = "../../genkit-generate/tests/support/json_diff.rs"]
mod json_diff;
use json_diff::differences;

const RECORDED: &str = include_str!("../../genkit-generate/tests/genkit_js/prompts.jsonl");
/// For the `add` tool's definition as Genkit JS gave it.
const GENERATE_RECORDED: &str =
    include_str!("../../genkit-generate/tests/genkit_js/recorded.jsonl");

fn prompt_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../genkit-generate/tests/genkit_js/prompts")
}

fn setup(case: &Value) -> (Registry, ProgrammableModel) {
    let registry = Registry::new();
    define_generate_action(&registry).expect("generate action");
    registry.register_value("defaultModel", "defaultModel", json!("programmableModel"));
    let supports: ModelSupports = serde_json::from_value(json!({
        "multiturn": true, "media": true, "tools": true, "systemRole": true, "toolChoice": true
    }))
    .expect("supports");
    let mut model = ProgrammableModel::try_define_with(
        &registry,
        ModelOptions::new("programmableModel").supports(supports),
    )
    .expect("model");
    let responses = case["modelResponses"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![json!("ok")]);
    for response in responses {
        let part = match response {
            Value::String(text) => json!({"text": text}),
            other => other,
        };
        let response: GenerateResponse = serde_json::from_value(json!({
            "message": {"role": "model", "content": [part]}, "finishReason": "stop"
        }))
        .expect("response");
        model = model.respond(response);
    }
    let header: Value =
        serde_json::from_str(GENERATE_RECORDED.lines().next().expect("header")).expect("header");
    let add = header["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == "add"))
        .expect("add");
    let tool = Tool::from_json_schema(
        "add",
        add["description"].as_str().unwrap_or_default(),
        add.get("inputSchema").cloned(),
        add.get("outputSchema").cloned(),
        |input: Value, _ctx| async move {
            Ok(json!(
                input["a"].as_i64().unwrap_or(0) + input["b"].as_i64().unwrap_or(0)
            ))
        },
    )
    .expect("tool");
    registry.register(tool.to_dyn()).expect("register");
    load_prompt_folder(&registry, prompt_dir(), None).expect("prompts load");
    (registry, model)
}

fn outcome(result: genkit_core::Result<Value>) -> Value {
    match result {
        Ok(v) => json!({"ok": v}),
        Err(e) => json!({"error": e.to_string()}),
    }
}

async fn run(case: &Value) -> Value {
    let (registry, model) = setup(case);
    let name = case["prompt"].as_str().expect("prompt");
    let variant = case["variant"].as_str();
    let key = match variant {
        Some(v) => format!("{name}.{v}"),
        None => name.to_owned(),
    };
    let context = case
        .get("context")
        .map(|c| ActionContext::from_value(c.clone()))
        .unwrap_or_default();
    let input = case["input"].clone();
    let prompt_action = registry
        .require_action(&format!("/prompt/{key}"))
        .await
        .expect("prompt action");
    let executable_action = registry
        .require_action(&format!("/executable-prompt/{key}"))
        .await
        .expect("executable prompt action");
    let desc = prompt_action.desc();
    let rendered = prompt_action
        .run_json(input.clone(), RunOptions::new().context(context.clone()))
        .await
        .map(|o| o.output);
    let executable = executable_action
        .run_json(input.clone(), RunOptions::new().context(context.clone()))
        .await
        .map(|o| o.output);
    let generated = async {
        let p = prompt::<Value, Value>(&registry, name, variant)?;
        let mut overrides = GenerateOptions::default().context(context.clone());
        if let Some(messages) = case.get("messages") {
            let messages: Vec<Message> =
                serde_json::from_value(messages.clone()).expect("messages");
            overrides = overrides.with_messages(messages);
        }
        let response = p.call_with(input.clone(), overrides).await?;
        Ok(serde_json::to_value(response)?)
    }
    .await;
    let requests: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| serde_json::to_value(r).expect("request"))
        .collect();
    json!({
        "promptMetadata": Value::Object(desc.metadata.clone()),
        "promptInputSchema": desc.input_schema.clone().unwrap_or(Value::Null),
        "prompt": outcome(rendered),
        "executable": outcome(executable),
        "generate": outcome(generated),
        "modelRequests": requests,
    })
}

fn remove(value: &mut Value, path: &[&str]) {
    match path {
        [] => {}
        [last] => {
            if let Some(map) = value.as_object_mut() {
                map.remove(*last);
            }
        }
        [first, rest @ ..] => {
            if let Some(inner) = value.get_mut(*first) {
                remove(inner, rest);
            }
        }
    }
}

/// Genkit JS's record, less what this crate deliberately does otherwise:
/// - `/prompt/` output: `resources`, `output.jsonSchema` and
///   `output.defaultInstructions` are not fields of Genkit's
///   `GenerateRequest` / `OutputConfig` schema (which this crate follows);
/// - tool definitions' `key`: not in Genkit's conformance vectors (see
///   `genkit_js.rs`);
/// - `/executable-prompt/` output: Genkit JS writes `"jsonSchema": null`
///   for a prompt without an output schema, and tools by registry key
///   (`/tool/add`); here there is no output and tools go by name, which
///   `/util/generate` reads the same;
/// - listed metadata: Genkit JS ignores a prompt file's `input.default`
///   (so does not list it) while this crate applies it, lists `maxTurns`
///   only in `raw`, and echoes internals (`toolDefs`, a frontmatter
///   `output.jsonSchema`).
fn as_expected_here(expected: &Value) -> Value {
    let mut e = expected.clone();
    for path in [
        &["prompt", "ok", "resources"][..],
        &["prompt", "ok", "output", "jsonSchema"],
        &["prompt", "ok", "output", "defaultInstructions"],
        &["promptMetadata", "prompt", "toolDefs"],
        &["promptMetadata", "prompt", "output", "jsonSchema"],
    ] {
        remove(&mut e, path);
    }
    for pointer in ["/prompt/ok/tools", "/generate/ok/request/tools"] {
        if let Some(Value::Array(tools)) = e.pointer_mut(pointer) {
            for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
                tool.remove("key");
            }
        }
    }
    if let Some(requests) = e["modelRequests"].as_array_mut() {
        for tools in requests
            .iter_mut()
            .filter_map(|r| r["tools"].as_array_mut())
        {
            for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
                tool.remove("key");
            }
        }
    }
    if let Some(executable) = e.pointer_mut("/executable/ok")
        && let Some(options) = executable.as_object_mut()
    {
        if let Some(Value::Object(output)) = options.get_mut("output") {
            if output.get("jsonSchema") == Some(&Value::Null) {
                output.remove("jsonSchema");
            }
            if output.is_empty() {
                options.remove("output");
            }
        }
        if let Some(Value::Array(tools)) = options.get_mut("tools") {
            for tool in tools.iter_mut() {
                if let Some(name) = tool.as_str().and_then(|t| t.strip_prefix("/tool/")) {
                    *tool = json!(name);
                }
            }
        }
    }
    e
}

/// What this crate lists that Genkit JS does not, set aside likewise.
fn as_compared(got: &mut Value) {
    remove(got, &["promptMetadata", "prompt", "input", "default"]);
    remove(got, &["promptMetadata", "prompt", "maxTurns"]);
}

#[tokio::test]
async fn prompt_files_behave_as_in_genkit_js() {
    let mut failures = Vec::new();
    let mut total = 0;
    for line in RECORDED.lines() {
        let case: Value = serde_json::from_str(line).expect("case");
        total += 1;
        let expected = as_expected_here(&case["expect"]);
        let mut got = run(&case).await;
        as_compared(&mut got);
        if got != expected {
            let mut diffs = Vec::new();
            differences(&expected, &got, "", &mut diffs);
            failures.push(format!(
                "{} {}\n  {}",
                case["prompt"],
                case["variant"],
                diffs.join("\n  ")
            ));
        }
    }
    assert!(total >= 10, "only {total} cases");
    assert!(
        failures.is_empty(),
        "{} of {total} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
