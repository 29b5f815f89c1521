//! The tool loop's limits and the errors a user sees: the hard cap on a
//! request's `maxTurns`, the tool concurrency limit, forced tool choice on
//! every turn or on the first only, a missing model, and output that fails
//! its schema.

use async_trait::async_trait;
use genkit_core::{ActionDesc, ActionKind, DynAction, Plugin, Registry, Result, StatusCode};
use genkit_generate::{GenerateOptions, LoopLimits, generate};
use genkit_model::model::{ModelOptions, define_model};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::define_tool;
use genkit_model::types::{
    FinishReason, GenerateRequest, GenerateResponse, Message, Part, Role, ToolChoice, ToolRequest,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn tool_call(n: usize) -> Part {
    Part::tool_request(ToolRequest::new("echo", json!({"n": n})).with_ref(format!("c{n}")))
}

/// A model that asks for the `echo` tool on every turn; counts its calls.
fn define_tool_loving_model(reg: &Registry) -> Arc<AtomicUsize> {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    define_model(reg, ModelOptions::new("looper"), move |_req, _ctx| {
        let n = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            Ok(GenerateResponse::new(
                Message::new(Role::Model, vec![tool_call(n)]),
                FinishReason::Stop,
            ))
        }
    })
    .unwrap();
    calls
}

fn define_echo_tool(reg: &Registry) {
    define_tool(reg, "echo", "echoes n", |input: Value, _ctx| async move {
        Ok(input["n"].clone())
    })
    .unwrap();
}

#[tokio::test]
async fn a_huge_max_turns_is_capped_and_ends_aborted() {
    let reg = Registry::new();
    define_echo_tool(&reg);
    let calls = define_tool_loving_model(&reg);
    let err = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("looper")
            .tool("echo")
            .max_turns(100_000),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::Aborted);
    assert_eq!(
        err.message(),
        "Exceeded maximum tool call iterations (100; the request asked for 100000, above the engine's cap of 100)"
    );
    // As at any limit (Genkit's check): `limit` turns run their tools, and
    // the model's next tool requests are refused.
    assert_eq!(calls.load(Ordering::SeqCst), 101);
    // The last response travels in the details, as at the request's own limit.
    assert!(err.details().unwrap()["response"]["message"].is_object());
}

#[tokio::test]
async fn the_cap_is_configurable_and_a_limit_below_it_is_kept() {
    let reg = Registry::new();
    define_echo_tool(&reg);
    let calls = define_tool_loving_model(&reg);
    let capped = GenerateOptions::prompt("go")
        .model("looper")
        .tool("echo")
        .max_turns(50)
        .limits(LoopLimits::default().max_turns_cap(7));
    let err = generate(&reg, capped).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::Aborted);
    assert_eq!(calls.swap(0, Ordering::SeqCst), 7 + 1);

    let below = GenerateOptions::prompt("go")
        .model("looper")
        .tool("echo")
        .max_turns(3);
    let err = generate(&reg, below).await.unwrap_err();
    assert_eq!(err.message(), "Exceeded maximum tool call iterations (3)");
    assert_eq!(calls.load(Ordering::SeqCst), 3 + 1);
}

#[tokio::test]
async fn ten_thousand_tool_requests_run_a_few_at_a_time_in_request_order() {
    const REQUESTS: usize = 10_000;
    const LIMIT: usize = 8;
    let reg = Registry::new();
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    define_tool(&reg, "echo", "echoes n", move |input: Value, _ctx| {
        let (running, peak) = (r.clone(), p.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            tokio::task::yield_now().await;
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(input["n"].clone())
        }
    })
    .unwrap();
    ProgrammableModel::define(&reg, "m")
        .respond(GenerateResponse::new(
            Message::new(
                Role::Model,
                (0..REQUESTS).map(tool_call).collect::<Vec<_>>(),
            ),
            FinishReason::Stop,
        ))
        .respond_text("done");
    let response = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("m")
            .tool("echo")
            .limits(LoopLimits::default().tool_concurrency(LIMIT)),
    )
    .await
    .unwrap();
    assert_eq!(response.text(), "done");
    let peak = peak.load(Ordering::SeqCst);
    assert!((2..=LIMIT).contains(&peak), "peak concurrency {peak}");
    let history = &response.request.as_ref().unwrap().messages;
    let tool_message = history.iter().find(|m| m.role == Role::Tool).unwrap();
    let outputs: Vec<Value> = tool_message
        .content
        .iter()
        .map(|p| p.as_tool_response().unwrap().output.clone().unwrap())
        .collect();
    let expected: Vec<Value> = (0..REQUESTS).map(|n| json!(n)).collect();
    assert_eq!(outputs, expected);
}

