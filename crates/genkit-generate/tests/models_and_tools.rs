//! Models (metadata, references, background models), multipart tools, the
//! echo model, context and cancellation reaching models and tools.

use genkit_core::{ActionContext, CancellationToken, Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::model::{
    BackgroundModelFns, ModelOptions, ModelRef, check_operation, define_background_model,
    define_model,
};
use genkit_model::testing::{ProgrammableModel, define_echo_model};
use genkit_model::tool::{define_multipart_tool, define_tool};
use genkit_model::types::{
    FinishReason, GenerateRequest, GenerateResponse, Message, ModelSupports, MultipartToolResponse,
    Operation, Part,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

#[derive(Deserialize, Serialize, JsonSchema)]
#[allow(dead_code)]
struct Config {
    temperature: Option<f64>,
}

#[tokio::test]
async fn model_metadata_is_listed_as_genkit_does() {
    let reg = Registry::new();
    define_model(
        &reg,
        ModelOptions::new("acme/m1")
            .label("Acme M1")
            .versions(["v1", "v2"])
            .supports(ModelSupports {
                tools: Some(true),
                multiturn: Some(true),
                ..Default::default()
            })
            .config_schema::<Config>(),
        |_req, _ctx| async {
            Ok(GenerateResponse::new(
                Message::model("hi"),
                FinishReason::Stop,
            ))
        },
    )
    .unwrap();
    let action = reg.require_action("/model/acme/m1").await.unwrap();
    let d = action.desc().to_descriptor();
    assert_eq!(d["description"], "Acme M1");
    let model = &d["metadata"]["model"];
    assert_eq!(model["label"], "Acme M1");
    assert_eq!(model["versions"], json!(["v1", "v2"]));
    assert_eq!(model["supports"]["tools"], true);
    assert_eq!(
        model["customOptions"]["properties"]["temperature"]["type"],
        json!(["number", "null"])
    );
    assert!(d["inputSchema"]["properties"].get("messages").is_some());
}

#[tokio::test]
async fn model_refs_carry_config_and_version() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m").respond_text("ok");
    let r = ModelRef::new("m")
        .with_config(json!({"temperature": 0.2}))
        .with_version("v2");
    generate(&reg, GenerateOptions::prompt("x").model(r))
        .await
        .unwrap();
    assert_eq!(
        model.requests()[0].config,
        Some(json!({"version": "v2", "temperature": 0.2}))
    );
}

#[tokio::test]
async fn background_models_start_check_and_cancel() {
    let reg = Registry::new();
    let fns = BackgroundModelFns {
        start: Arc::new(|req: GenerateRequest, _ctx| {
            Box::pin(async move {
                Ok(Operation {
                    id: format!("op-{}", req.messages.len()),
                    done: Some(false),
                    ..Default::default()
                })
            })
        }),
        check: Arc::new(|mut op: Operation, _ctx| {
            Box::pin(async move {
                op.done = Some(true);
                op.output = Some(
                    json!({"message": {"role": "model", "content": [{"text": "video ready"}]}}),
                );
                Ok(op)
            })
        }),
        cancel: None,
    };
    let model = define_background_model(&reg, ModelOptions::new("veo"), fns).unwrap();
    for key in ["/background-model/veo", "/check-operation/veo/check"] {
        assert!(reg.lookup_action(key).await.unwrap().is_some(), "{key}");
    }
    assert!(
        reg.lookup_action("/cancel-operation/veo/cancel")
            .await
            .unwrap()
            .is_none()
    );

    // generate returns the operation without running the tool loop.
    let r = generate(&reg, GenerateOptions::prompt("make a video").model("veo"))
        .await
        .unwrap();
    let op = *r.operation.clone().unwrap();
    assert_eq!(op.id, "op-1");
    assert_eq!(op.action.as_deref(), Some("/background-model/veo"));
    let done = check_operation(&reg, op.clone()).await.unwrap();
    assert_eq!(done.done, Some(true));
    let err = model.cancel(op).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::Unimplemented);
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Chart {
    title: String,
}

#[tokio::test]
async fn multipart_tools_return_parts() {
    let reg = Registry::new();
    define_multipart_tool(
        &reg,
        "chart",
        "draws a chart",
        |c: Chart, _ctx| async move {
            Ok(MultipartToolResponse {
                output: Some(json!({"title": c.title})),
                content: Some(vec![Part::media(
                    "data:image/png;base64,AAAA",
                    Some("image/png"),
                )]),
                metadata: None,
            })
        },
    )
    .unwrap();
    assert!(reg.lookup_action("/tool.v2/chart").await.unwrap().is_some());
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("chart", json!({"title": "load"}))
        .respond_text("here");
    generate(&reg, GenerateOptions::prompt("x").model("m").tool("chart"))
        .await
        .unwrap();
    let tool_msg = model.requests()[1].messages.last().cloned().unwrap();
    let resp = tool_msg.content[0].as_tool_response().unwrap();
    assert_eq!(resp.output, Some(json!({"title": "load"})));
    assert!(resp.content.as_ref().unwrap()[0].is_media());
}

#[tokio::test]
async fn echo_model_echoes_and_streams() {
    use futures::StreamExt;
    let reg = Registry::new();
    define_echo_model(&reg, "echo").unwrap();
    let r = generate(
        &reg,
        GenerateOptions::prompt("hello there")
            .system("sys")
            .model("echo"),
    )
    .await
    .unwrap();
    assert_eq!(r.text(), "system: sys\nuser: hello there");
    assert_eq!(r.usage.as_ref().unwrap().input_characters, Some(14));
    let mut s =
        genkit_generate::generate_stream(&reg, GenerateOptions::prompt("a b c").model("echo"));
    let mut chunks = Vec::new();
    while let Some(c) = s.next().await {
        chunks.push(c.unwrap().text());
    }
    assert_eq!(chunks, ["user: ", "a ", "b ", "c"]);
}

#[tokio::test]
async fn context_reaches_models_and_tools() {
    let reg = Registry::new();
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let s1 = seen.clone();
    define_tool(&reg, "whoami", "who", move |_: Value, ctx| {
        s1.lock().push(ctx.context.auth().cloned());
        async { Ok(json!("you")) }
    })
    .unwrap();
    let s2 = seen.clone();
    let calls_lock = Arc::new(parking_lot::Mutex::new(0));
    define_model(&reg, ModelOptions::new("ctxm"), move |_req, ctx| {
        s2.lock().push(ctx.context.auth().cloned());
        let n = {
            let mut c = calls_lock.lock();
            *c += 1;
            *c
        };
        async move {
            if n == 1 {
                Ok(GenerateResponse::new(
                    Message::model(vec![Part::tool_request(
                        genkit_model::types::ToolRequest::new("whoami", json!({})),
                    )]),
                    FinishReason::Stop,
                ))
            } else {
                Ok(GenerateResponse::new(
                    Message::model("done"),
                    FinishReason::Stop,
                ))
            }
        }
    })
    .unwrap();
    let ctx = ActionContext::new().with_auth(json!({"uid": "u7"}));
    generate(
        &reg,
        GenerateOptions::prompt("x")
            .model("ctxm")
            .tool("whoami")
            .context(ctx),
    )
    .await
    .unwrap();
    assert_eq!(*seen.lock(), vec![Some(json!({"uid": "u7"})); 3]);
}

#[tokio::test]
async fn cancelling_generate_stops_the_model() {
    let reg = Registry::new();
    define_model(&reg, ModelOptions::new("slow"), |_req, _ctx| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(GenerateResponse::new(
            Message::model("late"),
            FinishReason::Stop,
        ))
    })
    .unwrap();
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        t.cancel();
    });
    let started = std::time::Instant::now();
    let err = generate(
        &reg,
        GenerateOptions::prompt("x").model("slow").cancel(token),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
}
