//! Tools and models as Rust types (`ToolImpl`, `ModelImpl`), typed
//! interrupts, and the registry and extensions a tool body reaches.

use genkit_core::{Registry, Result, RunOptions, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::model::{ModelCtx, ModelImpl, ModelOptions, define_model_impl};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{
    Tool, ToolCtx, ToolImpl, ToolInterrupt, define_tool, define_tool_impl, is_interrupt,
};
use genkit_model::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, Message, ToolRequest,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, Serialize, JsonSchema)]
struct Service {
    name: String,
}

/// A tool type with state: how many replicas each service runs.
struct Replicas {
    per_service: u32,
}

impl ToolImpl for Replicas {
    type Input = Service;
    type Output = String;

    fn name(&self) -> &str {
        "replicas"
    }

    fn description(&self) -> String {
        "How many replicas a service runs.".into()
    }

    async fn call(&self, input: Service, ctx: ToolCtx) -> Result<String> {
        if input.name == "secret" {
            return Err(ctx.interrupt(Some(json!({"needs": "approval"}))));
        }
        if input.name == "typed" {
            return Err(ToolInterrupt::new(None).into());
        }
        Ok(format!("{}: {} replicas", input.name, self.per_service))
    }
}

/// A model type that echoes the last message, streaming it as one chunk.
struct Echo {
    prefix: &'static str,
}

impl ModelImpl for Echo {
    fn options(&self) -> ModelOptions {
        ModelOptions::new("echo-impl")
    }

    async fn generate(&self, req: GenerateRequest, ctx: ModelCtx) -> Result<GenerateResponse> {
        let last = req.messages.last().map(Message::text).unwrap_or_default();
        let text = format!("{}{last}", self.prefix);
        ctx.send_chunk(GenerateResponseChunk::new(vec![text.as_str().into()]));
        Ok(GenerateResponse::new(
            Message::model(text),
            FinishReason::Stop,
        ))
    }
}

#[tokio::test]
async fn a_tool_impl_runs_through_generate() -> Result<()> {
    let reg = Registry::new();
    let tool = define_tool_impl(&reg, Replicas { per_service: 3 })?;
    assert_eq!(tool.name(), "replicas");
    assert_eq!(
        tool.definition().description,
        "How many replicas a service runs."
    );
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("replicas", json!({"name": "api"}))
        .respond_text("done");
    let r = generate(
        &reg,
        GenerateOptions::prompt("q").model("m").tool("replicas"),
    )
    .await?;
    assert_eq!(r.text(), "done");
    let second = &model.requests()[1];
    let answer = second.messages.last().and_then(|m| m.content.first());
    let output = answer
        .and_then(|p| p.as_tool_response())
        .and_then(|t| t.output.clone());
    assert_eq!(output, Some(json!("api: 3 replicas")));

    // The same type given by value, unregistered.
    let by_value = Tool::from_impl(Replicas { per_service: 5 });
    let reg2 = Registry::new();
    ProgrammableModel::define(&reg2, "m")
        .respond_tool_call("replicas", json!({"name": "db"}))
        .respond_text("ok");
    let r = generate(
        &reg2,
        GenerateOptions::prompt("q").model("m").tool(&by_value),
    )
    .await?;
    assert_eq!(r.text(), "ok");
    Ok(())
}

#[tokio::test]
async fn typed_interrupts_keep_the_wire_shape() -> Result<()> {
    let reg = Registry::new();
    define_tool_impl(&reg, Replicas { per_service: 1 })?;
    ProgrammableModel::define(&reg, "m").respond_tool_calls(vec![
        ToolRequest::new("replicas", json!({"name": "secret"})).with_ref("1"),
        ToolRequest::new("replicas", json!({"name": "typed"})).with_ref("2"),
    ]);
    let r = generate(
        &reg,
        GenerateOptions::prompt("q").model("m").tool("replicas"),
    )
    .await?;
    assert_eq!(r.finish_reason(), Some(FinishReason::Interrupted));
    let interrupts = r.interrupts();
    assert_eq!(interrupts.len(), 2);
    assert_eq!(
        interrupts[0].metadata_value("interrupt"),
        Some(&json!({"needs": "approval"}))
    );
    assert_eq!(
        interrupts[1].metadata_value("interrupt"),
        Some(&json!(true))
    );

    // Run directly, the interrupt is an ABORTED error carrying the typed value.
    let tool = Tool::from_impl(Replicas { per_service: 1 });
    let err = tool
        .to_dyn()
        .run_json(json!({"name": "secret"}), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Aborted);
    assert!(is_interrupt(&err));
    assert_eq!(
        ToolInterrupt::from_error(&err).map(ToolInterrupt::metadata),
        Some(&json!({"needs": "approval"}))
    );
    assert_eq!(err.details(), None, "no magic details key any more");
    Ok(())
}

#[tokio::test]
async fn a_model_impl_generates_and_streams() -> Result<()> {
    let reg = Registry::new();
    let model = define_model_impl(&reg, Echo { prefix: "echo: " })?;
    assert_eq!(model.name(), "echo-impl");
    let r = generate(&reg, GenerateOptions::prompt("hello").model("echo-impl")).await?;
    assert_eq!(r.text(), "echo: hello");

    let mut stream =
        genkit_generate::generate_stream(&reg, GenerateOptions::prompt("hi").model("echo-impl"));
    let mut chunks = Vec::new();
    while let Some(chunk) = futures::StreamExt::next(&mut stream).await {
        chunks.push(chunk?.text());
    }
    assert_eq!(chunks, ["echo: hi"]);
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
struct Session(&'static str);

#[tokio::test]
async fn a_tool_reaches_the_registry_and_the_callers_extensions() -> Result<()> {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "inner").respond_text("inner answer");
    define_tool(
        &reg,
        "ask",
        "Asks another model",
        |q: String, ctx: ToolCtx| async move {
            let session = ctx.extension::<Session>().map(|s| s.0).unwrap_or("none");
            let registry = ctx.require_registry()?;
            let r = generate(registry, GenerateOptions::prompt(q).model("inner")).await?;
            Ok(format!("{session}: {}", r.text()))
        },
    )?;
    let outer = ProgrammableModel::define(&reg, "outer")
        .respond_tool_call("ask", json!("why?"))
        .respond_text("final");
    let r = genkit_core::tracing::with_extension(
        Session("s-42"),
        generate(
            &reg,
            GenerateOptions::prompt("go").model("outer").tool("ask"),
        ),
    )
    .await?;
    assert_eq!(r.text(), "final");
    let second = &outer.requests()[1];
    let output = second
        .messages
        .last()
        .and_then(|m| m.content.first())
        .and_then(|p| p.as_tool_response())
        .and_then(|t| t.output.clone());
    assert_eq!(output, Some(json!("s-42: inner answer")));
    Ok(())
}
