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

use genkit_ai::agent::testing::{SuiteConfig, session_store_suite_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_store_suite_on_the_emulator() {
    let Some(host) = support::emulator("session_store_suite_on_the_emulator") else {
        return;
    };
    let collection = support::fresh_collection("suite");
    let store = support::builder(&host, &collection)
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
