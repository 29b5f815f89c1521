//! The shared `SessionStore` suite on the Firestore emulator.
//!
//! The emulator (`@firestore-emulator/server`) neither isolates transactions
//! nor checks update-time preconditions; it does check create-only
//! (`exists: false`) preconditions, which is what the store's write markers
//! rely on, so conflicting writes are refused here too. The concurrency part
//! runs with a small load: the guarantees under real contention come from
//! Firestore's serializable transactions (see the crate docs) and are proven
//! for the same trait on SQLite and PostgreSQL.

mod support;

use std::sync::Arc;

use genkit_session::testing::{SuiteConfig, session_store_suite_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_store_suite_on_the_emulator() {
    if support::emulator("session_store_suite_on_the_emulator").is_none() {
        return;
    }
    let collection = support::fresh_collection("suite");
    // No emulator_host(): the store finds FIRESTORE_EMULATOR_HOST itself.
    let store = genkit_store_firestore::FirestoreSessionStore::builder()
        .project_id(support::PROJECT)
        .collection(&collection)
        .build()
        .expect("store builds");
    session_store_suite_with(
        Arc::new(store),
        SuiteConfig {
            writers: 3,
            turns_per_writer: 4,
        },
    )
    .await;
}

/// Stores with different tenant prefixes on one collection see nothing of
/// each other's sessions, snapshots or side effects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_prefixes_isolate_sessions() {
    use genkit_core::StatusCode;
    use genkit_session::clock::now_rfc3339;
    use genkit_session::store::{SessionStore, new_snapshot_id};
    use genkit_session::types::SessionSnapshot;
    use serde_json::json;

    let Some(host) = support::emulator("tenant_prefixes_isolate_sessions") else {
        return;
    };
    let collection = support::fresh_collection("tenants");
    let a = support::builder(&host, &collection)
        .prefix("tenant-a")
        .build()
        .expect("store builds");
    let b = support::builder(&host, &collection)
        .prefix_fn(|_ctx| "tenant-b".to_owned())
        .build()
        .expect("store builds");
    let session = format!("s-{}", new_snapshot_id());
    let mut snap = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    snap.session_id = Some(session.clone());
    a.append(snap.clone(), 0).await.expect("tenant a appends");
    a.record_effect(&session, "k", json!(1))
        .await
        .expect("effect");

    let status = |r: genkit_core::Result<_>| {
        r.map(|_: genkit_session::store::StoredSnapshot| ())
            .map_err(|e| e.status())
    };
    assert_eq!(
        status(b.get(&snap.snapshot_id).await),
        Err(StatusCode::NotFound)
    );
    assert_eq!(status(b.latest(&session).await), Err(StatusCode::NotFound));
    assert_eq!(b.effect(&session, "k").await.expect("reads"), None);
    // Tenant b may use the same session id independently.
    let mut other = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    other.session_id = Some(session.clone());
    let stored = b.append(other, 0).await.expect("tenant b appends");
    assert_eq!(stored.session_version, 1);
    assert_eq!(a.latest(&session).await.expect("a's latest").snapshot, snap);
}

/// Bad options are `INVALID_ARGUMENT` at build time.
#[tokio::test]
async fn bad_options_are_refused() {
    use genkit_core::StatusCode;
    use genkit_store_firestore::FirestoreSessionStore;

    let base = || {
        FirestoreSessionStore::builder()
            .emulator_host("127.0.0.1:9")
            .project_id("p")
    };
    for (what, builder) in [
        ("a zero checkpoint interval", base().checkpoint_interval(0)),
        ("a zero shard size", base().shard_size(0)),
        ("a collection path", base().collection("a/b")),
    ] {
        let r = builder.build().map(|_| ()).map_err(|e| e.status());
        assert_eq!(r, Err(StatusCode::InvalidArgument), "{what}");
    }
    let bad_prefix = base().prefix("a/b").build().expect("builds");
    let r = genkit_session::store::SessionStore::latest(&bad_prefix, "s").await;
    assert_eq!(
        r.map(|_| ()).map_err(|e| e.status()),
        Err(StatusCode::InvalidArgument)
    );
}

/// A session whose checkpoint shard or diff document went missing reads as
/// `DATA_LOSS`, never as a wrong state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_documents_are_data_loss() {
    use genkit_core::StatusCode;
    use genkit_session::store::{SessionStore, new_snapshot_id};

    let Some(host) = support::emulator("missing_documents_are_data_loss") else {
        return;
    };
    let collection = support::fresh_collection("corrupt");
    let store = support::builder(&host, &collection)
        .build()
        .expect("store builds");
    let session = format!("s-{}", new_snapshot_id());
    let mut ids = Vec::new();
    for i in 0..3u64 {
        let s = support::user_snapshot(
            &session,
            ids.last().map(String::as_str),
            &format!("turn {i}"),
        );
        store.append(s.clone(), i).await.expect("append");
        ids.push(s.snapshot_id);
    }
    let status = |r: genkit_core::Result<genkit_session::store::StoredSnapshot>| {
        r.map(|_| ()).map_err(|e| e.status())
    };
    // The root is the checkpoint; the others are diffs from it.
    let (ok, _) = support::node(
        &host,
        "delete_doc.mjs",
        &[&format!("{collection}/global/snapshots/{}", ids[1])],
        "",
    )
    .await;
    assert!(ok, "deleting a diff");
    assert_eq!(status(store.get(&ids[2]).await), Err(StatusCode::DataLoss));
    let (ok, _) = support::node(
        &host,
        "delete_doc.mjs",
        &[&format!("{collection}-shards/global/shards/{}_0", ids[0])],
        "",
    )
    .await;
    assert!(ok, "deleting a shard");
    assert_eq!(status(store.get(&ids[0]).await), Err(StatusCode::DataLoss));
}

