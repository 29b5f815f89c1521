//! Replicas sharing one store (one SQLite file; one PostgreSQL database):
//! each replica is its own Genkit (registry, agent, store connection) with
//! its own replica id, and detached turns hold leases in the store.
//!
//! - a replica that dies mid-turn (its Tokio runtime shut down: the turn and
//!   its heartbeat vanish without a word) leaves a pending snapshot that
//!   blocks the session only until the lease lapses; then another replica
//!   continues the session from the last completed snapshot, and the dead
//!   turn reads as failed;
//! - two replicas continuing that session at once: exactly one turn is
//!   stored, the other is refused, the session does not fork;
//! - an abort sent to one replica stops a turn running on another within
//!   the heartbeat interval;
//! - a live turn's lease is not taken over however long it runs.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use genkit::agent::types::{AgentFinishReason, AgentInit, AgentInput, AgentResult};
use genkit::agent::{Agent, AgentOptions};
use genkit::model::ModelOptions;
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::types::{FinishReason, GenerateRequest, GenerateResponse, Role};
use genkit_session::store::{SessionStore, is_conflict};
use genkit_session::types::SnapshotStatus;
use support::agent::history;

/// The lease and heartbeat of the test replicas: short, and far enough
/// apart that a loaded machine does not miss three renewals in a row.
const LEASE: Duration = Duration::from_millis(1500);
const BEAT: Duration = Duration::from_millis(250);

/// What the test sees of a replica's turns.
#[derive(Default)]
struct Probe {
    /// Turns blocked in their model call ("block") right now.
    blocked: AtomicUsize,
    /// Whether a blocked turn was ever stopped (its model call dropped).
    stopped: AtomicBool,
    /// Where "race" turns meet, so both have read the session before
    /// either appends.
    race: Option<Arc<tokio::sync::Barrier>>,
}

/// Counts a blocked model call while it lives.
struct Blocked(Arc<Probe>);

impl Drop for Blocked {
    fn drop(&mut self) {
        self.0.blocked.fetch_sub(1, Ordering::SeqCst);
        self.0.stopped.store(true, Ordering::SeqCst);
    }
}

/// A replica: Genkit with model `scripted` and agent `assistant` on its own
/// connection to the shared store, holding leases as `id`.
fn replica(store: Arc<dyn SessionStore>, id: &str, probe: Arc<Probe>) -> (Genkit, Agent) {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    let model_probe = probe.clone();
    ai.define_model(
        ModelOptions::new("scripted"),
        move |req: GenerateRequest, _ctx| {
            let probe = model_probe.clone();
            async move {
                let said = req
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User)
                    .map(|m| m.text())
                    .unwrap_or_default();
                match said.as_str() {
                    "block" => {
                        probe.blocked.fetch_add(1, Ordering::SeqCst);
                        let _guard = Blocked(probe.clone());
                        futures::future::pending::<()>().await;
                        unreachable!("pending never completes")
                    }
                    "race" => {
                        if let Some(barrier) = &probe.race {
                            barrier.wait().await;
                        }
                    }
                    _ => {}
                }
                Ok(GenerateResponse::new(
                    Message::model(format!("reply to: {said}")),
                    FinishReason::Stop,
                ))
            }
        },
    );
    let model = ai.clone();
    let options = AgentOptions::new()
        .store(store)
        .replica_id(id)
        .lease_time(LEASE)
        .heartbeat_interval(BEAT);
    let agent = ai.define_custom_agent("assistant", options, move |session, input| {
        let ai = model.clone();
        async move {
            let said = input.message.as_ref().map(|m| m.text()).unwrap_or_default();
            let reply = ai
                .generate(GenerateOptions::prompt(said).model("scripted"))
                .await?;
            let message = Message::model(reply.text());
            session.add_messages([message.clone()]);
            Ok(AgentResult {
                message: Some(message),
                artifacts: None,
                finish_reason: Some(AgentFinishReason::Stop),
            })
        }
    });
    (ai, agent)
}

fn by_session(session: &str) -> AgentInit {
    AgentInit {
        session_id: Some(session.to_owned()),
        ..AgentInit::default()
    }
}

