//! Server-managed sessions are owned, named by the server, never forked by
//! a resume, and their detached turns are bounded and stopped by an abort
//! (issue 26, items 3, 4 and 6).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use genkit_agent::store::{InMemorySessionStore, SessionStore, StoredSnapshot};
use genkit_agent::types::{
    AgentFinishReason, AgentInit, AgentInput, AgentOutput, AgentResult, GetSnapshotRequest,
    SessionSnapshot, SessionState, SnapshotStatus,
};
use genkit_agent::{Agent, AgentOptions, AgentSession};
use genkit_core::action::{Action, ActionCtx, ActionKind};
use genkit_core::{ActionContext, Error, Result, RunOptions, StatusCode};
use genkit_model::types::Message;
use parking_lot::Mutex;
use serde_json::{Value, json};

fn alice() -> ActionContext {
    ActionContext::new().with_auth(json!({"uid": "alice", "token": "a-secret"}))
}

fn bob() -> ActionContext {
    ActionContext::new().with_auth(json!({"uid": "bob"}))
}

/// An agent that answers each message with "echo: <text>" after the
/// history it has.
fn echo_agent(options: AgentOptions) -> Agent {
    Agent::new(
        "echo",
        options,
        |session: AgentSession, input: AgentInput| async move {
            let text = input.message.map(|m| m.text()).unwrap_or_default();
            let reply = Message::model(format!(
                "echo: {text} ({} before)",
                session.messages().len() - 1
            ));
            session.add_messages([reply.clone()]);
            Ok(AgentResult {
                message: Some(reply),
                finish_reason: Some(AgentFinishReason::Stop),
                ..AgentResult::default()
            })
        },
    )
    .unwrap()
}

fn store() -> Arc<InMemorySessionStore> {
    Arc::new(InMemorySessionStore::new())
}

/// One run of the agent as `context`'s principal.
async fn run(
    agent: &Agent,
    context: &ActionContext,
    init: AgentInit,
    inputs: Vec<AgentInput>,
) -> Result<AgentOutput> {
    let mut stream = agent
        .action()
        .start_with(init, RunOptions::new().context(context.clone()));
    for input in inputs {
        stream.send(input)?;
    }
    stream.close();
    stream.output().await
}

async fn say(agent: &Agent, context: &ActionContext, init: AgentInit, text: &str) -> AgentOutput {
    run(
        agent,
        context,
        init,
        vec![AgentInput::message(Message::user(text))],
    )
    .await
    .unwrap()
}

fn by_session(id: &str) -> AgentInit {
    AgentInit {
        session_id: Some(id.to_owned()),
        ..AgentInit::default()
    }
}

fn by_snapshot(id: &str) -> AgentInit {
    AgentInit {
        snapshot_id: Some(id.to_owned()),
        ..AgentInit::default()
    }
}

async fn get_snapshot(
    agent: &Agent,
    context: &ActionContext,
    request: GetSnapshotRequest,
) -> Result<SessionSnapshot> {
    agent
        .snapshot_action()
        .run_with(request, RunOptions::new().context(context.clone()))
        .await
        .map(|r| r.output)
}

async fn abort(agent: &Agent, context: &ActionContext, id: &str) -> Option<SnapshotStatus> {
    let request = genkit_agent::types::AgentAbortRequest {
        snapshot_id: id.to_owned(),
    };
    agent
        .abort_action()
        .run_with(request, RunOptions::new().context(context.clone()))
        .await
        .unwrap()
        .output
        .status
}

fn snapshot_req(id: &str) -> GetSnapshotRequest {
    GetSnapshotRequest {
        snapshot_id: Some(id.to_owned()),
        session_id: None,
    }
}

fn session_req(id: &str) -> GetSnapshotRequest {
    GetSnapshotRequest {
        snapshot_id: None,
        session_id: Some(id.to_owned()),
    }
}

