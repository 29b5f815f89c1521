//! The shared `SessionStore` suite on both stores, at the default load and
//! at issue 13's (50 writers × 20 turns on one session: exactly 1000
//! stored, chain intact), plus store-specific checks.

mod support;

use std::sync::Arc;

use genkit_core::StatusCode;
use genkit_core::context::ActionContext;
use genkit_session::store::SessionStore;
use genkit_session::testing::{
    SuiteConfig, session_store_suite, session_store_suite_with, tenant_isolation_suite,
};
use genkit_store_sql::SqliteSessionStore;
use serde_json::json;

/// The tenant a test store derives from the request: `auth.tenant`.
fn tenant_of(ctx: &ActionContext) -> String {
    ctx.auth()
        .and_then(|auth| auth.get("tenant"))
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .to_owned()
}

fn as_tenant(tenant: &str) -> ActionContext {
    ActionContext::new().with_auth(json!({"tenant": tenant}))
}

const ISSUE_LOAD: SuiteConfig = SuiteConfig {
    writers: 50,
    turns_per_writer: 20,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_passes_the_suite() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    session_store_suite(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_keeps_every_turn_of_50_writers() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path).await.expect("opens");
    session_store_suite_with(Arc::new(store), ISSUE_LOAD).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_reopens_with_its_sessions_and_two_stores_share_a_file() {
    let (_dir, path) = support::sqlite_file();
    let first = Arc::new(SqliteSessionStore::open(&path).await.expect("opens"));
    session_store_suite(first.clone()).await;
    // A second store on the same file (as a second process would): the
    // migrations are not applied twice, and both see one database.
    let second = Arc::new(SqliteSessionStore::open(&path).await.expect("reopens"));
    session_store_suite(second.clone()).await;
    let before = support::dump_sqlite(&path).await;
    first.close().await;
    let third = SqliteSessionStore::open(&path).await.expect("reopens");
    drop(third);
    assert_eq!(
        support::dump_sqlite(&path).await,
        before,
        "reopening changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_isolates_tenants() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path)
        .await
        .expect("opens")
        .tenant_fn(tenant_of);
    tenant_isolation_suite(Arc::new(store), as_tenant("a"), as_tenant("b")).await;
    // Fixed tenants on one file: the same isolation, and each passes the
    // whole suite beside the other's data.
    let a = Arc::new(
        SqliteSessionStore::open(&path)
            .await
            .expect("opens")
            .tenant("a"),
    );
    let b = Arc::new(
        SqliteSessionStore::open(&path)
            .await
            .expect("opens")
            .tenant("b"),
    );
    fixed_tenants_are_isolated(&*a, &*b).await;
    session_store_suite(a).await;
}

/// A store whose tenant comes out empty refuses every operation.
#[tokio::test]
async fn sqlite_refuses_an_empty_tenant() {
    let (_dir, path) = support::sqlite_file();
    let store = SqliteSessionStore::open(&path)
        .await
        .expect("opens")
        .tenant_fn(tenant_of);
    // Outside any action (or for a request without auth.tenant).
    let err = store.latest("s").await.expect_err("no tenant");
    assert_eq!(err.status(), StatusCode::PermissionDenied);
    assert_eq!(
        err.message(),
        "the session store has no tenant for this request (its tenant is empty)"
    );
    let err = store
        .record_effect("s", "k", json!(1))
        .await
        .expect_err("no tenant");
    assert_eq!(err.status(), StatusCode::PermissionDenied);
}

/// `a` and `b` are stores of two fixed tenants on one database.
async fn fixed_tenants_are_isolated(a: &dyn SessionStore, b: &dyn SessionStore) {
    use genkit_session::clock::now_rfc3339;
    use genkit_session::store::new_snapshot_id;
    use genkit_session::types::SessionSnapshot;

    let session = format!("s-{}", new_snapshot_id());
    let mut snap = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    snap.session_id = Some(session.clone());
    a.append(snap.clone(), 0).await.expect("tenant a appends");
    a.record_effect(&session, "k", json!("a"))
        .await
        .expect("effect");
    assert_eq!(
        b.get(&snap.snapshot_id)
            .await
            .map(|_| ())
            .map_err(|e| e.status()),
        Err(StatusCode::NotFound)
    );
    assert_eq!(
        b.latest(&session).await.map(|_| ()).map_err(|e| e.status()),
        Err(StatusCode::NotFound)
    );
    assert_eq!(b.effect(&session, "k").await.expect("reads"), None);
    b.append(snap.clone(), 0)
        .await
        .expect("tenant b uses the same ids");
    assert_eq!(
        a.latest(&session).await.expect("tenant a").session_version,
        1,
        "tenant b's append counted in tenant a's session"
    );
}

/// Rows as a database from before tenants (schema version 1) holds them:
/// a session of a checkpoint and a diff, and a side effect.
const ROWS_BEFORE_TENANTS: &str = r#"
    CREATE TABLE genkit_store_migrations (
        version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL);
    INSERT INTO genkit_store_migrations VALUES (1, 'sessions, snapshots, effects', '2026-01-01T00:00:00.000Z');
    INSERT INTO genkit_sessions VALUES ('old', 2, 1, 'snap-2');
    INSERT INTO genkit_snapshots VALUES ('snap-1', 'old', NULL, 1, 1, 'checkpoint', 'completed',
        '{"snapshotId":"snap-1","sessionId":"old","createdAt":"2026-01-01T00:00:00.000Z","status":"completed"}',
        '{"sessionId":"old","custom":{"n":1}}');
    INSERT INTO genkit_snapshots VALUES ('snap-2', 'old', 'snap-1', 2, 1, 'diff', 'completed',
        '{"snapshotId":"snap-2","sessionId":"old","parentId":"snap-1","createdAt":"2026-01-01T00:00:01.000Z","status":"completed"}',
        '[{"op":"replace","path":"/custom/n","value":2}]');
    INSERT INTO genkit_effects VALUES ('old', 'restart/1', '{"done":true}', '2026-01-01T00:00:01.000Z');
"#;

/// Creates the tables of schema version 1 with [`ROWS_BEFORE_TENANTS`].
async fn write_database_from_before_tenants<C>(conn: &mut C)
where
    for<'c> &'c mut C: sqlx::Executor<'c>,
{
    let old_schema = include_str!("../migrations/0001_sessions.sql");
    sqlx::Executor::execute(&mut *conn, old_schema)
        .await
        .expect("old schema");
    sqlx::Executor::execute(&mut *conn, ROWS_BEFORE_TENANTS)
        .await
        .expect("old rows");
}

/// After the migration: the old rows are the default tenant's and go on
/// working; `other` (another tenant) does not see them.
async fn check_database_from_before_tenants(
    store: Arc<dyn SessionStore>,
    other: &dyn SessionStore,
) {
    let latest = store.latest("old").await.expect("the old session");
    assert_eq!(latest.snapshot.snapshot_id, "snap-2");
    assert_eq!(latest.session_version, 2);
    let state = latest.snapshot.state.clone().expect("a state");
    assert_eq!(
        state.custom,
        Some(json!({"n": 2})),
        "the diff applies to the checkpoint"
    );
    assert_eq!(
        store.effect("old", "restart/1").await.expect("reads"),
        Some(json!({"done": true}))
    );
    // The session goes on.
    let mut next =
        genkit_session::types::SessionSnapshot::new("snap-3", genkit_session::clock::now_rfc3339());
    next.session_id = Some("old".into());
    next.parent_id = Some("snap-2".into());
    store
        .append(next, 2)
        .await
        .expect("continues the old session");
    assert_eq!(
        other
            .latest("old")
            .await
            .map(|_| ())
            .map_err(|e| e.status()),
        Err(StatusCode::NotFound)
    );
    assert_eq!(other.effect("old", "restart/1").await.expect("reads"), None);
    // And the whole suite passes on the migrated database.
    session_store_suite(store).await;
}

/// A database written before tenants (schema version 1) is migrated on
/// open: its sessions, snapshots (checkpoints and diffs) and side effects
/// belong to the default tenant and go on working; other tenants do not see
/// them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_databases_from_before_tenants_keep_working() {
    use sqlx::Connection;

    let (_dir, path) = support::sqlite_file();
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true);
    let mut conn = sqlx::SqliteConnection::connect_with(&options)
        .await
        .expect("creates the old database");
    write_database_from_before_tenants(&mut conn).await;
    conn.close().await.ok();
    let store = Arc::new(SqliteSessionStore::open(&path).await.expect("migrates"));
    let other = SqliteSessionStore::open(&path)
        .await
        .expect("reopens")
        .tenant("other");
    check_database_from_before_tenants(store, &other).await;
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use genkit_store_sql::PostgresSessionStore;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_passes_the_suite() {
        let Some(server) = support::postgres_server("postgres_passes_the_suite") else {
            return;
        };
        let url = support::fresh_postgres_db(&server).await;
        let store = PostgresSessionStore::connect(&url).await.expect("connects");
        session_store_suite(Arc::new(store)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_isolates_tenants() {
        let Some(server) = support::postgres_server("postgres_isolates_tenants") else {
            return;
        };
        let url = support::fresh_postgres_db(&server).await;
        let store = PostgresSessionStore::connect(&url)
            .await
            .expect("connects")
            .tenant_fn(tenant_of);
        tenant_isolation_suite(Arc::new(store), as_tenant("a"), as_tenant("b")).await;
        let a = Arc::new(
            PostgresSessionStore::connect(&url)
                .await
                .expect("connects")
                .tenant("a"),
        );
        let b = PostgresSessionStore::connect(&url)
            .await
            .expect("connects")
            .tenant("b");
        fixed_tenants_are_isolated(&*a, &b).await;
        session_store_suite(a).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_databases_from_before_tenants_keep_working() {
        use sqlx::Connection;

        let Some(server) =
            support::postgres_server("postgres_databases_from_before_tenants_keep_working")
        else {
            return;
        };
        let url = support::fresh_postgres_db(&server).await;
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connects");
        write_database_from_before_tenants(&mut conn).await;
        conn.close().await.ok();
        let store = Arc::new(PostgresSessionStore::connect(&url).await.expect("migrates"));
        let other = PostgresSessionStore::connect(&url)
            .await
            .expect("connects")
            .tenant("other");
        check_database_from_before_tenants(store, &other).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_keeps_every_turn_of_50_writers() {
        let Some(server) = support::postgres_server("postgres_keeps_every_turn_of_50_writers")
        else {
            return;
        };
        let url = support::fresh_postgres_db(&server).await;
        let store = PostgresSessionStore::connect(&url).await.expect("connects");
        session_store_suite_with(Arc::new(store), ISSUE_LOAD).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn postgres_stores_connecting_at_once_migrate_once() {
        let Some(server) =
            support::postgres_server("postgres_stores_connecting_at_once_migrate_once")
        else {
            return;
        };
        let url = support::fresh_postgres_db(&server).await;
        let opens: Vec<_> = (0..4)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { PostgresSessionStore::connect(&url).await })
            })
            .collect();
        let mut stores = Vec::new();
        for o in opens {
            stores.push(Arc::new(o.await.expect("joins").expect("connects")));
        }
        session_store_suite(stores[0].clone()).await;
        session_store_suite(stores[3].clone()).await;
    }
}
