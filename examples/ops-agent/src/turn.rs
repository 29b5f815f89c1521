//! One conversational turn, as the chat and `--ask` both run it: send the
//! message, stream the answer, and when a tool waits for approval ask the
//! person (or the `--ask` policy), then resume with the decision, until the
//! agent answers.
//!
//! Every call continues the session's latest snapshot by session id, so a
//! cancelled turn (nothing stored) and a completed one (stored) both leave
//! the next turn on the right history. A new session has no id until its
//! first turn is stored: the server mints it (clients do not name sessions),
//! and the turn's output says which it is.

use genkit::agent::Agent;
use genkit::agent::types::{AgentFinishReason, AgentInit, GetSnapshotRequest};
use genkit::agent::types::{AgentInput, AgentOutput, AgentResume};
use genkit::middleware::{approve, deny};
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::types::{Role, ToolRequest};
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

/// Runs one turn of `session` for `message` (`None`: a new session, whose
/// id the server mints; `session` holds it once the turn is stored). With
/// `cancellable`, Ctrl-C drops the running turn and returns
/// [`Outcome::Cancelled`].
pub fn run(
    rt: &Runtime,
    agent: &Agent,
    session: &mut Option<String>,
    message: &str,
    ui: &mut dyn TurnUi,
    cancellable: bool,
) -> Result<Outcome> {
    let input = AgentInput::message(Message::user(message));
    run_input(rt, agent, session, input, ui, cancellable)
}

/// Settles approvals the session's last turn left waiting (the app was
/// closed at the question): asks `ui` about each and resumes with the
/// answers. `Ok(None)` when nothing waits (or the session is new).
pub fn settle_pending(
    rt: &Runtime,
    agent: &Agent,
    session: &mut Option<String>,
    ui: &mut dyn TurnUi,
    cancellable: bool,
) -> Result<Option<Outcome>> {
    let Some(id) = session.as_deref() else {
        return Ok(None);
    };
    let request = GetSnapshotRequest {
        session_id: Some(id.to_owned()),
        snapshot_id: None,
    };
    let snapshot = match rt.block_on(agent.get_snapshot(request)) {
        Ok(snapshot) => snapshot,
        Err(e) if e.status() == StatusCode::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if snapshot.finish_reason != Some(AgentFinishReason::Interrupted) {
        return Ok(None);
    }
    let last = snapshot.state.as_ref().and_then(|s| s.messages().last());
    let interrupts = interrupts_of(last);
    if interrupts.is_empty() {
        return Ok(None);
    }
    let resume = decide(&interrupts, ui)?;
    run_input(
        rt,
        agent,
        session,
        AgentInput::resume(resume),
        ui,
        cancellable,
    )
    .map(Some)
}

/// Asks `ui` about each interrupted request; the resume that carries out
/// the answers.
fn decide(interrupts: &[Part], ui: &mut dyn TurnUi) -> Result<AgentResume> {
    let mut resume = AgentResume::default();
    for part in interrupts {
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
    Ok(resume)
}

fn run_input(
    rt: &Runtime,
    agent: &Agent,
    session: &mut Option<String>,
    mut input: AgentInput,
    ui: &mut dyn TurnUi,
    cancellable: bool,
) -> Result<Outcome> {
    loop {
        let streamed = rt.block_on(async {
            let step = stream_step(agent, &mut *session, input, ui);
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
        let output = output.into_result()?;
        match output.finish_reason {
            Some(AgentFinishReason::Interrupted) => {
                let interrupts = interrupts_of(output.message.as_ref());
                if interrupts.is_empty() {
                    return Err(Error::internal(
                        "the turn was interrupted without a tool request to approve",
                    ));
                }
                input = AgentInput::resume(decide(&interrupts, ui)?);
            }
            _ => {
                let text = output.message.as_ref().map(Message::text);
                return Ok(Outcome::Answered(text.unwrap_or_default()));
            }
        }
    }
}

/// Streams one run of the agent (a message or a resume) to `ui`; a new
/// session's id is kept in `session` from the run's output.
async fn stream_step(
    agent: &Agent,
    session: &mut Option<String>,
    input: AgentInput,
    ui: &mut dyn TurnUi,
) -> Result<AgentOutput> {
    let chat = agent.chat_from(AgentInit {
        session_id: session.clone(),
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
    if session.is_none() {
        session.clone_from(&output.session_id);
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app;
    use crate::fleet::Fleet;
    use crate::models::ModelChoice;
    use crate::offline_model::OFFLINE_MODEL;
    use genkit::agent::store::InMemorySessionStore;
    use std::sync::Arc;

    struct Approver(Vec<String>);

    impl TurnUi for Approver {
        fn text(&mut self, text: &str) {
            self.0.push(text.to_owned());
        }
        fn tool_call(&mut self, _request: &ToolRequest) {}
        fn approve(&mut self, _request: &ToolRequest, _why: &str) -> Decision {
            Decision::Approve
        }
    }

    /// A session left waiting at an approval (the app was closed at the
    /// question) is settled first when it is resumed.
    #[test]
    fn an_approval_left_waiting_is_asked_again_on_resume() -> Result<()> {
        let rt = tokio::runtime::Runtime::new()
            .map_err(|e| Error::internal(e.to_string()).with_source(e))?;
        let model = ModelChoice {
            name: OFFLINE_MODEL.into(),
            reason: "test".into(),
            gguf: None,
        };
        let app = {
            let _guard = rt.enter();
            app::build(
                Arc::new(InMemorySessionStore::new()),
                model,
                Arc::new(Fleet::default()),
                None,
            )?
        };
        let chat = app.agent.chat();
        let asked = rt.block_on(chat.send(Message::user("restart the worker")))?;
        assert_eq!(asked.finish_reason, Some(AgentFinishReason::Interrupted));

        let mut ui = Approver(Vec::new());
        let mut session = asked.session_id;
        let settled = settle_pending(&rt, &app.agent, &mut session, &mut ui, false)?;
        assert_eq!(
            settled,
            Some(Outcome::Answered(
                "- Restarted worker: worker is healthy (cpu 12%, memory 20%).".into()
            ))
        );
        // Nothing waits any more.
        assert_eq!(
            settle_pending(&rt, &app.agent, &mut session, &mut ui, false)?,
            None
        );
        Ok(())
    }
}