/// Runs `fut` inside an action whose context is `context` (for APIs that
/// read the running action's context, such as `Agent::fork`).
async fn as_principal<T: Send + 'static>(context: &ActionContext, fut: BoxFuture<'static, T>) -> T {
    let slot = Arc::new(Mutex::new(Some(fut)));
    let out = Arc::new(Mutex::new(None));
    let (s, o) = (slot.clone(), out.clone());
    let action = Action::<Value, Value>::new(ActionKind::Flow, "asPrincipal", move |_, _ctx| {
        let fut = s.lock().take();
        let o = o.clone();
        async move {
            if let Some(fut) = fut {
                *o.lock() = Some(fut.await);
            }
            Ok(Value::Null)
        }
    });
    action
        .run_with(Value::Null, RunOptions::new().context(context.clone()))
        .await
        .unwrap();
    out.lock().take().unwrap()
}

fn error_of(output: &AgentOutput) -> (String, String) {
    let e = output.error.as_ref().expect("a failed run");
    (e.status.clone().unwrap_or_default(), e.message.clone())
}

#[tokio::test]
async fn another_principal_sees_a_session_as_unknown_and_the_owner_goes_on() {
    let store = store();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let first = say(&agent, &alice(), AgentInit::default(), "hi").await;
    let session = first.session_id.clone().unwrap();
    let snap = first.snapshot_id.clone().unwrap();
    // The owner is recorded as a hash of the auth, not the auth itself.
    let owner = store
        .effect(&session, "genkit:owner")
        .await
        .unwrap()
        .unwrap();
    assert!(!owner.to_string().contains("a-secret"), "{owner}");

    for stranger in [bob(), ActionContext::new()] {
        // getSnapshot, both forms: as for unknown ids.
        let by_id = get_snapshot(&agent, &stranger, snapshot_req(&snap))
            .await
            .unwrap_err();
        let unknown = get_snapshot(&agent, &stranger, snapshot_req("nope"))
            .await
            .unwrap_err();
        assert_eq!(by_id.status(), StatusCode::NotFound);
        assert_eq!(unknown.status(), StatusCode::NotFound);
        assert_eq!(
            by_id.to_string().replace(&snap, "ID"),
            unknown.to_string().replace("nope", "ID")
        );
        let by_sid = get_snapshot(&agent, &stranger, session_req(&session))
            .await
            .unwrap_err();
        assert_eq!(by_sid.status(), StatusCode::NotFound);
        assert_eq!(
            by_sid.to_string(),
            format!("NOT_FOUND: Snapshot '{session}' not found for agent 'echo'.")
        );

        // Continuing it, by session id or snapshot id.
        let out = say(&agent, &stranger, by_session(&session), "let me in").await;
        assert_eq!(out.finish_reason, Some(AgentFinishReason::Failed));
        assert_eq!(
            error_of(&out),
            (
                "NOT_FOUND".into(),
                format!(
                    "Session '{session}' not found for agent 'echo'; omit `sessionId` to start a new session."
                )
            )
        );
        let out = say(&agent, &stranger, by_snapshot(&snap), "let me in").await;
        assert_eq!(
            error_of(&out),
            ("NOT_FOUND".into(), format!("Snapshot {snap} not found"))
        );

        // Aborting: the answer an unknown id gets, and nothing changes.
        assert_eq!(abort(&agent, &stranger, &snap).await, None);
        assert_eq!(abort(&agent, &stranger, "nope").await, None);
    }
    assert_eq!(
        store.latest(&session).await.unwrap().snapshot.snapshot_id,
        snap
    );

    // The owner goes on, by either id.
    let second = say(&agent, &alice(), by_session(&session), "again").await;
    assert_eq!(second.finish_reason, Some(AgentFinishReason::Stop));
    assert_eq!(second.message.unwrap().text(), "echo: again (2 before)");
    let third = say(
        &agent,
        &alice(),
        by_snapshot(second.snapshot_id.as_deref().unwrap()),
        "more",
    )
    .await;
    assert_eq!(third.message.unwrap().text(), "echo: more (4 before)");
    let read = get_snapshot(&agent, &alice(), session_req(&session))
        .await
        .unwrap();
    assert_eq!(Some(read.snapshot_id), third.snapshot_id);
}