/// A session's version and latest snapshot come from its counter document,
/// not from a query over its snapshots: a stray snapshot document of the
/// session that no append of this store wrote does not count. When another
/// writer (Genkit JS) moves the session's pointer, the counter no longer
/// agrees with it and the session is read with the query again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_read_from_their_counter_document() {
    use genkit_core::StatusCode;
    use genkit_session::clock::now_rfc3339;
    use genkit_session::store::{SessionStore, new_snapshot_id};
    use genkit_session::types::SnapshotStatus;

    let Some(host) = support::emulator("sessions_are_read_from_their_counter_document") else {
        return;
    };
    let collection = support::fresh_collection("counter");
    let store = support::builder(&host, &collection)
        .build()
        .expect("store builds");
    let session = format!("s-{}", new_snapshot_id());
    let snapshot = |parent: Option<&String>, text: &str, status: SnapshotStatus| {
        let mut s = support::user_snapshot(&session, parent.map(String::as_str), text);
        s.status = Some(status);
        s
    };
    // root <- one <- (failed) ; one <- two: the failed leaf is replaced.
    let root = snapshot(None, "root", SnapshotStatus::Completed);
    store.append(root.clone(), 0).await.expect("root");
    let one = snapshot(Some(&root.snapshot_id), "one", SnapshotStatus::Completed);
    store.append(one.clone(), 1).await.expect("one");
    let failed = snapshot(Some(&one.snapshot_id), "failed", SnapshotStatus::Failed);
    store.append(failed.clone(), 2).await.expect("failed");
    let latest = store.latest(&session).await.expect("latest");
    assert_eq!(latest.snapshot.snapshot_id, failed.snapshot_id);
    let two = snapshot(Some(&one.snapshot_id), "two", SnapshotStatus::Completed);
    store.append(two.clone(), 3).await.expect("two");
    let latest = store.latest(&session).await.expect("latest");
    assert_eq!(latest.snapshot.snapshot_id, two.snapshot_id);
    assert_eq!(latest.session_version, 4);
    // A pending turn's heartbeat and end rewrite its snapshot, not the
    // counter; the session still reads right.
    let mut pending = snapshot(Some(&two.snapshot_id), "pending", SnapshotStatus::Pending);
    store.append(pending.clone(), 4).await.expect("pending");
    pending.status = Some(SnapshotStatus::Completed);
    store.update(pending.clone(), 1).await.expect("completed");
    let latest = store.latest(&session).await.expect("latest");
    assert_eq!(latest.snapshot.snapshot_id, pending.snapshot_id);
    assert_eq!(latest.snapshot.status, Some(SnapshotStatus::Completed));
    assert_eq!(latest.session_version, 5);

    // A stray snapshot document of the session, a second root.
    let stray = new_snapshot_id();
    let fields = serde_json::json!({
        "snapshotId": stray,
        "sessionId": session,
        "createdAt": now_rfc3339(),
        "updatedAt": now_rfc3339(),
        "status": "completed",
        "kind": "checkpoint",
        "checkpointId": stray,
        "checkpointShardCount": 1,
        "segmentPath": [],
    });
    let (ok, _) = support::node(
        &host,
        "set_doc.mjs",
        &[&format!("{collection}/global/snapshots/{stray}")],
        &fields.to_string(),
    )
    .await;
    assert!(ok, "writing the stray snapshot");
    let latest = store.latest(&session).await.expect("read from the counter");
    assert_eq!(latest.snapshot.snapshot_id, pending.snapshot_id);
    assert_eq!(latest.session_version, 5);
    let got = store.get(&root.snapshot_id).await.expect("get");
    assert_eq!(got.session_version, 5);

    // Another writer moves the pointer: the query sees both roots' leaves.
    let (ok, _) = support::node(
        &host,
        "set_doc.mjs",
        &[&format!("{collection}-pointers/global/pointers/{session}")],
        &serde_json::json!({"currentSnapshotId": stray}).to_string(),
    )
    .await;
    assert!(ok, "moving the pointer");
    let err = store.latest(&session).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition, "{err}");
    assert!(err.message().contains("2 leaves"), "{err}");
    assert_eq!(
        store
            .get(&root.snapshot_id)
            .await
            .expect("get")
            .session_version,
        6
    );
}
