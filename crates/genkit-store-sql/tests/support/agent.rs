#![allow(dead_code)] // the tests and the bench each use part of it

//! The agent the agent-level tests drive: `assistant`, whose turn calls
//! the scripted model `scripted` with the turn's message and adds its reply
//! to the session. The model answers "reply to: <text>", fails for "fail",
//! and blocks forever for "block" (to kill a process mid-turn).
//!
//! The model sees only the turn's message, not the whole history (a prompt
//! agent would send all of it): the history is what the store keeps, and a
//! model call validated against 2000 messages per attempt would make the
//! 1000-turn race test measure request validation rather than the store.

use std::sync::Arc;

use genkit::agent::types::{AgentFinishReason, AgentResult};
use genkit::agent::{Agent, AgentOptions};
use genkit::model::ModelOptions;
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::types::{FinishReason, GenerateRequest, GenerateResponse, Role};
use genkit_session::store::SessionStore;

/// Genkit with model `scripted` and agent `assistant` on `store`.
pub fn assistant(store: Arc<dyn SessionStore>) -> (Genkit, Agent) {
    define(store, false)
}

/// [`assistant`], printing `BLOCKED` on stdout when its model blocks.
pub fn assistant_reporting_blocks(store: Arc<dyn SessionStore>) -> (Genkit, Agent) {
    define(store, true)
}

fn define(store: Arc<dyn SessionStore>, report_blocks: bool) -> (Genkit, Agent) {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_model(
        ModelOptions::new("scripted"),
        move |req: GenerateRequest, _ctx| async move {
            let said = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.text())
                .unwrap_or_default();
            match said.as_str() {
                "fail" => Err(Error::user_facing(
                    StatusCode::Unavailable,
                    "the scripted model is down",
                )),
                "block" => {
                    if report_blocks {
                        use std::io::Write;
                        let mut out = std::io::stdout();
                        let _ = writeln!(out, "BLOCKED");
                        let _ = out.flush();
                    }
                    futures::future::pending::<()>().await;
                    unreachable!("pending never completes")
                }
                _ => Ok(GenerateResponse::new(
                    Message::model(format!("reply to: {said}")),
                    FinishReason::Stop,
                )),
            }
        },
    );
    let model = ai.clone();
    let agent = ai.define_custom_agent(
        "assistant",
        AgentOptions::new().store(store),
        move |session, input| {
            let ai = model.clone();
            async move {
                let said = input.message.as_ref().map(|m| m.text()).unwrap_or_default();
                let reply = ai
                    .generate(GenerateOptions::prompt(said).model("scripted"))
                    .await?;
                let message = Message::model(reply.text());
                session.add_messages([message.clone()]);
                Ok(AgentResult {
                    message: Some(message),
                    artifacts: None,
                    finish_reason: Some(AgentFinishReason::Stop),
                })
            }
        },
    );
    (ai, agent)
}

/// "role: text" of each message.
pub fn history(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.text()))
        .collect()
}
