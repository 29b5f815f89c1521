//! `genkit::stores::open_store` (feature `sql-store`): the default persistent store
//! from a location.
#![cfg(feature = "sql-store")]

use genkit::agent::store::new_snapshot_id;
use genkit::agent::types::SessionSnapshot;
use genkit::status::StatusCode;
use genkit::stores::open_store;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_store_gives_sqlite_for_paths_and_sqlite_urls() {
    let dir = std::env::temp_dir().join(format!("genkit-open-store-{}", new_snapshot_id()));
    for location in [
        dir.join("a/sessions.db").display().to_string(),
        format!("sqlite:{}", dir.join("b.db").display()),
    ] {
        let store = open_store(&location).await.expect("opens");
        let mut snap = SessionSnapshot::new(new_snapshot_id(), "2026-01-01T00:00:00.000Z");
        snap.session_id = Some("s".into());
        store.append(snap.clone(), 0).await.expect("appends");
        let reopened = open_store(&location).await.expect("reopens");
        assert_eq!(reopened.latest("s").await.expect("latest").snapshot, snap);
    }
    assert!(
        dir.join("a/sessions.db").is_file(),
        "the directory and file are created"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let empty = open_store("  ").await.map(|_| ()).map_err(|e| e.status());
    assert_eq!(empty, Err(StatusCode::InvalidArgument));
}

#[test]
fn the_default_sqlite_path_is_under_the_app_directory() {
    if let Some(path) = genkit::stores::default_sqlite_path("my-app") {
        assert!(path.ends_with("my-app/sessions.db"), "{}", path.display());
    }
}