#[tokio::test]
async fn a_principal_override_decides_who_owns() {
    let agent = echo_agent(
        AgentOptions::new()
            .store(store())
            .principal(|ctx: &ActionContext| {
                ctx.auth()?.get("tenant")?.as_str().map(str::to_owned)
            }),
    );
    let one = ActionContext::new().with_auth(json!({"tenant": "t1", "uid": "a"}));
    let same_tenant = ActionContext::new().with_auth(json!({"tenant": "t1", "uid": "b"}));
    let out = say(&agent, &one, AgentInit::default(), "hi").await;
    let session = out.session_id.unwrap();
    let next = say(&agent, &same_tenant, by_session(&session), "hello").await;
    assert_eq!(next.finish_reason, Some(AgentFinishReason::Stop));
    let refused = say(&agent, &bob(), by_session(&session), "hello").await;
    assert_eq!(error_of(&refused).0, "NOT_FOUND");
}

#[tokio::test]
async fn sessions_stored_without_an_owner_belong_to_anonymous_callers() {
    let store = store();
    // A session written before owners were recorded.
    let mut old = SessionSnapshot::new("old-1", "2026-01-01T00:00:00.000Z");
    old.session_id = Some("legacy".into());
    old.status = Some(SnapshotStatus::Completed);
    old.state = Some(SessionState {
        session_id: Some("legacy".into()),
        messages: Some(Arc::new(vec![Message::user("a"), Message::model("b")])),
        ..SessionState::default()
    });
    store.append(old, 0).await.unwrap();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let refused = say(&agent, &alice(), by_session("legacy"), "mine?").await;
    assert_eq!(error_of(&refused).0, "NOT_FOUND");
    let out = say(&agent, &ActionContext::new(), by_session("legacy"), "c").await;
    assert_eq!(out.message.unwrap().text(), "echo: c (2 before)");
}

#[tokio::test]
async fn an_unknown_session_id_is_refused_unless_clients_may_name_sessions() {
    let store = store();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let out = say(&agent, &alice(), by_session("my-typo"), "hi").await;
    assert_eq!(out.finish_reason, Some(AgentFinishReason::Failed));
    assert_eq!(
        error_of(&out),
        (
            "NOT_FOUND".into(),
            "Session 'my-typo' not found for agent 'echo'; omit `sessionId` to start a new session.".into()
        )
    );
    assert_eq!(
        store.latest("my-typo").await.unwrap_err().status(),
        StatusCode::NotFound
    );
    assert_eq!(store.effect("my-typo", "genkit:owner").await.unwrap(), None);

    // Without a sessionId the server mints one, and says which.
    let minted = say(&agent, &alice(), AgentInit::default(), "hi").await;
    let id = minted.session_id.unwrap();
    assert_eq!(id.len(), 36, "{id}");
    assert_eq!(
        store.latest(&id).await.unwrap().snapshot.snapshot_id,
        minted.snapshot_id.unwrap()
    );

    // Opted in: a client names a new session, and owns it.
    let named = echo_agent(
        AgentOptions::new()
            .store(store.clone())
            .client_session_ids(true),
    );
    let out = say(&named, &alice(), by_session("chosen"), "hi").await;
    assert_eq!(out.session_id.as_deref(), Some("chosen"));
    assert_eq!(out.finish_reason, Some(AgentFinishReason::Stop));
    let taken = say(&named, &bob(), by_session("chosen"), "hi").await;
    assert_eq!(error_of(&taken).0, "NOT_FOUND");
    let again = say(&named, &alice(), by_session("chosen"), "again").await;
    assert_eq!(again.message.unwrap().text(), "echo: again (2 before)");
}

