//! Real agent turns on the SQL stores: 50 tasks each run 6 turns of one
//! agent (a model call per turn) on ONE session at once (SQLite and PostgreSQL), and a turn
//! whose model call fails.
//!
//! Concurrent turns of one session: each turn resumes the session by id,
//! runs the model, and appends its snapshot based on the session version
//! it read. When another turn was appended meanwhile, the store refuses the
//! append (`ABORTED`) and the agent run fails with that error, nothing
//! written (the runtime does not re-base a turn computed from an old state:
//! that would fork the session). The caller, here each task, retries the
//! turn from a fresh read, as Genkit's semantics of one linear history per
//! session require.

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use genkit::agent::types::{AgentFinishReason, AgentInit, AgentInput};
use genkit::prelude::*;
use genkit_session::store::{SessionStore, is_conflict};
use genkit_session::testing::random_below;
use genkit_session::types::SnapshotStatus;
use genkit_store_sql::SqliteSessionStore;
use support::agent::{assistant, history};

const TASKS: usize = 50;
// 50 x 6 turns: 600 messages, within the default cap of 1,000 per session.
const TURNS: usize = 6;

/// One turn of `session`, retried from a fresh read while it loses the
/// race; returns how many times it lost.
async fn turn_until_stored(agent: &genkit::agent::Agent, session: &str, text: &str) -> usize {
    let mut lost = 0;
    loop {
        let chat = agent.chat_from(AgentInit {
            session_id: Some(session.to_owned()),
            ..AgentInit::default()
        });
        match chat.send(Message::user(text)).await {
            Ok(out) => {
                assert_eq!(out.finish_reason, Some(AgentFinishReason::Stop), "{out:?}");
                return lost;
            }
            Err(e) if is_conflict(&e) => {
                lost += 1;
                // Randomized exponential backoff (up to 640 ms): the
                // losers spread out instead of all colliding again at once.
                // Capped at 160 ms, 50 tasks lost about 11 attempts per
                // stored turn (each a whole turn on a long history: three
                // times the CPU); at 640 ms about 6, and the run ends
                // sooner.
                let cap = 10u64 << lost.min(6);
                let wait = random_below(cap) + 1;
                tokio::time::sleep(Duration::from_millis(wait)).await;
            }
            Err(e) => panic!("turn {text}: {} {}", e.status().name(), e.message()),
        }
    }
}

