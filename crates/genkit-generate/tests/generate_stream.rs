//! Streaming: chunk indexes across turns, tool chunks, accumulated text, and
//! each format's partial parsing.

use futures::StreamExt;
use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate, generate_stream};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::define_tool;
use genkit_model::types::{
    FinishReason, GenerateResponse, GenerateResponseChunk, Message, Part, Role, ToolRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn text_chunks(pieces: &[&str]) -> Vec<GenerateResponseChunk> {
    pieces
        .iter()
        .map(|p| GenerateResponseChunk::new(vec![Part::text(*p)]))
        .collect()
}

fn text_response(text: &str) -> GenerateResponse {
    GenerateResponse::new(Message::new(Role::Model, text), FinishReason::Stop)
}

#[tokio::test]
async fn indexes_follow_messages_across_turns() {
    let reg = Registry::new();
    define_tool(&reg, "t", "t", |_: Value, _ctx| async {
        Ok(json!("tool out"))
    })
    .unwrap();
    let call = GenerateResponse::new(
        Message::new(
            Role::Model,
            vec![Part::tool_request(
                ToolRequest::new("t", json!({})).with_ref("r"),
            )],
        ),
        FinishReason::Stop,
    );
    ProgrammableModel::define(&reg, "m")
        .respond_with_chunks(text_chunks(&["thinking..."]), call)
        .respond_with_chunks(
            text_chunks(&["The ", "answer"]),
            text_response("The answer"),
        );
    let mut stream = generate_stream(&reg, GenerateOptions::prompt("x").model("m").tool("t"));
    let mut seen = Vec::new();
    while let Some(c) = stream.next().await {
        let c = c.unwrap();
        seen.push((c.index(), c.role, c.text(), c.accumulated_text()));
    }
    assert_eq!(
        seen,
        vec![
            (
                0,
                Some(Role::Model),
                "thinking...".to_owned(),
                "thinking...".to_owned()
            ),
            (1, Some(Role::Tool), String::new(), String::new()),
            (2, Some(Role::Model), "The ".to_owned(), "The ".to_owned()),
            (
                2,
                Some(Role::Model),
                "answer".to_owned(),
                "The answer".to_owned()
            ),
        ]
    );
    let response = stream.response().await.unwrap();
    assert_eq!(response.text(), "The answer");
}

#[tokio::test]
async fn tool_results_stream_as_tool_chunks() {
    let reg = Registry::new();
    define_tool(&reg, "t", "t", |_: Value, _ctx| async { Ok(json!(42)) }).unwrap();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("t", json!({}))
        .respond_text("done");
    let mut stream = generate_stream(&reg, GenerateOptions::prompt("x").model("m").tool("t"));
    let mut tool_chunks = Vec::new();
    while let Some(c) = stream.next().await {
        let c = c.unwrap();
        if c.role == Some(Role::Tool) {
            tool_chunks.push(c.into_chunk());
        }
    }
    assert_eq!(tool_chunks.len(), 1);
    assert_eq!(
        tool_chunks[0].content[0].as_tool_response().unwrap().output,
        Some(json!(42))
    );
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Verdict {
    go_outside: bool,
    reason: String,
}

#[tokio::test]
async fn json_output_parses_partially_while_streaming_and_fully_at_the_end() {
    let reg = Registry::new();
    let pieces = ["{\"go_outside\": tr", "ue, \"reason\": \"sun", "ny\"}"];
    ProgrammableModel::define(&reg, "m")
        .respond_with_chunks(text_chunks(&pieces), text_response(&pieces.concat()));
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("go?")
            .model("m")
            .output::<Verdict>(),
    );
    let mut partials = Vec::new();
    while let Some(c) = stream.next().await {
        partials.push(c.unwrap().output().cloned());
    }
    // Partial literals are completed, as Genkit's partial JSON parser does.
    assert_eq!(partials[0], Some(json!({"go_outside": true})));
    assert_eq!(
        partials[1],
        Some(json!({"go_outside": true, "reason": "sun"}))
    );
    assert_eq!(
        partials[2],
        Some(json!({"go_outside": true, "reason": "sunny"}))
    );
    let response = stream.response().await.unwrap();
    let v: Verdict = response.output().unwrap();
    assert_eq!(
        v,
        Verdict {
            go_outside: true,
            reason: "sunny".into()
        }
    );
    // The message notes its output format.
    let meta = response.message().unwrap().metadata.clone().unwrap();
    assert_eq!(meta["generate"]["output"]["format"], "json");
}

#[tokio::test]
async fn array_and_jsonl_stream_complete_items() {
    let reg = Registry::new();
    let array = ["[{\"n\": 1}, {\"n\"", ": 2}, {\"n\": 3", "}]"];
    let lines = ["{\"n\": 1}\n{\"n\"", ": 2}\n", "{\"n\": 3}\n"];
    ProgrammableModel::define(&reg, "m")
        .respond_with_chunks(text_chunks(&array), text_response(&array.concat()))
        .respond_with_chunks(text_chunks(&lines), text_response(&lines.concat()));
    let schema = json!({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}}}});
    for format in ["array", "jsonl"] {
        let mut stream = generate_stream(
            &reg,
            GenerateOptions::prompt("count")
                .model("m")
                .output_format(format)
                .output_schema(schema.clone()),
        );
        let mut items = Vec::new();
        while let Some(c) = stream.next().await {
            items.push(c.unwrap().output().cloned());
        }
        assert_eq!(
            items,
            vec![
                Some(json!([{"n": 1}])),
                Some(json!([{"n": 2}])),
                Some(json!([{"n": 3}]))
            ],
            "{format}"
        );
        let response = stream.response().await.unwrap();
        assert_eq!(
            response.output_value().unwrap(),
            json!([{"n": 1}, {"n": 2}, {"n": 3}]),
            "{format}"
        );
    }
}

#[tokio::test]
async fn enum_and_text_formats() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_text("\"SUNNY\"\n")
        .respond_text("free text");
    let r = generate(
        &reg,
        GenerateOptions::prompt("weather?")
            .model("m")
            .output_format("enum")
            .output_schema(json!({"type": "string", "enum": ["SUNNY", "RAINY"]})),
    )
    .await
    .unwrap();
    assert_eq!(r.output::<String>().unwrap(), "SUNNY");
    // Enum instructions were injected into the prompt.
    let req = &model.requests()[0];
    let instructions = req.messages[0]
        .content
        .iter()
        .find(|p| p.metadata_value("purpose") == Some(&json!("output")))
        .expect("format instructions");
    assert!(instructions.as_text().unwrap().contains("SUNNY"));

    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .output_format("text"),
    )
    .await
    .unwrap();
    assert_eq!(r.output::<String>().unwrap(), "free text");
}

#[tokio::test]
async fn output_that_violates_the_schema_is_rejected() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m").respond_text("{\"go_outside\": \"maybe\"}");
    let err = generate(
        &reg,
        GenerateOptions::prompt("x").model("m").output::<Verdict>(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    assert!(err.message().contains("go_outside"), "{err}");
}

#[tokio::test]
async fn json_schema_is_simulated_for_models_without_constrained_output() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_text("{\"go_outside\": false, \"reason\": \"rain\"}");
    generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .output::<Verdict>()
            .constrained(true),
    )
    .await
    .unwrap();
    let req = &model.requests()[0];
    // The schema went into the prompt and the constraint was cleared.
    let text = req.messages[0].text();
    assert!(text.contains("conform to the following schema"), "{text}");
    assert_eq!(req.output.as_ref().unwrap().constrained, Some(false));
}