#[tokio::test]
async fn resuming_an_older_snapshot_is_refused_and_forks_are_explicit() {
    let store = store();
    let agent = Arc::new(echo_agent(AgentOptions::new().store(store.clone())));
    let one = say(&agent, &alice(), AgentInit::default(), "one").await;
    let session = one.session_id.clone().unwrap();
    let first = one.snapshot_id.unwrap();
    let two = say(&agent, &alice(), by_session(&session), "two").await;
    let second = two.snapshot_id.unwrap();

    let refused = run(
        &agent,
        &alice(),
        by_snapshot(&first),
        vec![AgentInput::message(Message::user("x"))],
    )
    .await
    .unwrap_err();
    assert_eq!(refused.status(), StatusCode::FailedPrecondition);
    assert_eq!(
        refused.to_string(),
        format!(
            "FAILED_PRECONDITION: Snapshot '{first}' is not the latest of session '{session}' (its latest is '{second}'); continuing it would fork the session. Resume by 'sessionId', or fork it into a new session explicitly (Agent::fork)."
        )
    );
    // The latest itself resumes; the session never branched.
    let three = say(&agent, &alice(), by_snapshot(&second), "three").await;
    assert_eq!(three.message.unwrap().text(), "echo: three (4 before)");
    assert_eq!(
        store.latest(&session).await.unwrap().snapshot.snapshot_id,
        three.snapshot_id.unwrap()
    );

    // An explicit fork copies the older state into a new session the
    // caller owns; a stranger cannot fork it.
    let a = agent.clone();
    let f = first.clone();
    let forked = as_principal(&alice(), async move { a.fork(&f).await }.boxed())
        .await
        .unwrap();
    assert_ne!(forked, session);
    let a = agent.clone();
    let f = first.clone();
    let stranger = as_principal(&bob(), async move { a.fork(&f).await }.boxed()).await;
    assert_eq!(stranger.unwrap_err().status(), StatusCode::NotFound);
    let out = say(&agent, &alice(), by_session(&forked), "branch").await;
    assert_eq!(out.message.unwrap().text(), "echo: branch (2 before)");
    assert_eq!(
        error_of(&say(&agent, &bob(), by_session(&forked), "x").await).0,
        "NOT_FOUND"
    );

    // An app that wants Genkit JS's branching opts in.
    let forking = echo_agent(AgentOptions::new().store(store.clone()).allow_forks(true));
    let out = say(&forking, &alice(), by_snapshot(&first), "branch").await;
    assert_eq!(out.message.unwrap().text(), "echo: branch (2 before)");
}

#[tokio::test]
async fn detach_only_inputs_between_turns_write_nothing() {
    let store = store();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let one = say(&agent, &alice(), AgentInit::default(), "one").await;
    let session = one.session_id.clone().unwrap();
    let first = one.snapshot_id.unwrap();
    let version = store.latest(&session).await.unwrap().session_version;
    for _ in 0..2 {
        let out = run(
            &agent,
            &alice(),
            by_session(&session),
            vec![AgentInput::detach()],
        )
        .await
        .unwrap();
        assert_eq!(out.finish_reason, Some(AgentFinishReason::Detached));
        assert_eq!(out.snapshot_id.as_deref(), Some(first.as_str()));
    }
    let latest = store.latest(&session).await.unwrap();
    assert_eq!(
        (latest.snapshot.snapshot_id, latest.session_version),
        (first.clone(), version)
    );
    // A turn then a detach-only input in one run: the turn's snapshot.
    let out = run(
        &agent,
        &alice(),
        by_session(&session),
        vec![
            AgentInput::message(Message::user("two")),
            AgentInput::detach(),
        ],
    )
    .await
    .unwrap();
    let second = store.latest(&session).await.unwrap();
    assert_eq!(out.snapshot_id, Some(second.snapshot.snapshot_id));
    assert_eq!(second.snapshot.parent_id, Some(first));
    let three = say(&agent, &alice(), by_session(&session), "three").await;
    assert_eq!(three.message.unwrap().text(), "echo: three (4 before)");
}

