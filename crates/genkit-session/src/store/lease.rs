//! Leases of detached turns, so that several replicas can share one store.
//!
//! A detached turn's pending snapshot carries a lease: the replica that runs
//! the turn (`leaseOwner`) and when the lease lapses (`leaseExpiresAt`). The
//! turn's heartbeat renews it ([`SessionStore::renew_lease`]) every few
//! seconds; while it is renewed, no other replica may touch the session.
//! When it lapses (the replica died, or lost the store for longer than the
//! lease), any replica may take the turn over ([`SessionStore::take_over`]):
//! the snapshot is rewritten `failed` and the session continues from its
//! last completed snapshot.
//!
//! Renewals and takeovers are compare-and-set writes: each is based on the
//! snapshot's revision it read, and a renewal bumps the revision. Of a
//! renewal and a takeover racing on one snapshot, or of two takeovers,
//! exactly one is written; the other finds the snapshot changed and looks
//! again (a live lease, or a turn already failed). The run that continues
//! the session then appends based on the session version, so two replicas
//! that both saw the failed turn still cannot both continue it (no fork).
//!
//! An abort is written to the store too (the snapshot becomes `aborted`),
//! so the renewal of the replica running the turn finds its lease lost and
//! stops the turn: an abort sent to any replica stops the turn within one
//! heartbeat interval.
//!
//! Expiry is judged by the reader's clock against the expiry the owner
//! wrote: replicas' clocks must agree to well within the lease time minus
//! the heartbeat interval (NTP does).

use std::time::{Duration, SystemTime};

use genkit_core::{Result, StatusCode};

use super::{SessionStore, StoredSnapshot, is_conflict};
use crate::clock::{effective_status, now_rfc3339, rfc3339_at};
use crate::types::{AgentFinishReason, RuntimeError, SessionSnapshot, SnapshotStatus};

/// How many times a renewal or takeover re-reads a snapshot that changed
/// under it before it gives up (`ABORTED`).
const MAX_ATTEMPTS: u32 = 16;

/// What a [`renew_lease`](SessionStore::renew_lease) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseRenewal {
    /// The lease is the owner's until the new expiry.
    Renewed,
    /// The lease is gone: the snapshot is no longer pending (its outcome
    /// was written, it was aborted, or another replica took the turn over
    /// and failed it: its status), or another owner holds it (`pending`).
    /// The turn must stop; its outcome can no longer be recorded.
    Lost(Option<SnapshotStatus>),
}

/// What a [`take_over`](SessionStore::take_over) did.
#[derive(Debug, Clone, PartialEq)]
pub enum TakeOver {
    /// The lease is live (its turn runs): nothing was written.
    Live(StoredSnapshot),
    /// The lease had lapsed: this call rewrote the snapshot `failed`.
    TookOver(StoredSnapshot),
    /// The snapshot was not pending (any more): finished, aborted, or failed
    /// by another replica's takeover. Nothing was written.
    Settled(StoredSnapshot),
}

impl TakeOver {
    /// The snapshot as it now stands.
    pub fn snapshot(&self) -> &StoredSnapshot {
        match self {
            Self::Live(s) | Self::TookOver(s) | Self::Settled(s) => s,
        }
    }
}

/// Gives `snapshot` (a pending one about to be appended) a lease held by
/// `owner` for `ttl` from now, and a heartbeat of now.
pub fn grant(snapshot: &mut SessionSnapshot, owner: &str, ttl: Duration) {
    let now = SystemTime::now();
    snapshot.heartbeat_at = Some(rfc3339_at(now));
    snapshot.lease_owner = Some(owner.to_owned());
    snapshot.lease_expires_at = Some(rfc3339_at(now + ttl));
}

/// Clears a snapshot's lease, for the write that ends its turn.
pub fn release(snapshot: &mut SessionSnapshot) {
    snapshot.heartbeat_at = None;
    snapshot.lease_owner = None;
    snapshot.lease_expires_at = None;
}

/// Whether `snapshot` is pending with a lapsed lease at `now` (see
/// [`effective_status`]; `fallback` is the heartbeat timeout of snapshots
/// written without a lease).
pub fn lapsed(snapshot: &SessionSnapshot, now: SystemTime, fallback: Duration) -> bool {
    effective_status(snapshot, now, fallback) == Some(SnapshotStatus::Expired)
}

/// [`SessionStore::renew_lease`] for any store: read the snapshot, and
/// rewrite it with a fresh heartbeat and expiry based on the revision read
/// (re-reading when another write wins).
pub async fn renew_by_rewrite<S: SessionStore + ?Sized>(
    store: &S,
    snapshot_id: &str,
    owner: &str,
    ttl: Duration,
) -> Result<LeaseRenewal> {
    for _ in 0..MAX_ATTEMPTS {
        let stored = store.get(snapshot_id).await?;
        let mut snap = stored.snapshot;
        if snap.status != Some(SnapshotStatus::Pending) {
            return Ok(LeaseRenewal::Lost(snap.status));
        }
        if snap.lease_owner.as_deref() != Some(owner) {
            return Ok(LeaseRenewal::Lost(snap.status));
        }
        let now = SystemTime::now();
        snap.heartbeat_at = Some(rfc3339_at(now));
        snap.lease_expires_at = Some(rfc3339_at(now + ttl));
        match store.update(snap, stored.revision).await {
            Ok(_) => return Ok(LeaseRenewal::Renewed),
            // Another write came first (an abort, a takeover, this turn's
            // outcome): look again.
            Err(e) if is_conflict(&e) || e.status() == StatusCode::FailedPrecondition => {}
            Err(e) => return Err(e),
        }
    }
    Err(changing(snapshot_id))
}

/// [`SessionStore::take_over`] for any store: read the snapshot and, if its
/// lease lapsed, rewrite it `failed` with `error`, based on the revision
/// read (re-reading when another write wins, e.g. a late renewal).
pub async fn take_over_by_rewrite<S: SessionStore + ?Sized>(
    store: &S,
    snapshot_id: &str,
    fallback: Duration,
    error: RuntimeError,
) -> Result<TakeOver> {
    for _ in 0..MAX_ATTEMPTS {
        let stored = store.get(snapshot_id).await?;
        if stored.snapshot.status != Some(SnapshotStatus::Pending) {
            return Ok(TakeOver::Settled(stored));
        }
        if !lapsed(&stored.snapshot, SystemTime::now(), fallback) {
            return Ok(TakeOver::Live(stored));
        }
        let mut failed = stored.snapshot.clone();
        failed.status = Some(SnapshotStatus::Failed);
        failed.finish_reason = Some(AgentFinishReason::Failed);
        failed.updated_at = Some(now_rfc3339());
        failed.error = Some(error.clone());
        release(&mut failed);
        match store.update(failed, stored.revision).await {
            Ok(rewritten) => return Ok(TakeOver::TookOver(rewritten)),
            Err(e) if is_conflict(&e) || e.status() == StatusCode::FailedPrecondition => {}
            Err(e) => return Err(e),
        }
    }
    Err(changing(snapshot_id))
}

fn changing(snapshot_id: &str) -> genkit_core::Error {
    genkit_core::Error::user_facing(
        StatusCode::Aborted,
        format!("Snapshot {snapshot_id} kept changing while its lease was being settled; retry."),
    )
}
