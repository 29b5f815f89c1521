//! Detached turns: a turn handed to a background task with a pending
//! snapshot, held by a lease its heartbeat renews, bounded by its deadline,
//! and stopped by an abort (from any replica sharing the store) or a lost
//! lease; the outcome rewrites the pending snapshot.

use std::sync::Arc;
use std::time::Instant;

use genkit_core::{CancellationToken, Error, Result, StatusCode};

use super::TurnFuture;
use super::agent::{Shared, precondition};
use super::detach_limits::{DetachedSlot, deadline_exceeded};
use super::replica::LeaseConfig;
use super::run::Progress;
use super::snapshots::snapshot_of;
use super::turn_failure::report_failed_turn;
use crate::clock::now_rfc3339;
use crate::session::AgentSession;
use crate::store::lease::{self, LeaseRenewal};
use crate::store::{SessionStore, is_conflict};
use crate::types::{
    AgentAbortRequest, AgentAbortResponse, AgentFinishReason, AgentOutput, AgentResult,
    SessionState, SnapshotStatus,
};

impl Shared {
    pub(super) fn detach_store(&self) -> Result<&Arc<dyn SessionStore>> {
        self.store.as_ref().ok_or_else(|| {
            precondition("Detach is only supported when a session store is provided.".to_owned())
        })
    }

    /// Aborts a detached turn: marks its snapshot `aborted` in the store and
    /// cancels the turn (its model calls and tools) at once if it runs in
    /// this process; a turn running on another replica finds its lease lost
    /// at its next heartbeat and stops. A snapshot of another principal is
    /// left alone and answered as an unknown one (no status).
    pub(super) async fn abort(
        &self,
        req: AgentAbortRequest,
        principal: Option<&str>,
    ) -> Result<AgentAbortResponse> {
        let store = self.store("abort")?;
        let unknown = AgentAbortResponse {
            snapshot_id: req.snapshot_id.clone(),
            status: None,
        };
        if self
            .owned_snapshot(store, &req.snapshot_id, principal)
            .await?
            .is_none()
        {
            return Ok(unknown);
        }
        let status = match store.abort(&req.snapshot_id).await {
            Ok(status) => status,
            Err(e) if e.status() == StatusCode::NotFound => None,
            Err(e) => return Err(e),
        };
        if let Some(token) = self.running.lock().remove(&req.snapshot_id) {
            token.cancel();
        }
        Ok(AgentAbortResponse {
            snapshot_id: req.snapshot_id,
            status,
        })
    }
}

/// Hands the running turn (if any, with its place under the agent's limit
/// of detached turns) to a background task: a pending snapshot of `state`
/// is stored at once and rewritten with the turn's outcome.
///
/// With no turn (a detach-only input between turns) the session is as its
/// last snapshot left it, so nothing is written and that snapshot's id is
/// returned: writing a copy would give its parent a second child, a fork
/// that leaves the session without a latest snapshot. A session not stored
/// yet gets its first, completed snapshot.
pub(super) async fn detach(
    shared: &Arc<Shared>,
    session: &AgentSession,
    progress: &mut Progress,
    turn: Option<(TurnFuture, DetachedSlot)>,
    state: SessionState,
) -> Result<AgentOutput> {
    let store = shared.detach_store()?.clone();
    session.detach_stream();
    let detached = |snapshot_id: String| AgentOutput {
        session_id: Some(session.session_id()),
        snapshot_id: Some(snapshot_id),
        finish_reason: Some(AgentFinishReason::Detached),
        ..AgentOutput::default()
    };
    if turn.is_none()
        && let Some(current) = &progress.parent
    {
        return Ok(detached(current.clone()));
    }
    let status = if turn.is_some() {
        SnapshotStatus::Pending
    } else {
        SnapshotStatus::Completed
    };
    let mut snap = snapshot_of(session, progress.parent.clone(), status, state);
    if turn.is_some() {
        lease::grant(&mut snap, &shared.lease.owner, shared.lease.ttl);
    }
    let principal = progress.principal.as_deref();
    let id = shared
        .append(&store, snap, progress.version, principal)
        .await?
        .snapshot
        .snapshot_id;
    if let Some((turn, slot)) = turn {
        shared
            .running
            .lock()
            .insert(id.clone(), session.abort_token());
        // The caller's lease (the server's concurrency permit) goes with
        // the turn: it counts as in flight until it ends.
        let lease = genkit_core::RunLease::current();
        tokio::spawn(finish_detached(
            shared.clone(),
            store,
            session.clone(),
            id.clone(),
            turn,
            (slot, lease),
        ));
    }
    Ok(detached(id))
}

/// How a detached turn's run ended.
enum Ending {
    /// The turn function returned.
    Returned(Result<AgentResult>),
    /// Its abort signal fired (an abort here, or one seen in the store).
    Aborted,
    /// It ran past the agent's detached timeout.
    Deadline,
}

