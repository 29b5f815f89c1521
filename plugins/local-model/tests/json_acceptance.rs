//! Constrained JSON acceptance on SmolLM2-135M: 50 prompts over 5 schemas
//! (an object, an array, an enum, a nested object, required and optional
//! fields), greedy. With the constraint on every answer must parse and
//! validate; with it off (generate then puts the schema in the prompt, as
//! for any model without constrained decoding) the test counts how many do.
//! The counts are recorded in docs/local-models.md.
//!
//! About 5,000 tokens decoded: minutes in a debug build, so `#[ignore]`d;
//! run it with
//! `cargo test -p genkit-local-model --release --test json_acceptance -- --ignored --nocapture`.

mod common;

use genkit::Genkit;
use genkit::generate::GenerateOptions;
use genkit_core::schema::SchemaValidator;
use genkit_local_model::LocalModels;
use serde_json::{Value, json};
use std::time::Instant;

struct Case {
    name: &'static str,
    format: &'static str,
    schema: Value,
    prompts: [&'static str; 10],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "object",
            format: "json",
            schema: json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string", "maxLength": 24},
                    "year": {"type": "integer", "minimum": 1900, "maximum": 2030}
                },
                "required": ["title", "year"],
                "additionalProperties": false
            }),
            prompts: [
                "Name a famous film and the year it came out.",
                "Give me a book title and its publication year.",
                "What is a good song from the 1980s?",
                "Suggest a classic novel.",
                "Tell me about a movie you like.",
                "Which album was released in 1999?",
                "Recommend a science fiction film.",
                "Name a play by Shakespeare and when it was written.",
                "What was a popular video game in 2005?",
                "Pick a painting and the year it was made.",
            ],
        },
        Case {
            name: "array",
            format: "array",
            schema: json!({
                "type": "array",
                "items": {"type": "string", "maxLength": 12},
                "minItems": 2,
                "maxItems": 4
            }),
            prompts: [
                "List some fruits.",
                "Name a few colours.",
                "What are some European capitals?",
                "List three animals that live in the sea.",
                "Give me some programming languages.",
                "Name some vegetables.",
                "List a few planets.",
                "What are some musical instruments?",
                "Name a few sports.",
                "List some kitchen tools.",
            ],
        },
        Case {
            name: "enum",
            format: "enum",
            schema: json!({"type": "string", "enum": ["positive", "negative", "neutral"]}),
            prompts: [
                "Classify the sentiment: 'I love this phone.'",
                "Classify the sentiment: 'The food was cold and bland.'",
                "Classify the sentiment: 'The meeting is at noon.'",
                "Classify the sentiment: 'What a wonderful day!'",
                "Classify the sentiment: 'I will never buy this again.'",
                "Classify the sentiment: 'The box is blue.'",
                "Classify the sentiment: 'Best purchase I have made all year.'",
                "Classify the sentiment: 'The service was terrible.'",
                "Classify the sentiment: 'It rained on Tuesday.'",
                "Classify the sentiment: 'I am so happy with the result.'",
            ],
        },
        Case {
            name: "nested",
            format: "json",
            schema: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "maxLength": 16},
                    "address": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string", "maxLength": 16},
                            "zip": {"type": "string", "pattern": "^[0-9]{5}$"}
                        },
                        "required": ["city", "zip"],
                        "additionalProperties": false
                    }
                },
                "required": ["name", "address"],
                "additionalProperties": false
            }),
            prompts: [
                "Make up a customer and their address.",
                "Who is the sender of this parcel?",
                "Invent a person living in Paris.",
                "Create a contact for an address book.",
                "Describe a shop and where it is.",
                "Give me a fictional pen pal.",
                "Create a delivery address for a pizza order.",
                "Make up a hotel guest.",
                "Invent a new employee and their home city.",
                "Who lives at the end of the street?",
            ],
        },
        Case {
            name: "required fields",
            format: "json",
            schema: json!({
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "minimum": 1, "maximum": 9999},
                    "email": {"type": "string", "pattern": "^[a-z]{1,10}@[a-z]{1,10}\\.com$"},
                    "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 2},
                    "note": {"type": "string", "maxLength": 20}
                },
                "required": ["id", "email"],
                "additionalProperties": false
            }),
            prompts: [
                "Create a user account record.",
                "Register a new customer.",
                "Make a support ticket requester.",
                "Add a newsletter subscriber.",
                "Create an admin user.",
                "Sign up a user called Ann.",
                "Make a record for a new student.",
                "Create a test account.",
                "Add a member to the club.",
                "Register a user from Canada.",
            ],
        },
    ]
}

/// Whether the answer parsed by its format validates; the reason if not.
fn check(
    answer: genkit::Result<genkit::types::GenerateResponse>,
    validator: &SchemaValidator,
) -> Result<String, String> {
    let answer = answer.map_err(|e| format!("generate failed: {e}"))?;
    let text = answer.text();
    let value = answer
        .output_value()
        .map_err(|e| format!("does not parse ({e}): {text:?}"))?;
    validator
        .validate(&value)
        .map_err(|e| format!("invalid ({e}): {text:?}"))?;
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "minutes in a debug build: run with --release -- --ignored"]
async fn fifty_prompts_all_validate_with_the_constraint_on() {
    let Some(model) = common::model() else {
        return;
    };
    let ai = Genkit::builder()
        .plugin(LocalModels::new().loaded("smollm2", model.clone()))
        .build()
        .unwrap();
    let config = json!({"temperature": 0, "maxOutputTokens": 64});
    let started = Instant::now();
    let (mut on_valid, mut off_valid, mut total) = (0, 0, 0);
    let mut failures_on = Vec::new();
    for case in cases() {
        let validator = SchemaValidator::compile(&case.schema).unwrap();
        let (mut case_on, mut case_off) = (0, 0);
        for prompt in case.prompts {
            total += 1;
            let ask = |constrained: bool| {
                ai.generate(
                    GenerateOptions::prompt(prompt)
                        .model("gguf/smollm2")
                        .config(config.clone())
                        .output_format(case.format)
                        .output_schema(case.schema.clone())
                        .constrained(constrained),
                )
            };
            match check(ask(true).await, &validator) {
                Ok(text) => {
                    case_on += 1;
                    eprintln!("[{}] on  ok  {text}", case.name);
                }
                Err(why) => {
                    eprintln!("[{}] on  BAD {why}", case.name);
                    failures_on.push(format!("{} / {prompt}: {why}", case.name));
                }
            }
            match check(ask(false).await, &validator) {
                Ok(text) => {
                    case_off += 1;
                    eprintln!("[{}] off ok  {text}", case.name);
                }
                Err(why) => eprintln!("[{}] off BAD {why}", case.name),
            }
        }
        eprintln!(
            "== {}: {case_on}/10 valid constrained, {case_off}/10 unconstrained",
            case.name
        );
        on_valid += case_on;
        off_valid += case_off;
    }
    let cost = model.constraint_cost();
    eprintln!(
        "== total: {on_valid}/{total} valid constrained, {off_valid}/{total} unconstrained, \
         in {:?}; constraint cost {:?} per token",
        started.elapsed(),
        cost.per_token()
    );
    assert_eq!(total, 50);
    assert!(failures_on.is_empty(), "{failures_on:#?}");
}
