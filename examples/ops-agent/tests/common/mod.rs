//! What the app's integration tests share: the binary run with a clean
//! environment (no provider key, address or setting of the developer's
//! leaking in), a child process killed on drop, and the npm packages of
//! Genkit's official tools.
//!
//! Each test file compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The app under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_ops-agent");

/// Every variable that picks or configures the app's model, store, data
/// directory, port or dev mode: removed so a test sets only its own.
pub const APP_ENV: [&str; 18] = [
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OLLAMA_HOST",
    "OPS_AGENT_MODEL",
    "OPS_AGENT_DATABASE",
    "OPS_AGENT_DATA_DIR",
    "GENKIT_ENV",
    "GENKIT_RUNTIME_ID",
    "GENKIT_TELEMETRY_SERVER",
    "PORT",
    "TMUX",
    "GENKIT_REFLECTION_PORT",
];

/// Removes [`APP_ENV`] from what `cmd` passes on.
pub fn clean_env(cmd: &mut Command) -> &mut Command {
    for var in APP_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// `ops-agent --data-dir <data>` with a clean environment.
pub fn ops_agent(data: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.arg("--data-dir").arg(data);
    clean_env(&mut cmd);
    cmd
}

/// Runs `cmd` off the async runtime (so a scripted server in this process
/// keeps answering), failing the test after `limit`.
pub async fn output_within(mut cmd: Command, limit: Duration) -> Output {
    tokio::time::timeout(limit, tokio::task::spawn_blocking(move || cmd.output()))
        .await
        .expect("the command finished in time")
        .expect("joined")
        .expect("the command ran")
}

/// A child process, killed and reaped on drop (failure or not).
pub struct Child(pub std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The folder with the npm packages of Genkit's tools (`genkit-cli`, the
/// `genkit` JS client), installed with `npm ci` if missing; `None` (the
/// test skips) without node and npm, which CI must have.
pub fn npm_tools() -> Option<PathBuf> {
    let has = |cmd: &str| {
        Command::new(cmd)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("node") || !has("npm") {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "node and npm are needed under CI");
        return None;
    }
    let js = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crates/genkit-server/tests/js");
    if !js.join("node_modules/.package-lock.json").exists() {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&js)
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js.display());
    }
    Some(js)
}
