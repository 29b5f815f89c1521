//! The chat driven as a person uses it: the real binary in a real terminal
//! (tmux), keys sent, the screen read back. A conversation with tool calls,
//! an approval asked and granted, Ctrl-D, a restart with `--session`, a
//! turn cancelled with Ctrl-C, a question only the earlier turns answer;
//! then the stored history is read back from the SQLite file with the store.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use genkit::agent::store::SessionStore;
use genkit::prelude::*;
use genkit::types::Role;
use genkit_store_sql::SqliteSessionStore;

mod common;
use common::BIN;
/// The longest any screen update may take (a loaded CI machine).
const WAIT: Duration = Duration::from_secs(30);

/// A tmux server of its own (its own socket), killed on drop, failure or not.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(env_dir: &Path) -> Tmux {
        let socket = format!("ops-agent-test-{}", std::process::id());
        let tmux = Tmux { socket };
        // A plain shell, with no provider keys: the offline model answers.
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &tmux.socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-s", "chat", "-x", "160", "-y", "50", "sh"])
            .env("HOME", env_dir);
        common::clean_env(&mut cmd);
        let out = cmd.output().unwrap_or_else(|e| {
            panic!(
                "tmux is needed for this test (test.sh installs it: apt-get install -y tmux): {e}"
            )
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

    /// Types `text` and presses Enter.
    fn line(&self, text: &str) {
        self.run(&["send-keys", "-t", "chat", "-l", text]);
        self.run(&["send-keys", "-t", "chat", "Enter"]);
    }

    /// Presses a key (`C-d`, `C-c`).
    fn key(&self, key: &str) {
        self.run(&["send-keys", "-t", "chat", key]);
    }

    /// The whole pane, scrollback included, wrapped lines joined.
    fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", "chat"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until `text` is on the screen `n` times; returns the screen.
    fn wait_for_nth(&self, text: &str, n: usize) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= n {
                return screen;
            }
            assert!(
                start.elapsed() < WAIT,
                "waited {WAIT:?} for {n}x {text:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(40));
        }
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_nth(text, 1)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .output();
    }
}

/// The text after the last `you> ` prompt that has `question` on it.
fn answer_to<'a>(screen: &'a str, question: &str) -> &'a str {
    let asked = format!("you> {question}");
    let at = screen
        .rfind(&asked)
        .unwrap_or_else(|| panic!("{asked:?} not on the screen:\n{screen}"));
    &screen[at + asked.len()..]
}

