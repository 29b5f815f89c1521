//! Constrained decoding on SmolLM2-135M: with a schema, every answer parses
//! and validates (JSON objects, arrays, enums, JSON lines), and a forced
//! tool call has valid arguments and runs through generate's tool loop.
//! A 135M model's answers are not good; they are valid, which is the point.

mod common;

use genkit::Genkit;
use genkit::generate::GenerateOptions;
use genkit::types::{FinishReason, GenerateRequest, Message, OutputConfig, ToolChoice};
use genkit_core::schema::SchemaValidator;
use genkit_local_model::{LocalModels, model_action};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Instant;

fn constrained(prompt: &str, format: &str, schema: Value, config: Value) -> GenerateRequest {
    GenerateRequest::new(vec![Message::user(prompt)])
        .with_config(config)
        .with_output(OutputConfig {
            format: Some(format.into()),
            schema: Some(schema),
            constrained: Some(true),
            content_type: None,
        })
}

/// Nested object, array, enum and bounded integer and strings: the
/// smallest schema that has them all.
fn profile_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 10},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "pet": {
                "type": "object",
                "properties": {
                    "kind": {"enum": ["cat", "dog", "fish"]},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2}
                },
                "required": ["kind", "tags"],
                "additionalProperties": false
            }
        },
        "required": ["name", "age", "pet"],
        "additionalProperties": false
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_answers_parse_and_validate_for_every_prompt_and_seed() {
    // A model of its own: its cost counters see these requests only.
    let Some(path) = common::gguf_path() else {
        return;
    };
    let model = Arc::new(genkit_local_model::LocalModel::load(path).unwrap());
    let action = model_action("gguf/smollm2", model.clone());
    let schema = profile_schema();
    let validator = SchemaValidator::compile(&schema).unwrap();
    let cases = [
        ("Describe a person and their pet.", 1),
        ("Who lives next door?", 2),
        ("Make up a character for a story.", 3),
    ];
    for (prompt, seed) in cases {
        let started = Instant::now();
        let response = action
            .action()
            .run(constrained(
                prompt,
                "json",
                schema.clone(),
                json!({"temperature": 0.8, "seed": seed, "maxOutputTokens": 80}),
            ))
            .await
            .unwrap();
        let text = response.text();
        let tokens = response.usage.as_ref().and_then(|u| u.output_tokens);
        eprintln!(
            "seed {seed}: {text} ({tokens:?} tokens in {:?})",
            started.elapsed()
        );
        assert_eq!(response.finish_reason(), Some(FinishReason::Stop), "{text}");
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        validator
            .validate(&value)
            .unwrap_or_else(|e| panic!("{e}: {text}"));
    }
    let cost = model.constraint_cost();
    eprintln!(
        "constraint cost: {:?} per token over {} tokens; setup (trie, grammars) {:?}",
        cost.per_token(),
        cost.tokens,
        cost.setup
    );
    assert!(cost.tokens >= 3 * 10, "{cost:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enum_array_and_jsonl_formats_through_generate() {
    let Some(model) = common::model() else { return };
    let ai = Genkit::builder()
        .plugin(LocalModels::new().loaded("smollm2", model))
        .build()
        .unwrap();
    let greedy = json!({"temperature": 0, "maxOutputTokens": 40});

    let sentiment = ai
        .generate(
            GenerateOptions::prompt("Is 'I love this phone' positive, negative or neutral?")
                .model("gguf/smollm2")
                .config(greedy.clone())
                .output_format("enum")
                .output_schema(
                    json!({"type": "string", "enum": ["positive", "negative", "neutral"]}),
                ),
        )
        .await
        .unwrap();
    let label: String = sentiment.output().unwrap();
    assert!(
        ["positive", "negative", "neutral"].contains(&label.as_str()),
        "{label:?} from {:?}",
        sentiment.text()
    );
    assert_eq!(label, sentiment.text(), "bare, no quotes");

    let digits_schema = json!({
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 9},
        "minItems": 2,
        "maxItems": 3
    });
    let digits = ai
        .generate(
            GenerateOptions::prompt("Pick some small numbers.")
                .model("gguf/smollm2")
                .config(greedy.clone())
                .output_format("array")
                .output_schema(digits_schema.clone()),
        )
        .await
        .unwrap();
    let parsed: Value = serde_json::from_str(&digits.text()).unwrap();
    SchemaValidator::compile(&digits_schema)
        .unwrap()
        .validate(&parsed)
        .unwrap_or_else(|e| panic!("{e}: {}", digits.text()));

    // `jsonl` is not constrained by default in Genkit: asked for here.
    let lines_schema = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 99}},
            "required": ["n"],
            "additionalProperties": false
        },
        "minItems": 1,
        "maxItems": 2
    });
    let lines = ai
        .generate(
            GenerateOptions::prompt("Count.")
                .model("gguf/smollm2")
                .config(greedy)
                .output_format("jsonl")
                .output_schema(lines_schema.clone())
                .constrained(true),
        )
        .await
        .unwrap();
    let text = lines.text();
    let items: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {text}")))
        .collect();
    SchemaValidator::compile(&lines_schema)
        .unwrap()
        .validate(&Value::Array(items))
        .unwrap_or_else(|e| panic!("{e}: {text}"));
}

