//! The in-memory session store runs the store suite every store runs.

use std::sync::Arc;

use genkit_core::Result;
use genkit_session::store::{InMemorySessionStore, SessionStore, StoredSnapshot};
use genkit_session::testing::{SuiteConfig, session_store_suite, session_store_suite_with};
use genkit_session::types::SessionSnapshot;
use serde_json::Value;

#[tokio::test(flavor = "current_thread")]
async fn in_memory_store_passes_the_suite_on_one_thread() {
    session_store_suite(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_store_passes_the_suite_on_many_threads() {
    session_store_suite(Arc::new(InMemorySessionStore::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_store_keeps_every_turn_of_50_writers() {
    // Issue 13's load: 50 tasks × 20 turns on one session.
    let config = SuiteConfig {
        writers: 50,
        turns_per_writer: 20,
    };
    session_store_suite_with(Arc::new(InMemorySessionStore::new()), config).await;
}

#[tokio::test(flavor = "current_thread")]
async fn one_store_runs_the_suite_twice() {
    // The suite uses fresh ids, so it runs against a store that holds data.
    let store = Arc::new(InMemorySessionStore::new());
    session_store_suite(store.clone()).await;
    session_store_suite(store).await;
}

/// A store that ignores the base version of appends: it merges blindly.
struct BlindAppends(InMemorySessionStore);

#[async_trait::async_trait]
impl SessionStore for BlindAppends {
    async fn get(&self, id: &str) -> Result<StoredSnapshot> {
        self.0.get(id).await
    }
    async fn latest(&self, session_id: &str) -> Result<StoredSnapshot> {
        self.0.latest(session_id).await
    }
    async fn append(&self, snapshot: SessionSnapshot, _base: u64) -> Result<StoredSnapshot> {
        // Whatever the caller read, write on top of the session as it is now.
        let current = match (&snapshot.parent_id, snapshot.owner_session_id()) {
            (Some(parent), _) => self.0.get(parent).await.map_or(0, |s| s.session_version),
            (None, Some(s)) => self.0.latest(s).await.map_or(0, |s| s.session_version),
            (None, None) => 0,
        };
        self.0.append(snapshot, current).await
    }
    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        self.0.update(snapshot, base).await
    }
    async fn record_effect(&self, session_id: &str, key: &str, result: Value) -> Result<Value> {
        self.0.record_effect(session_id, key, result).await
    }
    async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Value>> {
        self.0.effect(session_id, key).await
    }
}

#[tokio::test(flavor = "current_thread")]
#[should_panic(expected = "must be a conflict")]
async fn the_suite_catches_a_store_that_merges_stale_writes() {
    session_store_suite(Arc::new(BlindAppends(InMemorySessionStore::new()))).await;
}
