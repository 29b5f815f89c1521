//! Tool approval: marked tools interrupt before they run; approving runs
//! them, denying answers the model without running them — through
//! `generate` (resume restart / respond) and through an agent turn.

use genkit_agent::types::{AgentFinishReason, AgentResume};
use genkit_agent::{AgentOptions, define_prompt_agent_with};
use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate};
use genkit_middleware::{TOOL_APPROVED_KEY, approve, deny, tool_approval};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::{Tool, ToolCtx, ToolImpl, restart_tool};
use genkit_model::types::{FinishReason, Message, Part, Role};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `restartService`, marked as needing approval, counting its runs.
fn restart_tool_counted() -> (Tool<String, String>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let tool = Tool::new(
        "restartService",
        "Restarts a service.",
        move |service: String, _ctx| {
            r.fetch_add(1, Ordering::SeqCst);
            async move { Ok(format!("{service} restarted")) }
        },
    )
    .needs_approval();
    (tool, runs)
}

fn status_tool() -> Tool<String, String> {
    Tool::new(
        "getServiceStatus",
        "Status.",
        |s: String, _ctx| async move { Ok(format!("{s} is up")) },
    )
}

fn options(history: Option<Vec<Message>>, tool: &Tool<String, String>) -> GenerateOptions {
    let base = match history {
        Some(h) => GenerateOptions::messages(h),
        None => GenerateOptions::prompt("restart the api"),
    };
    base.model("m")
        .tool(tool)
        .tool(status_tool())
        .use_middleware(tool_approval())
}

#[tokio::test]
async fn a_marked_tool_interrupts_and_runs_once_approved() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("restartService", json!("api"))
        .respond_text("The api was restarted.");
    let (tool, runs) = restart_tool_counted();

    let first = generate(&reg, options(None, &tool)).await.unwrap();
    assert_eq!(first.finish_reason(), Some(FinishReason::Interrupted));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "ran before approval");
    let interrupt = first.interrupts()[0].clone();
    // The interrupt is the tool request, shown to the user, with Genkit
    // JS's metadata shape.
    let request = interrupt.as_tool_request().unwrap();
    assert_eq!(request.name, "restartService");
    assert_eq!(request.input, Some(json!("api")));
    assert_eq!(
        interrupt.metadata.as_ref().unwrap()["interrupt"],
        json!({"message": "Tool requires approval: restartService"})
    );

    let approval = approve(&interrupt).unwrap();
    assert_eq!(
        approval.metadata.as_ref().unwrap()["resumed"],
        json!({TOOL_APPROVED_KEY: true})
    );
    let done = generate(
        &reg,
        options(first.messages(), &tool).resume_restart([approval]),
    )
    .await
    .unwrap();
    assert_eq!(done.text(), "The api was restarted.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let tool_msg = &model.requests()[1].messages;
    let response = tool_msg.last().unwrap().content[0]
        .as_tool_response()
        .unwrap();
    assert_eq!(response.output, Some(json!("api restarted")));
}

#[tokio::test]
async fn a_denial_reaches_the_model_and_the_tool_never_runs() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("restartService", json!("api"))
        .respond_text("Understood, I will not restart it.");
    let (tool, runs) = restart_tool_counted();
    let first = generate(&reg, options(None, &tool)).await.unwrap();
    let interrupt = first.interrupts()[0].clone();

    let done = generate(
        &reg,
        options(first.messages(), &tool).resume_respond([deny(
            &interrupt,
            Some("not during business hours"),
        )
        .unwrap()]),
    )
    .await
    .unwrap();
    assert_eq!(done.text(), "Understood, I will not restart it.");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let seen = model.requests()[1].messages.clone();
    let tool_message = seen.last().unwrap();
    assert_eq!(tool_message.role, Role::Tool);
    let output = tool_message.content[0]
        .as_tool_response()
        .unwrap()
        .output
        .clone()
        .unwrap();
    assert_eq!(output["denied"], json!(true));
    let error = output["error"].as_str().unwrap();
    assert!(error.contains("denied") && error.contains("not during business hours"));
}

#[tokio::test]
async fn a_restart_with_tool_approved_false_is_a_denial() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("restartService", json!("api"))
        .respond_text("ok");
    let (tool, runs) = restart_tool_counted();
    let first = generate(&reg, options(None, &tool)).await.unwrap();
    let interrupt = first.interrupts()[0].clone();
    let restart = restart_tool(&interrupt, Some(json!({TOOL_APPROVED_KEY: false})), None).unwrap();
    generate(
        &reg,
        options(first.messages(), &tool).resume_restart([restart]),
    )
    .await
    .unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let seen = model.requests()[1].messages.clone();
    let response = seen.last().unwrap().content[0].as_tool_response().unwrap();
    assert_eq!(response.output.as_ref().unwrap()["denied"], json!(true));
}

#[tokio::test]
async fn unmarked_tools_run_without_asking() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getServiceStatus", json!("db"))
        .respond_text("db is up");
    let (tool, _) = restart_tool_counted();
    let out = generate(&reg, options(None, &tool)).await.unwrap();
    assert_eq!(out.finish_reason(), Some(FinishReason::Stop));
    assert_eq!(out.text(), "db is up");
}