/// Waits until `check` holds (or fails the test after 5 s).
async fn eventually(mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..500 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached in 5 s");
}

#[tokio::test]
async fn abort_stops_a_detached_turns_tools() {
    let store = store();
    let started = Arc::new(tokio::sync::Notify::new());
    let side_effect = Arc::new(AtomicBool::new(false));
    let cancel_seen = Arc::new(AtomicBool::new(false));
    let (st, se) = (started.clone(), side_effect.clone());
    // A tool that takes a while, then acts.
    let tool =
        Action::<Value, Value>::new(ActionKind::Tool, "restart", move |_, _ctx: ActionCtx| {
            let (st, se) = (st.clone(), se.clone());
            async move {
                st.notify_one();
                tokio::time::sleep(Duration::from_millis(300)).await;
                se.store(true, Ordering::SeqCst);
                Ok(json!("restarted"))
            }
        });
    let cs = cancel_seen.clone();
    let agent = Agent::new(
        "ops",
        AgentOptions::new().store(store.clone()),
        move |_session: AgentSession, _input: AgentInput| {
            let tool = tool.clone();
            let cs = cs.clone();
            async move {
                // Work the turn hands to another task keeps its cancellation.
                let watcher = genkit_core::tracing::propagate(async move {
                    if let Some(token) = genkit_core::tracing::current_cancellation() {
                        token.cancelled().await;
                        cs.store(true, Ordering::SeqCst);
                    }
                });
                tokio::spawn(watcher);
                tool.run(Value::Null).await?;
                tool.run(Value::Null).await?;
                Ok(AgentResult::default())
            }
        },
    )
    .unwrap();
    let out = run(
        &agent,
        &alice(),
        AgentInit::default(),
        vec![AgentInput {
            message: Some(Message::user("restart it")),
            detach: Some(true),
            ..AgentInput::default()
        }],
    )
    .await
    .unwrap();
    let pending = out.snapshot_id.unwrap();
    started.notified().await;
    assert_eq!(
        abort(&agent, &alice(), &pending).await,
        Some(SnapshotStatus::Pending)
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !side_effect.load(Ordering::SeqCst),
        "the tool acted after the abort"
    );
    assert!(
        cancel_seen.load(Ordering::SeqCst),
        "the turn's cancellation did not fire"
    );
    let snap = get_snapshot(&agent, &alice(), snapshot_req(&pending))
        .await
        .unwrap();
    assert_eq!(snap.status, Some(SnapshotStatus::Aborted));
}

/// An agent whose turns wait for `release` (or forever).
fn waiting_agent(options: AgentOptions, release: Arc<tokio::sync::Notify>) -> Agent {
    Agent::new(
        "slow",
        options,
        move |_session: AgentSession, _input: AgentInput| {
            let release = release.clone();
            async move {
                release.notified().await;
                Ok(AgentResult::default())
            }
        },
    )
    .unwrap()
}

fn detached_message(text: &str) -> AgentInput {
    AgentInput {
        message: Some(Message::user(text)),
        detach: Some(true),
        ..AgentInput::default()
    }
}

#[tokio::test]
async fn a_detached_turn_past_its_deadline_fails() {
    let store = store();
    let agent = waiting_agent(
        AgentOptions::new()
            .store(store.clone())
            .detached_timeout(Duration::from_millis(100)),
        Arc::new(tokio::sync::Notify::new()),
    );
    let out = run(
        &agent,
        &alice(),
        AgentInit::default(),
        vec![detached_message("go")],
    )
    .await
    .unwrap();
    let id = out.snapshot_id.unwrap();
    eventually(async || {
        store.get(&id).await.unwrap().snapshot.status == Some(SnapshotStatus::Failed)
    })
    .await;
    let snap = store.get(&id).await.unwrap().snapshot;
    let error = snap.error.unwrap();
    assert_eq!(error.status.as_deref(), Some("DEADLINE_EXCEEDED"));
    assert_eq!(
        error.message,
        "The detached turn ran longer than its deadline (0.1s) and was cancelled."
    );
}

