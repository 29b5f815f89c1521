//! The rules for accepting a snapshot [`update`](super::SessionStore::update),
//! written once for every store.
//!
//! A store reads the stored snapshot, describes it as an [`UpdateTarget`],
//! and calls [`check_update`] before it writes anything. In order, the
//! update is refused with:
//!
//! 1. `ABORTED` when it was based on a revision other than the stored one
//!    (another write came first: re-read and retry, see
//!    [`is_conflict`](super::is_conflict));
//! 2. `INVALID_ARGUMENT` when the snapshot names no session, names two, or
//!    changes its session, parent or creation time (they never change);
//! 3. `FAILED_PRECONDITION` when the stored snapshot is terminal
//!    (`completed`, `failed`, `aborted`): a finished turn is not rewritten.
//!
//! An unknown snapshot (`NOT_FOUND`, [`snapshot_not_found`](super::snapshot_not_found))
//! is the store's to report, as only it knows how it looks snapshots up.
//!
//! Stores that keep a snapshot's state as a diff against its parent's add
//! one rule after these, [`check_state_rewrite`]: a snapshot that others
//! continue keeps its state. The in-memory store keeps whole states, so it
//! has no need for it.

use genkit_core::{Error, Result, StatusCode};

use super::snapshot_session_id;
use crate::types::{SessionSnapshot, SnapshotStatus};

/// What [`check_update`] needs of the stored snapshot an update rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpdateTarget<'a> {
    /// The snapshot's id.
    pub snapshot_id: &'a str,
    /// The session it is stored under.
    pub session_id: &'a str,
    /// The snapshot it continues, if any.
    pub parent_id: Option<&'a str>,
    /// When it was created (RFC 3339), as stored.
    pub created_at: &'a str,
    /// Its stored status.
    pub status: Option<SnapshotStatus>,
    /// Its stored revision.
    pub revision: u64,
}

impl<'a> UpdateTarget<'a> {
    /// The target for a stored `snapshot` under `session_id` at `revision`.
    pub fn of(snapshot: &'a SessionSnapshot, session_id: &'a str, revision: u64) -> Self {
        Self {
            snapshot_id: &snapshot.snapshot_id,
            session_id,
            parent_id: snapshot.parent_id.as_deref(),
            created_at: &snapshot.created_at,
            status: snapshot.status,
            revision,
        }
    }
}

/// Whether `update`, written based on revision `base`, may replace the stored
/// snapshot `target`: the rules of the [module docs](self), in their order.
pub fn check_update(target: &UpdateTarget<'_>, update: &SessionSnapshot, base: u64) -> Result<()> {
    let id = target.snapshot_id;
    check_revision(id, base, target.revision)?;
    if snapshot_session_id(update)? != target.session_id
        || update.parent_id.as_deref() != target.parent_id
        || update.created_at != target.created_at
    {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!("an update of snapshot {id} must keep its session, parent and creation time"),
        ));
    }
    if let Some(status) = target.status.filter(|s| s.is_terminal()) {
        return Err(Error::user_facing(
            StatusCode::FailedPrecondition,
            format!("Snapshot {id} is {status}; a finished snapshot is not rewritten"),
        ));
    }
    Ok(())
}

/// The first rule of [`check_update`] on its own: `ABORTED` unless the write
/// was based on the `current` revision. For a store that can read the
/// revision before the rest of the snapshot (and so reports a stale write
/// before anything it fails to decode), or that learns of a lost race only
/// when it writes.
pub fn check_revision(snapshot_id: &str, base: u64, current: u64) -> Result<()> {
    if base == current {
        Ok(())
    } else {
        Err(revision_conflict(snapshot_id, base, current))
    }
}

/// The error of a write based on revision `base` of a snapshot now at
/// `current`: `ABORTED`.
pub fn revision_conflict(snapshot_id: &str, base: u64, current: u64) -> Error {
    super::stale_version(&format!("Snapshot {snapshot_id}"), base, current)
}

