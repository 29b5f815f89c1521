//! The tool loop: every exit, the max-turns boundary, concurrent tools,
//! unknown and duplicate tools, failing tools.

use genkit_core::{Error, Registry, StatusCode};
use genkit_generate::{GenerateOptions, ToolErrorPolicy, generate};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{Tool, define_tool};
use genkit_model::types::{FinishReason, PartKind, Role, ToolRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Deserialize, Serialize, JsonSchema)]
struct City {
    city: String,
}

fn weather_tool(reg: &Registry, calls: Arc<AtomicUsize>) -> Tool<City, String> {
    define_tool(
        reg,
        "getWeather",
        "Weather for a city",
        move |c: City, _ctx| {
            calls.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("{}: sunny", c.city)) }
        },
    )
    .unwrap()
}

#[tokio::test]
async fn exit_a_plain_answer() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m").respond_text("hello");
    let r = generate(&reg, GenerateOptions::prompt("hi").model("m"))
        .await
        .unwrap();
    assert_eq!(r.text(), "hello");
    assert_eq!(r.finish_reason(), Some(FinishReason::Stop));
    assert_eq!(model.call_count(), 1);
    let req = r.request.as_ref().unwrap();
    assert_eq!(req.messages.len(), 1);
    assert_eq!(req.messages[0].role, Role::User);
}

#[tokio::test]
async fn tool_loop_runs_tools_and_feeds_results_back() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(&reg, calls.clone());
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getWeather", json!({"city": "Beijing"}))
        .respond_text("Go out.");
    let r = generate(
        &reg,
        GenerateOptions::prompt("walk?").model("m").tool(&tool),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "Go out.");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let second = &model.requests()[1];
    assert_eq!(second.messages.len(), 3);
    assert_eq!(second.messages[2].role, Role::Tool);
    let resp = second.messages[2].content[0].as_tool_response().unwrap();
    assert_eq!(resp.output, Some(json!("Beijing: sunny")));
    assert_eq!(resp.reference.as_deref(), Some("call-0"));
    // The tool definition the model saw.
    let tools = second.tools();
    assert_eq!(tools[0].name, "getWeather");
    assert_eq!(tools[0].description, "Weather for a city");
    assert_eq!(
        tools[0].input_schema.as_ref().unwrap()["properties"]["city"]["type"],
        "string"
    );
    // Messages of the whole exchange.
    assert_eq!(r.messages().unwrap().len(), 4);
}

/// The history is shared with the model, not copied: a model that keeps its
/// requests must still see each turn's history as it was sent, and one that
/// drops them must see the same histories.
#[tokio::test]
async fn each_turn_sees_its_own_history_whether_or_not_the_model_keeps_it() {
    use genkit_model::model::{ModelOptions, define_model};
    use genkit_model::types::{GenerateRequest, GenerateResponse, Message, Part};

    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(&reg, calls.clone());
    // Keeps every request (the history stays shared after the call).
    let keeper = ProgrammableModel::define(&reg, "keeper")
        .respond_tool_call("getWeather", json!({"city": "A"}))
        .respond_tool_call("getWeather", json!({"city": "B"}))
        .respond_text("done");
    // Drops every request, recording only the history lengths and the last text.
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let s = seen.clone();
    define_model(
        &reg,
        ModelOptions::new("dropper"),
        move |req: GenerateRequest, _ctx| {
            let turn = req.messages.iter().filter(|m| m.role == Role::Tool).count();
            let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
            s.lock().push((req.messages.len(), last));
            drop(req);
            async move {
                let reply = if turn < 2 {
                    Message::model(vec![Part::tool_request(ToolRequest::new(
                        "getWeather",
                        json!({"city": format!("C{turn}")}),
                    ))])
                } else {
                    Message::model("done")
                };
                Ok(GenerateResponse::new(reply, FinishReason::Stop))
            }
        },
    )
    .unwrap();

    let r = generate(
        &reg,
        GenerateOptions::prompt("go").model("keeper").tool(&tool),
    )
    .await
    .unwrap();
    let lengths: Vec<usize> = keeper.requests().iter().map(|q| q.messages.len()).collect();
    assert_eq!(lengths, vec![1, 3, 5]);
    assert_eq!(keeper.requests()[0].messages[0].text(), "go");
    assert_eq!(r.request.as_ref().unwrap().messages.len(), 5);
    assert_eq!(r.messages().unwrap().len(), 6);

    let r = generate(
        &reg,
        GenerateOptions::prompt("go").model("dropper").tool(&tool),
    )
    .await
    .unwrap();
    let seen = seen.lock().clone();
    let lengths: Vec<usize> = seen.iter().map(|(n, _)| *n).collect();
    assert_eq!(lengths, vec![1, 3, 5]);
    assert_eq!(seen[0].1, "go");
    assert_eq!(r.text(), "done");
    let history = r.messages().unwrap();
    assert_eq!(history.len(), 6);
    let answer = history[4].content[0].as_tool_response().unwrap();
    assert_eq!(answer.output, Some(json!("C1: sunny")));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn tools_by_name_resolve_from_the_registry() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    weather_tool(&reg, calls.clone());
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getWeather", json!({"city": "Oslo"}))
        .respond_text("ok");
    generate(
        &reg,
        GenerateOptions::prompt("x").model("m").tool("getWeather"),
    )
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn exit_a_return_tool_requests_runs_nothing() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(&reg, calls.clone());
    ProgrammableModel::define(&reg, "m").respond_tool_call("getWeather", json!({"city": "Rome"}));
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .tool(&tool)
            .return_tool_requests(true),
    )
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(r.tool_requests()[0].name, "getWeather");
}