#[tokio::test]
async fn detaching_over_the_limit_is_refused_and_writes_nothing() {
    let store = store();
    let release = Arc::new(tokio::sync::Notify::new());
    let agent = waiting_agent(
        AgentOptions::new().store(store.clone()).max_detached(1),
        release.clone(),
    );
    let busy = run(
        &agent,
        &alice(),
        AgentInit::default(),
        vec![detached_message("one")],
    )
    .await
    .unwrap();
    // Another session of the same owner, one completed turn (released).
    let owner = alice();
    let other = run(
        &agent,
        &owner,
        AgentInit::default(),
        vec![AgentInput::message(Message::user("x"))],
    );
    let (other, ()) = tokio::join!(other, async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        release.notify_one();
    });
    let other = other.unwrap();
    let session = other.session_id.unwrap();
    let before = store.latest(&session).await.unwrap();

    let refused = run(
        &agent,
        &alice(),
        by_session(&session),
        vec![detached_message("two")],
    )
    .await
    .unwrap_err();
    assert_eq!(refused.status(), StatusCode::ResourceExhausted);
    assert_eq!(
        refused.to_string(),
        "RESOURCE_EXHAUSTED: Agent 'slow' already runs 1 detached turns (its limit); wait for one to finish, or run this turn attached."
    );
    assert_eq!(store.latest(&session).await.unwrap(), before);

    // Once the running one ends, detaching works again.
    assert_eq!(
        abort(&agent, &alice(), busy.snapshot_id.as_deref().unwrap()).await,
        Some(SnapshotStatus::Pending)
    );
    let mut out = None;
    eventually(async || {
        out = run(
            &agent,
            &alice(),
            by_session(&session),
            vec![detached_message("two")],
        )
        .await
        .ok();
        out.is_some()
    })
    .await;
    assert_eq!(
        out.unwrap().finish_reason,
        Some(AgentFinishReason::Detached)
    );
}

#[tokio::test]
async fn a_pending_turn_whose_heartbeat_expired_does_not_block_the_session() {
    let store = store();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let one = say(&agent, &alice(), AgentInit::default(), "one").await;
    let session = one.session_id.clone().unwrap();
    let first = one.snapshot_id.unwrap();
    // A detached turn whose process died: pending, heartbeat long ago.
    let mut dead = SessionSnapshot::new("dead", "2026-01-01T00:00:00.000Z");
    dead.session_id = Some(session.clone());
    dead.parent_id = Some(first.clone());
    dead.status = Some(SnapshotStatus::Pending);
    dead.heartbeat_at = Some("2026-01-01T00:00:00.000Z".into());
    dead.state = store.get(&first).await.unwrap().snapshot.state;
    let version = store.latest(&session).await.unwrap().session_version;
    store.append(dead, version).await.unwrap();
    // A live one would still be refused (see the replay's differences);
    // this one is closed as failed and the session continues past it.
    let two = say(&agent, &alice(), by_session(&session), "two").await;
    assert_eq!(two.message.unwrap().text(), "echo: two (2 before)");
    let closed = store.get("dead").await.unwrap().snapshot;
    assert_eq!(closed.status, Some(SnapshotStatus::Failed));
    assert_eq!(closed.error.unwrap().status.as_deref(), Some("UNAVAILABLE"));
    let latest = store.latest(&session).await.unwrap().snapshot;
    assert_eq!(Some(latest.snapshot_id), two.snapshot_id);
    assert_eq!(latest.parent_id, Some(first));
}

