//! Where server-managed agents keep their sessions: the [`SessionStore`]
//! trait and [`InMemorySessionStore`].
//!
//! # Versions
//!
//! Every write names the version it was based on, and a store refuses a
//! write whose base is stale (`ABORTED`, see [`is_conflict`]) instead of
//! merging it. There are two versions:
//!
//! - a **session version**: the number of snapshots appended to the session.
//!   A turn reads its starting snapshot (by snapshot id or as the session's
//!   latest), runs, and [`append`](SessionStore::append)s the snapshot it
//!   produced based on the session version it read. If any other turn was
//!   appended meanwhile, the append is refused and nothing is written: the
//!   turn is retried from a fresh read or reported, never lost.
//! - a **revision** per snapshot: 1 when appended, +1 per
//!   [`update`](SessionStore::update). A detached turn's snapshot is written
//!   `pending`, then rewritten with heartbeats and its outcome; an abort
//!   rewrites it `aborted`. The outcome write is based on the revision the
//!   worker last saw, so it cannot overwrite a concurrent abort.
//!
//! One turn is one `append` — one atomic write for a persistent store. A tool
//! with side effects can record its result at once with
//! [`record_effect`](SessionStore::record_effect), outside the turn's write,
//! so a turn that fails or is retried after the tool ran finds the result and
//! does not repeat the side effect.
//!
//! Stores run in the caller's task, so a multi-tenant store can scope its
//! keys by the running action's context
//! ([`genkit_core::tracing::current_context`]).

use std::collections::{BTreeSet, HashMap, HashSet};

use async_trait::async_trait;
use genkit_core::{Error, Result, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::clock::now_rfc3339;
use super::types::{RuntimeError, SessionSnapshot, SnapshotStatus};

pub mod lease;
pub mod update;

use update::{UpdateTarget, check_update};

/// A snapshot as stored, with the versions a write based on it must name.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSnapshot {
    /// The snapshot.
    pub snapshot: SessionSnapshot,
    /// This snapshot's revision: 1 when appended, +1 per update. An
    /// [`update`](SessionStore::update) names it.
    pub revision: u64,
    /// Its session's version when read: how many snapshots had been appended
    /// to the session. An [`append`](SessionStore::append) names it.
    pub session_version: u64,
}

