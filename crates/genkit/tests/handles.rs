//! Bodies reach the Genkit instance and typed extensions from their context;
//! the registry-level define functions report errors and the `define_*`
//! methods panic at their caller; struct-based tools and models; generate_as.

use futures::StreamExt;
use genkit::action::RunOptions;
use genkit::flow::define_flow;
use genkit::model::{ModelCtx, ModelImpl, ModelOptions};
use genkit::model::{define_model, define_model_impl};
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::testing::ProgrammableModel;
use genkit::tool::{ToolCtx, ToolImpl};
use genkit::tool::{define_interrupt, define_tool, define_tool_impl};
use genkit::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, Role, ToolRequest,
};

fn instance() -> Genkit {
    Genkit::builder()
        .default_model("scripted")
        .no_prompt_dir()
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_tool_calls_generate_through_its_context() -> Result<()> {
    let ai = instance();
    ProgrammableModel::define(ai.registry(), "scripted")
        .respond_tool_call("summarize", json!({"text": "a long log"}))
        .respond_text("all good");
    ProgrammableModel::define(ai.registry(), "summarizer").respond_text("short log");

    #[derive(Deserialize, Serialize, JsonSchema)]
    struct Text {
        text: String,
    }
    // No handle cloned into the closure: the tool reaches the instance.
    let summarize = ai.define_tool(
        "summarize",
        "Summarizes a text with another model.",
        |input: Text, ctx: ToolCtx| async move {
            let reply = ctx
                .genkit()?
                .generate(GenerateOptions::prompt(input.text).model("summarizer"))
                .await?;
            Ok(reply.text())
        },
    );
    let flow = ai.define_flow("check", move |q: String, ctx| {
        let summarize = summarize.clone();
        async move {
            let ai = ctx.genkit()?;
            Ok(ai
                .generate(GenerateOptions::prompt(q).tool(&summarize))
                .await?
                .text())
        }
    });
    assert_eq!(flow.run("status?".into()).await?, "all good");
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
struct Tenant(String);

#[tokio::test]
async fn extensions_set_by_the_caller_reach_tools_inside_generate() -> Result<()> {
    let ai = instance();
    ProgrammableModel::define(ai.registry(), "scripted")
        .respond_tool_call("whoami", json!(null))
        .respond_text("done");
    let whoami = ai.define_tool("whoami", "The tenant.", |_: (), ctx| async move {
        Ok(ctx
            .extension::<Tenant>()
            .map(|t| t.0.clone())
            .unwrap_or_default())
    });
    let flow = ai.define_flow("ask", move |_: (), ctx| {
        let whoami = whoami.clone();
        async move {
            let r = ctx
                .genkit()?
                .generate(GenerateOptions::prompt("who?").tool(&whoami))
                .await?;
            let request = r.request.as_deref().cloned();
            Ok(request.map(|req| req.messages.len()))
        }
    });
    let out = flow
        .run_with((), RunOptions::new().extension(Tenant("acme".into())))
        .await?;
    assert_eq!(out.output, Some(3));
    let tool_answer = ai
        .registry()
        .require_action("/tool/whoami")
        .await?
        .run_json(
            json!(null),
            RunOptions::new().extension(Tenant("globex".into())),
        )
        .await?;
    assert_eq!(tool_answer.output, json!("globex"));
    Ok(())
}

#[tokio::test]
async fn registry_level_define_reports_duplicates_and_bad_names() {
    let ai = instance();
    define_flow(ai.registry(), "f", |s: String, _ctx| async move { Ok(s) }).unwrap();
    let dup = define_flow(ai.registry(), "f", |s: String, _ctx| async move { Ok(s) }).unwrap_err();
    assert_eq!(dup.status(), StatusCode::AlreadyExists);
    let bad = define_tool(ai.registry(), "", "nameless", |_: (), _ctx| async {
        Ok(())
    })
    .unwrap_err();
    assert_eq!(bad.status(), StatusCode::InvalidArgument);
    let bad_model = define_model(
        ai.registry(),
        ModelOptions::new("/slash"),
        |_req, _ctx| async { Err(Error::internal("unused")) },
    )
    .unwrap_err();
    assert_eq!(bad_model.status(), StatusCode::InvalidArgument);
    let dup_interrupt =
        define_interrupt::<(), ()>(ai.registry(), "f", "a tool may share a flow's name", None)
            .map(|_| ());
    assert!(dup_interrupt.is_ok());
    assert_eq!(
        define_interrupt::<(), ()>(ai.registry(), "f", "but not another tool's", None)
            .unwrap_err()
            .status(),
        StatusCode::AlreadyExists
    );
}

struct Weather;

#[derive(Deserialize, Serialize, JsonSchema)]
struct City {
    city: String,
}

impl ToolImpl for Weather {
    type Input = City;
    type Output = String;

    fn name(&self) -> &str {
        "weather"
    }

    fn description(&self) -> String {
        "Current weather for a city.".into()
    }

    async fn call(&self, input: City, _ctx: ToolCtx) -> Result<String> {
        Ok(format!("{}: sunny", input.city))
    }
}

struct Shouter;

impl ModelImpl for Shouter {
    fn options(&self) -> ModelOptions {
        ModelOptions::new("shouter")
    }

    async fn generate(&self, req: GenerateRequest, _ctx: ModelCtx) -> Result<GenerateResponse> {
        // Answers with the last tool output, or the prompt, upper-cased.
        let last = req
            .messages
            .last()
            .cloned()
            .unwrap_or_else(|| Message::user(""));
        let text = last
            .content
            .iter()
            .find_map(|p| p.as_tool_response().and_then(|t| t.output.clone()))
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| last.text());
        if last.role == Role::User {
            let call = ToolRequest::new("weather", json!({"city": text}));
            return Ok(GenerateResponse::new(
                Message::model(vec![Part::tool_request(call)]),
                FinishReason::Stop,
            ));
        }
        Ok(GenerateResponse::new(
            Message::model(text.to_uppercase()),
            FinishReason::Stop,
        ))
    }
}

#[tokio::test]
async fn struct_based_tools_and_models_run_through_generate() -> Result<()> {
    let ai = instance();
    let weather = ai.define_tool_impl(Weather);
    ai.define_model_impl(Shouter);
    let reply = ai
        .generate(
            GenerateOptions::prompt("Paris")
                .model("shouter")
                .tool(&weather),
        )
        .await?;
    assert_eq!(reply.text(), "PARIS: SUNNY");
    assert_eq!(
        define_tool_impl(ai.registry(), Weather)
            .unwrap_err()
            .status(),
        StatusCode::AlreadyExists
    );
    assert_eq!(
        define_model_impl(ai.registry(), Shouter)
            .unwrap_err()
            .status(),
        StatusCode::AlreadyExists
    );
    Ok(())
}

#[derive(Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Verdict {
    go_outside: bool,
    reason: String,
}