/// A model that always asks for the tool.
fn always_tool(reg: &Registry, n: usize) -> ProgrammableModel {
    let mut m = ProgrammableModel::define(reg, "loop");
    for _ in 0..n {
        m = m.respond_tool_call("getWeather", json!({"city": "X"}));
    }
    m
}

#[tokio::test]
async fn exit_b_max_turns_boundary_counts_model_calls() {
    for (max_turns, expected_calls) in [(None, 6usize), (Some(2), 3), (Some(0), 1)] {
        let reg = Registry::new();
        let tool_calls = Arc::new(AtomicUsize::new(0));
        let tool = weather_tool(&reg, tool_calls.clone());
        let model = always_tool(&reg, 10);
        let mut opts = GenerateOptions::prompt("x").model("loop").tool(&tool);
        if let Some(n) = max_turns {
            opts = opts.max_turns(n);
        }
        let err = generate(&reg, opts).await.unwrap_err();
        let limit = max_turns.unwrap_or(5);
        assert_eq!(err.status(), StatusCode::Aborted, "{err}");
        assert_eq!(
            err.message(),
            format!("Exceeded maximum tool call iterations ({limit})")
        );
        // The model may be called max_turns + 1 times; tools run max_turns times.
        assert_eq!(model.call_count(), expected_calls);
        assert_eq!(tool_calls.load(Ordering::SeqCst), expected_calls - 1);
        // The error carries the response that exceeded the limit.
        let details = err.details().unwrap();
        assert_eq!(
            details["response"]["message"]["content"][0]["toolRequest"]["name"],
            "getWeather"
        );
    }
}

#[tokio::test]
async fn max_turns_allows_a_final_answer_on_the_last_call() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(&reg, calls.clone());
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getWeather", json!({"city": "A"}))
        .respond_tool_call("getWeather", json!({"city": "B"}))
        .respond_text("done");
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .tool(&tool)
            .max_turns(2),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "done");
}

#[tokio::test]
async fn tools_of_one_turn_run_concurrently_and_keep_request_order() {
    let reg = Registry::new();
    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Wait {
        ms: u64,
    }
    let sleepy = define_tool(&reg, "sleepy", "sleeps", |w: Wait, _ctx| async move {
        tokio::time::sleep(Duration::from_millis(w.ms)).await;
        Ok(w.ms)
    })
    .unwrap();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_calls(vec![
            ToolRequest::new("sleepy", json!({"ms": 300})).with_ref("slow"),
            ToolRequest::new("sleepy", json!({"ms": 10})).with_ref("fast"),
            ToolRequest::new("sleepy", json!({"ms": 150})).with_ref("mid"),
        ])
        .respond_text("ok");
    let started = Instant::now();
    generate(&reg, GenerateOptions::prompt("x").model("m").tool(&sleepy))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(440),
        "tools ran one after another: {elapsed:?}"
    );
    let tool_msg = &model.requests()[1].messages[2];
    let refs: Vec<_> = tool_msg
        .content
        .iter()
        .map(|p| p.as_tool_response().unwrap().reference.clone().unwrap())
        .collect();
    assert_eq!(refs, ["slow", "fast", "mid"]);
}

