//! `start_dev_tooling` in-process: a no-op outside dev mode; otherwise the
//! Reflection API on 127.0.0.1 plus a runtime file that `shutdown` removes.

mod common;

use common::client;
use genkit_core::Registry;
use genkit_core::flow::define_flow;
use genkit_server::{DevToolingOptions, is_dev_env, start_dev_tooling, start_dev_tooling_with};
use serde_json::{Value, json};

#[tokio::test]
async fn dev_tooling_lifecycle() {
    let registry = Registry::new();
    define_flow(&registry, "hello", |s: String, _| async move {
        Ok(format!("hi {s}"))
    })
    .unwrap();

    if !is_dev_env() {
        assert!(start_dev_tooling(&registry).await.unwrap().is_none());
    }

    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("go.mod"), "module x").unwrap();
    let nested = project.path().join("cmd/app");
    std::fs::create_dir_all(&nested).unwrap();
    let dev = start_dev_tooling_with(
        &registry,
        DevToolingOptions {
            project_dir: Some(nested),
            name: Some("my app".into()),
            exit_on_signal: false,
            force: true,
            ..DevToolingOptions::default()
        },
    )
    .await
    .unwrap()
    .expect("forced dev tooling starts");
    let file = dev.runtime_file().unwrap();
    assert_eq!(
        file.parent().unwrap(),
        project.path().join(".genkit/runtimes")
    );
    let info: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(info["name"], "my app");
    assert_eq!(info["id"], dev.runtime_id());
    assert_eq!(info["reflectionServerUrl"], dev.url());
    assert!(dev.url().starts_with("http://localhost:"));

    // Bound on loopback only.
    let port = dev.port();
    let r = client()
        .get(format!(
            "http://127.0.0.1:{port}/api/__health?id={}",
            dev.runtime_id()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r: Value = client()
        .post(format!("http://127.0.0.1:{port}/api/runAction"))
        .json(&json!({"key": "/flow/hello", "input": "x"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["result"], "hi x");
    assert_eq!(dev.reflection().active_runs(), 0);

    dev.shutdown().await;
    assert!(!file.exists());
    assert!(
        client()
            .get(format!("http://127.0.0.1:{port}/api/__health"))
            .send()
            .await
            .is_err()
    );
}
