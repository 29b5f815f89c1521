//! An in-process chat client for an agent: each call is one run of the
//! agent's action that continues where the previous one ended (by snapshot
//! id for server-managed agents, by carrying the state for client-managed
//! ones).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use genkit_core::action::{BidiStream, RunOptions};
use genkit_core::{Error, Result};
use parking_lot::Mutex;

use super::runtime::{Agent, FailedTurnSlot};
use super::types::{
    AgentFinishReason, AgentInit, AgentInput, AgentOutput, AgentResume, AgentStreamChunk,
    GetSnapshotRequest, SessionSnapshot, SessionState,
};
use genkit_model::types::Message;

/// A conversation with an agent (see [`Agent::chat`]). Cheap to clone;
/// clones continue the same conversation.
#[derive(Clone, Debug)]
pub struct AgentChat {
    agent: Agent,
    cursor: Arc<Mutex<AgentInit>>,
}

impl Agent {
    /// A new conversation (a fresh session).
    pub fn chat(&self) -> AgentChat {
        self.chat_from(AgentInit::default())
    }

    /// A conversation continuing from `init` (a snapshot id, a session id,
    /// or a client-managed state).
    pub fn chat_from(&self, init: AgentInit) -> AgentChat {
        AgentChat {
            agent: self.clone(),
            cursor: Arc::new(Mutex::new(init)),
        }
    }
}

impl AgentChat {
    /// Sends a message and returns the turn's output.
    ///
    /// A turn that failed (the model or a tool failed, the input was
    /// refused) is an `Err` with the turn's status and message, so it
    /// cannot pass for an answer; the conversation stays where it was, and
    /// the next message continues from the last good turn. To get the
    /// failed output itself (`finishReason: failed`, as the agent protocol
    /// reports it), use [`send_stream`](Self::send_stream).
    ///
    /// The error is the one the turn failed with, causes included (a remote
    /// client of the same agent sees an internal error masked as `Internal
    /// Error`; an in-process caller is the server's own code).
    pub async fn send(&self, message: Message) -> Result<AgentOutput> {
        self.send_stream(AgentInput::message(message))
            .output_or_error()
            .await
    }

    /// Answers or restarts the interrupted tool requests of the last turn;
    /// a failed turn is an `Err`, as for [`send`](Self::send).
    pub async fn resume(&self, resume: AgentResume) -> Result<AgentOutput> {
        self.send_stream(AgentInput::resume(resume))
            .output_or_error()
            .await
    }

    /// Sends one input and streams the turn's chunks; the conversation
    /// moves on when [`AgentTurnStream::output`] returns.
    pub fn send_stream(&self, input: AgentInput) -> AgentTurnStream {
        let init = self.cursor.lock().clone();
        let failed_turn = FailedTurnSlot::default();
        let options = RunOptions::default().extension(failed_turn.clone());
        let mut run = self.agent.action().start_with(init, options);
        let sent = run.send(input);
        run.close();
        AgentTurnStream {
            run,
            sent,
            cursor: self.cursor.clone(),
            failed_turn,
        }
    }

    /// The session id, once the first turn ran (or from the init).
    pub fn session_id(&self) -> Option<String> {
        let cursor = self.cursor.lock();
        cursor
            .session_id
            .clone()
            .or_else(|| cursor.state.as_ref()?.session_id.clone())
    }

    /// The snapshot the next turn continues (server-managed agents).
    pub fn snapshot_id(&self) -> Option<String> {
        self.cursor.lock().snapshot_id.clone()
    }

    /// The session state the next turn starts from (client-managed agents).
    pub fn state(&self) -> Option<SessionState> {
        self.cursor.lock().state.clone()
    }

    /// The stored snapshot the conversation is at (server-managed agents).
    pub async fn snapshot(&self) -> Result<SessionSnapshot> {
        let request = {
            let cursor = self.cursor.lock();
            match &cursor.snapshot_id {
                Some(id) => GetSnapshotRequest {
                    snapshot_id: Some(id.clone()),
                    session_id: None,
                },
                None => GetSnapshotRequest {
                    snapshot_id: None,
                    session_id: cursor.session_id.clone(),
                },
            }
        };
        self.agent.get_snapshot(request).await
    }
}

/// The chunks of one chat turn, then its output.
pub struct AgentTurnStream {
    run: BidiStream<AgentInput, AgentStreamChunk, AgentOutput>,
    sent: Result<()>,
    cursor: Arc<Mutex<AgentInit>>,
    failed_turn: FailedTurnSlot,
}

impl AgentTurnStream {
    /// Runs the turn to completion and returns its output, a failed one
    /// included (`finishReason: failed` and its `error`); the conversation
    /// continues from it (from the last good turn after a failure).
    pub async fn output(self) -> Result<AgentOutput> {
        self.sent?;
        let output = self.run.output().await?;
        let mut cursor = self.cursor.lock();
        if let Some(id) = &output.snapshot_id {
            // Resume by snapshot: exactly this turn, even if others branch.
            *cursor = AgentInit {
                snapshot_id: Some(id.clone()),
                session_id: output.session_id.clone(),
                state: None,
            };
        } else if let Some(state) = &output.state {
            *cursor = AgentInit {
                state: Some(state.clone()),
                ..AgentInit::default()
            };
        }
        Ok(output)
    }

    /// [`output`](Self::output), with a failed turn as its full error.
    async fn output_or_error(self) -> Result<AgentOutput> {
        let failed_turn = self.failed_turn.clone();
        let output = self.output().await?;
        match (&output.finish_reason, &output.error) {
            (Some(AgentFinishReason::Failed), Some(error)) => {
                let full = failed_turn.explain(error);
                Err(full.unwrap_or_else(|| Error::from(error)))
            }
            _ => output.into_result(),
        }
    }
}

impl Stream for AgentTurnStream {
    type Item = Result<AgentStreamChunk>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().run).poll_next(cx)
    }
}
