//! The test suite every [`SessionStore`] implementation runs.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use genkit_session::{store::InMemorySessionStore, testing::session_store_suite};
//! use std::sync::Arc;
//!
//! session_store_suite(Arc::new(InMemorySessionStore::new())).await;
//! # }
//! ```
//!
//! It needs a Tokio runtime (it spawns concurrent writers) and uses fresh
//! random ids, so it also runs against a persistent store holding other data.
//! A broken contract panics with what went wrong.
//!
//! A store that scopes its data by tenant (derived from the running
//! action's context) also runs [`tenant_isolation_suite`], with two contexts
//! it maps to different tenants.

use std::collections::HashSet;
use std::sync::Arc;

use genkit_core::action::{Action, ActionKind, RunOptions};
use genkit_core::context::ActionContext;
use genkit_core::{Result, StatusCode};
use parking_lot::Mutex;
use serde_json::json;

use super::clock::now_rfc3339;
use super::store::lease::{self, LeaseRenewal, TakeOver};
use super::store::{SessionStore, is_conflict, new_snapshot_id};
use super::types::{
    AgentFinishReason, RuntimeError, SessionSnapshot, SessionState, SnapshotStatus,
};
use genkit_model::types::Message;

/// How hard the suite's concurrency check pushes: `writers` tasks each
/// append `turns_per_writer` turns to one session at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuiteConfig {
    /// Concurrent writer tasks.
    pub writers: usize,
    /// Turns each writer appends.
    pub turns_per_writer: usize,
}

impl Default for SuiteConfig {
    /// 8 writers × 25 turns.
    fn default() -> Self {
        Self {
            writers: 8,
            turns_per_writer: 25,
        }
    }
}

/// Runs every check of the [`SessionStore`] contract against `store`:
/// create and read, parent chains, branching, lookup by session id (also
/// after failed and aborted turns), stale
/// writes refused, concurrent writers (none lost), unknown ids `NOT_FOUND`,
/// failed writes leaving the store unchanged, the detached-turn lifecycle
/// with abort, leases (renewal, takeover, racing takeovers), and
/// side-effect records.
pub async fn session_store_suite(store: Arc<dyn SessionStore>) {
    session_store_suite_with(store, SuiteConfig::default()).await;
}

/// [`session_store_suite`] with another concurrency load.
pub async fn session_store_suite_with(store: Arc<dyn SessionStore>, config: SuiteConfig) {
    assert!(
        config.writers >= 2 && config.turns_per_writer >= 1,
        "the concurrency check needs at least two writers and one turn each"
    );
    create_and_read(&*store).await;
    parent_chains(&*store).await;
    branching(&*store).await;
    lookup_by_session_id(&*store).await;
    failed_turns_do_not_branch(&*store).await;
    stale_writes_are_refused(&*store).await;
    unknown_ids_are_not_found(&*store).await;
    failed_writes_change_nothing(&*store).await;
    detached_lifecycle_and_abort(&*store).await;
    leases(store.clone()).await;
    side_effect_records(store.clone(), config.writers).await;
    concurrent_writers(store, config).await;
}

fn fresh_session() -> String {
    format!("suite-{}", new_snapshot_id())
}

/// A completed snapshot of `session` continuing `parent`, with one message.
fn turn(session: &str, parent: Option<&str>, text: &str) -> SessionSnapshot {
    let mut s = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    s.session_id = Some(session.to_owned());
    s.parent_id = parent.map(str::to_owned);
    s.status = Some(SnapshotStatus::Completed);
    s.finish_reason = Some(AgentFinishReason::Stop);
    s.state = Some(SessionState {
        session_id: Some(session.to_owned()),
        messages: Some(Arc::new(vec![Message::user(text)])),
        custom: Some(json!({"text": text})),
        artifacts: None,
    });
    s
}

fn expect_status<T: std::fmt::Debug>(result: Result<T>, status: StatusCode, what: &str) {
    match result {
        Ok(v) => panic!("{what}: expected {}, got Ok({v:?})", status.name()),
        Err(e) => assert_eq!(
            e.status(),
            status,
            "{what}: expected {}, got {}: {}",
            status.name(),
            e.status().name(),
            e.message()
        ),
    }
}

fn must<T>(result: Result<T>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{what}: {} {}", e.status().name(), e.message()))
}

/// What the suite can observe of a session, to compare before and after a
/// failed write.
#[derive(Debug, PartialEq)]
struct View {
    snapshots: Vec<Option<(SessionSnapshot, u64)>>,
    latest: std::result::Result<String, StatusCode>,
    session_version: Option<u64>,
}

