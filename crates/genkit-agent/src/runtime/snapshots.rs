//! Snapshots: reading them (by id, or a session's latest) as their owner,
//! forking one into a new session, and appending a turn's snapshot to its
//! session.

use std::sync::Arc;

use genkit_core::{Error, Result, StatusCode};

use super::agent::{Shared, precondition};
use super::start::{fresh, with_session_id};
use crate::clock::{HEARTBEAT_TIMEOUT, effective_status, now_rfc3339};
use crate::ownership;
use crate::session::AgentSession;
use crate::store::{SessionStore, StoredSnapshot, new_snapshot_id};
use crate::types::{GetSnapshotRequest, SessionSnapshot, SessionState, SnapshotStatus};

impl Shared {
    /// What a caller who may not see a snapshot is told: exactly what an
    /// unknown snapshot id gets.
    pub(super) fn snapshot_not_found(&self, id: &str) -> Error {
        Error::user_facing(
            StatusCode::NotFound,
            format!("Snapshot '{id}' not found for agent '{}'.", self.name),
        )
    }

    /// What resuming an unknown session (or another principal's) is told.
    pub(super) fn session_not_found(&self, id: &str) -> Error {
        Error::user_facing(
            StatusCode::NotFound,
            format!(
                "Session '{id}' not found for agent '{}'; omit `sessionId` to start a new session.",
                self.name
            ),
        )
    }

    /// The stored snapshot `id` if `principal` may see it (its session is
    /// theirs); `None` alike for unknown ids and other principals'.
    pub(super) async fn owned_snapshot(
        &self,
        store: &Arc<dyn SessionStore>,
        id: &str,
        principal: Option<&str>,
    ) -> Result<Option<StoredSnapshot>> {
        let stored = match store.get(id).await {
            Ok(stored) => stored,
            Err(e) if e.status() == StatusCode::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let session = stored.snapshot.owner_session_id().unwrap_or_default();
        if session.is_empty() || !ownership::may_use(store, session, principal).await? {
            return Ok(None);
        }
        Ok(Some(stored))
    }

    /// Reads a snapshot by id, or a session's latest; a snapshot or session
    /// of another principal reads as unknown (`NOT_FOUND`).
    pub(super) async fn read_snapshot(
        &self,
        req: GetSnapshotRequest,
        principal: Option<&str>,
    ) -> Result<SessionSnapshot> {
        let store = self.store("getSnapshotData")?;
        let mut snapshot = match (&req.snapshot_id, &req.session_id) {
            (Some(id), None) => match self.owned_snapshot(store, id, principal).await? {
                Some(stored) => stored.snapshot,
                None => return Err(self.snapshot_not_found(id)),
            },
            (None, Some(session)) => {
                let lookup = if ownership::may_use(store, session, principal).await? {
                    store.latest(session).await
                } else {
                    Err(Error::new(StatusCode::NotFound, "not the caller's"))
                };
                match lookup {
                    Ok(stored) => stored.snapshot,
                    Err(e) if e.status() == StatusCode::NotFound => {
                        return Err(self.snapshot_not_found(session));
                    }
                    Err(e) => return Err(e),
                }
            }
            (snapshot, _) => {
                let got = if snapshot.is_some() {
                    "snapshotId and sessionId"
                } else {
                    "neither"
                };
                return Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    format!(
                        "getSnapshot requires exactly one of 'snapshotId' or 'sessionId' (got {got})."
                    ),
                ));
            }
        };
        snapshot.status =
            effective_status(&snapshot, std::time::SystemTime::now(), HEARTBEAT_TIMEOUT);
        // The lease is between replicas: clients see Genkit JS's shape.
        snapshot.lease_owner = None;
        snapshot.lease_expires_at = None;
        snapshot.state = snapshot.state.map(|s| self.client_state(s));
        Ok(snapshot)
    }

    /// Copies a completed snapshot the caller owns into a new session
    /// (server-minted id, owned by the caller); returns its id.
    pub(super) async fn fork(&self, snapshot_id: &str, principal: Option<&str>) -> Result<String> {
        let store = self.store("fork")?;
        let snapshot = self
            .owned_snapshot(store, snapshot_id, principal)
            .await?
            .ok_or_else(|| self.snapshot_not_found(snapshot_id))?
            .snapshot;
        if let Some(status) = snapshot.status.filter(|s| *s != SnapshotStatus::Completed) {
            return Err(precondition(format!(
                "Snapshot '{snapshot_id}' cannot be forked (status: {status}); only completed snapshots can."
            )));
        }
        let session_id = new_snapshot_id();
        let state = with_session_id(
            snapshot.state.unwrap_or_else(|| fresh(None)),
            Some(session_id.clone()),
        );
        let now = now_rfc3339();
        let mut copy = SessionSnapshot::new(new_snapshot_id(), now.clone());
        copy.session_id = Some(session_id.clone());
        copy.updated_at = Some(now);
        copy.status = Some(SnapshotStatus::Completed);
        copy.finish_reason = snapshot.finish_reason;
        copy.state = Some(state);
        self.append(store, copy, 0, principal).await?;
        Ok(session_id)
    }

    /// Appends a turn's snapshot, based on the session version the run last
    /// read or wrote (`base`). If another turn was appended to the session
    /// meanwhile, the store refuses it (`ABORTED`) and the run fails with
    /// that error, nothing written: the turn was computed from a state that
    /// is no longer the session's, so re-basing it would fork the session
    /// behind the caller's back. The caller retries the turn from a fresh
    /// read (e.g. resuming by session id again).
    ///
    /// A session's first snapshot (`base` 0) creates it: its owner,
    /// `principal`, is recorded first; a session someone else created
    /// meanwhile under the same (client-chosen) id is `NOT_FOUND`.
    pub(super) async fn append(
        &self,
        store: &Arc<dyn SessionStore>,
        snapshot: SessionSnapshot,
        base: u64,
        principal: Option<&str>,
    ) -> Result<StoredSnapshot> {
        if base == 0 {
            let session = snapshot.owner_session_id().unwrap_or_default().to_owned();
            if !session.is_empty() && !ownership::claim(store, &session, principal).await? {
                return Err(self.session_not_found(&session));
            }
        }
        store.append(snapshot, base).await
    }
}

pub(super) fn snapshot_of(
    session: &AgentSession,
    parent: Option<String>,
    status: SnapshotStatus,
    state: SessionState,
) -> SessionSnapshot {
    let now = now_rfc3339();
    let mut snapshot = SessionSnapshot::new(new_snapshot_id(), now.clone());
    snapshot.session_id = Some(session.session_id());
    snapshot.parent_id = parent;
    snapshot.updated_at = Some(now);
    snapshot.status = Some(status);
    snapshot.state = Some(state);
    snapshot
}