/// Persistent storage of agent session snapshots.
///
// The suite is only linked with feature `testing`: without it, the docs name
// it without a link (a dead one fails `cargo doc`).
#[cfg_attr(
    feature = "testing",
    doc = "Contract (checked by [`testing::session_store_suite`](crate::testing::session_store_suite),"
)]
#[cfg_attr(
    not(feature = "testing"),
    doc = "Contract (checked by `testing::session_store_suite`, feature `testing`,"
)]
/// which every implementation runs; [`update`](mod@update) holds the rules an
/// update is checked by):
///
/// - unknown snapshot or session ids are `NOT_FOUND`;
/// - a write based on a stale version is refused with `ABORTED` and leaves
///   the store unchanged, as does every other failed write;
/// - snapshots are never deleted by these operations, and a snapshot's
///   session, parent and creation time never change;
/// - a snapshot whose status is terminal (`completed`, `failed`, `aborted`)
///   is never rewritten.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// The snapshot with this id.
    async fn get(&self, snapshot_id: &str) -> Result<StoredSnapshot>;

    /// The session's latest snapshot, chosen by [`latest_leaf`]: its only
    /// leaf (a snapshot no other continues), not counting failed or aborted
    /// leaves that the session was continued past. A session that branched
    /// (resumed twice from one snapshot) has several leaves and no latest:
    /// `FAILED_PRECONDITION`, resume it by snapshot id instead. (Genkit JS's
    /// stores return the most recent leaf unless built with
    /// `rejectBranchingSessions`; guessing which branch a caller meant would
    /// silently drop the other.)
    async fn latest(&self, session_id: &str) -> Result<StoredSnapshot>;

    /// Appends a turn's snapshot to its session, provided the session is
    /// still at version `base` (0: the session must not exist yet).
    ///
    /// The snapshot needs an id not used before (`ALREADY_EXISTS`) and a
    /// session id (`sessionId`, or its state's; the two agree when both are
    /// set); its parent, if any, must be a snapshot of the same session. Returns the stored snapshot (revision 1,
    /// session version `base + 1`).
    async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot>;

    /// Rewrites a snapshot in place (status, heartbeat, outcome, state),
    /// provided it is still at revision `base`. Its session, parent and
    /// creation time must stay as they are (`INVALID_ARGUMENT`); a terminal
    /// snapshot is not rewritten (`FAILED_PRECONDITION`). Every store checks
    /// these with [`update::check_update`].
    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot>;

    /// Records a side effect's result under `key` in the session at once,
    /// outside any turn's write. The first record under a key wins: returns
    /// the result stored under `key` (this one, or an earlier one). An empty
    /// session id or key is `INVALID_ARGUMENT`.
    async fn record_effect(&self, session_id: &str, key: &str, result: Value) -> Result<Value>;

    /// The side-effect result recorded under `key` in the session, if any.
    async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Value>>;

    /// Marks a pending snapshot `aborted` and returns its status before the
    /// abort; a terminal snapshot is left as it is (its status is returned).
    /// Built on [`get`](Self::get) and [`update`](Self::update), retrying
    /// when a concurrent write wins.
    async fn abort(&self, snapshot_id: &str) -> Result<Option<SnapshotStatus>> {
        let mut attempts = 0;
        loop {
            let stored = self.get(snapshot_id).await?;
            let previous = stored.snapshot.status;
            if previous.is_some_and(SnapshotStatus::is_terminal) {
                return Ok(previous);
            }
            let mut aborted = stored.snapshot;
            aborted.status = Some(SnapshotStatus::Aborted);
            aborted.updated_at = Some(now_rfc3339());
            // The turn's replica finds its lease gone at its next renewal.
            // The heartbeat stays, as Genkit JS leaves it.
            aborted.lease_owner = None;
            aborted.lease_expires_at = None;
            match self.update(aborted, stored.revision).await {
                Ok(_) => return Ok(previous),
                Err(e) if is_conflict(&e) && attempts < MAX_ABORT_ATTEMPTS => attempts += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// Renews the lease `owner` holds on the pending snapshot `snapshot_id`
    /// (see [`lease`]): its heartbeat becomes now and its lease lapses `ttl`
    /// from now. Atomic: a renewal and a concurrent
    /// [`take_over`](Self::take_over), [`abort`](Self::abort) or outcome
    /// write never both succeed. [`LeaseRenewal::Lost`](lease::LeaseRenewal)
    /// when the snapshot is no longer pending or another owner holds it.
    ///
    /// The default reads and rewrites the whole snapshot
    /// ([`lease::renew_by_rewrite`]); a store that can renew in place (one
    /// conditional write) should.
    async fn renew_lease(
        &self,
        snapshot_id: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<lease::LeaseRenewal> {
        lease::renew_by_rewrite(self, snapshot_id, owner, ttl).await
    }

    /// Takes over the pending snapshot `snapshot_id` if its lease lapsed
    /// (its replica died): rewrites it `failed` with `error`, atomically
    /// (of two replicas taking it over at once, one writes it; the other
    /// finds it [`Settled`](lease::TakeOver::Settled)). A live lease is left
    /// alone. `fallback` is the heartbeat timeout of a pending snapshot
    /// written without a lease (by Genkit JS, or before leases).
    async fn take_over(
        &self,
        snapshot_id: &str,
        fallback: std::time::Duration,
        error: RuntimeError,
    ) -> Result<lease::TakeOver> {
        lease::take_over_by_rewrite(self, snapshot_id, fallback, error).await
    }
}

const MAX_ABORT_ATTEMPTS: u32 = 64;

/// One snapshot of a session as [`latest_leaf`] needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotLink<'a> {
    /// The snapshot's id.
    pub snapshot_id: &'a str,
    /// The snapshot it continues, if any.
    pub parent_id: Option<&'a str>,
    /// Its status.
    pub status: Option<SnapshotStatus>,
}

impl SnapshotLink<'_> {
    /// A failed or aborted turn: it left no state to continue from.
    fn is_dead(&self) -> bool {
        matches!(
            self.status,
            Some(SnapshotStatus::Failed | SnapshotStatus::Aborted)
        )
    }
}

/// Which snapshot is a session's latest, given all its snapshots in the
/// order they were appended — the rule every store's
/// [`SessionStore::latest`] applies (a store may skip it when the session
/// has a single leaf, which is then the answer):
///
/// 1. the candidates are the leaves (snapshots no other continues);
/// 2. a failed or aborted leaf is dropped when its parent was continued
///    again by a snapshot appended after it: the run after a failed turn
///    continues the last completed snapshot (as Genkit JS does), so the
///    failed one stays behind as a leaf that no longer matters;
/// 3. one candidate left is the latest (a failed leaf still standing is the
///    latest too; the runtime resumes from its last completed ancestor);
///    more mean the session branched: `FAILED_PRECONDITION`.
pub fn latest_leaf<'a>(session_id: &str, snapshots: &[SnapshotLink<'a>]) -> Result<&'a str> {
    use std::collections::HashMap;
    // Per parent (None: the roots), the index of its newest child.
    let mut newest_child: HashMap<Option<&str>, usize> = HashMap::new();
    let mut continued: HashSet<&str> = HashSet::new();
    for (i, s) in snapshots.iter().enumerate() {
        newest_child.insert(s.parent_id, i);
        if let Some(parent) = s.parent_id {
            continued.insert(parent);
        }
    }
    let mut candidates = snapshots.iter().enumerate().filter(|(i, s)| {
        !continued.contains(s.snapshot_id)
            && (!s.is_dead() || newest_child.get(&s.parent_id) == Some(i))
    });
    match (candidates.next(), candidates.next()) {
        (Some((_, leaf)), None) => Ok(leaf.snapshot_id),
        (None, _) => Err(session_not_found(session_id)),
        (Some(_), Some(_)) => Err(branching_error(session_id, 2 + candidates.count())),
    }
}