async fn view(store: &dyn SessionStore, session: &str, ids: &[&str]) -> View {
    let mut snapshots = Vec::new();
    let mut session_version = None;
    for id in ids {
        snapshots.push(match store.get(id).await {
            Ok(s) => {
                session_version = Some(s.session_version);
                Some((s.snapshot, s.revision))
            }
            Err(e) => {
                assert_eq!(e.status(), StatusCode::NotFound, "reading {id}: {e}");
                None
            }
        });
    }
    let latest = store
        .latest(session)
        .await
        .map(|s| s.snapshot.snapshot_id)
        .map_err(|e| e.status());
    View {
        snapshots,
        latest,
        session_version,
    }
}

async fn create_and_read(store: &dyn SessionStore) {
    let session = fresh_session();
    let root = turn(&session, None, "hello");
    let stored = must(
        store.append(root.clone(), 0).await,
        "appending a new session",
    );
    assert_eq!(stored.snapshot, root, "append returns what was stored");
    assert_eq!((stored.revision, stored.session_version), (1, 1));
    let read = must(store.get(&root.snapshot_id).await, "reading it back");
    assert_eq!(read, stored, "a snapshot reads back exactly as written");
    let latest = must(store.latest(&session).await, "latest of a new session");
    assert_eq!(
        latest, stored,
        "a one-snapshot session's latest is that snapshot"
    );
}

async fn parent_chains(store: &dyn SessionStore) {
    let session = fresh_session();
    let mut ids = Vec::new();
    let mut parent: Option<String> = None;
    for (i, text) in ["one", "two", "three", "four"].iter().enumerate() {
        let snap = turn(&session, parent.as_deref(), text);
        let stored = must(store.append(snap, i as u64).await, "appending a turn");
        assert_eq!(stored.session_version, i as u64 + 1);
        ids.push(stored.snapshot.snapshot_id.clone());
        parent = Some(stored.snapshot.snapshot_id);
    }
    // Walk the chain back from the latest snapshot.
    let mut walked = Vec::new();
    let mut next = Some(must(store.latest(&session).await, "latest").snapshot);
    while let Some(s) = next {
        walked.push(s.snapshot_id.clone());
        next = match &s.parent_id {
            Some(p) => Some(must(store.get(p).await, "reading a parent").snapshot),
            None => None,
        };
    }
    walked.reverse();
    assert_eq!(
        walked, ids,
        "the parent chain leads from the latest back to the root"
    );
}