#[tokio::test]
async fn a_live_pending_turn_still_blocks_resume_by_session() {
    let store = store();
    let release = Arc::new(tokio::sync::Notify::new());
    let agent = waiting_agent(AgentOptions::new().store(store.clone()), release.clone());
    let out = run(
        &agent,
        &alice(),
        AgentInit::default(),
        vec![detached_message("one")],
    )
    .await
    .unwrap();
    let session = out.session_id.unwrap();
    let err: Error = run(
        &agent,
        &alice(),
        by_session(&session),
        vec![AgentInput::message(Message::user("x"))],
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    release.notify_one();
}

/// A store that, when the snapshot `on` is read, first appends `concurrent`
/// to its session (another turn landing between two reads of a run).
#[derive(Default)]
struct LandsBetweenReads {
    inner: InMemorySessionStore,
    on: Mutex<Option<(String, SessionSnapshot)>>,
}

#[async_trait::async_trait]
impl SessionStore for LandsBetweenReads {
    async fn get(&self, id: &str) -> Result<StoredSnapshot> {
        let armed = {
            let mut on = self.on.lock();
            match on.as_ref() {
                Some((target, _)) if target == id => on.take(),
                _ => None,
            }
        };
        if let Some((_, snapshot)) = armed {
            let session = snapshot.session_id.clone().unwrap_or_default();
            let version = self.inner.latest(&session).await?.session_version;
            self.inner.append(snapshot, version).await?;
        }
        self.inner.get(id).await
    }
    async fn latest(&self, session: &str) -> Result<StoredSnapshot> {
        self.inner.latest(session).await
    }
    async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        self.inner.append(snapshot, base).await
    }
    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        self.inner.update(snapshot, base).await
    }
    async fn record_effect(&self, session: &str, key: &str, result: Value) -> Result<Value> {
        self.inner.record_effect(session, key, result).await
    }
    async fn effect(&self, session: &str, key: &str) -> Result<Option<Value>> {
        self.inner.effect(session, key).await
    }
}

fn child_of(id: &str, parent: &SessionSnapshot, status: SnapshotStatus) -> SessionSnapshot {
    let mut child = SessionSnapshot::new(id, "2026-01-01T00:00:00.000Z");
    child.session_id = parent.session_id.clone();
    child.parent_id = Some(parent.snapshot_id.clone());
    child.status = Some(status);
    child.state = parent.state.clone();
    child
}

#[tokio::test]
async fn a_resume_past_a_failed_turn_conflicts_with_a_turn_that_landed_meanwhile() {
    let store = Arc::new(LandsBetweenReads::default());
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let one = say(&agent, &ActionContext::new(), AgentInit::default(), "one").await;
    let session = one.session_id.clone().unwrap();
    let good = store
        .get(one.snapshot_id.as_deref().unwrap())
        .await
        .unwrap();
    // The session's latest is a failed turn after `good`.
    let failed = child_of("failed", &good.snapshot, SnapshotStatus::Failed);
    store.append(failed, good.session_version).await.unwrap();
    // Another resume past the same failed turn lands while this one walks
    // back from the failed turn to `good`.
    let other = child_of("other", &good.snapshot, SnapshotStatus::Completed);
    *store.on.lock() = Some((good.snapshot.snapshot_id.clone(), other));

    let refused = run(
        &agent,
        &ActionContext::new(),
        by_session(&session),
        vec![AgentInput::message(Message::user("two"))],
    )
    .await
    .unwrap_err();
    assert_eq!(refused.status(), StatusCode::Aborted, "{refused}");
    // The session did not fork: the turn that landed is its latest.
    let latest = store.latest(&session).await.unwrap().snapshot;
    assert_eq!(latest.snapshot_id, "other");
    // Retried, the resume continues it.
    let two = say(&agent, &ActionContext::new(), by_session(&session), "two").await;
    assert_eq!(two.message.unwrap().text(), "echo: two (2 before)");
    let latest = store.latest(&session).await.unwrap().snapshot;
    assert_eq!(latest.parent_id.as_deref(), Some("other"));
}

