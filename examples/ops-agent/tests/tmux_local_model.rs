//! The chat on a real language model running in the process: SmolLM2-135M
//! (a GGUF file, no API key, no server) driven in tmux as a person would.
//! The model must choose a tool and call it with valid arguments, answer
//! from the tool result, and a restart must wait for the person's approval:
//! denied, nothing restarts; approved, the service restarts once.
//!
//! Needs the GGUF named by `GENKIT_LOCAL_MODEL_GGUF` (test.sh installs it
//! with tests-support/local-model/install-gguf.sh); skipped, loudly, without.
//!
//! What makes a 135M model pass (app.rs, docs/local-models.md): the call is
//! forced on each question's first turn and decoded against the tool's
//! schema, so it is valid; a worked example as chat history (three earlier
//! exchanges about the worker, the db and the api, never the scheduler)
//! makes it take the service from the question instead of naming the
//! enum's first value; the answer turn offers no tools. About 70 s in a
//! debug build on a loaded 2-core machine, nearly all prompt processing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use genkit::agent::store::SessionStore;
use genkit::prelude::*;
use genkit_store_sql::SqliteSessionStore;

mod common;
use common::BIN;

/// A turn on a 135M model in a debug build, on a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(600);

/// The tools and the services their `service` argument may name.
const TOOLS: [&str; 3] = ["getServiceStatus", "queryLogs", "restartService"];
const SERVICES: [&str; 4] = ["api", "worker", "scheduler", "db"];

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(home: &Path) -> Tmux {
        let tmux = Tmux {
            socket: format!("ops-agent-local-{}", std::process::id()),
        };
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &tmux.socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-s", "chat", "-x", "200", "-y", "50", "sh"])
            .env("HOME", home);
        common::clean_env(&mut cmd);
        let out = cmd.output().unwrap_or_else(|e| {
            panic!("tmux is needed (test.sh installs it: apt-get install -y tmux): {e}")
        });
        assert!(out.status.success(), "tmux new-session: {out:?}");
        tmux.run(&["set-option", "-g", "history-limit", "10000"]);
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        out
    }

    fn line(&self, text: &str) {
        self.run(&["send-keys", "-t", "chat", "-l", text]);
        self.run(&["send-keys", "-t", "chat", "Enter"]);
    }

    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "chat"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until one of `texts` is on the screen `n` times; returns the
    /// screen.
    fn wait_for_any(&self, texts: &[&str], n: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if texts.iter().any(|t| screen.matches(t).count() >= n) {
                return screen;
            }
            assert!(
                start.elapsed() < WAIT,
                "waited {WAIT:?} for {n}x {texts:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The GGUF to run, or `None` (and a loud skip) without one.
fn gguf() -> Option<PathBuf> {
    let path = std::env::var_os("GENKIT_LOCAL_MODEL_GGUF")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    if path.is_none() {
        eprintln!(
            "SKIPPED: the ops agent on a local model needs GENKIT_LOCAL_MODEL_GGUF naming a GGUF \
             file (tests-support/local-model/install-gguf.sh installs SmolLM2-135M)"
        );
    }
    path
}

/// The text after the last `you> {question}`.
fn answer_to<'a>(screen: &'a str, question: &str) -> &'a str {
    let asked = format!("you> {question}");
    let at = screen
        .rfind(&asked)
        .unwrap_or_else(|| panic!("{asked:?} not on the screen:\n{screen}"));
    &screen[at + asked.len()..]
}

/// The tool calls shown in `answer` (`[tool] name {json}`), each checked
/// for a known tool and valid arguments.
fn tool_calls(answer: &str) -> Vec<(String, Value)> {
    answer
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[tool] "))
        .map(|call| {
            let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
            assert!(TOOLS.contains(&name), "an unknown tool: {call}");
            let args: Value = serde_json::from_str(args)
                .unwrap_or_else(|e| panic!("arguments that are not JSON ({e}): {call}"));
            let service = args["service"].as_str().unwrap_or_default();
            assert!(SERVICES.contains(&service), "an invalid service: {call}");
            (name.to_owned(), args)
        })
        .collect()
}