/// A model that calls `echo` whenever a tool is required, and answers otherwise.
fn define_obedient_model(reg: &Registry) -> Arc<Mutex<Vec<Option<ToolChoice>>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    define_model(
        reg,
        ModelOptions::new("obedient"),
        move |req: GenerateRequest, _ctx| {
            log.lock().push(req.tool_choice);
            let n = log.lock().len();
            async move {
                let message = if req.tool_choice == Some(ToolChoice::Required) {
                    Message::new(Role::Model, vec![tool_call(n)])
                } else {
                    Message::new(Role::Model, "done")
                };
                Ok(GenerateResponse::new(message, FinishReason::Stop))
            }
        },
    )
    .unwrap();
    seen
}

#[tokio::test]
async fn a_required_tool_choice_applies_on_every_turn() {
    let reg = Registry::new();
    define_echo_tool(&reg);
    let seen = define_obedient_model(&reg);
    let err = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("obedient")
            .tool("echo")
            .tool_choice(ToolChoice::Required)
            .max_turns(3),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::Aborted);
    // Three turns ran tools, the fourth was refused: never an answer.
    assert_eq!(*seen.lock(), vec![Some(ToolChoice::Required); 3 + 1]);
}

#[tokio::test]
async fn tool_choice_once_forces_the_first_turn_and_lets_the_model_answer() {
    let reg = Registry::new();
    define_echo_tool(&reg);
    let seen = define_obedient_model(&reg);
    let response = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("obedient")
            .tool("echo")
            .tool_choice_once(ToolChoice::Required),
    )
    .await
    .unwrap();
    assert_eq!(response.text(), "done");
    assert_eq!(
        *seen.lock(),
        vec![Some(ToolChoice::Required), Some(ToolChoice::Auto)]
    );
}

/// A provider plugin that offers one model without being initialised.
struct Acme;

#[async_trait]
impl Plugin for Acme {
    fn name(&self) -> &str {
        "acme"
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(Vec::new())
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(vec![ActionDesc::new(ActionKind::Model, "acme/small")])
    }
}

#[tokio::test]
async fn a_missing_model_lists_the_models_and_plugins_and_says_how_to_add_one() {
    let reg = Registry::new();
    let err = generate(
        &reg,
        GenerateOptions::prompt("x").model("openai/gpt-4o-mini"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        err.to_string(),
        "NOT_FOUND: Model 'openai/gpt-4o-mini' not found. Registered models: none. \
         Registered plugins: none. A provider's models become available once its plugin \
         is registered (`Genkit::builder().plugin(...)`); name them `<plugin>/<model>`."
    );

    reg.register_plugin(Arc::new(Acme)).unwrap();
    ProgrammableModel::define(&reg, "local");
    let err = generate(&reg, GenerateOptions::prompt("x").model("nope"))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        "Model 'nope' not found. Registered models: 'acme/small', 'local'. \
         Registered plugins: 'acme'. A provider's models become available once its plugin \
         is registered (`Genkit::builder().plugin(...)`); name them `<plugin>/<model>`."
    );
    assert_eq!(
        err.details().unwrap(),
        &json!({"registeredModels": ["acme/small", "local"], "registeredPlugins": ["acme"]})
    );
}

fn person_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "number"}},
        "required": ["name", "age"],
    })
}

#[tokio::test]
async fn output_cut_off_at_the_token_limit_shows_the_raw_text_and_the_finish_reason() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m").respond(GenerateResponse::new(
        Message::new(Role::Model, "{\"name\": \"Al"),
        FinishReason::Length,
    ));
    let err = generate(
        &reg,
        GenerateOptions::prompt("who?")
            .model("m")
            .output_schema(person_schema()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    let message = err.message();
    assert!(
        message.starts_with("Schema validation failed."),
        "{message}"
    );
    assert!(
        message.ends_with(
            "\nFinish reason: 'length' (the model hit its output token limit; raise \
             `maxOutputTokens` in the config).\nModel output (12 characters): \"{\\\"name\\\": \\\"Al\""
        ),
        "{message}"
    );
    let details = err.details().unwrap();
    assert_eq!(details["finishReason"], "length");
    assert_eq!(details["rawText"], "{\"name\": \"Al");
}

#[tokio::test]
async fn long_raw_text_is_truncated_in_the_error() {
    let reg = Registry::new();
    let text = format!("{{\"name\": \"{}", "a".repeat(1_200));
    ProgrammableModel::define(&reg, "m").respond(GenerateResponse::new(
        Message::new(Role::Model, text.as_str()),
        FinishReason::Length,
    ));
    let err = generate(
        &reg,
        GenerateOptions::prompt("who?")
            .model("m")
            .output_schema(person_schema()),
    )
    .await
    .unwrap_err();
    let total = text.chars().count();
    assert!(
        err.message()
            .ends_with(&format!(" … ({} more characters)", total - 500)),
        "{}",
        err.message()
    );
    assert!(
        err.message()
            .contains(&format!("Model output ({total} characters)"))
    );
}