/// Starts a session with one completed turn, then detaches a turn that
/// blocks; returns (session id, completed snapshot id, pending snapshot id)
/// once the turn is blocked in its model call.
async fn start_blocked_turn(agent: &Agent, probe: &Probe) -> (String, String, String) {
    let first = agent
        .chat()
        .send(Message::user("first"))
        .await
        .expect("the first turn");
    let session = first.session_id.expect("a session id");
    let completed = first.snapshot_id.expect("a snapshot id");
    let out = agent
        .chat_from(by_session(&session))
        .send_stream(AgentInput {
            message: Some(Message::user("block")),
            detach: Some(true),
            ..AgentInput::default()
        })
        .output()
        .await
        .expect("the detached turn");
    assert_eq!(out.finish_reason, Some(AgentFinishReason::Detached));
    let pending = out.snapshot_id.expect("the pending snapshot");
    let waited = Instant::now();
    while probe.blocked.load(Ordering::SeqCst) == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the turn never blocked"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (session, completed, pending)
}

/// A turn on `session` that must be refused because a turn runs.
async fn expect_busy(agent: &Agent, session: &str) {
    let err = agent
        .chat_from(by_session(session))
        .send(Message::user("too soon"))
        .await
        .expect_err("the session has a turn running");
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(err.message().contains("has a turn running"), "{err}");
}

/// Replica A, in a Tokio runtime of its own on its own thread, so that the
/// test can kill it: shutting the runtime down drops its tasks (the
/// detached turn and its heartbeat) where they stand, as a crash would.
struct DyingReplica {
    runtime: Option<tokio::runtime::Runtime>,
    /// A's Genkit and agent, dropped after its runtime.
    serving: Option<(Genkit, Agent)>,
}

impl DyingReplica {
    /// Opens the store at `location` in A's runtime and starts a blocked
    /// detached turn there; returns A and the ids of
    /// [`start_blocked_turn`].
    async fn start(location: &str, probe: Arc<Probe>) -> (Self, (String, String, String)) {
        let location = location.to_owned();
        tokio::task::spawn_blocking(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("replica A's runtime");
            let (serving, ids) = runtime.block_on(async move {
                let store = genkit_store_sql::open(&location)
                    .await
                    .expect("replica A's store");
                let (ai, agent) = replica(store, "replica-a", probe.clone());
                let ids = start_blocked_turn(&agent, &probe).await;
                ((ai, agent), ids)
            });
            // A keeps serving (its tasks run on its runtime) until killed.
            let a = Self {
                runtime: Some(runtime),
                serving: Some(serving),
            };
            (a, ids)
        })
        .await
        .expect("replica A starts")
    }

    /// Kills A: its runtime stops at once, its tasks dropped unfinished.
    fn kill(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
        self.serving = None;
    }
}

/// Opens another connection to the shared store (another replica's).
async fn connect(location: &str) -> Arc<dyn SessionStore> {
    genkit_store_sql::open(location)
        .await
        .expect("the store opens")
}