/// The stored session's tool results: (tool name, output).
fn stored_tool_results(db: &Path, session: &str) -> Vec<(String, Value)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = SqliteSessionStore::open(db).await.expect("the store opens");
        let latest = store.latest(session).await.expect("the session is stored");
        let state = latest.snapshot.state.unwrap_or_default();
        let mut results = Vec::new();
        for message in state.messages() {
            for r in message.content.iter().filter_map(Part::as_tool_response) {
                results.push((r.name.clone(), r.output.clone().unwrap_or_default()));
            }
        }
        store.close().await;
        results
    })
}

#[test]
fn on_a_local_model_the_agent_calls_tools_answers_from_them_and_restarts_only_when_approved() {
    let Some(gguf) = gguf() else { return };
    let home = tempfile::tempdir().expect("temp dir");
    let data = home.path().join("data");
    let tmux = Tmux::start(home.path());
    tmux.line(&format!(
        "{BIN} --data-dir {} --local-model {}",
        data.display(),
        gguf.display()
    ));
    let screen = tmux.wait_for_any(&["you> "], 1);
    assert!(screen.contains("model:   gguf/"), "{screen}");

    // Why is the scheduler down: at least one tool call with valid
    // arguments, and an answer quoting what a tool returned.
    let question = "Why is the scheduler down?";
    tmux.line(question);
    let screen = tmux.wait_for_any(&["you> "], 2);
    let answer = answer_to(&screen, question);
    let calls = tool_calls(answer);
    let screen = tmux.wait_for_any(&[" (new)"], 1);
    let session = screen
        .lines()
        .find_map(|l| l.strip_prefix("session: ")?.strip_suffix(" (new)"))
        .unwrap_or_else(|| panic!("no session line:\n{screen}"))
        .to_owned();
    assert!(!calls.is_empty(), "no tool call:\n{answer}");
    assert!(
        calls.iter().any(|(_, args)| args["service"] == "scheduler"),
        "no tool call about the scheduler:\n{answer}"
    );
    let said = answer
        .split_once("agent> ")
        .map(|(_, text)| text)
        .unwrap_or_default();
    let results = stored_tool_results(&data.join("sessions.db"), &session);
    let quoted: Vec<&str> = results
        .iter()
        .flat_map(|(_, out)| {
            [&out["summary"], &out["status"]["summary"]]
                .into_iter()
                .filter_map(Value::as_str)
                .chain(
                    out["lines"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str),
                )
        })
        .filter(|fact| !fact.is_empty() && said.contains(*fact))
        .collect();
    assert!(
        !quoted.is_empty(),
        "the answer quotes no tool result:\n{answer}\nresults: {results:?}"
    );

    // A restart, denied: nothing restarts.
    let restarted = |results: &[(String, Value)]| {
        results
            .iter()
            .filter(|(name, out)| name == "restartService" && out["status"]["online"] == true)
            .count()
    };
    for (round, (key, restarts)) in [("n", 0), ("y", 1)].into_iter().enumerate() {
        let question = "Restart the scheduler.";
        tmux.line(question);
        // The approval is asked (or the turn ended without one: a failure).
        let screen = tmux.wait_for_any(&["approve? [y/n]"], round + 1);
        let asked = answer_to(&screen, question);
        assert!(
            asked.contains(r#"[tool] restartService {"service":"scheduler""#),
            "{asked}"
        );
        let before = stored_tool_results(&data.join("sessions.db"), &session);
        assert_eq!(restarted(&before), 0, "restarted before approval");
        tmux.line(key);
        tmux.wait_for_any(&["you> "], 3 + round);
        let results = stored_tool_results(&data.join("sessions.db"), &session);
        assert_eq!(restarted(&results), restarts, "after {key}: {results:?}");
    }
}