async fn fifty_tasks_six_turns(store: Arc<dyn SessionStore>) {
    let (_ai, agent) = assistant(store.clone());
    // The server mints the session's id on its first turn.
    let opened = agent
        .chat()
        .send(Message::user("start"))
        .await
        .expect("the first turn");
    let session = opened.session_id.expect("a session id");
    let tasks: Vec<_> = (0..TASKS)
        .map(|w| {
            let agent = agent.clone();
            let session = session.clone();
            tokio::spawn(async move {
                let mut lost = 0;
                for t in 0..TURNS {
                    lost += turn_until_stored(&agent, &session, &format!("w{w}t{t}")).await;
                }
                lost
            })
        })
        .collect();
    let started = std::time::Instant::now();
    let mut lost = 0;
    for t in tasks {
        lost += t.await.expect("task");
    }
    let elapsed = started.elapsed();
    let expected = TASKS * TURNS + 1;
    let latest = store.latest(&session).await.expect("latest");
    assert_eq!(
        latest.session_version, expected as u64,
        "exactly {expected} turns stored"
    );

    // The final history: every turn once, each user message answered right after.
    let messages = latest
        .snapshot
        .state
        .as_ref()
        .expect("a state")
        .messages()
        .to_vec();
    assert_eq!(messages.len(), 2 * expected);
    let lines = history(&messages);
    let mut said = HashSet::new();
    for pair in lines.chunks(2) {
        let text = pair[0]
            .strip_prefix("user: ")
            .expect("a user message first");
        assert_eq!(pair[1], format!("model: reply to: {text}"));
        assert!(said.insert(text.to_owned()), "turn {text} stored twice");
    }
    for w in 0..TASKS {
        for t in 0..TURNS {
            assert!(said.contains(&format!("w{w}t{t}")), "turn w{w}t{t} lost");
        }
    }
    // Each task's turns in its own order.
    for w in 0..TASKS {
        let mine: Vec<_> = lines
            .iter()
            .filter_map(|l| l.strip_prefix("user: "))
            .filter(|t| t.starts_with(&format!("w{w}t")))
            .collect();
        let want: Vec<String> = (0..TURNS).map(|t| format!("w{w}t{t}")).collect();
        assert_eq!(mine, want, "task {w}'s turns out of order");
    }

    // The chain: every completed snapshot, each its parent's history plus
    // its own turn.
    let mut count = 0;
    let mut ids = HashSet::new();
    let mut next = Some(latest.snapshot);
    while let Some(s) = next {
        count += 1;
        assert!(
            ids.insert(s.snapshot_id.clone()),
            "{} twice in the chain",
            s.snapshot_id
        );
        assert_eq!(s.status, Some(SnapshotStatus::Completed));
        let n = s.state.as_ref().map_or(0, |st| st.messages().len());
        assert_eq!(
            n,
            2 * (expected - count + 1),
            "snapshot {} has {n} messages",
            s.snapshot_id
        );
        next = match &s.parent_id {
            Some(p) => Some(store.get(p).await.expect("parent").snapshot),
            None => None,
        };
    }
    assert_eq!(count, expected, "the chain holds every turn");
    assert!(
        lost > 0,
        "no turn lost a race: the test exercised no concurrency"
    );
    eprintln!(
        "{expected} turns stored in {elapsed:?}; {lost} attempts lost a race and were retried"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_50_tasks_6_agent_turns_on_one_session() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    fifty_tasks_six_turns(Arc::new(store)).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_50_tasks_6_agent_turns_on_one_session() {
    let Some(server) = support::postgres_server("postgres_50_tasks_6_agent_turns_on_one_session")
    else {
        return;
    };
    let url = support::fresh_postgres_db(&server).await;
    let store = genkit_store_sql::PostgresSessionStore::connect(&url)
        .await
        .expect("connects");
    fifty_tasks_six_turns(Arc::new(store)).await;
}

/// A turn whose model call fails: every earlier row stays byte for byte as
/// it was; the failed turn appears only as its failed snapshot (as Genkit
/// JS records it) plus the session row's count; the session resumes from
/// the state before the failure.
async fn a_failed_turn_changes_nothing_stored(
    store: Arc<dyn SessionStore>,
    dump: impl AsyncFn() -> Vec<String>,
) {
    let (_ai, agent) = assistant(store.clone());
    let chat = agent.chat();
    for text in ["one", "two", "three"] {
        chat.send(Message::user(text)).await.expect("a turn");
    }
    let session = chat.session_id().expect("a session");
    let before_snapshot = chat.snapshot_id().expect("a snapshot");
    let before = dump().await;

    let out = chat
        .send_stream(AgentInput::message(Message::user("fail")))
        .output()
        .await
        .expect("the run ends gracefully");
    assert_eq!(out.finish_reason, Some(AgentFinishReason::Failed));
    let after = dump().await;

    let session_row = |rows: &[String]| {
        rows.iter()
            .find(|r| r.starts_with(&format!("{session}|")))
            .cloned()
            .expect("the session row")
    };
    let (old_session, new_session) = (session_row(&before), session_row(&after));
    let added: Vec<&String> = after.iter().filter(|r| !before.contains(r)).collect();
    let removed: Vec<&String> = before.iter().filter(|r| !after.contains(r)).collect();
    assert_eq!(removed, [&old_session], "only the session row changed");
    assert_eq!(
        added.len(),
        2,
        "one new snapshot row and the session row: {added:#?}"
    );
    let failed_row = added
        .iter()
        .find(|r| **r != &new_session)
        .expect("the failed snapshot row");
    assert!(failed_row.contains("|failed|"), "{failed_row}");
    assert!(
        new_session.starts_with(&format!("{session}|4|1|")),
        "{new_session}"
    );

    // Resuming the session goes on from the state before the failure.
    let resumed = agent.chat_from(AgentInit {
        session_id: Some(session.clone()),
        ..AgentInit::default()
    });
    resumed.send(Message::user("four")).await.expect("resumes");
    let snap = resumed.snapshot().await.expect("the new snapshot");
    assert_eq!(snap.parent_id.as_deref(), Some(before_snapshot.as_str()));
    assert_eq!(
        history(snap.state.as_ref().expect("state").messages()),
        [
            "user: one",
            "model: reply to: one",
            "user: two",
            "model: reply to: two",
            "user: three",
            "model: reply to: three",
            "user: four",
            "model: reply to: four"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_failed_turn_changes_nothing_stored() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    let p = path.clone();
    a_failed_turn_changes_nothing_stored(Arc::new(store), async || support::dump_sqlite(&p).await)
        .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_failed_turn_changes_nothing_stored() {
    let Some(server) = support::postgres_server("postgres_a_failed_turn_changes_nothing_stored")
    else {
        return;
    };
    let url = support::fresh_postgres_db(&server).await;
    let store = genkit_store_sql::PostgresSessionStore::connect(&url)
        .await
        .expect("connects");
    let u = url.clone();
    a_failed_turn_changes_nothing_stored(Arc::new(store), async || {
        support::dump_postgres(&u).await
    })
    .await;
}
