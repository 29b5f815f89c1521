//! Server processes on the SQL stores: a process killed with SIGKILL in the
//! middle of a turn leaves the database byte for byte as before the turn;
//! two server processes sharing one PostgreSQL database alternate the turns
//! of one session over HTTP and the history is complete and ordered.
//!
//! The server processes are this test binary itself, started again to run
//! only `child_agent_server` (ignored in normal runs) with the store's
//! location in `GENKIT_SQL_CHILD_STORE`: it serves the `assistant` agent of
//! `support::agent` over `genkit_server::FlowServer` on 127.0.0.1 and prints
//! its address; its model prints `BLOCKED` and never answers for "block".

mod support;

use std::process::Stdio;
use std::time::Duration;

use genkit::prelude::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

const CHILD_VAR: &str = "GENKIT_SQL_CHILD_STORE";

/// The child server: not a test on its own (it serves until killed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process the other tests start; runs only with GENKIT_SQL_CHILD_STORE"]
async fn child_agent_server() {
    let Ok(location) = std::env::var(CHILD_VAR) else {
        panic!("{CHILD_VAR} is not set: this is the child server of tests/processes.rs");
    };
    let store = genkit_store_sql::open(&location)
        .await
        .expect("the store opens");
    let (ai, _agent) = support::agent::assistant_reporting_blocks(store);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let addr = listener.local_addr().expect("an address");
    println!("LISTENING {addr}");
    genkit_server::FlowServer::new(ai.registry())
        .agent("assistant")
        .serve_with_shutdown(listener, futures::future::pending())
        .await
        .expect("serves");
}

/// A running child server.
struct Server {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    url: String,
}

impl Server {
    async fn start(location: &str) -> Self {
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = Command::new(exe)
            .args([
                "child_agent_server",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_VAR, location)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("the child server starts");
        let stdout = child.stdout.take().expect("piped");
        let mut lines = BufReader::new(stdout).lines();
        let addr = tokio::time::timeout(Duration::from_secs(120), async {
            while let Some(line) = lines.next_line().await.expect("reads") {
                // The test harness may have printed "test … ... " first.
                if let Some((_, addr)) = line.split_once("LISTENING ") {
                    return addr.trim().to_owned();
                }
            }
            panic!("the child server exited before listening");
        })
        .await
        .expect("the child server listens within 120 s");
        Self {
            child,
            lines,
            url: format!("http://{addr}"),
        }
    }

    /// Waits for a line the child prints.
    async fn wait_for(&mut self, wanted: &str) {
        tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = self.lines.next_line().await.expect("reads") {
                if line.contains(wanted) {
                    return;
                }
            }
            panic!("the child server exited before printing {wanted}");
        })
        .await
        .unwrap_or_else(|_| panic!("no {wanted} within 60 s"));
    }

    async fn kill(mut self) {
        self.child.kill().await.expect("SIGKILL");
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client")
}

/// One turn of `session` (`None`: a new session, whose id the server
/// mints) over the agent HTTP protocol; the output.
async fn turn(server: &str, session: Option<&str>, text: &str) -> Value {
    let init = match session {
        Some(id) => json!({"sessionId": id}),
        None => json!({}),
    };
    let body = json!({
        "data": {"message": {"role": "user", "content": [{"text": text}]}},
        "init": init,
    });
    let response = client()
        .post(format!("{server}/assistant"))
        .json(&body)
        .send()
        .await
        .expect("the turn is answered");
    let status = response.status();
    let out: Value = response.json().await.expect("a JSON body");
    assert!(status.is_success(), "turn {text}: {status} {out}");
    out["result"].clone()
}

/// The latest snapshot of `session`, over HTTP.
async fn latest(server: &str, session: &str) -> Value {
    let response = client()
        .post(format!("{server}/assistant/getSnapshot"))
        .json(&json!({"data": {"sessionId": session}}))
        .send()
        .await
        .expect("answered");
    let status = response.status();
    let out: Value = response.json().await.expect("a JSON body");
    assert!(status.is_success(), "getSnapshot: {status} {out}");
    out["result"].clone()
}

fn texts(snapshot: &Value) -> Vec<String> {
    let messages: Vec<Message> =
        serde_json::from_value(snapshot["state"]["messages"].clone()).expect("messages");
    support::agent::history(&messages)
}

