//! What the store tests share: a fresh SQLite file or PostgreSQL database
//! per test, and a dump of every stored row to compare before and after.

#![allow(dead_code)] // each test binary uses part of it

pub mod agent;

use std::path::PathBuf;

/// The variable test.sh sets to its private PostgreSQL server
/// (`tests-support/postgres/start.sh`).
pub const POSTGRES_URL_VAR: &str = "GENKIT_TEST_POSTGRES_URL";

/// A fresh SQLite database file in a temporary directory (kept until the
/// returned guard drops).
pub fn sqlite_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("sessions.db");
    (dir, path)
}

/// The URL of the test PostgreSQL server, or `None` after printing why the
/// test skips. Under CI (`CI=true`) a missing server fails the test: there
/// test.sh always starts one.
pub fn postgres_server(test: &str) -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(
                !ci,
                "{test}: {POSTGRES_URL_VAR} is not set under CI; test.sh starts PostgreSQL \
                 (tests-support/postgres/start.sh) and must export it"
            );
            eprintln!(
                "SKIPPED {test}: {POSTGRES_URL_VAR} is not set (test.sh starts a private \
                 PostgreSQL: tests-support/postgres/start.sh)"
            );
            None
        }
    }
}

/// A new, empty database on the test server; its URL. Each test gets its
/// own, so row dumps see only that test's writes.
#[cfg(feature = "postgres")]
pub async fn fresh_postgres_db(server: &str) -> String {
    use sqlx::Connection;
    let name = format!(
        "t_{}",
        genkit_session::store::new_snapshot_id().replace('-', "")
    );
    let mut admin = sqlx::PgConnection::connect(server)
        .await
        .unwrap_or_else(|e| panic!("connecting to {server}: {e}"));
    sqlx::Executor::execute(&mut admin, format!("CREATE DATABASE {name}").as_str())
        .await
        .expect("CREATE DATABASE");
    admin.close().await.ok();
    with_database(server, &name)
}

/// `url` with its database replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &base[..path_start]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// Every row of the store's tables, as text, in a fixed order.
const DUMP: &[&str] = &[
    "SELECT session_id || '|' || CAST(version AS TEXT) || '|' || CAST(leaves AS TEXT) || '|' || \
     latest_id FROM genkit_sessions ORDER BY session_id",
    "SELECT snapshot_id || '|' || session_id || '|' || COALESCE(parent_id, '-') || '|' || \
     CAST(seq AS TEXT) || '|' || CAST(revision AS TEXT) || '|' || \
     kind || '|' || COALESCE(status, '-') || '|' || meta || '|' || body \
     FROM genkit_snapshots ORDER BY snapshot_id",
    "SELECT session_id || '|' || effect_key || '|' || result || '|' || recorded_at \
     FROM genkit_effects ORDER BY session_id, effect_key",
];

/// Every stored row of a SQLite store's file.
pub async fn dump_sqlite(path: &std::path::Path) -> Vec<String> {
    use sqlx::Connection;
    let url = format!("sqlite://{}", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("opening the SQLite file");
    let mut rows = Vec::new();
    for q in DUMP {
        let part: Vec<String> = sqlx::query_scalar(q)
            .fetch_all(&mut conn)
            .await
            .expect("dumping");
        rows.extend(part);
    }
    conn.close().await.ok();
    rows
}

/// Every stored row of a PostgreSQL store's database.
#[cfg(feature = "postgres")]
pub async fn dump_postgres(url: &str) -> Vec<String> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connecting");
    let mut rows = Vec::new();
    for q in DUMP {
        let part: Vec<String> = sqlx::query_scalar(q)
            .fetch_all(&mut conn)
            .await
            .expect("dumping");
        rows.extend(part);
    }
    conn.close().await.ok();
    rows
}

#[test]
fn database_names_replace_the_path() {
    assert_eq!(
        with_database("postgres://u@127.0.0.1:5/postgres", "t1"),
        "postgres://u@127.0.0.1:5/t1"
    );
    assert_eq!(
        with_database("postgres://u@h:5/postgres?host=/tmp/x", "t1"),
        "postgres://u@h:5/t1?host=/tmp/x"
    );
    assert_eq!(
        with_database("postgres://u@h:5", "t1"),
        "postgres://u@h:5/t1"
    );
}
