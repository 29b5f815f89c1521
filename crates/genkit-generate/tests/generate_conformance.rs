//! Runs Genkit's `generate.yaml` conformance cases against `/util/generate`,
//! read unchanged from `$GENKIT_CONFORMANCE_DIR` (see `genkit_conformance`).

use futures::StreamExt;
use genkit_core::action::stream_json;
use genkit_core::{Registry, RunOptions};
use genkit_generate::define_generate_action;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_model::types::{GenerateResponse, GenerateResponseChunk};
use serde_json::{Value, json};
use std::path::PathBuf;

fn conformance_dir() -> PathBuf {
    genkit_conformance::genkit_dir()
}

fn load_cases() -> Vec<Value> {
    let path = conformance_dir().join("generate.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let doc: Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    doc["tests"].as_array().cloned().unwrap_or_default()
}

fn setup(case: &Value) -> Registry {
    let registry = Registry::new();
    define_generate_action(&registry).unwrap();
    let mut model = ProgrammableModel::define(&registry, "programmableModel");
    let chunks = case["streamChunks"].as_array().cloned().unwrap_or_default();
    for (i, resp) in case["modelResponses"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let response: GenerateResponse =
            serde_json::from_value(resp.clone()).expect("model response parses");
        let turn_chunks: Vec<GenerateResponseChunk> = chunks
            .get(i)
            .map(|c| serde_json::from_value(c.clone()).expect("chunks parse"))
            .unwrap_or_default();
        model = model.respond_with_chunks(turn_chunks, response);
    }
    let any = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
    let tool = Tool::from_json_schema(
        "testTool",
        "description",
        Some(any.clone()),
        Some(any),
        |_input, _ctx| async { Ok(json!("tool called")) },
    )
    .unwrap();
    registry.register(tool.to_dyn()).unwrap();
    registry
}

async fn run_case(case: &Value) -> Result<(), String> {
    let registry = setup(case);
    let action = registry
        .require_action("/util/generate")
        .await
        .map_err(|e| e.to_string())?;
    let input = case["input"].clone();
    let (chunks, response) = if case["stream"].as_bool() == Some(true) {
        let mut stream = stream_json(action, input, RunOptions::default());
        let mut chunks = Vec::new();
        while let Some(c) = stream.next().await {
            chunks.push(c.map_err(|e| e.to_string())?);
        }
        (chunks, stream.output().await.map_err(|e| e.to_string())?)
    } else {
        let out = action
            .run_json(input, RunOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        (Vec::new(), out.output)
    };
    if let Some(expected) = case.get("expectChunks") {
        let got = Value::Array(chunks);
        if &got != expected {
            return Err(format!(
                "chunks differ\nexpected: {expected:#}\ngot:      {got:#}"
            ));
        }
    }
    let expected = &case["expectResponse"];
    if &response != expected {
        return Err(format!(
            "response differs\nexpected: {expected:#}\ngot:      {response:#}"
        ));
    }
    Ok(())
}

#[tokio::test]
async fn generate_yaml_conformance() {
    let cases = load_cases();
    assert!(!cases.is_empty(), "no cases found in generate.yaml");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        if let Err(e) = run_case(case).await {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
    eprintln!("generate.yaml: {} cases passed", cases.len());
}