/// The error of [`SessionStore::latest`] for a session with `leaves`
/// candidate leaves (more than one): `FAILED_PRECONDITION`, as
/// [`latest_leaf`] reports it (for stores that apply its rule their own way).
pub fn branching_error(session_id: &str, leaves: usize) -> Error {
    Error::user_facing(
        StatusCode::FailedPrecondition,
        format!(
            "Session '{session_id}' has branching snapshots ({leaves} leaves), so there is no \
             single latest snapshot. Resume by snapshotId instead."
        ),
    )
}

/// Whether a store refused a write because its base version was stale
/// (`ABORTED`): re-read and retry, or report.
pub fn is_conflict(error: &Error) -> bool {
    error.status() == StatusCode::Aborted
}

/// A new random snapshot id (a UUID v4, as Genkit JS mints them).
pub fn new_snapshot_id() -> String {
    genkit_core::random_uuid()
}

/// The error for an unknown snapshot id: `NOT_FOUND`.
pub fn snapshot_not_found(snapshot_id: &str) -> Error {
    Error::user_facing(
        StatusCode::NotFound,
        format!("Snapshot {snapshot_id} not found"),
    )
}

/// The error for an unknown session id: `NOT_FOUND`.
pub fn session_not_found(session_id: &str) -> Error {
    Error::user_facing(
        StatusCode::NotFound,
        format!("Session {session_id} not found"),
    )
}

/// The error of an [`append`](SessionStore::append) based on version `base`
/// of a session now at `current`: `ABORTED` (see [`is_conflict`]).
pub fn session_conflict(session_id: &str, base: u64, current: u64) -> Error {
    stale_version(&format!("Session {session_id}"), base, current)
}

/// The error of an [`append`](SessionStore::append) of a snapshot id already
/// taken: `ALREADY_EXISTS`.
pub fn snapshot_exists(snapshot_id: &str) -> Error {
    Error::user_facing(
        StatusCode::AlreadyExists,
        format!("Snapshot {snapshot_id} already exists"),
    )
}

/// The error of an [`append`](SessionStore::append) whose parent
/// `parent_id` is stored under `parent_session`, not the appended
/// snapshot's `session_id`: `INVALID_ARGUMENT`.
pub fn parent_in_other_session(parent_id: &str, parent_session: &str, session_id: &str) -> Error {
    Error::user_facing(
        StatusCode::InvalidArgument,
        format!("Snapshot {parent_id} belongs to session {parent_session}, not {session_id}"),
    )
}

/// `what` (a session or a snapshot) is at version `current`, but a write was
/// based on `base`.
fn stale_version(what: &str, base: u64, current: u64) -> Error {
    Error::user_facing(
        StatusCode::Aborted,
        format!(
            "{what} is at version {current}, but the write was based on version {base}; \
             another write came first: read it again and retry"
        ),
    )
}

/// An in-memory [`SessionStore`]: for tests, development, and agents whose
/// sessions may die with the process. One lock guards everything, so every
/// operation is atomic.
#[derive(Default)]
pub struct InMemorySessionStore {
    inner: Mutex<Memory>,
}

#[derive(Default)]
struct Memory {
    snapshots: HashMap<String, Record>,
    sessions: HashMap<String, SessionEntry>,
    effects: HashMap<(String, String), Value>,
}

struct Record {
    snapshot: SessionSnapshot,
    session_id: String,
    revision: u64,
}