#[tokio::test]
async fn unknown_tool_is_not_found() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m").respond_tool_call("nope", json!({}));
    let err = generate(&reg, GenerateOptions::prompt("x").model("m"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert!(err.message().contains("nope"));
}

#[tokio::test]
async fn duplicate_tool_names_are_rejected_before_the_model_is_called() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m").respond_text("never");
    let a = Tool::new("dup", "a", |_: Value, _ctx| async { Ok(json!(1)) });
    let b = Tool::new("dup", "b", |_: Value, _ctx| async { Ok(json!(2)) });
    let err = generate(
        &reg,
        GenerateOptions::prompt("x").model("m").tool(&a).tool(&b),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(model.call_count(), 0);

    // A registered tool and a namespaced one with the same short name also clash.
    define_tool(&reg, "same", "x", |_: Value, _ctx| async { Ok(json!(1)) }).unwrap();
    define_tool(&reg, "plugin/same", "y", |_: Value, _ctx| async {
        Ok(json!(1))
    })
    .unwrap();
    let err = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .tool("same")
            .tool("plugin/same"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");
    assert!(err.message().contains("same name"), "{err}");
    assert_eq!(model.call_count(), 0);
}

#[tokio::test]
async fn a_failing_tool_fails_the_call_by_default() {
    let reg = Registry::new();
    let boom = define_tool(&reg, "boom", "fails", |_: Value, _ctx| async {
        Err::<Value, _>(Error::new(StatusCode::Unavailable, "backend down"))
    })
    .unwrap();
    ProgrammableModel::define(&reg, "m").respond_tool_call("boom", json!({}));
    let err = generate(&reg, GenerateOptions::prompt("x").model("m").tool(&boom))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Unavailable);
}

#[tokio::test]
async fn tool_errors_can_go_back_to_the_model() {
    let reg = Registry::new();
    let boom = define_tool(&reg, "boom", "fails", |_: Value, _ctx| async {
        Err::<Value, _>(Error::new(StatusCode::Unavailable, "backend down"))
    })
    .unwrap();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("boom", json!({}))
        .respond_text("sorry, the backend is down");
    let r = generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("m")
            .tool(&boom)
            .tool_errors(ToolErrorPolicy::ReturnToModel),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "sorry, the backend is down");
    let tool_msg = &model.requests()[1].messages[2];
    let out = tool_msg.content[0]
        .as_tool_response()
        .unwrap()
        .output
        .clone()
        .unwrap();
    assert_eq!(out["error"], "UNAVAILABLE: backend down");
}

#[tokio::test]
async fn invalid_tool_input_from_the_model_fails_with_the_path() {
    let reg = Registry::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = weather_tool(&reg, calls.clone());
    ProgrammableModel::define(&reg, "m").respond_tool_call("getWeather", json!({"town": 1}));
    let err = generate(&reg, GenerateOptions::prompt("x").model("m").tool(&tool))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("city"), "{err}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn missing_model_and_default_model() {
    let reg = Registry::new();
    let err = generate(&reg, GenerateOptions::prompt("x"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("model"));
    let err = generate(&reg, GenerateOptions::prompt("x").model("ghost"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);

    ProgrammableModel::define(&reg, "dflt").respond_text("from default");
    reg.register_value("defaultModel", "defaultModel", json!("dflt"));
    let r = generate(&reg, GenerateOptions::prompt("x")).await.unwrap();
    assert_eq!(r.text(), "from default");
    let err = generate(&reg, GenerateOptions::new().model("dflt"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[tokio::test]
async fn blocked_and_empty_responses_fail() {
    use genkit_model::types::GenerateResponse;
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m")
        .respond(GenerateResponse {
            finish_reason: Some(FinishReason::Blocked),
            finish_message: Some("unsafe".into()),
            ..GenerateResponse::default()
        })
        .respond(GenerateResponse::default());
    let err = generate(&reg, GenerateOptions::prompt("x").model("m"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(err.message().contains("Generation blocked: unsafe"));
    let err = generate(&reg, GenerateOptions::prompt("x").model("m"))
        .await
        .unwrap_err();
    assert!(
        err.message().contains("did not generate a message"),
        "{err}"
    );
}

#[tokio::test]
async fn system_messages_prompt_config_and_docs_reach_the_model() {
    use genkit_model::types::{DocumentData, Message};
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m").respond_text("ok");
    generate(
        &reg,
        GenerateOptions::prompt("question")
            .model(
                genkit_model::model::ModelRef::new("m")
                    .with_config(json!({"temperature": 0.1, "topK": 3})),
            )
            .system("be brief")
            .message(Message::user("earlier"))
            .config(json!({"temperature": 0.5}))
            .docs([DocumentData::from_text("fact")]),
    )
    .await
    .unwrap();
    let req = &model.requests()[0];
    let roles: Vec<_> = req.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::User]);
    assert_eq!(req.config, Some(json!({"temperature": 0.5, "topK": 3})));
    assert_eq!(req.docs.as_ref().unwrap().len(), 1);
    // Documents are added to the prompt for models without native context support.
    let last = req.messages.last().unwrap();
    assert!(
        last.content
            .iter()
            .any(|p| matches!(&p.kind, PartKind::Text(t) if t.contains("- [0]: fact")))
    );
}
