//! What a failed turn tells whom: the client (the output and the stored
//! snapshot) sees a user-facing error as it is and any other error masked,
//! as the flow server shows errors (`{"status": "INTERNAL", "message":
//! "Internal Error"}`); the full text, with its causes, goes to the server
//! log and the trace.

use genkit_core::Error;
use genkit_core::tracing::{SpanOptions, SpanType, in_span};

use crate::types::RuntimeError;

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
    RuntimeError::public(error)
}