#[derive(Default)]
struct SessionEntry {
    version: u64,
    leaves: BTreeSet<String>,
    /// Its snapshots' ids, oldest append first.
    members: Vec<String>,
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Memory {
    fn stored(&self, record: &Record) -> StoredSnapshot {
        StoredSnapshot {
            snapshot: record.snapshot.clone(),
            revision: record.revision,
            session_version: self
                .sessions
                .get(&record.session_id)
                .map_or(0, |s| s.version),
        }
    }
}

/// The session a snapshot is stored under: its `sessionId`, else its
/// state's (`INVALID_ARGUMENT` when the two disagree or neither is set).
/// Every store checks a snapshot it writes with this.
pub fn snapshot_session_id(snapshot: &SessionSnapshot) -> Result<String> {
    let state_session = snapshot
        .state
        .as_ref()
        .and_then(|s| s.session_id.as_deref());
    if let (Some(outer), Some(inner)) = (snapshot.session_id.as_deref(), state_session)
        && outer != inner
    {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!(
                "snapshot {} says it belongs to session {outer} but its state to {inner}",
                snapshot.snapshot_id
            ),
        ));
    }
    match snapshot.owner_session_id() {
        Some(id) if !id.trim().is_empty() => Ok(id.to_owned()),
        _ => Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!(
                "snapshot {} has no session id; every stored snapshot belongs to a session",
                snapshot.snapshot_id
            ),
        )),
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn get(&self, snapshot_id: &str) -> Result<StoredSnapshot> {
        let mem = self.inner.lock();
        let record = mem
            .snapshots
            .get(snapshot_id)
            .ok_or_else(|| snapshot_not_found(snapshot_id))?;
        Ok(mem.stored(record))
    }

    async fn latest(&self, session_id: &str) -> Result<StoredSnapshot> {
        let mem = self.inner.lock();
        let session = mem
            .sessions
            .get(session_id)
            .ok_or_else(|| session_not_found(session_id))?;
        // One leaf is the answer; with more, the rule needs the whole session.
        let leaf = match session.leaves.first() {
            Some(only) if session.leaves.len() == 1 => only.as_str(),
            _ => {
                let mut links = Vec::with_capacity(session.members.len());
                for id in &session.members {
                    let record = mem.snapshots.get(id).ok_or_else(|| {
                        Error::internal(format!("snapshot {id} of session {session_id} lost"))
                    })?;
                    links.push(SnapshotLink {
                        snapshot_id: id,
                        parent_id: record.snapshot.parent_id.as_deref(),
                        status: record.snapshot.status,
                    });
                }
                latest_leaf(session_id, &links)?
            }
        };
        let record = mem
            .snapshots
            .get(leaf)
            .ok_or_else(|| Error::internal(format!("leaf {leaf} of session {session_id} lost")))?;
        Ok(mem.stored(record))
    }

    async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        if snapshot.snapshot_id.trim().is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a snapshot needs a non-empty snapshotId",
            ));
        }
        let session_id = snapshot_session_id(&snapshot)?;
        let mut mem = self.inner.lock();
        let current = mem.sessions.get(&session_id).map_or(0, |s| s.version);
        if current != base {
            return Err(session_conflict(&session_id, base, current));
        }
        if mem.snapshots.contains_key(&snapshot.snapshot_id) {
            return Err(snapshot_exists(&snapshot.snapshot_id));
        }
        if let Some(parent) = &snapshot.parent_id {
            let record = mem
                .snapshots
                .get(parent)
                .ok_or_else(|| snapshot_not_found(parent))?;
            if record.session_id != session_id {
                return Err(parent_in_other_session(
                    parent,
                    &record.session_id,
                    &session_id,
                ));
            }
        }
        let id = snapshot.snapshot_id.clone();
        let session = mem.sessions.entry(session_id.clone()).or_default();
        session.version += 1;
        if let Some(parent) = &snapshot.parent_id {
            session.leaves.remove(parent);
        }
        session.leaves.insert(id.clone());
        session.members.push(id.clone());
        let record = Record {
            snapshot,
            session_id,
            revision: 1,
        };
        let stored = mem.stored(&record);
        mem.snapshots.insert(id, record);
        Ok(stored)
    }

    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.clone();
        let mut mem = self.inner.lock();
        let Memory {
            snapshots,
            sessions,
            ..
        } = &mut *mem;
        let record = snapshots
            .get_mut(&id)
            .ok_or_else(|| snapshot_not_found(&id))?;
        check_update(
            &UpdateTarget::of(&record.snapshot, &record.session_id, record.revision),
            &snapshot,
            base,
        )?;
        record.snapshot = snapshot;
        record.revision += 1;
        Ok(StoredSnapshot {
            snapshot: record.snapshot.clone(),
            revision: record.revision,
            session_version: sessions.get(&record.session_id).map_or(0, |s| s.version),
        })
    }

    async fn record_effect(&self, session_id: &str, key: &str, result: Value) -> Result<Value> {
        if session_id.trim().is_empty() || key.is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a side-effect record needs a session id and a key",
            ));
        }
        let mut mem = self.inner.lock();
        Ok(mem
            .effects
            .entry((session_id.to_owned(), key.to_owned()))
            .or_insert(result)
            .clone())
    }

    async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Value>> {
        let mem = self.inner.lock();
        Ok(mem
            .effects
            .get(&(session_id.to_owned(), key.to_owned()))
            .cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_ids_are_uuid_v4() {
        let id = new_snapshot_id();
        assert_eq!(id.len(), 36);
        assert_eq!(&id[14..15], "4");
        assert!(matches!(&id[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(id, new_snapshot_id());
    }
}
