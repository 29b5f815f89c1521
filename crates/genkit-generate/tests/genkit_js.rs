//! `/util/generate` behaves as Genkit JS's does. Every scenario in
//! `genkit_js/recorded.jsonl` was run through Genkit JS by
//! `genkit_js/record.mjs`, which recorded the requests its scripted model
//! received turn by turn, the chunks streamed and the response (or the
//! error). Here the same scenarios run with the same scripted model and
//! tools (defined from the JSON schemas Genkit JS gave them), and all of it
//! must come out the same (where Genkit JS fails by a fault of its own, the
//! scenario says what is expected instead).

use futures::StreamExt;
use genkit_core::action::stream_json;
use genkit_core::{Action, ActionDesc, ActionKind, Error, Registry, RunOptions, StatusCode};
use genkit_generate::define_generate_action;
use genkit_model::model::ModelOptions;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, GenerateResponseChunk, ModelSupports};
use serde_json::{Value, json};

#[path = "support/json_diff.rs"]
mod json_diff;
use json_diff::differences;

const RECORDED: &str = include_str!("genkit_js/recorded.jsonl");

/// The tools every scenario has, with the definitions Genkit JS gave them.
fn define_tools(registry: &Registry, definitions: &[Value]) {
    for def in definitions {
        let name = def["name"].as_str().expect("tool name").to_owned();
        if name == "pics" {
            // A multipart tool (`tool.v2`): output and content parts.
            let mut desc = ActionDesc::new(ActionKind::ToolV2, "pics")
                .with_description(def["description"].as_str().unwrap_or_default())
                .with_metadata("type", json!("tool.v2"))
                .with_metadata("tool", json!({"multipart": true}));
            desc.input_schema = def.get("inputSchema").cloned();
            desc.output_schema = def.get("outputSchema").cloned();
            let action = Action::<Value, Value>::from_desc(desc, |input: Value, _ctx| async move {
                Ok(json!({"output": {"count": input["n"]}, "content": [{"text": "part one"}]}))
            })
            .expect("multipart tool");
            registry.register(action.to_dyn()).expect("register tool");
            continue;
        }
        let description = def["description"].as_str().unwrap_or_default().to_owned();
        let input = def.get("inputSchema").cloned();
        let output = def.get("outputSchema").cloned();
        let tool = Tool::from_json_schema(name.clone(), description, input, output, {
            let name = name.clone();
            move |input: Value, ctx| {
                let name = name.clone();
                async move {
                    match name.as_str() {
                        "add" => {
                            let (a, b) = (&input["a"], &input["b"]);
                            Ok(match (a.as_i64(), b.as_i64()) {
                                (Some(a), Some(b)) => json!(a + b),
                                _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
                            })
                        }
                        "echo" => Ok(input),
                        "nothing" => Ok(Value::Null),
                        "failing" => Err(Error::new(StatusCode::Unknown, "tool failed")),
                        "ask" => Err(ctx.interrupt(None)),
                        "lookup" => {
                            let key = input["key"].as_str().unwrap_or_default().to_owned();
                            if key == "secret" {
                                Err(ctx.interrupt(Some(json!({"reason": "needs approval"}))))
                            } else {
                                Ok(json!(format!("value of {key}")))
                            }
                        }
                        other => Err(Error::internal(format!("unknown test tool {other}"))),
                    }
                }
            }
        })
        .expect("tool");
        registry.register(tool.to_dyn()).expect("register tool");
    }
}