#[tokio::test]
async fn generate_as_returns_the_typed_output() -> Result<()> {
    let ai = instance();
    let model = ProgrammableModel::define(ai.registry(), "scripted")
        .respond_text(r#"{"go_outside": true, "reason": "sunny"}"#)
        .respond_text(r#"{"go_outside": "maybe"}"#)
        .respond_with_chunks(
            vec![
                GenerateResponseChunk::new(vec![Part::text(r#"{"go_outside": false, "#)]),
                GenerateResponseChunk::new(vec![Part::text(r#""reason": "rain"}"#)]),
            ],
            GenerateResponse::new(
                Message::model(r#"{"go_outside": false, "reason": "rain"}"#),
                FinishReason::Stop,
            ),
        );
    let verdict: Verdict = ai.generate_as(GenerateOptions::prompt("Go out?")).await?;
    assert_eq!(
        verdict,
        Verdict {
            go_outside: true,
            reason: "sunny".into()
        }
    );
    // The schema of `T` went to the model.
    let sent = serde_json::to_string(&model.requests()[0])?;
    assert!(sent.contains("go_outside"), "{sent}");

    let err = ai
        .generate_as::<Verdict>(GenerateOptions::prompt("Go out?"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);

    let mut stream = ai.generate_stream_as::<Verdict>(GenerateOptions::prompt("Tomorrow?"));
    let mut partials = 0;
    while let Some(chunk) = stream.next().await {
        if chunk?.output().is_some() {
            partials += 1;
        }
    }
    assert!(partials >= 1);
    let ai2 = instance();
    ProgrammableModel::define(ai2.registry(), "scripted")
        .respond_text(r#"{"go_outside": false, "reason": "rain"}"#);
    let final_verdict = ai2
        .generate_stream_as::<Verdict>(GenerateOptions::prompt("Tomorrow?"))
        .output()
        .await?;
    assert_eq!(final_verdict.reason, "rain");
    Ok(())
}

#[test]
#[should_panic(expected = "defining flow `twice`")]
fn a_taken_name_panics_in_define() {
    let ai = instance();
    ai.define_flow("twice", |s: String, _ctx| async move { Ok(s) });
    ai.define_flow("twice", |s: String, _ctx| async move { Ok(s) });
}

#[test]
fn the_panic_points_at_the_callers_line() {
    use std::sync::{Arc, Mutex};
    let ai = instance();
    ai.define_flow("here", |s: String, _ctx| async move { Ok(s) });
    // The hook is global: keep only this test's panic.
    let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
    let record = seen.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info.to_string();
        if let Some(at) = info.location()
            && message.contains("defining flow `here`")
        {
            *record.lock().unwrap() = Some((at.file().to_owned(), at.line()));
        }
    }));
    let line = line!() + 2;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ai.define_flow("here", |s: String, _ctx| async move { Ok(s) });
    }));
    std::panic::set_hook(previous);
    assert!(caught.is_err());
    let (file, at) = seen.lock().unwrap().clone().expect("the panic was seen");
    assert!(file.ends_with("handles.rs"), "{file}");
    assert_eq!(at, line);
}
