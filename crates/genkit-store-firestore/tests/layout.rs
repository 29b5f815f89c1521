//! Documents the Rust store writes equal what Genkit JS's
//! FirestoreSessionStore writes for the same turns: the same snapshot,
//! pointer and shard documents, checkpoint/diff choices, segment paths,
//! JSON Patches, and shard bytes.

mod support;

use genkit_model::types::Message;
use genkit_session::clock::now_rfc3339;
use genkit_session::store::{SessionStore, new_snapshot_id};
use genkit_session::types::{AgentFinishReason, SessionSnapshot, SessionState, SnapshotStatus};
use serde_json::{Value, json};

/// Small enough that checkpoints shard and a large turn's diff is promoted.
const SHARD_SIZE: usize = 300;
const INTERVAL: u64 = 3;

fn snapshot(session: &str, parent: Option<&str>, messages: &[Message], n: u64) -> SessionSnapshot {
    let now = now_rfc3339();
    let mut s = SessionSnapshot::new(new_snapshot_id(), now.clone());
    s.session_id = Some(session.to_owned());
    s.parent_id = parent.map(str::to_owned);
    s.updated_at = Some(now);
    s.status = Some(SnapshotStatus::Completed);
    s.finish_reason = Some(AgentFinishReason::Stop);
    s.state = Some(SessionState {
        session_id: Some(session.to_owned()),
        messages: Some(std::sync::Arc::new(messages.to_vec())),
        custom: Some(json!({"turn": n, "ratio": 0.5, "tags": ["a", {"b": null}]})),
        artifacts: None,
    });
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_match_genkit_js() {
    let Some(host) = support::emulator("documents_match_genkit_js") else {
        return;
    };
    let rs_collection = support::fresh_collection("layout-rs");
    let js_collection = support::fresh_collection("layout-js");
    let store = support::builder(&host, &rs_collection)
        .checkpoint_interval(INTERVAL)
        .shard_size(SHARD_SIZE)
        .build()
        .expect("store builds");
    let session = format!("layout-{}", new_snapshot_id());
    let mut ops: Vec<Value> = Vec::new();
    let mut messages = Vec::new();
    let mut parent: Option<String> = None;
    let mut ids = Vec::new();

    // Five turns: a root checkpoint, diffs, a checkpoint at the interval,
    // and one turn whose diff is too large (promoted to a checkpoint).
    for n in 1..=5u64 {
        messages.push(Message::user(format!("question {n} ünïcødé")));
        let reply = if n == 2 {
            "x".repeat(2 * SHARD_SIZE)
        } else {
            format!("answer {n}")
        };
        messages.push(Message::model(reply));
        let s = snapshot(&session, parent.as_deref(), &messages, n);
        let stored = store.append(s.clone(), n - 1).await.expect("append");
        ops.push(json!({"append": s}));
        parent = Some(stored.snapshot.snapshot_id.clone());
        ids.push(stored.snapshot.snapshot_id);
    }
    // A detached turn: pending, a heartbeat, then completed with its state.
    let mut pending = snapshot(&session, parent.as_deref(), &messages, 6);
    pending.status = Some(SnapshotStatus::Pending);
    pending.finish_reason = None;
    let p = store.append(pending.clone(), 5).await.expect("pending");
    ops.push(json!({"append": pending}));
    let mut beat = pending.clone();
    beat.heartbeat_at = Some(now_rfc3339());
    let b = store
        .update(beat.clone(), p.revision)
        .await
        .expect("heartbeat");
    ops.push(json!({"update": beat}));
    let mut done = beat.clone();
    messages.push(Message::user("question 6"));
    messages.push(Message::model("answer 6"));
    done.state = snapshot(&session, None, &messages, 6).state;
    done.status = Some(SnapshotStatus::Completed);
    done.finish_reason = Some(AgentFinishReason::Stop);
    done.updated_at = Some(now_rfc3339());
    store
        .update(done.clone(), b.revision)
        .await
        .expect("completion");
    ops.push(json!({"update": done}));
    // A branch from an older turn (not the pointer's leaf).
    let branch = snapshot(&session, Some(&ids[1]), &messages[..4], 7);
    store.append(branch.clone(), 6).await.expect("branch");
    ops.push(json!({"append": branch}));

    let (ok, out) = support::node(
        &host,
        "layout.mjs",
        &[
            &rs_collection,
            &js_collection,
            &INTERVAL.to_string(),
            &SHARD_SIZE.to_string(),
        ],
        &serde_json::to_string(&ops).expect("ops encode"),
    )
    .await;
    assert!(ok, "the Rust and Genkit JS layouts differ:\n{out}");
    let report: Value = serde_json::from_str(&out).expect("layout.mjs prints JSON");
    eprintln!(
        "layout.mjs: {} documents compared, no differences",
        report["documents"]
    );
    // 7 snapshots, 1 pointer, and the shards of the checkpoints.
    assert!(
        report["documents"].as_u64().unwrap_or(0) > 8,
        "too few documents compared: {out}"
    );
}
