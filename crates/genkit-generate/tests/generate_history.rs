//! The history contract `take_history_from` relies on: a call changes at
//! most the last message it is given and appends the rest (tool loop,
//! docs, resume).

use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate, take_history_from};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{define_interrupt, define_tool, respond_tool};
use genkit_model::types::{DocumentData, GenerateResponse, Message, Role, ToolRequest};
use serde_json::json;

fn registry() -> Registry {
    let reg = Registry::new();
    define_tool(
        &reg,
        "weather",
        "The weather",
        |city: String, _ctx| async move { Ok(format!("sunny in {city}")) },
    )
    .unwrap();
    define_interrupt::<String, bool>(&reg, "approve", "Ask first", None).unwrap();
    reg
}

/// The given messages but the last come back untouched, in the request echo.
fn assert_prefix_kept(given: &[Message], response: &GenerateResponse) {
    let echoed = &response.request.as_ref().unwrap().messages;
    let keep = given.len() - 1;
    assert_eq!(echoed[..keep], given[..keep]);
}

fn conversation() -> Vec<Message> {
    vec![
        Message::user("hello"),
        Message::model("hi"),
        Message::user("weather in Paris?"),
    ]
}

#[tokio::test]
async fn the_tool_loop_appends_after_the_given_messages() {
    let reg = registry();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("weather", json!("Paris"))
        .respond_text("Sunny.");
    let given = conversation();
    let mut response = generate(
        &reg,
        GenerateOptions::messages(given.clone())
            .model("m")
            .tools(["weather"]),
    )
    .await
    .unwrap();
    assert_prefix_kept(&given, &response);
    let tail = take_history_from(&mut response, given.len() - 1).unwrap();
    let roles: Vec<Role> = tail.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Model, Role::Tool, Role::Model]);
    assert_eq!(tail[0], given[2]);
    assert!(tail[1].content[0].is_tool_request());
    assert_eq!(tail[3].text(), "Sunny.");
    // The request was taken out of the response.
    assert!(response.request.is_none());
}

#[tokio::test]
async fn docs_change_only_the_last_user_message() {
    let reg = registry();
    ProgrammableModel::define(&reg, "m").respond_text("From the docs: yes.");
    let given = conversation();
    let mut response = generate(
        &reg,
        GenerateOptions::messages(given.clone())
            .model("m")
            .docs([DocumentData::from_text("Paris is sunny today.")]),
    )
    .await
    .unwrap();
    assert_prefix_kept(&given, &response);
    let tail = take_history_from(&mut response, given.len() - 1).unwrap();
    assert_eq!(tail.len(), 2);
    assert_eq!(tail[0].role, Role::User);
    assert!(tail[0].text().contains("Paris is sunny today."));
    assert_eq!(tail[1].text(), "From the docs: yes.");
}

#[tokio::test]
async fn a_resume_changes_only_the_interrupted_model_message() {
    let reg = registry();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_calls(vec![
            ToolRequest::new("approve", json!("restart db")).with_ref("a1"),
        ])
        .respond_text("Restarted.");
    let first = generate(
        &reg,
        GenerateOptions::prompt("restart db")
            .model("m")
            .tools(["approve"]),
    )
    .await
    .unwrap();
    let given = first.messages().unwrap();
    let answer = respond_tool(&first.interrupts()[0].clone(), json!(true), None).unwrap();
    let mut response = generate(
        &reg,
        GenerateOptions::messages(given.clone())
            .model("m")
            .tools(["approve"])
            .resume_respond([answer]),
    )
    .await
    .unwrap();
    assert_prefix_kept(&given, &response);
    let tail = take_history_from(&mut response, given.len() - 1).unwrap();
    let roles: Vec<Role> = tail.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::Model, Role::Tool, Role::Model]);
    assert!(
        tail[0].content[0]
            .metadata_value("resolvedInterrupt")
            .is_some(),
        "the interrupt is marked resolved in the kept model message"
    );
    assert_eq!(tail[2].text(), "Restarted.");
}

#[tokio::test]
async fn a_keep_past_the_request_returns_only_the_reply() {
    let reg = registry();
    ProgrammableModel::define(&reg, "m").respond_text("ok");
    let mut response = generate(&reg, GenerateOptions::prompt("hi").model("m"))
        .await
        .unwrap();
    let tail = take_history_from(&mut response, 5).unwrap();
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].text(), "ok");
    // Nothing left to take.
    assert!(take_history_from(&mut response, 0).is_none());
}
