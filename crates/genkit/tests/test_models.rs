//! Genkit JS's test models (`genkit/testing`: `echoModel`, `mockModel`) and
//! ours, on the same generate calls: the answers, errors and inspection
//! results Genkit JS 1.42 gave are recorded in
//! `fixtures/genkit_js_test_models.json` by `genkit_js/record_test_models.mjs`
//! (its header says how to re-record).

use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::testing::{
    EchoModelOptions, MockModelOptions, MockRespond, MockResponse, echo_model, mock_model,
};
use genkit::types::{FinishReason, GenerationUsage, ToolRequest};

const RECORDED: &str = include_str!("fixtures/genkit_js_test_models.json");

fn recorded() -> Value {
    serde_json::from_str(RECORDED).expect("the recording is JSON")
}

fn ai() -> Genkit {
    Genkit::builder().no_prompt_dir().build().unwrap()
}

/// The generate options a recorded case used, on `model`.
fn options(case: &Value, model: &str) -> GenerateOptions {
    let mut options = GenerateOptions::new().model(model);
    if let Some(messages) = case.get("messages") {
        let messages: Vec<Message> = serde_json::from_value(messages.clone()).unwrap();
        options = options.with_messages(messages);
    }
    if let Some(system) = case.get("system").and_then(Value::as_str) {
        options = options.system(system);
    }
    if let Some(prompt) = case.get("prompt").and_then(Value::as_str) {
        options = options.with_prompt(prompt);
    }
    if let Some(config) = case.get("config") {
        options = options.config(config.clone());
    }
    if let Some(schema) = case.pointer("/output/jsonSchema") {
        options = options.output_schema(schema.clone());
    }
    options
}

/// What a generate call gave, in the recording's shape.
async fn outcome(ai: &Genkit, options: GenerateOptions) -> Value {
    match ai.generate(options).await {
        Ok(response) => json!({
            "message": serde_json::to_value(response.message().unwrap()).unwrap(),
            "finishReason": serde_json::to_value(response.finish_reason()).unwrap(),
            "text": response.text(),
        }),
        Err(e) => json!({"error": e.message()}),
    }
}

#[tokio::test]
async fn echo_model_answers_as_genkit_js_does() {
    let ai = ai();
    let echo = echo_model(ai.registry(), EchoModelOptions::new()).unwrap();
    assert_eq!(echo.name(), "echoModel");
    for case in recorded()["echo"].as_array().unwrap() {
        let got = outcome(&ai, options(&case["options"], "echoModel")).await;
        match case.get("error") {
            // JS's message names its own API; ours says the same of ours.
            Some(_) => {
                let error = got["error"].as_str().expect("an error");
                assert!(
                    error.starts_with("echoModel returns text and can't satisfy an output schema"),
                    "{error}"
                );
            }
            None => {
                assert_eq!(got["message"], case["message"], "{}", case["options"]);
                assert_eq!(got["text"], case["text"]);
                assert_eq!(got["finishReason"], case["finishReason"]);
                assert_eq!(
                    echo.last_request_text().as_deref(),
                    case["lastRequestText"].as_str()
                );
            }
        }
    }
}

#[tokio::test]
async fn a_queue_repeats_its_last_answer_and_fails_where_told() {
    let ai = ai();
    let model = mock_model(
        ai.registry(),
        MockModelOptions::new()
            .name("queued")
            .respond(MockRespond::queue([
                Ok("first".into()),
                Ok(MockResponse::text("second").with_finish_reason(FinishReason::Length)),
                Err(genkit::Error::new(StatusCode::Unavailable, "rate limited")),
                Ok("last".into()),
            ])),
    )
    .unwrap();
    let recorded = recorded();
    for (i, want) in recorded["queue"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let got = outcome(
            &ai,
            GenerateOptions::prompt(format!("call {i}")).model("queued"),
        )
        .await;
        assert_eq!(&got, want, "call {i}");
    }
    assert_eq!(
        model.request_count() as u64,
        recorded["queue"]["requestCount"].as_u64().unwrap()
    );
}

