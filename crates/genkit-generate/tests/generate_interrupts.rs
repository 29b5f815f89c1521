//! Interrupts (exit C) and resuming: respond, restart, pending outputs.

use genkit_core::{Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{define_interrupt, define_tool, respond_tool, restart_tool};
use genkit_model::types::{FinishReason, Part, Role, ToolRequest};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Deserialize, Serialize, JsonSchema)]
struct Restart {
    service: String,
}

fn setup() -> (Registry, Arc<AtomicUsize>) {
    let reg = Registry::new();
    define_interrupt::<Restart, bool>(
        &reg,
        "approve",
        "Ask a human before restarting a service",
        Some(Arc::new(|r: &Restart| json!({"service": r.service}))),
    )
    .unwrap();
    let status_calls = Arc::new(AtomicUsize::new(0));
    let c = status_calls.clone();
    define_tool(&reg, "status", "Service status", move |r: Restart, _ctx| {
        c.fetch_add(1, Ordering::SeqCst);
        async move { Ok(format!("{} is degraded", r.service)) }
    })
    .unwrap();
    (reg, status_calls)
}

fn two_calls() -> Vec<ToolRequest> {
    vec![
        ToolRequest::new("status", json!({"service": "db"})).with_ref("s1"),
        ToolRequest::new("approve", json!({"service": "db"})).with_ref("a1"),
    ]
}

#[tokio::test]
async fn interrupt_ends_with_interrupted_and_keeps_pending_output() {
    let (reg, status_calls) = setup();
    let model = ProgrammableModel::define(&reg, "m").respond_tool_calls(two_calls());
    let r = generate(
        &reg,
        GenerateOptions::prompt("restart db")
            .model("m")
            .tools(["status", "approve"]),
    )
    .await
    .unwrap();
    assert_eq!(r.finish_reason(), Some(FinishReason::Interrupted));
    assert_eq!(
        r.finish_message.as_deref(),
        Some("One or more tool calls resulted in interrupts.")
    );
    assert_eq!(model.call_count(), 1);
    assert_eq!(status_calls.load(Ordering::SeqCst), 1);

    let msg = r.message().unwrap();
    let status_part = &msg.content[0];
    assert_eq!(
        status_part.metadata_value("pendingOutput"),
        Some(&json!("db is degraded"))
    );
    let interrupts = r.interrupts();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(
        interrupts[0].metadata_value("interrupt"),
        Some(&json!({"service": "db"}))
    );
}

#[tokio::test]
async fn resume_with_respond_continues_the_loop() {
    let (reg, status_calls) = setup();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_calls(two_calls())
        .respond_text("restarted");
    let first = generate(
        &reg,
        GenerateOptions::prompt("restart db")
            .model("m")
            .tools(["status", "approve"]),
    )
    .await
    .unwrap();
    let interrupt = first.interrupts()[0].clone();
    let answer = respond_tool(&interrupt, json!(true), None).unwrap();
    let r = generate(
        &reg,
        GenerateOptions::messages(first.messages().unwrap())
            .model("m")
            .tools(["status", "approve"])
            .resume_respond([answer]),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "restarted");
    // The finished tool was not run again: its pending output was used.
    assert_eq!(status_calls.load(Ordering::SeqCst), 1);
    let req = &model.requests()[1];
    let last_model = &req.messages[req.messages.len() - 2];
    assert_eq!(last_model.role, Role::Model);
    // Markers moved: pendingOutput gone, interrupt resolved.
    assert!(
        last_model.content[0]
            .metadata_value("pendingOutput")
            .is_none()
    );
    assert_eq!(
        last_model.content[1].metadata_value("resolvedInterrupt"),
        Some(&json!({"service": "db"}))
    );
    let tool_msg = req.messages.last().unwrap();
    assert_eq!(tool_msg.role, Role::Tool);
    assert_eq!(tool_msg.metadata.as_ref().unwrap()["resumed"], json!(true));
    let outs: Vec<_> = tool_msg
        .content
        .iter()
        .map(|p| p.as_tool_response().unwrap().output.clone())
        .collect();
    assert_eq!(outs, [Some(json!("db is degraded")), Some(json!(true))]);
    assert_eq!(
        tool_msg.content[0].metadata_value("source"),
        Some(&json!("pending"))
    );
    assert_eq!(
        tool_msg.content[1].metadata_value("interruptResponse"),
        Some(&json!(true))
    );
}