#[derive(Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct WeatherInput {
    /// The city.
    #[schemars(length(max = 16))]
    city: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forced_tool_call_is_valid_and_the_tool_loop_completes() {
    let Some(model) = common::model() else { return };
    let ai = Genkit::builder()
        .plugin(LocalModels::new().loaded("smollm2", model))
        .build()
        .unwrap();
    let calls = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = calls.clone();
    let weather = ai.define_tool(
        "get_weather",
        "Gets the current weather in a city.",
        move |input: WeatherInput, _ctx| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(input.city.clone());
                Ok(format!("Sunny, 21 degrees in {}", input.city))
            }
        },
    );
    let answer = ai
        .generate(
            GenerateOptions::prompt("What is the weather in Paris?")
                .model("gguf/smollm2")
                .tool(&weather)
                .tool_choice_once(ToolChoice::Required)
                .max_turns(2)
                .config(json!({"temperature": 0, "maxOutputTokens": 40})),
        )
        .await
        .unwrap();
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "the tool ran once: {calls:?}");
    assert!(
        !calls[0].is_empty() && calls[0].chars().count() <= 16,
        "{calls:?}"
    );
    // The history holds the call (arguments valid for the tool's schema)
    // and its result; the last answer is text.
    let messages = answer.messages().unwrap();
    let request = messages
        .iter()
        .flat_map(|m| m.tool_requests())
        .next()
        .expect("a tool request in the history");
    assert_eq!(request.name, "get_weather");
    let schema = genkit_core::schema::schema_for::<WeatherInput>();
    SchemaValidator::compile(&schema)
        .unwrap()
        .validate(request.input.as_ref().unwrap())
        .unwrap();
    assert!(
        messages.iter().any(|m| m.tool_responses().next().is_some()),
        "{messages:?}"
    );
    assert!(answer.tool_requests().is_empty(), "{:?}", answer.text());
    eprintln!("call {:?}; answer {:?}", request.input, answer.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_call_comes_as_a_tool_request_not_as_text() {
    use futures::StreamExt;
    use genkit::types::ToolDefinition;
    let Some(model) = common::model() else { return };
    let action = model_action("gguf/smollm2", model);
    let tool = ToolDefinition::new("add", "Adds two numbers.").with_input_schema(json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer", "minimum": -99, "maximum": 99},
            "b": {"type": "integer", "minimum": -99, "maximum": 99}
        },
        "required": ["a", "b"],
        "additionalProperties": false
    }));
    let request = GenerateRequest::new(vec![Message::user("What is 2 plus 3?")])
        .with_tools(vec![tool])
        .with_tool_choice(ToolChoice::Required)
        .with_config(json!({"temperature": 0, "maxOutputTokens": 30}));
    let mut stream = action.action().stream(request);
    let mut streamed = String::new();
    while let Some(chunk) = stream.next().await {
        streamed.push_str(&chunk.unwrap().text());
    }
    let response = stream.output().await.unwrap();
    assert_eq!(streamed, "", "a call is not streamed as text");
    let calls = response.tool_requests();
    assert_eq!(calls.len(), 1, "{:?}", response.message());
    assert_eq!(calls[0].name, "add");
    let input = calls[0].input.as_ref().unwrap();
    assert!(input["a"].is_i64() && input["b"].is_i64(), "{input}");
    assert_eq!(response.finish_reason(), Some(FinishReason::Stop));
    eprintln!("add {input}");
}
