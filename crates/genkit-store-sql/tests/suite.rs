//! The shared `SessionStore` suite on both stores, at the default load and
//! at issue 13's (50 writers × 20 turns on one session: exactly 1000
//! stored, chain intact), plus store-specific checks.

mod support;

use std::sync::Arc;

use genkit_ai::agent::testing::{SuiteConfig, session_store_suite, session_store_suite_with};
use genkit_store_sql::SqliteSessionStore;

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
