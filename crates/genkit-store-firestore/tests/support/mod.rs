//! What the emulator tests share: the store on the emulator, fresh
//! collection names, and the Node scripts of tests/js.

#![allow(dead_code)] // each test binary uses part of it

use std::path::PathBuf;
use std::process::Stdio;

use genkit_model::types::Message;
use genkit_session::clock::now_rfc3339;
use genkit_session::store::new_snapshot_id;
use genkit_session::types::{SessionSnapshot, SessionState};
use genkit_store_firestore::{FirestoreSessionStore, FirestoreSessionStoreBuilder};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

/// The emulator's project (the Node scripts read it from GCLOUD_PROJECT).
pub const PROJECT: &str = "demo-genkit";

/// `FIRESTORE_EMULATOR_HOST`, or `None` after printing why the test skips.
/// test.sh always starts the emulator and sets it.
pub fn emulator(test: &str) -> Option<String> {
    match std::env::var("FIRESTORE_EMULATOR_HOST") {
        Ok(host) if !host.trim().is_empty() => Some(host),
        _ => {
            eprintln!(
                "SKIPPED {test}: FIRESTORE_EMULATOR_HOST is not set (test.sh starts the emulator: \
                 node crates/genkit-store-firestore/tests/js/emulator.mjs)"
            );
            None
        }
    }
}

/// A collection name no other test run uses.
pub fn fresh_collection(what: &str) -> String {
    format!("{what}-{}", new_snapshot_id())
}

/// A new snapshot of `session` continuing `parent`, whose state is one
/// user message `text` (no status).
pub fn user_snapshot(session: &str, parent: Option<&str>, text: &str) -> SessionSnapshot {
    let mut s = SessionSnapshot::new(new_snapshot_id(), now_rfc3339());
    s.session_id = Some(session.to_owned());
    s.parent_id = parent.map(str::to_owned);
    s.state = Some(SessionState {
        messages: Some(std::sync::Arc::new(vec![Message::user(text)])),
        ..SessionState::default()
    });
    s
}

/// A builder for the store on the emulator at `host`.
pub fn builder(host: &str, collection: &str) -> FirestoreSessionStoreBuilder {
    FirestoreSessionStore::builder()
        .emulator_host(host)
        .project_id(PROJECT)
        .collection(collection)
}

fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

/// Runs `node tests/js/<script> <args>` against the emulator with `stdin`;
/// returns (success, stdout), stderr passed through.
pub async fn node(host: &str, script: &str, args: &[&str], stdin: &str) -> (bool, String) {
    let dir = js_dir();
    assert!(
        dir.join("node_modules").is_dir(),
        "run `npm ci` in {} first (test.sh does)",
        dir.display()
    );
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .args(args)
        .current_dir(&dir)
        .env("FIRESTORE_EMULATOR_HOST", host)
        .env("GCLOUD_PROJECT", PROJECT)
        // No metadata-server probing from the Google auth library.
        .env("METADATA_SERVER_DETECTION", "none")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.as_bytes())
        .await
        .expect("writes stdin");
    drop(input);
    // Generous: Node starts Genkit and the Firestore client on a loaded CI
    // machine. A hang (e.g. the emulator gone) fails instead of blocking.
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(300),
        child.wait_with_output(),
    )
    .await
    .unwrap_or_else(|_| panic!("node {script} did not finish within 300 s"))
    .expect("node runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The last line of a script's stdout as JSON.
pub fn last_json(stdout: &str) -> Value {
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