#[tokio::test]
async fn an_approved_list_interrupts_every_other_tool_as_genkit_js_does() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getServiceStatus", json!("db"))
        .respond_text("unused");
    let out = generate(
        &reg,
        GenerateOptions::prompt("status")
            .model("m")
            .tool(status_tool())
            .use_middleware(tool_approval().approved(["readInbox"])),
    )
    .await
    .unwrap();
    assert_eq!(out.finish_reason(), Some(FinishReason::Interrupted));
    assert_eq!(
        out.interrupts()[0].metadata.as_ref().unwrap()["interrupt"],
        json!({"message": "Tool not in approved list: getServiceStatus"})
    );
    // A marked tool on the list is pre-approved.
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("restartService", json!("api"))
        .respond_text("done");
    let (tool, runs) = restart_tool_counted();
    let out = generate(
        &reg,
        GenerateOptions::prompt("restart")
            .model("m")
            .tool(&tool)
            .use_middleware(tool_approval().approved(["restartService"])),
    )
    .await
    .unwrap();
    assert_eq!(out.text(), "done");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A tool type marking itself as needing approval.
struct Deploy(Arc<AtomicUsize>);

impl ToolImpl for Deploy {
    type Input = String;
    type Output = String;
    fn name(&self) -> &str {
        "deploy"
    }
    fn description(&self) -> String {
        "Deploys a version.".into()
    }
    fn needs_approval(&self) -> bool {
        true
    }
    async fn call(&self, version: String, _ctx: ToolCtx) -> genkit_core::Result<String> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(format!("deployed {version}"))
    }
}

#[tokio::test]
async fn an_agent_turn_interrupts_and_resumes_with_the_approval() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("deploy", json!("v2"))
        .respond_text("v2 is deployed.")
        .respond_tool_call("deploy", json!("v3"))
        .respond_text("I left v3 alone.");
    let runs = Arc::new(AtomicUsize::new(0));
    let deploy = genkit_model::tool::define_tool_impl(&reg, Deploy(runs.clone())).unwrap();
    assert!(deploy.is_approval_required());
    let agent = define_prompt_agent_with(&reg, "ops", AgentOptions::new(), move || async move {
        Ok(GenerateOptions::new()
            .model("m")
            .tool("deploy")
            .use_middleware(tool_approval()))
    })
    .unwrap();
    let chat = agent.chat();

    // Approved.
    let out = chat.send(Message::user("deploy v2")).await.unwrap();
    assert_eq!(out.finish_reason, Some(AgentFinishReason::Interrupted));
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let interrupt = interrupt_of(out.message.as_ref().unwrap());
    assert_eq!(
        interrupt.as_tool_request().unwrap().input,
        Some(json!("v2"))
    );
    let out = chat
        .resume(AgentResume {
            restart: Some(vec![approve(&interrupt).unwrap()]),
            ..AgentResume::default()
        })
        .await
        .unwrap();
    assert_eq!(out.message.unwrap().text(), "v2 is deployed.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Denied.
    let out = chat.send(Message::user("deploy v3")).await.unwrap();
    let interrupt = interrupt_of(out.message.as_ref().unwrap());
    let out = chat
        .resume(AgentResume {
            respond: Some(vec![deny(&interrupt, None).unwrap()]),
            ..AgentResume::default()
        })
        .await
        .unwrap();
    assert_eq!(out.message.unwrap().text(), "I left v3 alone.");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let last_tool = model.requests()[3]
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Tool)
        .cloned()
        .unwrap();
    let output: &Value = last_tool.content[0]
        .as_tool_response()
        .unwrap()
        .output
        .as_ref()
        .unwrap();
    assert_eq!(output["denied"], json!(true));
    // The session holds the whole exchange, both calls answered.
    let history = chat.state().unwrap().messages().to_vec();
    assert_eq!(history.iter().filter(|m| m.role == Role::Tool).count(), 2);
}

fn interrupt_of(message: &Message) -> Part {
    message
        .content
        .iter()
        .find(|p| {
            p.metadata
                .as_ref()
                .is_some_and(|m| m.contains_key("interrupt"))
        })
        .cloned()
        .expect("an interrupted tool request")
}

#[tokio::test]
async fn serialized_requests_use_tool_approval_by_name_with_genkit_js_config() {
    use genkit_generate::define_generate_action;
    use genkit_middleware::{ToolApproval, define_tool_approval};
    use genkit_model::types::{GenerateActionOptions, GenerateResponse, MiddlewareRef};
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    define_tool_approval(&reg);
    ProgrammableModel::define(&reg, "m")
        .respond_tool_call("getServiceStatus", json!("db"))
        .respond_text("unused");
    status_tool().register(&reg).unwrap();
    let mut opts = GenerateActionOptions::new(vec![Message::user("status")]).with_model("m");
    opts.tools = Some(vec!["getServiceStatus".into()]);
    opts.middleware = Some(vec![MiddlewareRef {
        name: "toolApproval".into(),
        config: Some(json!({"approved": ["readInbox"]})),
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    let out = action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap();
    let out: GenerateResponse = serde_json::from_value(out.output).unwrap();
    assert_eq!(out.finish_reason(), Some(FinishReason::Interrupted));

    let err = ToolApproval::from_config(Some(&json!({"approved": "readInbox"}))).unwrap_err();
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    assert!(err.message().contains("approved"));
    assert!(ToolApproval::from_config(Some(&json!({"approved": [1]}))).is_err());
    assert!(ToolApproval::from_config(None).is_ok());
}