#[test]
fn a_person_chats_approves_a_restart_quits_and_resumes_the_session() {
    let home = tempfile::tempdir().expect("temp dir");
    let data = home.path().join("data");
    let data_arg = data.to_string_lossy().into_owned();
    // Keys typed before the shell reads them wait in the terminal, as a
    // person's would.
    let tmux = Tmux::start(home.path());

    // First run: a new session.
    tmux.line(&format!("{BIN} --data-dir {data_arg}"));
    let screen = tmux.wait_for("you> ");
    assert!(
        screen.contains("model:   offline/ops-rules"),
        "says which model it uses:\n{screen}"
    );
    // A new session has no id until its first turn is stored: the agent
    // mints it, and the chat shows it then.
    assert!(
        screen.contains("session: new (its id is shown once its first turn is stored)"),
        "{screen}"
    );

    tmux.line("Why is the scheduler down?");
    let screen = tmux.wait_for("Shall I restart scheduler?");
    let screen = if screen.contains(" (new)\n") {
        screen
    } else {
        tmux.wait_for(" (new)")
    };
    let session = screen
        .lines()
        .find_map(|l| l.strip_prefix("session: ")?.strip_suffix(" (new)"))
        .unwrap_or_else(|| panic!("no session line:\n{screen}"))
        .to_owned();
    let answer = answer_to(&screen, "Why is the scheduler down?");
    assert!(
        answer.contains("[tool] getServiceStatus {\"service\":\"scheduler\"}"),
        "{answer}"
    );
    assert!(answer.contains("[tool] queryLogs"), "{answer}");
    assert!(answer.contains("scheduler is DOWN"), "{answer}");
    assert!(answer.contains("process exited with code 137"), "{answer}");

    // "its": the service of the turn before, with the words' level and window.
    tmux.line("Show its warnings from the last 15 minutes");
    let screen = tmux.wait_for("heap at 98%");
    let answer = answer_to(&screen, "Show its warnings from the last 15 minutes");
    assert!(
        answer.contains(r#"queryLogs {"service":"scheduler","level":"warn","window":"15m"}"#),
        "{answer}"
    );

    // "it" again; the restart waits for approval, asked in the terminal.
    tmux.line("restart it");
    let screen = tmux.wait_for("approve? [y/n]");
    let asked = answer_to(&screen, "restart it");
    assert!(
        asked.contains("[approval] Tool requires approval: restartService"),
        "{asked}"
    );
    assert!(
        asked.contains(r#"restartService {"service":"scheduler""#),
        "{asked}"
    );
    assert!(!asked.contains("Restarted"), "ran before approval: {asked}");
    tmux.line("y");
    tmux.wait_for("Restarted scheduler: scheduler is healthy");
    tmux.wait_for_nth("you> ", 4); // the prompt is back

    // Ctrl-C at the prompt clears the line; Ctrl-D leaves.
    tmux.run(&["send-keys", "-t", "chat", "-l", "never sent"]);
    tmux.key("C-c");
    tmux.wait_for_nth("you> ", 5);
    tmux.key("C-d");
    let screen = tmux.wait_for(&format!(
        "bye. Resume with: ops-agent --session {session} --data-dir {data_arg}"
    ));
    assert!(!screen.contains("you> never sent\nagent>"), "{screen}");

    // Second run: the same session, after a restart; tools are slow now.
    tmux.line(&format!(
        "{BIN} --data-dir {data_arg} --session {session} --tool-latency-ms 3000"
    ));
    let screen = tmux.wait_for(&format!("session: {session} (resumed: "));
    assert!(screen.contains("model:   offline/ops-rules"), "{screen}");
    tmux.wait_for_nth("you> ", 6);

    // A slow turn, cancelled with Ctrl-C while its tool runs.
    tmux.line("is the worker up?");
    tmux.wait_for(r#"[tool] getServiceStatus {"service":"worker"}"#);
    tmux.key("C-c");
    let screen = tmux.wait_for("(cancelled; nothing was stored for this turn)");
    assert!(!screen.contains("worker is healthy"), "{screen}");
    tmux.wait_for_nth("you> ", 7);

    // Only the earlier turns (the first run's) answer this.
    let question = "What did you restart earlier, and what did the logs say?";
    tmux.line(question);
    let screen = tmux.wait_for("I restarted scheduler with your approval");
    let answer = answer_to(&screen, question);
    assert!(
        answer.contains("\"Why is the scheduler down?\""),
        "{answer}"
    );
    assert!(
        answer.contains("scheduler's logs showed: [7m ago] ERROR process exited with code 137"),
        "{answer}"
    );
    tmux.wait_for_nth("you> ", 8);
    tmux.key("C-d");
    tmux.wait_for_nth("bye. Resume with", 2);
    drop(tmux);

    check_stored_history(&data.join("sessions.db"), &session, question);
}

/// The latest snapshot holds every completed turn, in order, with each tool
/// request answered; the cancelled turn left nothing.
fn check_stored_history(db: &Path, session: &str, last_question: &str) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = SqliteSessionStore::open(db)
            .await
            .expect("the session file opens");
        let latest = store.latest(session).await.expect("the session is stored");
        let state = latest.snapshot.state.clone().expect("a state");
        let messages = state.messages();
        let asked: Vec<String> = messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .collect();
        assert_eq!(
            asked,
            [
                "Why is the scheduler down?",
                "Show its warnings from the last 15 minutes",
                "restart it",
                last_question,
            ]
        );
        // Every tool request is answered by the tool message right after it.
        for (i, m) in messages.iter().enumerate() {
            let refs: Vec<_> = m.tool_requests().map(|r| r.reference.clone()).collect();
            if refs.is_empty() {
                continue;
            }
            let next = messages.get(i + 1).expect("a tool message follows");
            assert_eq!(next.role, Role::Tool, "message {i}");
            let answered: Vec<_> = next
                .content
                .iter()
                .filter_map(Part::as_tool_response)
                .map(|r| r.reference.clone())
                .collect();
            assert_eq!(answered, refs, "message {i}");
        }
        let restart = messages
            .iter()
            .flat_map(|m| m.content.iter().filter_map(Part::as_tool_response))
            .find(|r| r.name == "restartService")
            .expect("the restart ran");
        let output = restart.output.clone().unwrap_or_default();
        assert_eq!(output["service"], "scheduler");
        assert_eq!(output["status"]["online"], true);
        // One snapshot per completed step: 3 turns, the approval's resume,
        // the last question; each continues the one before.
        let mut chain = 1;
        let mut at = latest.snapshot.clone();
        while let Some(parent) = at.parent_id.clone() {
            at = store
                .get(&parent)
                .await
                .expect("the parent is stored")
                .snapshot;
            chain += 1;
        }
        assert_eq!(chain, 5);
        store.close().await;
    });
}
