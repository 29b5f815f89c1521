//! The session a run starts from: a fresh one, the client's state, or a
//! stored snapshot (by id, or a session's latest, past failed turns),
//! refusing forks and running turns, and taking over turns whose lease
//! lapsed (their replica died).

use std::sync::Arc;

use genkit_core::{Error, Result, StatusCode};

use super::agent::{Shared, precondition};
use crate::clock::HEARTBEAT_TIMEOUT;
use crate::ownership;
use crate::store::lease::TakeOver;
use crate::store::{SessionStore, StoredSnapshot, new_snapshot_id};
use crate::types::{AgentInit, RuntimeError, SessionSnapshot, SessionState, SnapshotStatus};

impl Shared {
    /// The session a run starts from, the snapshot it continues, and the
    /// session version read with it (the base of the run's first append).
    /// `Err` is misuse of the init (the invocation fails); `Ok(Err)` a
    /// start that cannot be continued: an unknown or not resumable
    /// snapshot, an unknown session (or another principal's: the same
    /// answer), or a custom state failing the state schema (the run ends
    /// as a failed turn, as in Genkit JS).
    pub(super) async fn resolve(
        &self,
        init: AgentInit,
        principal: Option<&str>,
    ) -> Result<std::result::Result<(SessionState, Option<String>, u64), StartFailure>> {
        let Some(store) = &self.store else {
            for (field, given) in [
                ("snapshotId", init.snapshot_id.is_some()),
                ("sessionId", init.session_id.is_some()),
            ] {
                if given {
                    return Err(precondition(format!(
                        "Cannot use '{field}' with agent '{}': this agent has no store configured (client-managed state). Send 'state' instead.",
                        self.name
                    )));
                }
            }
            let state = match init.state {
                Some(state) => {
                    if let Err(error) = self.validate_custom(Some(&state)) {
                        // The client gets back the state it sent, as is.
                        return Ok(Err(StartFailure {
                            error,
                            state: Some(state),
                        }));
                    }
                    with_session_id(state, None)
                }
                None => fresh(None),
            };
            return Ok(Ok((state, None, 0)));
        };
        if init.state.is_some() {
            return Err(precondition(format!(
                "Cannot send 'state' to agent '{}': this agent uses a server-managed store. Send 'snapshotId' or 'sessionId' instead.",
                self.name
            )));
        }
        if let Some(session) = &init.session_id
            && session.trim().is_empty()
        {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "'sessionId' must not be empty.",
            ));
        }
        let (stored, version) = match (&init.snapshot_id, &init.session_id) {
            (Some(id), _) => {
                let Some(stored) = self.owned_snapshot(store, id, principal).await? else {
                    // As the stores word an unknown snapshot id.
                    let unknown = Error::user_facing(
                        StatusCode::NotFound,
                        format!("Snapshot {id} not found"),
                    );
                    return Ok(Err(unknown.into()));
                };
                let version = stored.session_version;
                (stored, version)
            }
            (None, Some(session)) => {
                let latest = if ownership::may_use(store, session, principal).await? {
                    store.latest(session).await
                } else {
                    Err(Error::new(StatusCode::NotFound, "not the caller's"))
                };
                match latest {
                    Ok(latest) => {
                        // Appends are based on the version read with the
                        // latest: a turn appended since (say, past the same
                        // failed leaf) makes this run's append conflict.
                        let version = latest.session_version;
                        match self.resumable_ancestor(store, latest).await? {
                            Some(stored) => (stored, version),
                            None => return Ok(Ok((fresh(Some(session.clone())), None, version))),
                        }
                    }
                    Err(e) if e.status() == StatusCode::NotFound => {
                        // No snapshot: a new session, if clients may name
                        // them, or one this principal owns (created, but
                        // its first write failed).
                        let starts = match ownership::owned_by(store, session, principal).await? {
                            None => self.client_session_ids,
                            Some(ours) => ours,
                        };
                        if starts {
                            return Ok(Ok((fresh(Some(session.clone())), None, 0)));
                        }
                        return Ok(Err(self.session_not_found(session).into()));
                    }
                    Err(e) => return Err(e),
                }
            }
            (None, None) => return Ok(Ok((fresh(None), None, 0))),
        };
        let snapshot = stored.snapshot;
        if let Some(session) = &init.session_id
            && snapshot.owner_session_id() != Some(session.as_str())
        {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                format!(
                    "Snapshot {} does not belong to session {session} (it belongs to {}).",
                    snapshot.snapshot_id,
                    snapshot.owner_session_id().unwrap_or("no session")
                ),
            ));
        }
        match snapshot.status {
            Some(SnapshotStatus::Completed) | None => {}
            Some(status) => {
                return Ok(Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    format!(
                        "Snapshot {} is not resumable (status: {status}). Only 'completed' snapshots can be resumed.",
                        snapshot.snapshot_id
                    ),
                )
                .into()));
            }
        }
        let version = match &init.snapshot_id {
            Some(id) if !self.allow_forks => self.unforked_base(store, &snapshot, id).await?,
            _ => version,
        };
        if let Err(error) = self.validate_custom(snapshot.state.as_ref()) {
            return Ok(Err(error.into()));
        }
        let owner = snapshot.owner_session_id().map(str::to_owned);
        let state = with_session_id(snapshot.state.unwrap_or_default(), owner);
        Ok(Ok((state, Some(snapshot.snapshot_id), version)))
    }

    /// The session version a run resumed by snapshot id appends on, when
    /// the snapshot is what its session resumed by id would continue (its
    /// latest, or the completed ancestor past failed turns): then the run
    /// continues the session, based on the version read with its latest.
    /// Any other snapshot would start a second branch (a fork), refused.
    pub(super) async fn unforked_base(
        &self,
        store: &Arc<dyn SessionStore>,
        snapshot: &SessionSnapshot,
        id: &str,
    ) -> Result<u64> {
        let session = snapshot.owner_session_id().unwrap_or_default();
        let fork_refused = |latest: &str| {
            precondition(format!(
                "Snapshot '{id}' is not the latest of session '{session}' ({latest}); continuing it would fork the session. Resume by 'sessionId', or fork it into a new session explicitly (Agent::fork)."
            ))
        };
        let latest = match store.latest(session).await {
            Ok(latest) => latest,
            Err(e) if e.status() == StatusCode::FailedPrecondition => {
                return Err(fork_refused("the session has branched"));
            }
            Err(e) => return Err(e),
        };
        let version = latest.session_version;
        let latest_id = latest.snapshot.snapshot_id.clone();
        match self.resumable_ancestor(store, latest).await? {
            Some(head) if head.snapshot.snapshot_id == id => Ok(version),
            _ => Err(fork_refused(&format!("its latest is '{latest_id}'"))),
        }
    }

    /// The snapshot a session resumed by id continues: its latest, or past
    /// failed and aborted turns the newest completed ancestor (`None`: start
    /// the session afresh), as Genkit JS does. A session whose latest turn is
    /// still running is refused: two turns would race on one history. A
    /// pending latest whose heartbeat expired (its worker died) is rewritten
    /// `failed` and passed like any failed turn.
    pub(super) async fn resumable_ancestor(
        &self,
        store: &Arc<dyn SessionStore>,
        mut stored: StoredSnapshot,
    ) -> Result<Option<StoredSnapshot>> {
        if stored.snapshot.status == Some(SnapshotStatus::Pending) {
            stored = self.fail_expired(store, stored).await?;
        }
        loop {
            match stored.snapshot.status {
                Some(SnapshotStatus::Completed) | None => return Ok(Some(stored)),
                _ => match stored.snapshot.parent_id.clone() {
                    Some(parent) if parent != stored.snapshot.snapshot_id => {
                        stored = store.get(&parent).await?;
                    }
                    _ => return Ok(None),
                },
            }
        }
    }

    /// A pending snapshot: refused while its turn runs (a live lease);
    /// rewritten `failed` (`UNAVAILABLE`) once its lease lapsed (its
    /// replica died), so the session is continued past it and it no longer
    /// counts as a leaf. The rewrite is the store's atomic
    /// [`take_over`](SessionStore::take_over): of replicas resuming the
    /// session at once, one writes it and the others find it failed.
    /// Returns the snapshot as it now stands.
    pub(super) async fn fail_expired(
        &self,
        store: &Arc<dyn SessionStore>,
        stored: StoredSnapshot,
    ) -> Result<StoredSnapshot> {
        if stored.snapshot.status != Some(SnapshotStatus::Pending) {
            return Ok(stored);
        }
        let error = RuntimeError::new(
            StatusCode::Unavailable,
            "The detached turn stopped reporting (its lease expired: its replica died or lost the store); the session continues from its last completed snapshot.",
        );
        match store
            .take_over(&stored.snapshot.snapshot_id, HEARTBEAT_TIMEOUT, error)
            .await?
        {
            TakeOver::Live(stored) => Err(precondition(format!(
                "Session '{}' has a turn running (snapshot {} is pending); wait until it completes or abort it.",
                stored.snapshot.owner_session_id().unwrap_or_default(),
                stored.snapshot.snapshot_id
            ))),
            TakeOver::TookOver(stored) => {
                tracing::info!(
                    agent = %self.name,
                    snapshot = %stored.snapshot.snapshot_id,
                    "took over a detached turn whose lease lapsed; it is recorded as failed"
                );
                Ok(stored)
            }
            TakeOver::Settled(stored) => Ok(stored),
        }
    }
}

/// Why a run could not start from its init; the run ends as a failed turn.
pub(super) struct StartFailure {
    pub(super) error: Error,
    /// The state the client sent, returned as is (client-managed agents).
    pub(super) state: Option<SessionState>,
}

impl From<Error> for StartFailure {
    fn from(error: Error) -> Self {
        Self { error, state: None }
    }
}

/// A new session's state, with the lists Genkit JS writes for one.
pub(super) fn fresh(session_id: Option<String>) -> SessionState {
    let state = SessionState {
        messages: Some(Arc::default()),
        artifacts: Some(Vec::new()),
        ..SessionState::default()
    };
    with_session_id(state, session_id)
}

/// The state with `session_id` (or its own, or a new one).
pub(super) fn with_session_id(mut state: SessionState, session_id: Option<String>) -> SessionState {
    if let Some(id) = session_id {
        state.session_id = Some(id);
    }
    if state.session_id.as_deref().is_none_or(str::is_empty) {
        state.session_id = Some(new_snapshot_id());
    }
    state
}