/// For a store that keeps a snapshot's state as a diff against its parent's:
/// an update that changes the state of a snapshot other snapshots continue
/// is `FAILED_PRECONDITION`, since their diffs assume the state it has.
/// Called after [`check_update`], with whether the update changes the state
/// and whether the snapshot is continued.
pub fn check_state_rewrite(snapshot_id: &str, state_changes: bool, continued: bool) -> Result<()> {
    if state_changes && continued {
        Err(Error::user_facing(
            StatusCode::FailedPrecondition,
            format!(
                "Snapshot {snapshot_id} is continued by other snapshots; its state is not rewritten"
            ),
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::SessionState;

    const CREATED: &str = "2025-01-01T00:00:00Z";

    fn stored(status: Option<SnapshotStatus>) -> SessionSnapshot {
        let mut s = SessionSnapshot::new("snap", CREATED);
        s.session_id = Some("session".into());
        s.parent_id = Some("parent".into());
        s.status = status;
        s
    }

    fn status_of(result: Result<()>) -> Option<StatusCode> {
        result.err().map(|e| e.status())
    }

    #[test]
    fn an_update_that_keeps_the_invariants_is_accepted() {
        let old = stored(Some(SnapshotStatus::Pending));
        let target = UpdateTarget::of(&old, "session", 3);
        let mut update = old.clone();
        update.status = Some(SnapshotStatus::Completed);
        update.updated_at = Some("2025-01-01T00:01:00Z".into());
        assert_eq!(status_of(check_update(&target, &update, 3)), None);
    }

    #[test]
    fn a_stale_base_is_aborted_before_anything_else() {
        // Even a terminal snapshot and a changed parent: the revision first.
        let old = stored(Some(SnapshotStatus::Completed));
        let target = UpdateTarget::of(&old, "session", 2);
        let mut update = old.clone();
        update.parent_id = None;
        let err = check_update(&target, &update, 1).unwrap_err();
        assert_eq!(err.status(), StatusCode::Aborted);
        assert!(super::super::is_conflict(&err));
        assert!(err.message().contains("Snapshot snap is at version 2"));
    }

    #[test]
    fn session_parent_and_creation_time_never_change() {
        let old = stored(None);
        let target = UpdateTarget::of(&old, "session", 1);
        let changes: [fn(&mut SessionSnapshot); 4] = [
            |s| s.session_id = Some("other".into()),
            |s| s.parent_id = Some("other".into()),
            |s| s.parent_id = None,
            |s| s.created_at = "2026-01-01T00:00:00Z".into(),
        ];
        for change in changes {
            let mut update = old.clone();
            change(&mut update);
            assert_eq!(
                status_of(check_update(&target, &update, 1)),
                Some(StatusCode::InvalidArgument),
                "{update:?}"
            );
        }
    }

    #[test]
    fn the_session_may_come_from_the_state_but_must_agree() {
        let old = stored(None);
        let target = UpdateTarget::of(&old, "session", 1);
        let mut update = old.clone();
        update.session_id = None;
        update.state = Some(SessionState {
            session_id: Some("session".into()),
            ..Default::default()
        });
        assert_eq!(status_of(check_update(&target, &update, 1)), None);

        update.session_id = Some("other".into());
        assert_eq!(
            status_of(check_update(&target, &update, 1)),
            Some(StatusCode::InvalidArgument),
            "sessionId and the state's disagree"
        );
        update.session_id = None;
        update.state = None;
        assert_eq!(
            status_of(check_update(&target, &update, 1)),
            Some(StatusCode::InvalidArgument),
            "no session at all"
        );
    }

    #[test]
    fn terminal_snapshots_are_not_rewritten() {
        for status in [
            SnapshotStatus::Completed,
            SnapshotStatus::Failed,
            SnapshotStatus::Aborted,
        ] {
            let old = stored(Some(status));
            let target = UpdateTarget::of(&old, "session", 1);
            assert_eq!(
                status_of(check_update(&target, &old, 1)),
                Some(StatusCode::FailedPrecondition),
                "{status}"
            );
        }
        for status in [None, Some(SnapshotStatus::Pending)] {
            let old = stored(status);
            let target = UpdateTarget::of(&old, "session", 1);
            assert_eq!(status_of(check_update(&target, &old, 1)), None);
        }
    }

    #[test]
    fn an_invalid_update_of_a_terminal_snapshot_is_invalid_first() {
        let old = stored(Some(SnapshotStatus::Failed));
        let target = UpdateTarget::of(&old, "session", 1);
        let mut update = old.clone();
        update.created_at = "2026-01-01T00:00:00Z".into();
        assert_eq!(
            status_of(check_update(&target, &update, 1)),
            Some(StatusCode::InvalidArgument)
        );
    }

    #[test]
    fn a_continued_snapshot_keeps_its_state() {
        assert_eq!(
            status_of(check_state_rewrite("snap", true, true)),
            Some(StatusCode::FailedPrecondition)
        );
        assert_eq!(status_of(check_state_rewrite("snap", false, true)), None);
        assert_eq!(status_of(check_state_rewrite("snap", true, false)), None);
    }

    #[test]
    fn check_revision_alone() {
        assert_eq!(status_of(check_revision("snap", 4, 4)), None);
        assert_eq!(
            status_of(check_revision("snap", 3, 4)),
            Some(StatusCode::Aborted)
        );
    }
}
