//! What a failed turn tells whom: the client (the output and the stored
//! snapshot) sees a user-facing error as it is and any other error masked,
//! as the flow server shows errors (`{"status": "INTERNAL", "message":
//! "Internal Error"}`); the full text, with its causes, goes to the server
//! log and the trace. An in-process caller ([`AgentChat`](crate::AgentChat))
//! also gets the full error, through a [`FailedTurnSlot`] it put in the
//! run's extensions.

use std::sync::Arc;

use genkit_core::Error;
use genkit_core::tracing::{SpanOptions, SpanType, current_extensions, in_span};
use parking_lot::Mutex;

use crate::types::RuntimeError;

/// Where a failed turn leaves its full error (causes, trace id) for the
/// in-process caller that started the run. It is a typed extension of the
/// run, which only Rust code in this process can set: a request over HTTP
/// never gets one, so what a remote client sees stays masked.
#[derive(Clone, Default)]
pub(crate) struct FailedTurnSlot(Arc<Mutex<Option<Error>>>);

impl FailedTurnSlot {
    /// The full error behind `output_error` (the output's, possibly masked,
    /// error), if this slot holds the one that produced it.
    pub(crate) fn explain(&self, output_error: &RuntimeError) -> Option<Error> {
        let full = self.0.lock().take()?;
        (RuntimeError::public(&full) == *output_error).then_some(full)
    }
}

/// Logs and traces a failed turn of `agent`, and returns the error as the
/// client and the snapshot may carry it.
pub(crate) async fn report_failed_turn(agent: &str, error: &Error) -> RuntimeError {
    if error.is_user_facing() {
        tracing::info!(agent, "agent `{agent}` turn failed: {error}");
    } else {
        tracing::error!(
            agent,
            "agent `{agent}` turn failed (the client sees `Internal Error`): {}",
            error.stack()
        );
    }
    if error.trace_id().is_none() {
        // No span recorded it (it came from the turn function or the
        // runtime, not from an action it called): record it in the agent's
        // trace, as a failed step of the turn.
        let failed = error.clone();
        let _ = in_span::<(), _>(
            SpanOptions::new("agentTurn", SpanType::Util),
            None,
            async move { Err(failed) },
        )
        .await;
    }
    if let Some(slot) = current_extensions().get::<FailedTurnSlot>() {
        *slot.0.lock() = Some(error.clone());
    }
    RuntimeError::public(error)
}