/// Two turns, then a turn whose model blocks; the process is killed with
/// SIGKILL mid-turn. The stored rows are exactly those before that turn, and
/// a new process resumes the session from them.
async fn killed_mid_turn(location: &str, dump: impl AsyncFn() -> Vec<String>) {
    let mut server = Server::start(location).await;
    let first = turn(&server.url, None, "one").await;
    let session = first["sessionId"]
        .as_str()
        .expect("a session id")
        .to_owned();
    turn(&server.url, Some(&session), "two").await;
    let before = dump().await;
    assert!(before.len() >= 3, "the turns are stored: {before:#?}");

    let url = server.url.clone();
    let s = session.clone();
    let blocked = tokio::spawn(async move {
        let body = json!({
            "data": {"message": {"role": "user", "content": [{"text": "block"}]}},
            "init": {"sessionId": s},
        });
        client()
            .post(format!("{url}/assistant"))
            .json(&body)
            .send()
            .await
    });
    server.wait_for("BLOCKED").await;
    server.kill().await;
    assert!(
        blocked.await.expect("joins").is_err(),
        "the killed server answered the blocked turn"
    );
    assert_eq!(
        dump().await,
        before,
        "the killed turn left the database as it was"
    );

    let server = Server::start(location).await;
    turn(&server.url, Some(&session), "three").await;
    assert_eq!(
        texts(&latest(&server.url, &session).await),
        [
            "user: one",
            "model: reply to: one",
            "user: two",
            "model: reply to: two",
            "user: three",
            "model: reply to: three"
        ]
    );
    server.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_process_killed_mid_turn_leaves_the_database_as_it_was() {
    let (_dir, path) = support::sqlite_file();
    let location = format!("sqlite:{}", path.display());
    killed_mid_turn(&location, async || support::dump_sqlite(&path).await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_process_killed_mid_turn_leaves_the_database_as_it_was() {
    let Some(server) = support::postgres_server(
        "postgres_a_process_killed_mid_turn_leaves_the_database_as_it_was",
    ) else {
        return;
    };
    let url = support::fresh_postgres_db(&server).await;
    killed_mid_turn(&url, async || support::dump_postgres(&url).await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_alternate_the_turns_of_a_session() {
    let Some(pg) =
        support::postgres_server("two_servers_on_one_postgres_alternate_the_turns_of_a_session")
    else {
        return;
    };
    let url = support::fresh_postgres_db(&pg).await;
    let (a, b) = tokio::join!(Server::start(&url), Server::start(&url));
    let servers = [&a.url, &b.url];
    const TURNS: usize = 12;
    let mut expected = Vec::new();
    let mut session = String::new();
    for i in 0..TURNS {
        let text = format!("turn {i}");
        let id = (i > 0).then_some(session.as_str());
        let out = turn(servers[i % 2], id, &text).await;
        if i == 0 {
            session = out["sessionId"].as_str().expect("a session id").to_owned();
        }
        assert_eq!(out["sessionId"], json!(session));
        assert_eq!(out["finishReason"], json!("stop"), "{out}");
        expected.push(format!("user: {text}"));
        expected.push(format!("model: reply to: {text}"));
    }
    // Both servers see the same complete, ordered history.
    for server in servers {
        let snapshot = latest(server, &session).await;
        assert_eq!(texts(&snapshot), expected);
        assert_eq!(snapshot["status"], json!("completed"));
    }
    // And the chain behind it is linear: TURNS snapshots, each one turn longer.
    let store = genkit_store_sql::PostgresSessionStore::connect(&url)
        .await
        .expect("connects");
    use genkit_session::store::SessionStore;
    let latest = store.latest(&session).await.expect("latest");
    assert_eq!(latest.session_version, TURNS as u64);
    let mut next = Some(latest.snapshot);
    let mut depth = TURNS;
    while let Some(s) = next {
        let n = s.state.as_ref().map_or(0, |st| st.messages().len());
        assert_eq!(n, 2 * depth);
        depth -= 1;
        next = match &s.parent_id {
            Some(p) => Some(store.get(p).await.expect("parent").snapshot),
            None => None,
        };
    }
    assert_eq!(depth, 0, "the chain holds every turn");
    a.kill().await;
    b.kill().await;
}
