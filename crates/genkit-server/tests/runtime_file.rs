//! Runtime discovery: the project root the CLI computes, the runtime file's
//! content and lifetime, and its removal when the process is interrupted.

mod common;

use common::{RuntimeProcess, client};
use genkit_server::runtime_file::{PROJECT_MARKERS, RuntimeFile, RuntimeInfo, find_project_root};
use serde_json::{Value, json};

#[test]
fn project_root_is_the_nearest_folder_with_a_cli_marker() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    // Cargo.toml is not a marker: the CLI would not stop there.
    std::fs::write(tmp.path().join("a/b/Cargo.toml"), "").unwrap();
    std::fs::write(tmp.path().join("a/package.json"), "{}").unwrap();
    assert_eq!(find_project_root(&deep), tmp.path().join("a"));
    for marker in PROJECT_MARKERS {
        let t = tempfile::tempdir().unwrap();
        let inner = t.path().join("x/y");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(t.path().join("x").join(marker), "").unwrap();
        assert_eq!(find_project_root(&inner), t.path().join("x"), "{marker}");
    }
    // The nearest marker wins.
    std::fs::write(tmp.path().join("a/b/go.mod"), "").unwrap();
    assert_eq!(find_project_root(&deep), tmp.path().join("a/b"));
}

#[test]
fn project_root_defaults_to_the_start_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let deep = tmp.path().join("p/q");
    std::fs::create_dir_all(&deep).unwrap();
    let root = find_project_root(&deep);
    // No marker below the temp dir; an ancestor of it may hold one (a home
    // folder with package.json), in which case the CLI would pick it too.
    let expected = tmp
        .path()
        .ancestors()
        .find(|d| d.parent().is_some() && PROJECT_MARKERS.iter().any(|m| d.join(m).exists()))
        .map(|d| d.to_path_buf())
        .unwrap_or(deep.clone());
    assert_eq!(root, expected);
}

fn info(pid: u32) -> RuntimeInfo {
    RuntimeInfo {
        id: format!("{pid}-3100"),
        pid,
        name: None,
        reflection_server_url: "http://localhost:3100".into(),
        timestamp: "2026-11-29T20:15:04.956Z".into(),
        genkit_version: genkit_core::GENKIT_VERSION.into(),
        reflection_api_spec_version: 1,
    }
}

#[test]
fn runtime_file_is_written_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    let mut file = RuntimeFile::write(tmp.path(), &info(pid), 1795983304956).unwrap();
    let path = file.path().unwrap().to_path_buf();
    assert_eq!(
        path,
        tmp.path()
            .join(format!(".genkit/runtimes/{pid}-3100-1795983304956.json"))
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({
            "id": format!("{pid}-3100"), "pid": pid, "reflectionServerUrl": "http://localhost:3100",
            "timestamp": "2026-11-29T20:15:04.956Z", "genkitVersion": "rust/0.1.0", "reflectionApiSpecVersion": 1
        })
    );
    // Nothing but the runtime file is left in the watched folder.
    assert_eq!(
        std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
        1
    );
    file.remove();
    assert!(!path.exists());
    file.remove();

    // Dropping removes it too.
    let file = RuntimeFile::write(tmp.path(), &info(pid), 1).unwrap();
    let path = file.path().unwrap().to_path_buf();
    drop(file);
    assert!(!path.exists());
}

#[test]
fn another_process_file_is_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let pid = std::process::id();
    let file = RuntimeFile::write(tmp.path(), &info(pid), 2).unwrap();
    let path = file.path().unwrap().to_path_buf();
    // Another runtime reused the name: not ours to delete.
    std::fs::write(&path, serde_json::to_vec(&info(pid + 1)).unwrap()).unwrap();
    drop(file);
    assert!(path.exists());
}

#[tokio::test]
async fn ctrl_c_removes_the_runtime_file_after_graceful_shutdown() {
    let mut rt = RuntimeProcess::start(true, &[]).await;
    let info = &rt.info;
    let pid = rt.child.id().unwrap();
    assert_eq!(info["pid"], pid);
    let url = rt.reflection_url();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert!((3100..=3199).contains(&port), "{url}");
    assert_eq!(info["id"], format!("{pid}-{port}"));
    assert_eq!(info["genkitVersion"], "rust/0.1.0");
    // The file is under the project root (the folder with package.json), not the working dir.
    assert_eq!(
        rt.runtime_file.parent().unwrap(),
        rt.project.path().join(".genkit/runtimes")
    );
    let health = client()
        .get(format!("{url}/api/__health?id={pid}-{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    rt.signal("INT");
    assert_eq!(rt.wait().await, Some(0));
    assert!(!rt.runtime_file.exists());
}

#[tokio::test]
async fn sigterm_removes_the_runtime_file_and_exits() {
    let port = common::free_port();
    let mut rt = RuntimeProcess::start(
        false,
        &[
            ("GENKIT_REFLECTION_PORT", &port.to_string()),
            ("GENKIT_RUNTIME_ID", "custom-id"),
        ],
    )
    .await;
    assert_eq!(
        rt.info["reflectionServerUrl"],
        format!("http://localhost:{port}")
    );
    assert_eq!(rt.info["id"], "custom-id");
    let ok = client()
        .get(format!("http://127.0.0.1:{port}/api/__health?id=custom-id"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    rt.signal("TERM");
    assert_eq!(rt.wait().await, Some(143));
    assert!(!rt.runtime_file.exists());
}