/// Sets its flag when dropped: a turn's future was dropped (stopped).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// An agent (replica `id`) whose turns never end; `stopped` is set when a
/// turn is dropped.
fn endless_agent(store: Arc<InMemorySessionStore>, id: &str, stopped: Arc<AtomicBool>) -> Agent {
    Agent::new(
        "endless",
        AgentOptions::new()
            .store(store)
            .replica_id(id)
            .lease_time(Duration::from_millis(800))
            .heartbeat_interval(Duration::from_millis(100)),
        move |_session: AgentSession, _input: AgentInput| {
            let flag = DropFlag(stopped.clone());
            async move {
                let _flag = flag;
                futures::future::pending::<()>().await;
                Ok(AgentResult::default())
            }
        },
    )
    .unwrap()
}

#[tokio::test]
async fn an_abort_through_another_replica_stops_the_turn_within_a_heartbeat() {
    let store = store();
    let stopped = Arc::new(AtomicBool::new(false));
    let a = endless_agent(store.clone(), "replica-a", stopped.clone());
    let b = endless_agent(store.clone(), "replica-b", Arc::default());
    let out = run(
        &a,
        &alice(),
        AgentInit::default(),
        vec![detached_message("go")],
    )
    .await
    .unwrap();
    let pending = out.snapshot_id.unwrap();
    let leased = store.get(&pending).await.unwrap().snapshot;
    assert_eq!(leased.lease_owner.as_deref(), Some("replica-a"));
    // Clients do not see the lease.
    let read = get_snapshot(&b, &alice(), snapshot_req(&pending))
        .await
        .unwrap();
    assert_eq!((read.lease_owner, read.lease_expires_at), (None, None));
    assert_eq!(read.status, Some(SnapshotStatus::Pending));

    assert_eq!(
        abort(&b, &alice(), &pending).await,
        Some(SnapshotStatus::Pending)
    );
    assert!(!stopped.load(Ordering::SeqCst), "B cannot cancel A's task");
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        stopped.load(Ordering::SeqCst),
        "A's heartbeat found the abort and stopped the turn"
    );
    let snap = store.get(&pending).await.unwrap().snapshot;
    assert_eq!(snap.status, Some(SnapshotStatus::Aborted));
}

#[tokio::test]
async fn a_turn_whose_lease_lapsed_is_taken_over_by_another_replica() {
    let store = store();
    let agent = echo_agent(AgentOptions::new().store(store.clone()));
    let one = say(&agent, &alice(), AgentInit::default(), "one").await;
    let session = one.session_id.clone().unwrap();
    let first = one.snapshot_id.unwrap();
    // A replica that died 300 ms into its lease: nobody renews it.
    let mut dead = SessionSnapshot::new("dead", genkit_agent::clock::now_rfc3339());
    dead.session_id = Some(session.clone());
    dead.parent_id = Some(first.clone());
    dead.status = Some(SnapshotStatus::Pending);
    genkit_agent::store::lease::grant(&mut dead, "replica-gone", Duration::from_millis(300));
    let version = store.latest(&session).await.unwrap().session_version;
    store.append(dead, version).await.unwrap();
    let err = run(
        &agent,
        &alice(),
        by_session(&session),
        vec![AgentInput::message(Message::user("too soon"))],
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let read = get_snapshot(&agent, &alice(), snapshot_req("dead"))
        .await
        .unwrap();
    assert_eq!(read.status, Some(SnapshotStatus::Expired));
    let two = say(&agent, &alice(), by_session(&session), "two").await;
    assert_eq!(two.message.unwrap().text(), "echo: two (2 before)");
    let closed = store.get("dead").await.unwrap().snapshot;
    assert_eq!(closed.status, Some(SnapshotStatus::Failed));
    assert_eq!(closed.lease_owner, None);
    let latest = store.latest(&session).await.unwrap().snapshot;
    assert_eq!(latest.parent_id, Some(first));
}

#[tokio::test]
async fn a_heartbeat_that_cannot_keep_a_lease_is_refused() {
    let err = Agent::new(
        "bad",
        AgentOptions::new()
            .store(store())
            .lease_time(Duration::from_secs(1))
            .heartbeat_interval(Duration::from_secs(1)),
        |_session: AgentSession, _input: AgentInput| async { Ok(AgentResult::default()) },
    )
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}