/// (a) A dies mid-turn; B continues the session once the lease lapsed.
async fn dead_replica_is_taken_over(location: &str) {
    let probe_a = Arc::new(Probe::default());
    let (mut a, (session, completed, pending)) =
        DyingReplica::start(location, probe_a.clone()).await;
    let store_b = connect(location).await;
    let (_ai, b) = replica(store_b.clone(), "replica-b", Arc::default());

    // While A lives, B is refused.
    expect_busy(&b, &session).await;
    a.kill();
    let killed = Instant::now();

    // B retries until the lease lapses.
    let out = loop {
        match b
            .chat_from(by_session(&session))
            .send(Message::user("after the crash"))
            .await
        {
            Ok(out) => break out,
            Err(e) if e.status() == StatusCode::FailedPrecondition => {
                assert!(
                    killed.elapsed() < LEASE * 4,
                    "the session is still blocked {:?} after its replica died",
                    killed.elapsed()
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("continuing after the crash: {e}"),
        }
    };
    let failover = killed.elapsed();
    assert!(
        failover <= LEASE + Duration::from_secs(1),
        "failover took {failover:?}, lease {LEASE:?}"
    );
    eprintln!("failover after {failover:?} (lease {LEASE:?}, heartbeat {BEAT:?})");

    // The dead turn is failed, with why; B's turn continues the last
    // completed snapshot.
    let dead = store_b.get(&pending).await.expect("the dead turn");
    assert_eq!(dead.snapshot.status, Some(SnapshotStatus::Failed));
    assert_eq!(dead.snapshot.finish_reason, Some(AgentFinishReason::Failed));
    let error = dead.snapshot.error.expect("the dead turn's error");
    assert_eq!(error.status.as_deref(), Some("UNAVAILABLE"), "{error:?}");
    assert!(error.message.contains("lease expired"), "{error:?}");
    assert_eq!(dead.snapshot.lease_owner, None);
    let new_id = out.snapshot_id.expect("B's snapshot");
    let new = store_b.get(&new_id).await.expect("B's snapshot");
    assert_eq!(new.snapshot.parent_id.as_deref(), Some(completed.as_str()));
    let latest = store_b.latest(&session).await.expect("one latest");
    assert_eq!(latest.snapshot.snapshot_id, new_id);
    assert_eq!(
        history(latest.snapshot.messages()),
        [
            "user: first",
            "model: reply to: first",
            "user: after the crash",
            "model: reply to: after the crash",
        ]
    );
    // Reads report the dead turn as failed too.
    let read = b
        .get_snapshot(genkit::agent::types::GetSnapshotRequest {
            snapshot_id: Some(pending),
            session_id: None,
        })
        .await
        .expect("read the dead turn");
    assert_eq!(read.status, Some(SnapshotStatus::Failed));
}

/// (b) A dies; after the lease, B and C continue the session at once:
/// one turn is stored, the other refused, no fork.
async fn racing_takeovers_do_not_fork(location: &str) {
    let probe_a = Arc::new(Probe::default());
    let (mut a, (session, completed, pending)) =
        DyingReplica::start(location, probe_a.clone()).await;
    a.kill();
    tokio::time::sleep(LEASE + BEAT).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let probe = || {
        Arc::new(Probe {
            race: Some(barrier.clone()),
            ..Probe::default()
        })
    };
    let store_b = connect(location).await;
    let (_ai_b, b) = replica(store_b.clone(), "replica-b", probe());
    let (_ai_c, c) = replica(connect(location).await, "replica-c", probe());
    let turn = |agent: Agent, session: String| async move {
        agent
            .chat_from(by_session(&session))
            .send(Message::user("race"))
            .await
    };
    // A turn refused before its model call would leave the other waiting at
    // the barrier: bounded.
    let (rb, rc) = tokio::time::timeout(Duration::from_secs(30), async {
        tokio::join!(turn(b, session.clone()), turn(c, session.clone()))
    })
    .await
    .expect("both turns reached the model and ended");
    let (won, lost) = match (rb, rc) {
        (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
        (Ok(_), Ok(_)) => panic!("both replicas stored a turn continuing one snapshot"),
        (Err(x), Err(y)) => panic!("no replica stored its turn: {x}; {y}"),
    };
    assert!(is_conflict(&lost), "the loser is refused as stale: {lost}");
    let dead = store_b.get(&pending).await.expect("the dead turn");
    assert_eq!(dead.snapshot.status, Some(SnapshotStatus::Failed));
    // One linear history: the session has a single latest, the winner,
    // continuing the last completed snapshot.
    let latest = store_b.latest(&session).await.expect("no fork");
    let winner = won.snapshot_id.expect("the winner's snapshot");
    assert_eq!(latest.snapshot.snapshot_id, winner);
    assert_eq!(
        latest.snapshot.parent_id.as_deref(),
        Some(completed.as_str())
    );
    assert_eq!(
        history(latest.snapshot.messages()),
        [
            "user: first",
            "model: reply to: first",
            "user: race",
            "model: reply to: race",
        ]
    );
}

/// (c) An abort sent to B stops the turn running on A within the
/// heartbeat interval.
async fn abort_reaches_another_replica(location: &str) {
    let probe_a = Arc::new(Probe::default());
    let (_ai_a, a) = replica(connect(location).await, "replica-a", probe_a.clone());
    let store_b = connect(location).await;
    let (_ai_b, b) = replica(store_b.clone(), "replica-b", Arc::default());
    let (session, completed, pending) = start_blocked_turn(&a, &probe_a).await;

    let sent = Instant::now();
    assert_eq!(
        b.abort(pending.clone()).await.expect("abort through B"),
        Some(SnapshotStatus::Pending)
    );
    while !probe_a.stopped.load(Ordering::SeqCst) {
        assert!(
            sent.elapsed() < BEAT * 4,
            "A's turn still runs {:?} after the abort",
            sent.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped_after = sent.elapsed();
    eprintln!(
        "abort through another replica took effect after {stopped_after:?} (heartbeat {BEAT:?})"
    );
    assert_eq!(probe_a.blocked.load(Ordering::SeqCst), 0);
    // The abort stands (A's outcome write does not overwrite it), and the
    // session continues at once from the last completed snapshot.
    tokio::time::sleep(BEAT).await;
    let aborted = store_b.get(&pending).await.expect("the aborted turn");
    assert_eq!(aborted.snapshot.status, Some(SnapshotStatus::Aborted));
    let out = b
        .chat_from(by_session(&session))
        .send(Message::user("after the abort"))
        .await
        .expect("the session continues");
    let next = store_b
        .get(&out.snapshot_id.expect("a snapshot"))
        .await
        .expect("B's turn");
    assert_eq!(next.snapshot.parent_id.as_deref(), Some(completed.as_str()));
}

/// (d) A live turn keeps its lease far past the lease time: B is refused
/// all along, and the turn still runs.
async fn live_lease_is_not_stolen(location: &str) {
    let probe_a = Arc::new(Probe::default());
    let (_ai_a, a) = replica(connect(location).await, "replica-a", probe_a.clone());
    let store_b = connect(location).await;
    let (_ai_b, b) = replica(store_b.clone(), "replica-b", Arc::default());
    let (session, _completed, pending) = start_blocked_turn(&a, &probe_a).await;
    let first = store_b.get(&pending).await.expect("the pending turn");
    let until = Instant::now() + LEASE * 3;
    while Instant::now() < until {
        expect_busy(&b, &session).await;
        tokio::time::sleep(LEASE / 4).await;
    }
    let now = store_b.get(&pending).await.expect("the pending turn");
    assert_eq!(now.snapshot.status, Some(SnapshotStatus::Pending));
    assert_eq!(now.snapshot.lease_owner.as_deref(), Some("replica-a"));
    assert!(
        now.snapshot.lease_expires_at > first.snapshot.lease_expires_at,
        "the heartbeat renewed the lease"
    );
    assert!(now.revision > first.revision);
    assert_eq!(
        probe_a.blocked.load(Ordering::SeqCst),
        1,
        "the turn still runs"
    );
    assert!(!probe_a.stopped.load(Ordering::SeqCst));
    // Done: abort it through A.
    a.abort(pending).await.expect("abort");
}

fn sqlite_location(path: &Path) -> String {
    format!("sqlite:{}", path.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_dead_replica_is_taken_over() {
    let (_dir, path) = support::sqlite_file();
    dead_replica_is_taken_over(&sqlite_location(&path)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_racing_takeovers_do_not_fork() {
    let (_dir, path) = support::sqlite_file();
    racing_takeovers_do_not_fork(&sqlite_location(&path)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_abort_reaches_another_replica() {
    let (_dir, path) = support::sqlite_file();
    abort_reaches_another_replica(&sqlite_location(&path)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_live_lease_is_not_stolen() {
    let (_dir, path) = support::sqlite_file();
    live_lease_is_not_stolen(&sqlite_location(&path)).await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    async fn database(test: &str) -> Option<String> {
        let server = support::postgres_server(test)?;
        Some(support::fresh_postgres_db(&server).await)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_dead_replica_is_taken_over() {
        if let Some(url) = database("postgres_dead_replica_is_taken_over").await {
            dead_replica_is_taken_over(&url).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_racing_takeovers_do_not_fork() {
        if let Some(url) = database("postgres_racing_takeovers_do_not_fork").await {
            racing_takeovers_do_not_fork(&url).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_abort_reaches_another_replica() {
        if let Some(url) = database("postgres_abort_reaches_another_replica").await {
            abort_reaches_another_replica(&url).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_live_lease_is_not_stolen() {
        if let Some(url) = database("postgres_live_lease_is_not_stolen").await {
            live_lease_is_not_stolen(&url).await;
        }
    }
}