#[tokio::test]
async fn typed_respond_validates_against_the_output_schema() {
    let (reg, _) = setup();
    let approve = genkit_model::tool::Tool::<Restart, bool>::new(
        "approve2",
        "x",
        |_r: Restart, ctx| async move { Err::<bool, _>(ctx.interrupt(None)) },
    );
    let part = Part::tool_request(ToolRequest::new("approve2", json!({"service": "db"})));
    assert!(approve.respond(&part, true).is_ok());
    // A restart with a bad replacement input is refused.
    let bad: Result<Part, _> = genkit_model::tool::Tool::<Value, Value>::from_json_schema(
        "t",
        "t",
        Some(json!({"type": "object", "required": ["a"]})),
        None,
        |v, _| async move { Ok(v) },
    )
    .unwrap()
    .restart(&part, None, Some(json!({})));
    assert_eq!(bad.unwrap_err().status(), StatusCode::InvalidArgument);
    drop(reg);
}

#[tokio::test]
async fn restart_reruns_the_tool_with_resumed_metadata() {
    let reg = Registry::new();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let s = seen.clone();
    define_tool(
        &reg,
        "restartable",
        "interrupts until resumed",
        move |r: Restart, ctx| {
            let s = s.clone();
            async move {
                s.lock().push(ctx.resumed().cloned());
                match ctx.resumed() {
                    None => Err(ctx.interrupt(Some(json!({"why": "confirm"})))),
                    Some(_) => Ok(format!("{} restarted", r.service)),
                }
            }
        },
    )
    .unwrap();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("restartable", json!({"service": "api"}))
        .respond_text("done");
    let first = generate(
        &reg,
        GenerateOptions::prompt("go").model("m").tool("restartable"),
    )
    .await
    .unwrap();
    assert_eq!(first.finish_reason(), Some(FinishReason::Interrupted));
    let interrupt = first.interrupts()[0].clone();
    let restart = restart_tool(&interrupt, Some(json!({"approvedBy": "ops"})), None).unwrap();
    let r = generate(
        &reg,
        GenerateOptions::messages(first.messages().unwrap())
            .model("m")
            .tool("restartable")
            .resume_restart([restart]),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "done");
    assert_eq!(*seen.lock(), vec![None, Some(json!({"approvedBy": "ops"}))]);
    let tool_msg = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(
        tool_msg.content[0].as_tool_response().unwrap().output,
        Some(json!("api restarted"))
    );
}

#[tokio::test]
async fn an_interrupt_during_restart_is_failed_precondition() {
    let (reg, _) = setup();
    let model =
        ProgrammableModel::define(&reg, "m").respond_tool_call("approve", json!({"service": "db"}));
    let first = generate(
        &reg,
        GenerateOptions::prompt("go").model("m").tool("approve"),
    )
    .await
    .unwrap();
    let restart = restart_tool(&first.interrupts()[0].clone(), None, None).unwrap();
    let err = generate(
        &reg,
        GenerateOptions::messages(first.messages().unwrap())
            .model("m")
            .tool("approve")
            .resume_restart([restart]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert_eq!(model.call_count(), 1);
}

#[tokio::test]
async fn resume_errors() {
    let (reg, _) = setup();
    ProgrammableModel::define(&reg, "m").respond_tool_calls(two_calls());
    let first = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("m")
            .tools(["status", "approve"]),
    )
    .await
    .unwrap();
    let history = first.messages().unwrap();

    // Nothing answers the interrupted request.
    let err = generate(
        &reg,
        GenerateOptions::messages(history.clone())
            .model("m")
            .tools(["status", "approve"])
            .resume_respond(Vec::<Part>::new()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("approve#a1"), "{err}");

    // An answer to a request that was never made.
    let forged = Part::tool_request(ToolRequest::new("approve", json!({})).with_ref("zzz"));
    let forged_answer = respond_tool(&forged, json!(true), None).unwrap();
    let err = generate(
        &reg,
        GenerateOptions::messages(history.clone())
            .model("m")
            .tools(["status", "approve"])
            .resume_respond([forged_answer]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument, "{err}");

    // Resume without a model message with tool requests last.
    let err = generate(
        &reg,
        GenerateOptions::prompt("fresh")
            .model("m")
            .resume_respond(Vec::<Part>::new()),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
}