/// Runs a detached turn to its end, renewing its pending snapshot's lease,
/// and records the outcome. An abort (through this process's abort action,
/// or one written by any replica, which the next renewal finds as a lost
/// lease), a takeover by another replica, or the deadline stops the turn
/// at once: its future, with the model calls and tools it is running, is
/// dropped, and actions started after that see their cancellation. The
/// outcome is written only over the snapshot still pending under this
/// replica's lease.
async fn finish_detached(
    shared: Arc<Shared>,
    store: Arc<dyn SessionStore>,
    session: AgentSession,
    id: String,
    turn: TurnFuture,
    // The lease is held to the end, the outcome's write included.
    (slot, _lease): (DetachedSlot, Option<genkit_core::RunLease>),
) {
    let abort = session.abort_token();
    let heartbeat = heartbeat(
        store.clone(),
        id.clone(),
        shared.lease.clone(),
        abort.clone(),
    );
    let ending = tokio::select! {
        outcome = turn => Ending::Returned(outcome),
        () = abort.cancelled() => Ending::Aborted,
        () = tokio::time::sleep(shared.detached_timeout) => Ending::Deadline,
        () = heartbeat => Ending::Aborted,
    };
    // Anything the turn started elsewhere (spawned with its context) stops.
    abort.cancel();
    shared.running.lock().remove(&id);
    drop(slot);
    let outcome = match ending {
        Ending::Returned(outcome) => outcome,
        Ending::Aborted => Err(Error::cancelled()),
        Ending::Deadline => Err(deadline_exceeded(shared.detached_timeout)),
    };
    // A turn that grew the session past a cap fails as an attached one
    // does: the session stays as the pending snapshot holds it.
    let mut over_cap = false;
    let outcome = outcome.and_then(|result| {
        let (grown, origin) = session.state_and_origin();
        shared
            .limits
            .check_state(&grown, &origin, &shared.history_sizes, 0, 0)
            .inspect_err(|_| over_cap = true)?;
        Ok(result)
    });
    for _ in 0..16 {
        let Ok(stored) = store.get(&id).await else {
            return;
        };
        if stored.snapshot.status != Some(SnapshotStatus::Pending) {
            return; // aborted meanwhile: the abort stands
        }
        if stored.snapshot.lease_owner.as_deref() != Some(shared.lease.owner.as_str()) {
            return; // another replica's lease: not this turn's to settle
        }
        let mut snap = stored.snapshot;
        let now = now_rfc3339();
        snap.updated_at = Some(now);
        // The turn is over: its lease goes (heartbeats only tell a running
        // turn from a dead one).
        lease::release(&mut snap);
        // The outcome with the state as the turn left it (a failed one too,
        // as for attached turns), unless that state is over a cap.
        if !over_cap {
            snap.state = Some(session.state());
        }
        match &outcome {
            Ok(result) => {
                snap.status = Some(SnapshotStatus::Completed);
                snap.finish_reason = result.finish_reason;
            }
            Err(error) => {
                snap.status = Some(SnapshotStatus::Failed);
                snap.finish_reason = Some(AgentFinishReason::Failed);
                snap.error = Some(report_failed_turn(&shared.name, error).await);
            }
        }
        match store.update(snap, stored.revision).await {
            Err(e) if is_conflict(&e) => continue,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "could not record a detached turn's outcome");
                return;
            }
            Ok(_) => return,
        }
    }
}

/// Keeps a detached turn's pending snapshot `id` leased: renews the lease
/// every heartbeat interval until it is lost (the snapshot was aborted by
/// any replica, or failed by one that took the turn over), then cancels the
/// turn through `abort` and returns. A replica that cannot reach the store
/// keeps trying, but stops the turn itself once its last renewal is a lease
/// time old: by then another replica may have taken the session over.
async fn heartbeat(
    store: Arc<dyn SessionStore>,
    id: String,
    lease: LeaseConfig,
    abort: CancellationToken,
) {
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(lease.heartbeat).await;
        match store.renew_lease(&id, &lease.owner, lease.ttl).await {
            Ok(LeaseRenewal::Renewed) => renewed = Instant::now(),
            Ok(LeaseRenewal::Lost(status)) => {
                tracing::info!(snapshot = %id, ?status, "a detached turn lost its lease; stopping it");
                abort.cancel();
                return;
            }
            Err(e) if renewed.elapsed() >= lease.ttl => {
                tracing::warn!(snapshot = %id, error = %e, "a detached turn could not renew its lease in time; stopping it");
                abort.cancel();
                return;
            }
            Err(e) => {
                tracing::debug!(snapshot = %id, error = %e, "renewing a detached turn's lease failed; retrying");
            }
        }
    }
}
