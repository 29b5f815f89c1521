//! Benchmarks of the SQL session stores (run by `bench/stores/run.sh`):
//!
//! - turns per second on one session (sequential agent turns, each resuming
//!   the session by id and storing its snapshot);
//! - turns per second on 100 sessions in parallel (100 tasks, each its own
//!   session);
//! - bytes stored per turn for a 200-turn session: the snapshot rows'
//!   `meta` + `body` after 25, 50, 100 and 200 turns, against what storing
//!   every turn's whole state would take.
//!
//! ```text
//! cargo run --release -p genkit-store-sql --features postgres --example store_bench -- \
//!     [--postgres postgres://...] [--turns 200] [--parallel-turns 10]
//! ```
//!
//! Prints one JSON object per measurement.

#[path = "../tests/support/agent.rs"]
mod agent;

use std::sync::Arc;
use std::time::Instant;

use genkit::agent::types::AgentInit;
use genkit::prelude::*;
use genkit_session::store::{SessionStore, new_snapshot_id};
use serde_json::json;

/// What one turn adds: a user message and the model's reply of about 300
/// bytes together.
fn text(i: usize) -> String {
    format!(
        "turn {i}: please summarise the incident report and list the services that were affected"
    )
}

async fn turns_on_one_session(store: Arc<dyn SessionStore>, turns: usize) -> f64 {
    let (_ai, agent) = agent::assistant(store);
    let session = format!("bench-{}", new_snapshot_id());
    let chat = agent.chat_from(AgentInit {
        session_id: Some(session),
        ..AgentInit::default()
    });
    let started = Instant::now();
    for i in 0..turns {
        chat.send(Message::user(text(i))).await.expect("a turn");
    }
    turns as f64 / started.elapsed().as_secs_f64()
}

async fn turns_on_many_sessions(
    store: Arc<dyn SessionStore>,
    sessions: usize,
    turns: usize,
) -> f64 {
    let (_ai, agent) = agent::assistant(store);
    let started = Instant::now();
    let tasks: Vec<_> = (0..sessions)
        .map(|_| {
            let agent = agent.clone();
            tokio::spawn(async move {
                let chat = agent.chat();
                for i in 0..turns {
                    chat.send(Message::user(text(i))).await.expect("a turn");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("a session task");
    }
    (sessions * turns) as f64 / started.elapsed().as_secs_f64()
}

/// (turns, bytes stored, bytes of every turn's whole state, bytes of the last state).
async fn bytes_per_turn(
    store: Arc<dyn SessionStore>,
    stored_bytes: impl AsyncFn(&str) -> u64,
    turns: usize,
) -> Vec<(usize, u64, u64, u64)> {
    let (_ai, agent) = agent::assistant(store.clone());
    let session = format!("bytes-{}", new_snapshot_id());
    let chat = agent.chat_from(AgentInit {
        session_id: Some(session.clone()),
        ..AgentInit::default()
    });
    let mut full_copies = 0u64;
    let mut out = Vec::new();
    for i in 1..=turns {
        chat.send(Message::user(text(i))).await.expect("a turn");
        let latest = store.latest(&session).await.expect("latest");
        let state = serde_json::to_string(&latest.snapshot.state)
            .expect("encodes")
            .len() as u64;
        full_copies += state;
        if [25, 50, 100, 200, 400].contains(&i) || i == turns {
            out.push((i, stored_bytes(&session).await, full_copies, state));
        }
    }
    out.dedup_by_key(|r| r.0);
    out
}

fn flag(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

const ROW_BYTES: &str = "SELECT CAST(COALESCE(SUM(LENGTH(meta) + LENGTH(body)), 0) AS BIGINT) \
                         FROM genkit_snapshots WHERE session_id = $1";

async fn run(
    name: &str,
    open: impl AsyncFn() -> Arc<dyn SessionStore>,
    stored_bytes: impl AsyncFn(&str) -> u64,
    turns: usize,
    parallel_turns: usize,
) {
    let one = turns_on_one_session(open().await, turns).await;
    println!(
        "{}",
        json!({"store": name, "bench": "one_session", "turns": turns, "turns_per_sec": one})
    );
    let many = turns_on_many_sessions(open().await, 100, parallel_turns).await;
    println!(
        "{}",
        json!({"store": name, "bench": "100_sessions", "turns": 100 * parallel_turns, "turns_per_sec": many})
    );
    for (t, stored, full, last) in bytes_per_turn(open().await, stored_bytes, turns).await {
        println!(
            "{}",
            json!({"store": name, "bench": "bytes", "turns": t, "stored_bytes": stored,
                   "full_copy_bytes": full, "last_state_bytes": last})
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let turns: usize = flag("--turns").and_then(|t| t.parse().ok()).unwrap_or(200);
    let parallel_turns: usize = flag("--parallel-turns")
        .and_then(|t| t.parse().ok())
        .unwrap_or(10);

    let dir = tempfile::tempdir().expect("a temporary directory");
    let n = std::sync::atomic::AtomicUsize::new(0);
    let file = |i: usize| dir.path().join(format!("bench-{i}.db"));
    run(
        "sqlite",
        async || {
            let i = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let store = genkit_store_sql::SqliteSessionStore::open(file(i))
                .await
                .expect("opens");
            Arc::new(store) as Arc<dyn SessionStore>
        },
        async |session: &str| {
            use sqlx::Connection;
            let i = n.load(std::sync::atomic::Ordering::SeqCst) - 1;
            let url = format!("sqlite://{}", file(i).display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.expect("opens");
            let bytes: i64 = sqlx::query_scalar(ROW_BYTES)
                .bind(session)
                .fetch_one(&mut conn)
                .await
                .expect("sums");
            bytes as u64
        },
        turns,
        parallel_turns,
    )
    .await;

    #[cfg(feature = "postgres")]
    if let Some(url) = flag("--postgres") {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await
            .expect("connects");
        run(
            "postgres",
            async || {
                let store = genkit_store_sql::PostgresSessionStore::connect(&url)
                    .await
                    .expect("connects");
                Arc::new(store) as Arc<dyn SessionStore>
            },
            async |session: &str| {
                let bytes: i64 = sqlx::query_scalar(ROW_BYTES)
                    .bind(session)
                    .fetch_one(&pool)
                    .await
                    .expect("sums");
                bytes as u64
            },
            turns,
            parallel_turns,
        )
        .await;
    }
}
