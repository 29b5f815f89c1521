//! Interop with Genkit JS 1.42: a session created and advanced by a Genkit JS
//! agent with FirestoreSessionStore on the emulator is continued by a Rust
//! agent on this store, then continued again by Genkit JS, and both sides
//! see the same history.

mod support;

use std::sync::Arc;

use genkit::agent::AgentOptions;
use genkit::agent::types::AgentInit;
use genkit::model::ModelOptions;
use genkit::prelude::*;
use genkit::types::{FinishReason, GenerateRequest, GenerateResponse, Role};
use genkit_session::store::SessionStore;
use genkit_store_firestore::FirestoreSessionStore;

/// Genkit with model `scripted` (answers "reply to: <last user text>", as
/// tests/js/interop.mjs) and prompt agent `assistant` on `store`.
fn rust_agent(store: Arc<FirestoreSessionStore>) -> (Genkit, genkit::agent::Agent) {
    let ai = Genkit::builder()
        .no_prompt_dir()
        .build()
        .expect("genkit builds");
    ai.define_model(
        ModelOptions::new("scripted"),
        |req: GenerateRequest, _ctx| async move {
            let said = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.text())
                .unwrap_or_default();
            Ok(GenerateResponse::new(
                Message::model(format!("reply to: {said}")),
                FinishReason::Stop,
            ))
        },
    );
    let prompt = ai.define_prompt::<Value, Value>(
        genkit::prompt::PromptConfig::new("assistant").model("scripted"),
    );
    let agent = ai.define_prompt_agent("assistant", &prompt, AgentOptions::new().store(store));
    (ai, agent)
}

fn history(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.text()))
        .collect()
}

