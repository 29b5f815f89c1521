//! An in-process chat client for an agent: each call is one run of the
//! agent's action that continues where the previous one ended (by snapshot
//! id for server-managed agents, by carrying the state for client-managed
//! ones).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use genkit_core::Result;
use genkit_core::action::BidiStream;
use parking_lot::Mutex;

use super::runtime::Agent;
use super::types::{
    AgentInit, AgentInput, AgentOutput, AgentResume, AgentStreamChunk, GetSnapshotRequest,
    SessionSnapshot, SessionState,
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
    pub async fn send(&self, message: Message) -> Result<AgentOutput> {
        self.send_stream(AgentInput::message(message))
            .output()
            .await?
            .into_result()
    }

    /// Answers or restarts the interrupted tool requests of the last turn;
    /// a failed turn is an `Err`, as for [`send`](Self::send).
    pub async fn resume(&self, resume: AgentResume) -> Result<AgentOutput> {
        self.send_stream(AgentInput::resume(resume))
            .output()
            .await?
            .into_result()
    }

    /// Sends one input and streams the turn's chunks; the conversation
    /// moves on when [`AgentTurnStream::output`] returns.
    pub fn send_stream(&self, input: AgentInput) -> AgentTurnStream {
        let init = self.cursor.lock().clone();
        let mut run = self.agent.action().start(init);
        let sent = run.send(input);
        run.close();
        AgentTurnStream {
            run,
            sent,
            cursor: self.cursor.clone(),
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
}

impl Stream for AgentTurnStream {
    type Item = Result<AgentStreamChunk>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.get_mut().run).poll_next(cx)
    }
}