async fn branching(store: &dyn SessionStore) {
    let session = fresh_session();
    let root = must(store.append(turn(&session, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id.clone();
    let a = must(
        store.append(turn(&session, Some(&root_id), "a"), 1).await,
        "first child",
    );
    // Resuming the root again (e.g. a regenerate) branches the session.
    let b = must(
        store.append(turn(&session, Some(&root_id), "b"), 2).await,
        "second child of the same parent",
    );
    assert_eq!(b.session_version, 3);
    expect_status(
        store.latest(&session).await,
        StatusCode::FailedPrecondition,
        "latest of a branched session",
    );
    for id in [&root_id, &a.snapshot.snapshot_id, &b.snapshot.snapshot_id] {
        must(store.get(id).await, "every branch stays readable by id");
    }
    // Continuing one branch leaves two leaves.
    must(
        store
            .append(turn(&session, Some(&a.snapshot.snapshot_id), "a2"), 3)
            .await,
        "continuing a branch",
    );
    expect_status(
        store.latest(&session).await,
        StatusCode::FailedPrecondition,
        "latest of a session with two leaves",
    );
}

async fn lookup_by_session_id(store: &dyn SessionStore) {
    let session = fresh_session();
    let other = fresh_session();
    let first = must(store.append(turn(&session, None, "1"), 0).await, "first");
    must(
        store.append(turn(&other, None, "x"), 0).await,
        "another session",
    );
    let second = must(
        store
            .append(turn(&session, Some(&first.snapshot.snapshot_id), "2"), 1)
            .await,
        "second",
    );
    let latest = must(store.latest(&session).await, "latest by session id");
    assert_eq!(
        latest.snapshot, second.snapshot,
        "latest is the newest leaf"
    );
    assert_eq!(latest.session_version, 2);
    assert_eq!(
        latest.snapshot.parent_id.as_deref(),
        Some(first.snapshot.snapshot_id.as_str())
    );
    // The session id may also be found only in the state (older snapshots).
    let legacy = fresh_session();
    let mut snap = turn(&legacy, None, "legacy");
    snap.session_id = None;
    must(
        store.append(snap.clone(), 0).await,
        "a snapshot with its session in its state",
    );
    let found = must(
        store.latest(&legacy).await,
        "latest by the state's session id",
    );
    assert_eq!(found.snapshot, snap);
}

/// A turn of `session` on `parent` that ended `status` (failed or aborted).
fn ended_turn(session: &str, parent: &str, status: SnapshotStatus) -> SessionSnapshot {
    let mut s = turn(session, Some(parent), "attempt");
    s.status = Some(status);
    s.finish_reason = Some(if status == SnapshotStatus::Failed {
        AgentFinishReason::Failed
    } else {
        AgentFinishReason::Aborted
    });
    if status == SnapshotStatus::Failed {
        s.error = Some(super::types::RuntimeError {
            status: Some("INTERNAL".into()),
            message: "the model call failed".into(),
            details: None,
        });
    }
    s
}

/// A failed or aborted turn stays behind as a leaf when the next run
/// continues the last completed snapshot; lookup by session id must still
/// find the continuation (and keep finding it turn after turn).
async fn failed_turns_do_not_branch(store: &dyn SessionStore) {
    let session = fresh_session();
    let mut version = 0;
    let mut append = async |snapshot: SessionSnapshot| {
        let stored = must(store.append(snapshot, version).await, "append");
        version += 1;
        stored.snapshot.snapshot_id
    };
    let latest = async |what: &str| {
        must(store.latest(&session).await, what)
            .snapshot
            .snapshot_id
    };
    let one = append(turn(&session, None, "one")).await;
    let two = append(turn(&session, Some(&one), "two")).await;
    let failed = append(ended_turn(&session, &two, SnapshotStatus::Failed)).await;
    assert_eq!(
        latest("after a failed turn").await,
        failed,
        "a failed turn that nothing continued is the latest (the runtime resumes from its parent)"
    );
    let three = append(turn(&session, Some(&two), "three")).await;
    assert_eq!(
        latest("after the turn that followed a failed one").await,
        three,
        "the run after a failed turn continues the last completed snapshot"
    );
    let four = append(turn(&session, Some(&three), "four")).await;
    assert_eq!(latest("two turns after a failed one").await, four);
    // The same turn failing twice, then succeeding.
    append(ended_turn(&session, &four, SnapshotStatus::Failed)).await;
    let again = append(ended_turn(&session, &four, SnapshotStatus::Failed)).await;
    assert_eq!(
        latest("after a turn failed twice").await,
        again,
        "the newest failure of a retried turn"
    );
    let five = append(turn(&session, Some(&four), "five")).await;
    assert_eq!(latest("after retries of a failed turn").await, five);
    append(ended_turn(&session, &five, SnapshotStatus::Aborted)).await;
    let six = append(turn(&session, Some(&five), "six")).await;
    assert_eq!(
        latest("after an aborted turn").await,
        six,
        "an aborted leaf is passed over like a failed one"
    );
    // A real branch is still one: two completed continuations of `six`.
    append(turn(&session, Some(&six), "seven a")).await;
    append(turn(&session, Some(&six), "seven b")).await;
    expect_status(
        store.latest(&session).await,
        StatusCode::FailedPrecondition,
        "two completed leaves beside passed-over failures",
    );

    // A failure on an older snapshot, after the session went on past it, is
    // a branch attempt: not passed over, the session has two lines.
    let other = fresh_session();
    let root = must(store.append(turn(&other, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id;
    must(
        store.append(turn(&other, Some(&root_id), "a"), 1).await,
        "continuing the root",
    );
    must(
        store
            .append(ended_turn(&other, &root_id, SnapshotStatus::Failed), 2)
            .await,
        "a failed turn on the root, after it was continued",
    );
    expect_status(
        store.latest(&other).await,
        StatusCode::FailedPrecondition,
        "a failed branch of an older snapshot",
    );
}

async fn stale_writes_are_refused(store: &dyn SessionStore) {
    let session = fresh_session();
    let root = must(store.append(turn(&session, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id.clone();
    let next = must(
        store
            .append(turn(&session, Some(&root_id), "next"), 1)
            .await,
        "next",
    );
    let next_id = next.snapshot.snapshot_id.clone();
    let before = view(store, &session, &[&root_id, &next_id]).await;

    // A second "new session" under the same id.
    let dup_root = turn(&session, None, "late root");
    let r = store.append(dup_root.clone(), 0).await;
    assert!(
        r.as_ref().is_err_and(is_conflict),
        "creating an existing session must be a conflict (ABORTED), got {r:?}"
    );
    // A turn based on the session as it was before `next`.
    let stale_turn = turn(&session, Some(&root_id), "stale");
    let r = store.append(stale_turn.clone(), 1).await;
    assert!(
        r.as_ref().is_err_and(is_conflict),
        "an append based on a stale session version must be refused (ABORTED), got {r:?}"
    );
    // A base from the future is as wrong.
    let r = store
        .append(turn(&session, Some(&next_id), "future"), 7)
        .await;
    assert!(r.as_ref().is_err_and(is_conflict), "future base: {r:?}");
    let after = view(store, &session, &[&root_id, &next_id]).await;
    assert_eq!(before, after, "a refused append changes nothing");
    for id in [&dup_root.snapshot_id, &stale_turn.snapshot_id] {
        expect_status(
            store.get(id).await,
            StatusCode::NotFound,
            "a refused snapshot",
        );
    }

    // Updates: based on a revision someone else already moved past.
    let mut pending = turn(&session, Some(&next_id), "pending");
    pending.status = Some(SnapshotStatus::Pending);
    let p = must(store.append(pending.clone(), 2).await, "a pending turn");
    let mut beat = pending.clone();
    beat.heartbeat_at = Some(now_rfc3339());
    let beat = must(store.update(beat, p.revision).await, "a heartbeat");
    assert_eq!(beat.revision, 2);
    let mut late = pending.clone();
    late.status = Some(SnapshotStatus::Failed);
    let r = store.update(late, p.revision).await;
    assert!(
        r.as_ref().is_err_and(is_conflict),
        "an update based on a stale revision must be refused (ABORTED), got {r:?}"
    );
    let now = must(store.get(&pending.snapshot_id).await, "re-read");
    assert_eq!(now, beat, "a refused update changes nothing");
}

async fn unknown_ids_are_not_found(store: &dyn SessionStore) {
    let missing = format!("missing-{}", new_snapshot_id());
    expect_status(
        store.get(&missing).await,
        StatusCode::NotFound,
        "get unknown snapshot",
    );
    expect_status(
        store.latest(&missing).await,
        StatusCode::NotFound,
        "latest of an unknown session",
    );
    let mut ghost = turn(&fresh_session(), None, "ghost");
    ghost.snapshot_id = missing.clone();
    expect_status(
        store.update(ghost, 1).await,
        StatusCode::NotFound,
        "update of an unknown snapshot",
    );
    expect_status(
        store.abort(&missing).await,
        StatusCode::NotFound,
        "abort of an unknown snapshot",
    );
    let session = fresh_session();
    let orphan = turn(&session, Some(&missing), "orphan");
    expect_status(
        store.append(orphan.clone(), 0).await,
        StatusCode::NotFound,
        "append under an unknown parent",
    );
    expect_status(
        store.get(&orphan.snapshot_id).await,
        StatusCode::NotFound,
        "the refused orphan",
    );
    expect_status(
        store.latest(&session).await,
        StatusCode::NotFound,
        "a session whose only append was refused",
    );
}

async fn failed_writes_change_nothing(store: &dyn SessionStore) {
    let session = fresh_session();
    let other = fresh_session();
    let root = must(store.append(turn(&session, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id.clone();
    let foreign = must(
        store.append(turn(&other, None, "foreign"), 0).await,
        "other",
    );
    let foreign_id = foreign.snapshot.snapshot_id.clone();
    let ids = [root_id.as_str(), foreign_id.as_str()];
    let before = view(store, &session, &ids).await;

    let mut dup = turn(&session, Some(&root_id), "dup");
    dup.snapshot_id = foreign_id.clone();
    expect_status(
        store.append(dup, 1).await,
        StatusCode::AlreadyExists,
        "append reusing a snapshot id",
    );
    let mut no_session = turn(&session, Some(&root_id), "no session");
    no_session.session_id = None;
    no_session.state = None;
    expect_status(
        store.append(no_session, 1).await,
        StatusCode::InvalidArgument,
        "append without a session id",
    );
    let mut no_id = turn(&session, Some(&root_id), "no id");
    no_id.snapshot_id = String::new();
    expect_status(
        store.append(no_id, 1).await,
        StatusCode::InvalidArgument,
        "append without a snapshot id",
    );
    let mut split = turn(&session, Some(&root_id), "split");
    if let Some(state) = &mut split.state {
        state.session_id = Some(other.clone());
    }
    expect_status(
        store.append(split, 1).await,
        StatusCode::InvalidArgument,
        "append whose state names another session",
    );
    expect_status(
        store
            .append(turn(&session, Some(&foreign_id), "cross"), 1)
            .await,
        StatusCode::InvalidArgument,
        "append under another session's snapshot",
    );
    let mut moved = root.snapshot.clone();
    moved.parent_id = Some(foreign_id.clone());
    expect_status(
        store.update(moved, 1).await,
        StatusCode::InvalidArgument,
        "update changing the parent",
    );
    let mut rehomed = root.snapshot.clone();
    rehomed.session_id = Some(other.clone());
    if let Some(state) = &mut rehomed.state {
        state.session_id = Some(other.clone());
    }
    expect_status(
        store.update(rehomed, 1).await,
        StatusCode::InvalidArgument,
        "update changing the session",
    );
    let mut redated = root.snapshot.clone();
    redated.created_at = "1999-01-01T00:00:00.000Z".into();
    expect_status(
        store.update(redated, 1).await,
        StatusCode::InvalidArgument,
        "update changing the creation time",
    );
    let mut rewritten = root.snapshot.clone();
    rewritten.status = Some(SnapshotStatus::Failed);
    expect_status(
        store.update(rewritten, 1).await,
        StatusCode::FailedPrecondition,
        "update of a completed snapshot",
    );
    let after = view(store, &session, &ids).await;
    assert_eq!(before, after, "failed writes leave the store as it was");
}

async fn detached_lifecycle_and_abort(store: &dyn SessionStore) {
    let session = fresh_session();
    let root = must(store.append(turn(&session, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id.clone();

    // Detach: pending, heartbeats, then completed; abort then reports
    // `completed` and changes nothing.
    let mut pending = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    pending.session_id = Some(session.clone());
    pending.parent_id = Some(root_id.clone());
    pending.status = Some(SnapshotStatus::Pending);
    pending.finish_reason = Some(AgentFinishReason::Detached);
    let mut cur = must(store.append(pending.clone(), 1).await, "pending");
    for _ in 0..3 {
        let mut beat = cur.snapshot.clone();
        beat.heartbeat_at = Some(now_rfc3339());
        let next = must(store.update(beat, cur.revision).await, "heartbeat");
        assert_eq!(
            next.revision,
            cur.revision + 1,
            "each update bumps the revision"
        );
        assert_eq!(
            next.session_version, 2,
            "updates do not append to the session"
        );
        cur = next;
    }
    let mut done = turn(&session, Some(&root_id), "done in background");
    done.snapshot_id = pending.snapshot_id.clone();
    done.created_at = pending.created_at.clone();
    done.updated_at = Some(now_rfc3339());
    let done = must(store.update(done, cur.revision).await, "completion");
    assert_eq!(
        must(
            store.abort(&pending.snapshot_id).await,
            "abort after completion"
        ),
        Some(SnapshotStatus::Completed)
    );
    assert_eq!(
        must(store.get(&pending.snapshot_id).await, "re-read"),
        done,
        "aborting a finished snapshot changes nothing"
    );

    // Abort while pending: the worker's completion, based on the revision
    // it saw, is refused; re-read, it finds the snapshot aborted and final.
    let mut pending = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    pending.session_id = Some(session.clone());
    pending.parent_id = Some(done.snapshot.snapshot_id.clone());
    pending.status = Some(SnapshotStatus::Pending);
    let seen = must(store.append(pending.clone(), 2).await, "second pending");
    assert_eq!(
        must(
            store.abort(&pending.snapshot_id).await,
            "abort while pending"
        ),
        Some(SnapshotStatus::Pending)
    );
    let aborted = must(store.get(&pending.snapshot_id).await, "aborted");
    assert_eq!(aborted.snapshot.status, Some(SnapshotStatus::Aborted));
    let mut completion = pending.clone();
    completion.status = Some(SnapshotStatus::Completed);
    let r = store.update(completion.clone(), seen.revision).await;
    assert!(
        r.as_ref().is_err_and(is_conflict),
        "a completion based on the pre-abort revision is a conflict, got {r:?}"
    );
    expect_status(
        store.update(completion, aborted.revision).await,
        StatusCode::FailedPrecondition,
        "rewriting an aborted snapshot",
    );
    assert_eq!(
        must(store.abort(&pending.snapshot_id).await, "second abort"),
        Some(SnapshotStatus::Aborted)
    );
    assert_eq!(
        must(store.get(&pending.snapshot_id).await, "still aborted"),
        aborted
    );
}

async fn side_effect_records(store: Arc<dyn SessionStore>, writers: usize) {
    let session = fresh_session();
    let key = "turn-1/toolRef-7";
    assert_eq!(
        must(store.effect(&session, key).await, "unrecorded effect"),
        None
    );
    let first = json!({"charged": 42});
    assert_eq!(
        must(
            store.record_effect(&session, key, first.clone()).await,
            "record"
        ),
        first
    );
    assert_eq!(
        must(
            store
                .record_effect(&session, key, json!({"charged": 43}))
                .await,
            "second record"
        ),
        first,
        "the first record under a key wins"
    );
    assert_eq!(
        must(store.effect(&session, key).await, "read"),
        Some(first.clone())
    );
    expect_status(
        store.record_effect(&session, "", json!(1)).await,
        StatusCode::InvalidArgument,
        "a record without a key",
    );
    expect_status(
        store.record_effect("", key, json!(1)).await,
        StatusCode::InvalidArgument,
        "a record without a session",
    );
    assert_eq!(
        must(store.effect(&fresh_session(), key).await, "other session"),
        None,
        "effects are per session"
    );
    // Racing records of one key all see the same winner.
    let race_key = "race";
    let handles: Vec<_> = (0..writers)
        .map(|i| {
            let store = store.clone();
            let session = session.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                store.record_effect(&session, race_key, json!(i)).await
            })
        })
        .collect();
    let mut winners = HashSet::new();
    for h in handles {
        let v = must(h.await.map_err(join_error), "racing record");
        winners.insert(must(v, "racing record").to_string());
    }
    assert_eq!(
        winners.len(),
        1,
        "one winner for racing records: {winners:?}"
    );
}

fn join_error(e: tokio::task::JoinError) -> genkit_core::Error {
    genkit_core::Error::internal(format!("writer task failed: {e}"))
}

async fn concurrent_writers(store: Arc<dyn SessionStore>, config: SuiteConfig) {
    let session = fresh_session();
    let turns = config.turns_per_writer;
    // Every writer's first read happens before any writer's first write, so
    // the first round collides for certain (a scheduler that runs each task
    // to completion in turn would otherwise never collide); later rounds
    // interleave however the runtime runs them.
    let first_round = Arc::new(tokio::sync::Barrier::new(config.writers));
    let handles: Vec<_> = (0..config.writers)
        .map(|w| {
            let store = store.clone();
            let session = session.clone();
            let first_round = first_round.clone();
            tokio::spawn(async move {
                let mut written = Vec::new();
                let mut conflicts = 0usize;
                let mut first_read = true;
                for t in 0..turns {
                    let mut lost = 0u32;
                    loop {
                        let (parent, base) = match store.latest(&session).await {
                            Ok(s) => (Some(s.snapshot.snapshot_id), s.session_version),
                            Err(e) if e.status() == StatusCode::NotFound => (None, 0),
                            Err(e) => return Err(e),
                        };
                        if std::mem::take(&mut first_read) {
                            first_round.wait().await;
                        } else {
                            // Let the other writers run between read and write.
                            tokio::task::yield_now().await;
                        }
                        let snap = turn(&session, parent.as_deref(), &format!("w{w}t{t}"));
                        match store.append(snap.clone(), base).await {
                            Ok(_) => {
                                written.push(snap.snapshot_id);
                                break;
                            }
                            Err(e) if is_conflict(&e) => {
                                conflicts += 1;
                                lost += 1;
                                tokio::time::sleep(retry_pause(lost)).await;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
                Ok::<_, genkit_core::Error>((written, conflicts))
            })
        })
        .collect();
    let mut all_written = HashSet::new();
    let mut conflicts = 0;
    for h in handles {
        let r = must(h.await.map_err(join_error), "writer task");
        let (written, c) = must(r, "writer");
        assert_eq!(written.len(), turns);
        all_written.extend(written);
        conflicts += c;
    }
    let expected = config.writers * turns;
    eprintln!(
        "{} writers x {turns} turns on one session: {conflicts} writes refused as stale and retried",
        config.writers
    );
    assert_eq!(all_written.len(), expected, "every write has its own id");
    let latest = must(store.latest(&session).await, "latest after the race");
    assert_eq!(
        latest.session_version, expected as u64,
        "exactly {expected} turns appended"
    );
    // The chain from the latest snapshot to the root holds every write once.
    let mut chain = HashSet::new();
    let mut next = Some(latest.snapshot);
    while let Some(s) = next {
        assert!(
            chain.insert(s.snapshot_id.clone()),
            "snapshot {} appears twice in the chain",
            s.snapshot_id
        );
        next = match &s.parent_id {
            Some(p) => Some(must(store.get(p).await, "chain parent").snapshot),
            None => None,
        };
    }
    assert_eq!(chain, all_written, "the chain holds every write, none lost");
    // All first reads saw the same version, so all but one first write
    // collided: the store detected it rather than forking the session.
    assert!(
        conflicts >= config.writers - 1,
        "{} writers read the same version and wrote, yet only {conflicts} \
         collided: the store accepted stale writes",
        config.writers
    );
}

/// How long a writer whose write was refused `lost` times in a row waits
/// before reading again: random, up to 2, 4, ... 256 ms. Retrying at once
/// made 50 writers collide again on nearly every attempt (most of the
/// check's time, at no gain: it still collides for certain in the first
/// round, and often after).
fn retry_pause(lost: u32) -> std::time::Duration {
    let cap = 1u64 << lost.clamp(1, 8);
    std::time::Duration::from_micros(random_below(cap * 1000))
}

/// A random number below `n` (0 when `n` is 0), for a test's backoff: the
/// low bits of a fresh UUID (v4) are random enough for that.
pub fn random_below(n: u64) -> u64 {
    let id = new_snapshot_id().replace('-', "");
    u64::from_str_radix(&id[20..32], 16).unwrap_or(0) % n.max(1)
}

/// Runs `work` as the body of an action called with `context`, so a store
/// it calls sees that context ([`genkit_core::tracing::current_context`])
/// as it would inside an agent turn.
async fn in_context<T, F>(context: &ActionContext, work: F) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T> + Send + 'static,
{
    type Work<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
    let work: Arc<Mutex<Option<Work<T>>>> = Arc::new(Mutex::new(Some(Box::pin(work))));
    let out: Arc<Mutex<Option<T>>> = Arc::new(Mutex::new(None));
    let (slot, result) = (work.clone(), out.clone());
    let action: Action<(), (), ()> = Action::new(
        ActionKind::Custom,
        "sessionStoreSuite/inContext",
        move |(), _ctx| {
            let (slot, result) = (slot.clone(), result.clone());
            async move {
                let work = slot.lock().take();
                if let Some(work) = work {
                    let value = work.await;
                    *result.lock() = Some(value);
                }
                Ok(())
            }
        },
    );
    must(
        action
            .run_with((), RunOptions::new().context(context.clone()))
            .await,
        "running the suite's work in a context",
    );
    let value = out.lock().take();
    value.unwrap_or_else(|| panic!("the suite's work in a context did not finish"))
}

/// Tenant isolation, for a store that scopes its data by a tenant derived
/// from the running action's context: `store` must map contexts `a` and `b`
/// to different tenants. Each tenant writes a session, snapshots and side
/// effects under the *same* ids; neither sees, continues, rewrites, aborts or
/// shares the other's (`NOT_FOUND`, or its own data), and both sessions go on
/// independently.
pub async fn tenant_isolation_suite(
    store: Arc<dyn SessionStore>,
    a: ActionContext,
    b: ActionContext,
) {
    let session = fresh_session();
    let root_id = new_snapshot_id();
    let key = "tenant/effect";
    // Tenant a: a session of two turns, a pending turn, an effect.
    let mut a_root = turn(&session, None, "a root");
    a_root.snapshot_id = root_id.clone();
    let mut a_pending = turn(&session, Some(&root_id), "a pending");
    a_pending.status = Some(SnapshotStatus::Pending);
    let a_pending_id = a_pending.snapshot_id.clone();
    let (st, s, k) = (store.clone(), session.clone(), key.to_owned());
    let (a_root_w, a_pending_w) = (a_root.clone(), a_pending.clone());
    in_context(&a, async move {
        must(st.append(a_root_w, 0).await, "tenant a: root");
        must(st.append(a_pending_w, 1).await, "tenant a: pending turn");
        must(
            st.record_effect(&s, &k, json!("a")).await,
            "tenant a: effect",
        );
    })
    .await;

    // Tenant b sees none of it.
    let (st, s, k, rid, pid) = (
        store.clone(),
        session.clone(),
        key.to_owned(),
        root_id.clone(),
        a_pending_id.clone(),
    );
    let a_root_b = a_root.clone();
    in_context(&b, async move {
        expect_status(
            st.get(&rid).await,
            StatusCode::NotFound,
            "tenant b reading tenant a's snapshot",
        );
        expect_status(
            st.latest(&s).await,
            StatusCode::NotFound,
            "tenant b reading tenant a's session",
        );
        assert_eq!(
            must(st.effect(&s, &k).await, "tenant b reading an effect"),
            None,
            "tenant b sees tenant a's side effect"
        );
        expect_status(
            st.abort(&pid).await,
            StatusCode::NotFound,
            "tenant b aborting tenant a's pending turn",
        );
        let mut rewrite = a_root_b.clone();
        rewrite.status = Some(SnapshotStatus::Pending);
        expect_status(
            st.update(rewrite, 1).await,
            StatusCode::NotFound,
            "tenant b rewriting tenant a's snapshot",
        );
        expect_status(
            st.append(turn(&s, Some(&rid), "b continues a"), 0).await,
            StatusCode::NotFound,
            "tenant b continuing tenant a's snapshot",
        );
        // The same ids are free in tenant b: its own session, effect, root.
        let mut b_root = turn(&s, None, "b root");
        b_root.snapshot_id = rid.clone();
        let stored = must(st.append(b_root.clone(), 0).await, "tenant b: same ids");
        assert_eq!((stored.revision, stored.session_version), (1, 1));
        assert_eq!(
            must(
                st.record_effect(&s, &k, json!("b")).await,
                "tenant b: effect"
            ),
            json!("b"),
            "tenant b's effect under the same key is its own"
        );
        assert_eq!(
            must(st.latest(&s).await, "tenant b: latest").snapshot,
            b_root,
            "tenant b's session is its own"
        );
    })
    .await;

    // Tenant a's data is as it wrote it; its pending turn still abortable.
    let st = store.clone();
    in_context(&a, async move {
        assert_eq!(
            must(st.get(&root_id).await, "tenant a: root again").snapshot,
            a_root,
            "tenant b's write under the same id changed tenant a's snapshot"
        );
        let latest = must(st.latest(&session).await, "tenant a: latest");
        assert_eq!(latest.snapshot.snapshot_id, a_pending_id);
        assert_eq!(latest.session_version, 2);
        assert_eq!(
            must(st.effect(&session, key).await, "tenant a: effect"),
            Some(json!("a"))
        );
        assert_eq!(
            must(st.abort(&a_pending_id).await, "tenant a: abort"),
            Some(SnapshotStatus::Pending)
        );
    })
    .await;
}

/// A pending snapshot of `session` continuing `parent`, leased by `owner`
/// for `ttl`.
fn leased(session: &str, parent: &str, owner: &str, ttl: std::time::Duration) -> SessionSnapshot {
    let mut pending = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    pending.session_id = Some(session.to_owned());
    pending.parent_id = Some(parent.to_owned());
    pending.status = Some(SnapshotStatus::Pending);
    lease::grant(&mut pending, owner, ttl);
    pending
}

async fn leases(store: Arc<dyn SessionStore>) {
    use std::time::Duration;
    const LONG: Duration = Duration::from_secs(600);
    const SHORT: Duration = Duration::from_millis(50);
    let dead = || RuntimeError::new(StatusCode::Unavailable, "its replica died");
    let session = fresh_session();
    let root = must(store.append(turn(&session, None, "root"), 0).await, "root");
    let root_id = root.snapshot.snapshot_id.clone();

    // A live lease: its owner renews it (a new revision, the lease read
    // back), anyone else is refused, and it is not taken over.
    let live = leased(&session, &root_id, "replica-a", LONG);
    let id = live.snapshot_id.clone();
    let appended = must(store.append(live, 1).await, "leased pending");
    assert_eq!(
        appended.snapshot.lease_owner.as_deref(),
        Some("replica-a"),
        "the lease is stored with the snapshot"
    );
    let first = must(store.get(&id).await, "read the lease");
    assert_eq!(first.snapshot.lease_owner.as_deref(), Some("replica-a"));
    assert!(first.snapshot.lease_expires_at.is_some());
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(
        must(store.renew_lease(&id, "replica-a", LONG).await, "renew"),
        LeaseRenewal::Renewed
    );
    let renewed = must(store.get(&id).await, "read the renewal");
    assert!(
        renewed.revision > first.revision,
        "a renewal is a new revision, so a takeover based on the old one loses"
    );
    assert!(
        renewed.snapshot.lease_expires_at > first.snapshot.lease_expires_at,
        "a renewal moves the expiry: {:?} then {:?}",
        first.snapshot.lease_expires_at,
        renewed.snapshot.lease_expires_at
    );
    assert_eq!(
        renewed.snapshot.heartbeat_at.as_deref().map(str::len),
        Some(24),
        "a renewal is a heartbeat"
    );
    let stale = first.snapshot.clone();
    let r = store.update(stale, first.revision).await;
    assert!(r.as_ref().is_err_and(is_conflict), "{r:?}");
    assert_eq!(
        must(
            store.renew_lease(&id, "replica-b", LONG).await,
            "renew by another"
        ),
        LeaseRenewal::Lost(Some(SnapshotStatus::Pending))
    );
    match must(
        store.take_over(&id, LONG, dead()).await,
        "take over a live lease",
    ) {
        TakeOver::Live(s) => assert_eq!(s.snapshot.status, Some(SnapshotStatus::Pending)),
        other => panic!("a live lease was taken over: {other:?}"),
    }

    // An abort ends the lease: the owner's next renewal finds it lost.
    must(store.abort(&id).await, "abort");
    assert_eq!(
        must(
            store.renew_lease(&id, "replica-a", LONG).await,
            "renew after abort"
        ),
        LeaseRenewal::Lost(Some(SnapshotStatus::Aborted))
    );

    // A lapsed lease: replicas race to take the turn over; exactly one
    // writes it failed, the others find it settled, and its owner's late
    // renewal finds its lease lost.
    let lapsing = leased(&session, &root_id, "replica-a", SHORT);
    let id = lapsing.snapshot_id.clone();
    must(store.append(lapsing, 2).await, "a lease about to lapse");
    tokio::time::sleep(SHORT * 3).await;
    let racers: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            let id = id.clone();
            tokio::spawn(async move { store.take_over(&id, LONG, dead()).await })
        })
        .collect();
    let mut took = 0;
    for racer in racers {
        match must(racer.await.expect("takeover task"), "racing takeover") {
            TakeOver::TookOver(s) => {
                took += 1;
                assert_eq!(s.snapshot.status, Some(SnapshotStatus::Failed));
            }
            TakeOver::Settled(s) => {
                assert_eq!(s.snapshot.status, Some(SnapshotStatus::Failed));
            }
            TakeOver::Live(s) => panic!("a lapsed lease read as live: {s:?}"),
        }
    }
    assert_eq!(took, 1, "exactly one replica takes a lapsed turn over");
    let failed = must(store.get(&id).await, "the failed turn");
    assert_eq!(failed.snapshot.status, Some(SnapshotStatus::Failed));
    assert_eq!(
        failed.snapshot.error.as_ref().map(|e| e.message.as_str()),
        Some("its replica died")
    );
    assert_eq!(
        failed.snapshot.lease_owner, None,
        "a settled turn has no lease"
    );
    assert_eq!(
        must(
            store.renew_lease(&id, "replica-a", LONG).await,
            "late renewal"
        ),
        LeaseRenewal::Lost(Some(SnapshotStatus::Failed))
    );
    // The session continues past the failed turn, from its root.
    let latest = must(store.latest(&session).await, "latest after takeover");
    assert_eq!(latest.snapshot.snapshot_id, id);
    must(
        store
            .append(
                turn(&session, Some(&root_id), "continued"),
                latest.session_version,
            )
            .await,
        "continue past the failed turn",
    );
}