fn js_history(output: &Value) -> Vec<String> {
    let messages: Vec<Message> =
        serde_json::from_value(output["latest"]["state"]["messages"].clone()).unwrap_or_else(|e| {
            panic!("Genkit JS's latest snapshot has no messages ({e}): {output}")
        });
    history(&messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_js_and_rust_continue_each_others_sessions() {
    let Some(host) = support::emulator("genkit_js_and_rust_continue_each_others_sessions") else {
        return;
    };
    let collection = support::fresh_collection("interop");

    // Genkit JS: a new session, two turns.
    let (ok, out) =
        support::node(&host, "interop.mjs", &[&collection, "-", "one", "two"], "").await;
    assert!(ok, "Genkit JS's first turns failed: {out}");
    let js = support::last_json(&out);
    let session_id = js["sessionId"].as_str().expect("a session id").to_owned();
    assert_eq!(
        js_history(&js),
        [
            "user: one",
            "model: reply to: one",
            "user: two",
            "model: reply to: two"
        ]
    );

    // Rust: continues the session by its id for one turn.
    let store = Arc::new(
        support::builder(&host, &collection)
            .build()
            .expect("store builds"),
    );
    let (_ai, agent) = rust_agent(store.clone());
    let chat = agent.chat_from(AgentInit {
        session_id: Some(session_id.clone()),
        ..AgentInit::default()
    });
    let output = chat
        .send(Message::user("three"))
        .await
        .expect("the Rust turn");
    assert_eq!(output.session_id.as_deref(), Some(session_id.as_str()));
    let rust_latest = store
        .latest(&session_id)
        .await
        .expect("latest after Rust's turn");
    let after_rust = history(
        rust_latest
            .snapshot
            .state
            .as_ref()
            .map_or(&[][..], |s| s.messages()),
    );
    assert_eq!(
        after_rust,
        [
            "user: one",
            "model: reply to: one",
            "user: two",
            "model: reply to: two",
            "user: three",
            "model: reply to: three"
        ]
    );
    assert_eq!(
        rust_latest.session_version, 3,
        "two JS turns and one Rust turn"
    );
    assert_eq!(
        rust_latest.snapshot.parent_id.as_deref(),
        js["snapshotId"].as_str(),
        "the Rust turn continues Genkit JS's last snapshot"
    );

    // Genkit JS: continues after the Rust turn.
    let (ok, out) = support::node(
        &host,
        "interop.mjs",
        &[&collection, &session_id, "four"],
        "",
    )
    .await;
    assert!(ok, "Genkit JS's turn after Rust failed: {out}");
    let js = support::last_json(&out);
    let mut expected = after_rust.clone();
    expected.extend(["user: four".to_owned(), "model: reply to: four".to_owned()]);
    assert_eq!(js_history(&js), expected, "Genkit JS sees Rust's turn");
    assert_eq!(
        js["latest"]["parentId"].as_str(),
        Some(rust_latest.snapshot.snapshot_id.as_str()),
        "Genkit JS continues Rust's snapshot"
    );

    // And Rust reads Genkit JS's last turn the same way.
    let last = store
        .latest(&session_id)
        .await
        .expect("latest after JS's turn");
    assert_eq!(
        history(
            last.snapshot
                .state
                .as_ref()
                .map_or(&[][..], |s| s.messages())
        ),
        expected
    );
    assert_eq!(last.session_version, 4);
    assert_eq!(
        last.snapshot.snapshot_id,
        js["snapshotId"].as_str().unwrap_or_default()
    );
}

/// The other way round: a Rust agent starts the session, Genkit JS continues
/// it, and Rust reads Genkit JS's turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_js_continues_a_session_rust_started() {
    let Some(host) = support::emulator("genkit_js_continues_a_session_rust_started") else {
        return;
    };
    let collection = support::fresh_collection("interop-rs");
    let store = Arc::new(
        support::builder(&host, &collection)
            .build()
            .expect("store builds"),
    );
    let (_ai, agent) = rust_agent(store.clone());
    let chat = agent.chat();
    chat.send(Message::user("one"))
        .await
        .expect("first Rust turn");
    chat.send(Message::user("two"))
        .await
        .expect("second Rust turn");
    let session_id = chat.session_id().expect("the chat has a session");

    let (ok, out) = support::node(
        &host,
        "interop.mjs",
        &[&collection, &session_id, "three"],
        "",
    )
    .await;
    assert!(ok, "Genkit JS's turn on a Rust session failed: {out}");
    let js = support::last_json(&out);
    let expected = [
        "user: one",
        "model: reply to: one",
        "user: two",
        "model: reply to: two",
        "user: three",
        "model: reply to: three",
    ];
    assert_eq!(js_history(&js), expected);
    let last = store
        .latest(&session_id)
        .await
        .expect("latest after JS's turn");
    assert_eq!(
        history(
            last.snapshot
                .state
                .as_ref()
                .map_or(&[][..], |s| s.messages())
        ),
        expected
    );
    assert_eq!(last.session_version, 3);
}

/// A detached turn's pending snapshot written by Rust, rewritten in place by
/// Genkit JS (a heartbeat), is still read, updated and aborted by Rust.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_updates_a_snapshot_genkit_js_rewrote() {
    use genkit::agent::types::{SessionSnapshot, SnapshotStatus};
    use genkit_session::clock::now_rfc3339;
    use genkit_session::store::new_snapshot_id;

    let Some(host) = support::emulator("rust_updates_a_snapshot_genkit_js_rewrote") else {
        return;
    };
    let collection = support::fresh_collection("interop-rewrite");
    let store = support::builder(&host, &collection)
        .build()
        .expect("store builds");
    let session = format!("s-{}", new_snapshot_id());
    let mut root = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    root.session_id = Some(session.clone());
    root.updated_at = Some(root.created_at.clone());
    root.status = Some(SnapshotStatus::Completed);
    store.append(root.clone(), 0).await.expect("root");
    let mut pending = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    pending.session_id = Some(session.clone());
    pending.parent_id = Some(root.snapshot_id.clone());
    pending.updated_at = Some(pending.created_at.clone());
    pending.status = Some(SnapshotStatus::Pending);
    let p = store.append(pending.clone(), 1).await.expect("pending");
    let mut beat = pending.clone();
    beat.heartbeat_at = Some(now_rfc3339());
    store
        .update(beat, p.revision)
        .await
        .expect("a Rust heartbeat");

    let js_beat = "2030-01-01T00:00:00.000Z";
    let (ok, out) = support::node(
        &host,
        "upsert.mjs",
        &[&collection, &pending.snapshot_id, js_beat],
        "",
    )
    .await;
    assert!(ok, "Genkit JS's rewrite failed: {out}");
    let js = support::last_json(&out);
    assert_eq!(js["status"], "pending", "{js}");

    let read = store
        .get(&pending.snapshot_id)
        .await
        .expect("Rust reads JS's rewrite");
    assert_eq!(read.snapshot.heartbeat_at.as_deref(), Some(js_beat));
    assert_eq!(read.snapshot.status, Some(SnapshotStatus::Pending));
    assert_eq!(
        store.abort(&pending.snapshot_id).await.expect("abort"),
        Some(SnapshotStatus::Pending)
    );
    let aborted = store.get(&pending.snapshot_id).await.expect("re-read");
    assert_eq!(aborted.snapshot.status, Some(SnapshotStatus::Aborted));
    assert_eq!(aborted.snapshot.heartbeat_at.as_deref(), Some(js_beat));
}
