//! A database from before leases (schema version 2) holding a detached
//! turn's pending snapshot, opened by this version: migration 3 adds the
//! lease columns, the pending snapshot reads back as it was written (its
//! heartbeat from its metadata, no lease), nobody can renew a lease it never
//! had, and once its heartbeat is stale it is taken over like any dead turn
//! and the session goes on.

mod support;

use std::sync::Arc;
use std::time::Duration;

use genkit_session::store::SessionStore;
use genkit_session::store::lease::{LeaseRenewal, TakeOver};
use genkit_session::types::{RuntimeError, SessionSnapshot, SnapshotStatus};
use genkit_store_sql::SqliteSessionStore;
use serde_json::json;

/// Rows as schema version 1 held them: a completed root and, continuing
/// it, a pending detached turn whose heartbeat is long stale.
const ROWS: &str = r#"
    CREATE TABLE genkit_store_migrations (
        version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL);
    INSERT INTO genkit_store_migrations VALUES (1, 'sessions, snapshots, effects', '2026-01-01T00:00:00.000Z');
    INSERT INTO genkit_sessions VALUES ('old', 2, 1, 'snap-2');
    INSERT INTO genkit_snapshots VALUES ('snap-1', 'old', NULL, 1, 1, 'checkpoint', 'completed',
        '{"snapshotId":"snap-1","sessionId":"old","createdAt":"2026-01-01T00:00:00.000Z","status":"completed"}',
        '{"sessionId":"old","custom":{"n":1}}');
    INSERT INTO genkit_snapshots VALUES ('snap-2', 'old', 'snap-1', 2, 3, 'diff', 'pending',
        '{"snapshotId":"snap-2","sessionId":"old","parentId":"snap-1","createdAt":"2026-01-01T00:00:01.000Z","heartbeatAt":"2026-01-01T00:00:31.000Z","status":"pending"}',
        '[]');
"#;

/// Writes a schema-version-2 database: migration 1, the rows, migration 2.
async fn write_version_2_database<C>(conn: &mut C)
where
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    for sql in [
        include_str!("../migrations/0001_sessions.sql"),
        ROWS,
        include_str!("../migrations/0002_tenants.sql"),
        "INSERT INTO genkit_store_migrations VALUES (2, 'tenants', '2026-01-02T00:00:00.000Z')",
    ] {
        sqlx::Executor::execute(&mut *conn, sql)
            .await
            .expect("the version 2 database");
    }
}

async fn check_migrated(store: Arc<dyn SessionStore>) {
    let pending = store.get("snap-2").await.expect("the pending turn");
    assert_eq!(pending.revision, 3);
    assert_eq!(pending.snapshot.status, Some(SnapshotStatus::Pending));
    assert_eq!(
        pending.snapshot.heartbeat_at.as_deref(),
        Some("2026-01-01T00:00:31.000Z"),
        "the heartbeat is read from the metadata"
    );
    assert_eq!(pending.snapshot.lease_owner, None);
    assert_eq!(pending.snapshot.lease_expires_at, None);
    assert_eq!(
        store
            .renew_lease("snap-2", "replica-a", Duration::from_secs(30))
            .await
            .expect("renew"),
        LeaseRenewal::Lost(Some(SnapshotStatus::Pending)),
        "a snapshot without a lease is nobody's to renew"
    );
    let dead = RuntimeError::new(genkit_core::StatusCode::Unavailable, "stale heartbeat");
    match store
        .take_over("snap-2", Duration::from_secs(60), dead)
        .await
        .expect("take over")
    {
        TakeOver::TookOver(s) => {
            assert_eq!(s.snapshot.status, Some(SnapshotStatus::Failed));
            assert_eq!(s.revision, 4);
        }
        other => panic!("a stale heartbeat was not taken over: {other:?}"),
    }
    // The session continues from its completed root.
    let latest = store.latest("old").await.expect("the session's latest");
    assert_eq!(latest.snapshot.snapshot_id, "snap-2");
    let mut next = SessionSnapshot::new("snap-3", genkit_session::clock::now_rfc3339());
    next.session_id = Some("old".into());
    next.parent_id = Some("snap-1".into());
    next.status = Some(SnapshotStatus::Completed);
    store
        .append(next, latest.session_version)
        .await
        .expect("continues past the dead turn");
    let latest = store.latest("old").await.expect("the new latest");
    assert_eq!(latest.snapshot.snapshot_id, "snap-3");
    let root = store.get("snap-1").await.expect("the root");
    assert_eq!(
        root.snapshot.state.and_then(|s| s.custom),
        Some(json!({"n": 1}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pending_turns_from_before_leases_keep_working() {
    use sqlx::Connection;

    let (_dir, path) = support::sqlite_file();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .expect("creates the old database");
    write_version_2_database(&mut conn).await;
    conn.close().await.ok();
    let store = SqliteSessionStore::open(&path).await.expect("migrates");
    check_migrated(Arc::new(store)).await;
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .expect("reopens");
    let version: i64 = sqlx::query_scalar("SELECT MAX(version) FROM genkit_store_migrations")
        .fetch_one(&mut conn)
        .await
        .expect("the schema version");
    assert_eq!(version, 3);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_pending_turns_from_before_leases_keep_working() {
    use sqlx::Connection;

    let Some(server) =
        support::postgres_server("postgres_pending_turns_from_before_leases_keep_working")
    else {
        return;
    };
    let url = support::fresh_postgres_db(&server).await;
    let mut conn = sqlx::PgConnection::connect(&url).await.expect("connects");
    write_version_2_database(&mut conn).await;
    let store = genkit_store_sql::PostgresSessionStore::connect(&url)
        .await
        .expect("migrates");
    check_migrated(Arc::new(store)).await;
    let version: i64 = sqlx::query_scalar("SELECT MAX(version) FROM genkit_store_migrations")
        .fetch_one(&mut conn)
        .await
        .expect("the schema version");
    assert_eq!(version, 3);
}