#[tokio::test]
async fn tool_rounds_are_inspectable_and_reset_starts_over() {
    let ai = ai();
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Lookup {
        id: i64,
    }
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Found {
        found: bool,
    }
    ai.define_tool("lookup", "Looks up an id.", |input: Lookup, _| async move {
        Ok(Found {
            found: input.id == 1,
        })
    });
    let model = mock_model(
        ai.registry(),
        MockModelOptions::new().name("tooling").respond([
            MockResponse::text("checking").with_tool_request_parts(
                ToolRequest::new("lookup", json!({"id": 1})).with_ref("a"),
            ),
            MockResponse::text("done"),
        ]),
    )
    .unwrap();
    let recorded = recorded();
    let tools = &recorded["tools"];
    let got = outcome(
        &ai,
        GenerateOptions::prompt("find 1")
            .model("tooling")
            .tool("lookup"),
    )
    .await;
    assert_eq!(got, tools["run"]);
    let inspection = &tools["inspection"];
    assert_eq!(
        model.request_count() as u64,
        inspection["requestCount"].as_u64().unwrap()
    );
    assert_eq!(
        serde_json::to_value(model.tool_responses()).unwrap(),
        inspection["toolResponses"]
    );
    assert_eq!(
        model.last_request_text().as_deref(),
        inspection["lastRequestText"].as_str()
    );
    assert_eq!(
        serde_json::to_value(model.last_request_message()).unwrap(),
        inspection["lastRequestMessage"]
    );

    model.reset();
    assert_eq!(model.request_count(), 0);
    assert!(model.last_request().is_none() && model.tool_responses().is_empty());
    let again = outcome(
        &ai,
        GenerateOptions::prompt("x")
            .model("tooling")
            .tool("lookup")
            .return_tool_requests(true),
    )
    .await;
    assert_eq!(again, tools["afterReset"]["again"]);
}

#[tokio::test]
async fn full_responses_pass_as_is_and_the_default_answer_is_empty_text() {
    let ai = ai();
    let mut full = genkit::types::GenerateResponse::new(
        Message::new(genkit::types::Role::Model, "as is"),
        FinishReason::Stop,
    );
    full.finish_reason = None;
    full.usage = Some(Box::new(GenerationUsage {
        input_tokens: Some(3),
        ..GenerationUsage::default()
    }));
    mock_model(
        ai.registry(),
        MockModelOptions::new().name("full").respond(full),
    )
    .unwrap();
    mock_model(ai.registry(), MockModelOptions::new().name("empty")).unwrap();
    let recorded = recorded();
    assert_eq!(
        outcome(&ai, GenerateOptions::prompt("p").model("full")).await,
        recorded["full"]
    );
    assert_eq!(
        outcome(&ai, GenerateOptions::prompt("p").model("empty")).await,
        recorded["empty"]
    );
}

#[tokio::test]
async fn a_function_answers_streams_and_can_be_replaced() {
    let ai = ai();
    let model = mock_model(
        ai.registry(),
        MockModelOptions::new().respond(MockRespond::from_fn(|req, ctx| {
            ctx.send_text("hel");
            ctx.send_text("lo");
            Ok(MockResponse::text(format!(
                "hello after {} messages",
                req.messages.len()
            )))
        })),
    )
    .unwrap();
    let mut stream = ai.generate_stream(GenerateOptions::prompt("hi").model("mockModel"));
    let mut chunks = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        chunks.push(chunk.unwrap().text());
    }
    assert_eq!(chunks, ["hel", "lo"]);
    assert_eq!(
        stream.response().await.unwrap().text(),
        "hello after 1 messages"
    );

    model.respond_with(["one", "two"]);
    for want in ["one", "two", "two"] {
        let got = ai
            .generate(GenerateOptions::prompt("x").model("mockModel"))
            .await
            .unwrap();
        assert_eq!(got.text(), want);
    }
    // The recorded calls stayed through respond_with.
    assert_eq!(model.request_count(), 4);
    // A constrained request reaches the model with its schema (supports
    // constrained: all by default).
    model.respond_with(r#"{"a":"b"}"#);
    let got = ai
        .generate(
            GenerateOptions::prompt("shape")
                .model("mockModel")
                .output_schema(json!({"type": "object"})),
        )
        .await
        .unwrap();
    assert_eq!(got.output::<Value>().unwrap(), json!({"a": "b"}));
    let request = model.last_request().unwrap();
    assert_eq!(
        request.output.and_then(|o| o.schema),
        Some(json!({"type": "object"}))
    );
    assert_eq!(request.messages.len(), 1, "no schema instructions appended");
}