fn setup(scenario: &Value, tools: &[Value]) -> (Registry, ProgrammableModel) {
    let registry = Registry::new();
    define_generate_action(&registry).expect("generate action");
    let supports: ModelSupports = match scenario.get("supports") {
        Some(s) => serde_json::from_value(s.clone()).expect("supports"),
        None => serde_json::from_value(json!({
            "multiturn": true, "media": true, "tools": true, "systemRole": true, "toolChoice": true
        }))
        .expect("supports"),
    };
    let mut model = ProgrammableModel::try_define_with(
        &registry,
        ModelOptions::new("programmableModel").supports(supports),
    )
    .expect("model");
    let chunks = scenario["streamChunks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, response) in scenario["modelResponses"]
        .as_array()
        .expect("modelResponses")
        .iter()
        .enumerate()
    {
        if let Some(message) = response["error"].as_str() {
            model = model.respond_error(Error::new(StatusCode::Unknown, message));
            continue;
        }
        let response: GenerateResponse =
            serde_json::from_value(response.clone()).expect("model response");
        let turn: Vec<GenerateResponseChunk> = chunks
            .get(i)
            .map(|c| serde_json::from_value(c.clone()).expect("chunks"))
            .unwrap_or_default();
        model = model.respond_with_chunks(turn, response);
    }
    define_tools(&registry, tools);
    (registry, model)
}

/// Runs `scenario`; what happened, in the shape `record.mjs` writes.
async fn run(scenario: &Value, tools: &[Value]) -> Value {
    let (registry, model) = setup(scenario, tools);
    let action = registry
        .require_action("/util/generate")
        .await
        .expect("/util/generate");
    let input = scenario["input"].clone();
    let mut chunks = Vec::new();
    let result = if scenario["stream"].as_bool() == Some(true) {
        let mut stream = stream_json(action, input, RunOptions::default());
        while let Some(chunk) = stream.next().await {
            chunks.push(chunk.expect("chunk"));
        }
        stream.output().await
    } else {
        action
            .run_json(input, RunOptions::default())
            .await
            .map(|out| out.output)
    };
    let requests: Vec<Value> = model
        .requests()
        .iter()
        .map(|r| serde_json::to_value(r).expect("request"))
        .collect();
    match result {
        Ok(response) => json!({"modelRequests": requests, "chunks": chunks, "response": response}),
        Err(e) => json!({
            "modelRequests": requests,
            "chunks": chunks,
            "error": {"status": e.status().name(), "message": e.message()},
        }),
    }
}

/// Genkit JS 1.42 gives each tool definition its registry `key`; Genkit's
/// published conformance vectors (`generate.yaml`, which this crate passes
/// unchanged) have none, and they decide.
fn drop_tool_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(tools)) = map.get_mut("tools") {
                for tool in tools.iter_mut() {
                    if let Some(def) = tool.as_object_mut() {
                        def.remove("key");
                    }
                }
            }
            map.values_mut().for_each(drop_tool_keys);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_tool_keys),
        _ => {}
    }
}

/// Genkit JS's error as this crate reports it, and this crate's error
/// compared only where Genkit JS's means something:
/// - a `GenkitError`'s message starts with its status (`NOT_FOUND: ...`),
///   which is kept apart here;
/// - a plain JavaScript `Error` has no status, so any status goes (this
///   crate gives one, e.g. `NOT_FOUND` for an unknown tool);
/// - schema validation lists the violations in each validator's own words
///   (ajv there, jsonschema here): the list is left out, the data and the
///   schema around it are compared.
fn normalize_errors(expected: &mut Value, got: &mut Value) {
    let (Some(theirs), Some(ours)) = (expected.get_mut("error"), got.get_mut("error")) else {
        return;
    };
    match theirs["status"].as_str().map(str::to_owned) {
        Some(status) => {
            let message = theirs["message"].as_str().unwrap_or_default();
            let message = message
                .strip_prefix(&format!("{status}: "))
                .unwrap_or(message)
                .to_owned();
            theirs["message"] = json!(message);
        }
        None => theirs["status"] = ours["status"].clone(),
    }
    for error in [theirs, ours] {
        let message = error["message"].as_str().unwrap_or_default();
        if let Some(rest) = message.strip_prefix("Schema validation failed. Parse Errors:")
            && let Some(at) = rest.find("\n\nProvided data:")
        {
            error["message"] = json!(format!(
                "Schema validation failed. Parse Errors: (...){}",
                &rest[at..]
            ));
        }
    }
}

#[tokio::test]
async fn generate_behaves_as_genkit_js() {
    let mut lines = RECORDED.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("header");
    let tools = header["tools"].as_array().expect("tools").clone();
    let mut failures = Vec::new();
    let mut total = 0;
    for line in lines {
        let scenario: Value = serde_json::from_str(line).expect("scenario");
        total += 1;
        let mut expected = scenario["expect"].clone();
        if let Some(deviation) = scenario.get("deviation") {
            // Genkit JS failed by a fault of its own: the same requests, and
            // the error the design calls for.
            assert!(expected.get("error").is_some(), "{}", scenario["name"]);
            expected["error"] = deviation["error"].clone();
        }
        drop_tool_keys(&mut expected);
        let mut got = run(&scenario, &tools).await;
        normalize_errors(&mut expected, &mut got);
        if got != expected {
            let mut diffs = Vec::new();
            differences(&expected, &got, "", &mut diffs);
            failures.push(format!("{}\n  {}", scenario["name"], diffs.join("\n  ")));
        }
    }
    assert!(total >= 30, "only {total} scenarios");
    assert!(
        failures.is_empty(),
        "{} of {total} scenarios differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
