//! One conversational turn, as the chat and `--ask` both run it: send the
//! message, stream the answer, and when a tool waits for approval ask the
//! person (or the `--ask` policy), then resume with the decision, until the
//! agent answers.
//!
//! Every call continues the session's latest snapshot by session id, so a
//! cancelled turn (nothing stored) and a completed one (stored) both leave
//! the next turn on the right history.

use genkit::agent::types::{AgentFinishReason, AgentInit};
use genkit::middleware::{approve, deny};
use genkit::prelude::*;
use tokio::runtime::Runtime;

/// A person's (or a policy's) answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run the tool.
    Approve,
    /// Do not run it; the model is told, with the reason if any.
    Deny(Option<String>),
}

/// Where a turn's output goes, and who approves tools.
pub trait TurnUi {
    /// A piece of the streamed answer.
    fn text(&mut self, text: &str);
    /// The model called a tool.
    fn tool_call(&mut self, request: &ToolRequest);
    /// A tool waits for approval: `request` is what it would run.
    fn approve(&mut self, request: &ToolRequest, why: &str) -> Decision;
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The agent answered (the whole text).
    Answered(String),
    /// Ctrl-C: the turn was dropped and nothing was stored.
    Cancelled,
}

/// Runs one turn of `session` for `message`. With `cancellable`, Ctrl-C
/// drops the running turn and returns [`Outcome::Cancelled`].
pub fn run(
    rt: &Runtime,
    agent: &Agent,
    session: &str,
    message: &str,
    ui: &mut dyn TurnUi,
    cancellable: bool,
) -> Result<Outcome> {
    let mut input = AgentInput::message(Message::user(message));
    loop {
        let streamed = rt.block_on(async {
            let step = stream_step(agent, session, input, ui);
            if !cancellable {
                return step.await.map(Some);
            }
            tokio::select! {
                out = step => out.map(Some),
                _ = tokio::signal::ctrl_c() => Ok(None),
            }
        })?;
        let Some(output) = streamed else {
            return Ok(Outcome::Cancelled);
        };
        match output.finish_reason {
            Some(AgentFinishReason::Failed) => {
                return Err(output
                    .error
                    .as_ref()
                    .map(Error::from)
                    .unwrap_or_else(|| Error::internal("the turn failed")));
            }
            Some(AgentFinishReason::Interrupted) => {
                let interrupts = interrupts_of(output.message.as_ref());
                if interrupts.is_empty() {
                    return Err(Error::internal(
                        "the turn was interrupted without a tool request to approve",
                    ));
                }
                let mut resume = AgentResume::default();
                for part in &interrupts {
                    let Some(request) = part.as_tool_request() else {
                        continue;
                    };
                    let why = part
                        .metadata_value("interrupt")
                        .and_then(|i| i.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("this tool needs approval");
                    match ui.approve(request, why) {
                        Decision::Approve => resume
                            .restart
                            .get_or_insert_with(Vec::new)
                            .push(approve(part)?),
                        Decision::Deny(reason) => resume
                            .respond
                            .get_or_insert_with(Vec::new)
                            .push(deny(part, reason.as_deref())?),
                    }
                }
                input = AgentInput::resume(resume);
            }
            _ => {
                let text = output.message.as_ref().map(Message::text);
                return Ok(Outcome::Answered(text.unwrap_or_default()));
            }
        }
    }
}

/// Streams one run of the agent (a message or a resume) to `ui`.
async fn stream_step(
    agent: &Agent,
    session: &str,
    input: AgentInput,
    ui: &mut dyn TurnUi,
) -> Result<AgentOutput> {
    let chat = agent.chat_from(AgentInit {
        session_id: Some(session.to_owned()),
        ..AgentInit::default()
    });
    let mut stream = chat.send_stream(input);
    let mut streamed_text = false;
    while let Some(chunk) = stream.next().await {
        let Some(chunk) = chunk?.model_chunk else {
            continue;
        };
        if chunk.role == Some(Role::Tool) {
            continue; // tool results and the interrupts, handled from the output
        }
        for request in chunk.tool_requests().filter(|r| r.partial != Some(true)) {
            ui.tool_call(request);
        }
        let text = chunk.text();
        if !text.is_empty() {
            streamed_text = true;
            ui.text(&text);
        }
    }
    let output = stream.output().await?;
    // A model that does not stream: show its answer whole.
    if !streamed_text
        && output.finish_reason != Some(AgentFinishReason::Interrupted)
        && let Some(text) = output.message.as_ref().map(Message::text)
        && !text.is_empty()
    {
        ui.text(&text);
    }
    Ok(output)
}

/// The tool requests of `message` waiting for approval.
fn interrupts_of(message: Option<&Message>) -> Vec<Part> {
    message
        .map(|m| {
            m.content
                .iter()
                .filter(|p| {
                    p.as_tool_request().is_some() && p.metadata_value("interrupt").is_some()
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// A tool request as one line: `restartService {"service":"db"}`.
pub fn describe(request: &ToolRequest) -> String {
    match &request.input {
        Some(input) => format!("{} {input}", request.name),
        None => request.name.clone(),
    }
}
