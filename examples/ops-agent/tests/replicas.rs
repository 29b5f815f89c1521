//! The deployment of docs/deploy.md, run for real: three `ops-agent --serve`
//! replicas on one PostgreSQL behind nginx (round-robin, no stickiness),
//! 50 clients × 20 turns through nginx, with about a hundred approved
//! restarts among them, and one replica SIGKILLed mid-run, between a
//! restart it ran and the snapshot of its turn. Checks that every turn a
//! client was told succeeded is stored exactly once and in order (no
//! fork), that every session continues, that no approved restart runs
//! twice (the restarts' audit lines in every replica's log, counted per
//! approval), that the killed replica's approved turn, sent again, is
//! refused while its lease holds and then completes with the recorded
//! restart, that an approval sent to two replicas at once restarts once
//! and is stored once, that an abort sent to one replica stops a detached
//! turn running on another, and that a stream cut mid-way resumes through
//! nginx on another replica with every chunk exactly once, in order.
//!
//! Needs nginx (Debian's package; test.sh installs it) and the PostgreSQL
//! test.sh starts (GENKIT_TEST_POSTGRES_URL): skipped without them, failed
//! under CI.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod common;
use common::{BIN, Child, clean_env, free_port};

const TOKEN: &str = "replicas-test-token";
const LEASE_MS: u64 = 5000;
const CLIENTS: usize = 50;
const TURNS: usize = 20;
/// The turns at which every client asks for a restart, then approves it.
const RESTART_TURNS: [usize; 2] = [5, 15];
/// The restart turn whose approval is sent to replicas 1 and 3 at once.
const DOUBLE_APPROVAL_TURN: usize = 15;

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// PostgreSQL's URL and nginx's binary, or why the test skips.
fn prerequisites() -> Option<(String, PathBuf)> {
    let url = std::env::var("GENKIT_TEST_POSTGRES_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    match (url, nginx) {
        (Some(url), Some(nginx)) => Some((url, nginx)),
        (url, _) => {
            let why = if url.is_none() {
                "GENKIT_TEST_POSTGRES_URL is not set (test.sh starts PostgreSQL)"
            } else {
                "nginx is not installed (test.sh installs Debian's nginx)"
            };
            assert!(!ci(), "{why}: needed under CI");
            eprintln!("SKIPPED: {why}");
            None
        }
    }
}

/// One replica: its process, port and log file.
struct Replica {
    child: Child,
    port: u16,
    log: PathBuf,
}

/// Replica `n`: every tool call takes `latency_ms`, and a restarted service
/// `settle_ms` to come back (after the restart is recorded).
fn start_replica(dir: &Path, n: usize, url: &str, latency_ms: u64, settle_ms: u64) -> Replica {
    let port = free_port();
    let log = dir.join(format!("replica-{n}.log"));
    let data = dir.join(format!("data-{n}"));
    let mut cmd = Command::new(BIN);
    clean_env(&mut cmd);
    cmd.args(["--serve", "--tool-latency-ms", &latency_ms.to_string()])
        .env("PORT", port.to_string())
        .env("OPS_AGENT_DATABASE", url)
        .env("OPS_AGENT_TOKEN", TOKEN)
        .env("OPS_AGENT_REPLICA_ID", format!("replica-{n}"))
        .env("OPS_AGENT_LEASE_MS", LEASE_MS.to_string())
        .env("OPS_AGENT_DRAIN_DELAY_MS", "200")
        .env("OPS_AGENT_RESTART_SETTLE_MS", settle_ms.to_string())
        .env("OPS_AGENT_DATA_DIR", &data)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"));
    Replica {
        child: Child(cmd.spawn().expect("ops-agent starts")),
        port,
        log,
    }
}

/// nginx, stopped with SIGTERM on drop: its master then stops its workers
/// (a SIGKILLed master would leave them serving).
struct Nginx {
    child: std::process::Child,
    port: u16,
    access_log: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

fn start_nginx(dir: &Path, nginx: &Path, replicas: &[&Replica]) -> Nginx {
    let port = free_port();
    let prefix = dir.join("nginx");
    std::fs::create_dir_all(prefix.join("logs")).expect("nginx logs dir");
    std::fs::create_dir_all(prefix.join("tmp")).expect("nginx tmp dir");
    let conf = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/nginx.conf"),
    )
    .expect("deploy/nginx.conf");
    let mut conf = conf.replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"));
    for (i, r) in replicas.iter().enumerate() {
        conf = conf.replace(
            &format!("127.0.0.1:{}", 3401 + i),
            &format!("127.0.0.1:{}", r.port),
        );
    }
    let path = prefix.join("nginx.conf");
    std::fs::write(&path, conf).expect("nginx.conf written");
    let child = Command::new(nginx)
        .arg("-p")
        .arg(&prefix)
        .arg("-c")
        .arg(&path)
        .arg("-e")
        .arg(prefix.join("logs/error.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    Nginx {
        child,
        port,
        access_log: prefix.join("logs/access.log"),
    }
}

struct Http {
    client: reqwest::Client,
}

impl Http {
    async fn post(&self, port: u16, path: &str, body: &Value) -> Result<(u16, Value), String> {
        let response = self
            .client
            .post(format!("http://127.0.0.1:{port}{path}"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| e.to_string())?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    async fn ready(&self, port: u16) -> bool {
        let url = format!("http://127.0.0.1:{port}/readyz");
        matches!(self.client.get(url).send().await, Ok(r) if r.status().as_u16() == 200)
    }

    async fn snapshot(&self, port: u16, lookup: Value) -> Value {
        let (status, body) = self
            .post(port, "/opsAgent/getSnapshot", &json!({"data": lookup}))
            .await
            .expect("getSnapshot answers");
        assert_eq!(status, 200, "{body}");
        body["result"].clone()
    }
}

fn user(text: &str) -> Value {
    json!({"message": {"role": "user", "content": [{"text": text}]}})
}

/// The texts of a snapshot's user messages.
fn user_texts(snapshot: &Value) -> Vec<String> {
    snapshot["state"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"][0]["text"].as_str().map(str::to_owned))
        .collect()
}

fn turn_text(client: usize, turn: usize) -> String {
    if RESTART_TURNS.contains(&turn) {
        format!("client {client} turn {turn}: restart the scheduler")
    } else {
        format!("client {client} turn {turn}: how is the api?")
    }
}

/// The status a turn was refused with: a refused turn (200, `finishReason:
/// failed`) or a refused request (an error body).
fn refusal(status: u16, body: &Value) -> Option<String> {
    let status_of = |v: &Value| v["status"].as_str().map(str::to_owned);
    if status == 200 {
        let out = &body["result"];
        (out["finishReason"] == "failed").then(|| status_of(&out["error"]))?
    } else {
        status_of(body).or_else(|| status_of(&body["error"]))
    }
}

/// A restart the agent asked a person to approve.
#[derive(Clone)]
struct AskedRestart {
    session: String,
    /// The snapshot holding the interrupt: its id starts the server-minted
    /// interrupt id, and so the key of the restart an approval runs
    /// (`restartService/<snapshot>/<n>`, the audit line's `effect`).
    snapshot: String,
    /// The interrupt, approved as Genkit JS's `restartTool(interrupt,
    /// {toolApproved: true})` makes it.
    approved: Value,
}

impl AskedRestart {
    /// From an interrupted turn's output.
    fn from_output(out: &Value) -> Result<AskedRestart, String> {
        if out["finishReason"] != "interrupted" {
            return Err(format!("not interrupted: {out}"));
        }
        let interrupt = out["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["metadata"]["interrupt"].is_object() || p["metadata"]["interrupt"] == true)
            .ok_or_else(|| format!("no interrupt in {out}"))?;
        let mut approved = interrupt.clone();
        approved["metadata"]["resumed"] = json!({"toolApproved": true});
        Ok(AskedRestart {
            session: out["sessionId"].as_str().ok_or("no session")?.to_owned(),
            snapshot: out["snapshotId"].as_str().ok_or("no snapshot")?.to_owned(),
            approved,
        })
    }

    /// The request approving it (in the background with `detach`).
    fn approval(&self, detach: bool) -> Value {
        let mut input = json!({"resume": {"restart": [self.approved]}});
        if detach {
            input["detach"] = json!(true);
        }
        json!({"data": input, "init": {"sessionId": self.session}})
    }

    /// The prefix of the effect keys its approval runs under.
    fn effect_prefix(&self) -> String {
        format!("restartService/{}/", self.snapshot)
    }
}

/// Asks `port` to restart the scheduler in a new session.
async fn ask_restart(http: &Http, port: u16) -> AskedRestart {
    let (status, asked) = http
        .post(
            port,
            "/opsAgent",
            &json!({"data": user("restart the scheduler"), "init": {}}),
        )
        .await
        .expect("answers");
    assert_eq!(status, 200, "{asked}");
    AskedRestart::from_output(&asked["result"]).unwrap_or_else(|e| panic!("{e}"))
}

/// Approves `asked` on `port` in the background: the pending snapshot's id.
async fn approve_detached(http: &Http, port: u16, asked: &AskedRestart) -> Value {
    let (status, body) = http
        .post(port, "/opsAgent", &asked.approval(true))
        .await
        .expect("answers");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["finishReason"], "detached", "{body}");
    body["result"]["snapshotId"].clone()
}

/// An approval a client sent, and whether it was told it succeeded.
struct Approval {
    asked: AskedRestart,
    succeeded: bool,
}

/// What one client saw: its session, which turns it was told succeeded,
/// and its approvals.
struct ClientRun {
    session: Option<String>,
    succeeded: Vec<usize>,
    failed: usize,
    approvals: Vec<Approval>,
    /// Of the approvals sent to two replicas at once, how many both
    /// answered as stored (must be none: that would fork the session).
    both_stored: usize,
}

/// An approval through nginx, sent again (up to three times) when the
/// replica died under it or a racing request made it stale: told
/// succeeded only with the agent's answer.
async fn approve_through(http: &Http, port: u16, asked: &AskedRestart) -> bool {
    for _ in 0..3 {
        match http.post(port, "/opsAgent", &asked.approval(false)).await {
            Ok((200, out)) if out["result"]["finishReason"] == "stop" => return true,
            Ok((status, body)) => {
                let retry = matches!(status, 502..=504)
                    || refusal(status, &body).as_deref() == Some("ABORTED");
                if !retry {
                    return false;
                }
            }
            Err(_) => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

async fn run_client(http: &Http, port: u16, direct: [u16; 2], client: usize) -> ClientRun {
    let mut run = ClientRun {
        session: None,
        succeeded: Vec::new(),
        failed: 0,
        approvals: Vec::new(),
        both_stored: 0,
    };
    for turn in 0..TURNS {
        let init = match &run.session {
            Some(s) => json!({"sessionId": s}),
            None => json!({}),
        };
        let body = json!({"data": user(&turn_text(client, turn)), "init": init});
        let out = match http.post(port, "/opsAgent", &body).await {
            Ok((200, out)) => out["result"].clone(),
            // A 502 from a killed replica: the client was told it failed.
            _ => {
                run.failed += 1;
                continue;
            }
        };
        let asked = RESTART_TURNS
            .contains(&turn)
            .then(|| AskedRestart::from_output(&out).ok())
            .flatten();
        // Stored: answered, or (a restart) waiting for approval. ABORTED
        // from a racing append is a turn the client was told failed.
        if out["finishReason"] != "stop" && asked.is_none() {
            run.failed += 1;
            continue;
        }
        if run.session.is_none() {
            run.session = out["sessionId"].as_str().map(str::to_owned);
        }
        run.succeeded.push(turn);
        let Some(asked) = asked else { continue };
        let succeeded = if turn == DOUBLE_APPROVAL_TURN {
            // The same approval to two replicas at once: one restart, one
            // stored turn; the other is refused.
            let body = asked.approval(false);
            let (a, b) = tokio::join!(
                http.post(direct[0], "/opsAgent", &body),
                http.post(direct[1], "/opsAgent", &body)
            );
            let stored = |r: &Result<(u16, Value), String>| matches!(r, Ok((200, out)) if out["result"]["finishReason"] == "stop");
            if stored(&a) && stored(&b) {
                run.both_stored += 1;
            }
            stored(&a) || stored(&b)
        } else {
            approve_through(http, port, &asked).await
        };
        run.approvals.push(Approval { asked, succeeded });
    }
    run
}

/// The restarts that actually ran, in every replica's log: how many
/// audit lines each effect key has.
fn restarts_run(logs: &[&Path]) -> HashMap<String, usize> {
    let mut runs = HashMap::new();
    for log in logs {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        for line in text.lines() {
            if !line.contains("restartService: restarting") {
                continue;
            }
            let key = line
                .split_once("effect=")
                .map(|(_, rest)| rest.split_whitespace().next().unwrap_or(""))
                .unwrap_or("")
                .trim_matches('"')
                .to_owned();
            assert!(!key.is_empty(), "an audit line without its effect: {line}");
            *runs.entry(key).or_default() += 1;
        }
    }
    runs
}

/// How many restarts ran under approvals of `asked`.
fn restarts_of(runs: &HashMap<String, usize>, asked: &AskedRestart) -> usize {
    let prefix = asked.effect_prefix();
    runs.iter()
        .filter(|(k, _)| k.starts_with(&prefix))
        .map(|(_, n)| n)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_behind_nginx_survive_a_killed_replica() {
    let Some((url, nginx)) = prerequisites() else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    // Tool calls are slow on replica 1, so its detached turn is still
    // running when aborted, longer than its heartbeat interval (a third of
    // the lease), when it sees the abort. A restarted service takes 8 s to
    // settle on replica 2, so it dies between a restart and its snapshot.
    let r1 = start_replica(dir.path(), 1, &url, 2500, 0);
    let mut r2 = start_replica(dir.path(), 2, &url, 0, 8000);
    let r3 = start_replica(dir.path(), 3, &url, 0, 0);
    let logs = [r1.log.clone(), r2.log.clone(), r3.log.clone()];
    let logs: Vec<&Path> = logs.iter().map(PathBuf::as_path).collect();
    let http = Arc::new(Http {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client"),
    });
    let start = Instant::now();
    for r in [&r1, &r2, &r3] {
        while !http.ready(r.port).await {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "replica on {} not ready; log: {}",
                r.port,
                std::fs::read_to_string(&r.log).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    let nginx = start_nginx(dir.path(), &nginx, &[&r1, &r2, &r3]);
    let port = nginx.port;
    while !http.ready(port).await {
        assert!(start.elapsed() < Duration::from_secs(70), "nginx not ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // An abort sent to replica 3 stops a detached turn running on replica 1.
    let aborted_restart = ask_restart(&http, r1.port).await;
    let pending = approve_detached(&http, r1.port, &aborted_restart).await;
    let (status, aborted) = http
        .post(
            r3.port,
            "/opsAgent/abort",
            &json!({"data": {"snapshotId": pending}}),
        )
        .await
        .expect("abort answers");
    assert_eq!(status, 200, "{aborted}");

    eprintln!(
        "[{:?}] replicas and nginx ready, abort sent; the load starts",
        start.elapsed()
    );
    // The load, through nginx.
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let http = http.clone();
        let direct = [r1.port, r3.port];
        clients.push(tokio::spawn(async move {
            run_client(&http, port, direct, c).await
        }));
    }

    // Mid-run, replica 2 dies between a restart it ran (recorded) and the
    // snapshot of that turn (a detached approval, holding a lease).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let orphan = ask_restart(&http, r2.port).await;
    let orphan_pending = approve_detached(&http, r2.port, &orphan).await;
    // Killed once its log says the restart's outcome is recorded (a kill
    // between the claim and the record would leave the restart undecided:
    // docs/replicas.md).
    let recorded = format!("effect={}", orphan.effect_prefix());
    let restarted = Instant::now();
    while !std::fs::read_to_string(&r2.log)
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("(outcome recorded)") && l.replace('"', "").contains(&recorded))
    {
        assert!(
            restarted.elapsed() < Duration::from_secs(20),
            "replica 2 never restarted: {}",
            std::fs::read_to_string(&r2.log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    r2.child.0.kill().expect("SIGKILL replica 2");
    eprintln!("[{:?}] replica 2 killed", start.elapsed());
    let killed_at = Instant::now();

    // Sent again while the dead replica's lease holds: refused, nothing runs.
    // (A 502 is nginx's, from a connection it kept to the dead replica: the
    // request reached nothing, and the client sends it again.)
    let (status, body) = loop {
        let answer = http
            .post(port, "/opsAgent", &orphan.approval(false))
            .await
            .expect("answers");
        if answer.0 != 502 {
            break answer;
        }
    };
    let refused_after = killed_at.elapsed();
    assert!(
        refused_after < Duration::from_millis(LEASE_MS * 2 / 3),
        "the refusal took {refused_after:?}: the lease may have lapsed"
    );
    assert_eq!(
        refusal(status, &body).as_deref(),
        Some("FAILED_PRECONDITION"),
        "{status} {body}"
    );

    // The killed replica's detached turn: expired within the lease time
    // (plus the store round trips).
    let deadline = killed_at + Duration::from_millis(LEASE_MS + 2000);
    loop {
        let snap = http
            .snapshot(port, json!({"snapshotId": orphan_pending}))
            .await;
        if snap["status"] == "expired" || snap["status"] == "failed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still {snap} after the lease time"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("[{:?}] the killed replica's turn expired", start.elapsed());
    // Then the approval, sent again, completes with the restart that ran
    // before the kill: recorded, not run again.
    let (status, out) = http
        .post(port, "/opsAgent", &orphan.approval(false))
        .await
        .expect("answers");
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["result"]["finishReason"], "stop", "{out}");

    eprintln!("[{:?}] its approval sent again completed", start.elapsed());
    let mut runs = Vec::new();
    for c in clients {
        runs.push(c.await.expect("client task"));
    }
    eprintln!("[{:?}] the load is done", start.elapsed());

    // No approved restart ran twice, anywhere; the aborted one never ran;
    // the orphan's ran once (before the kill); every approval a client was
    // told succeeded ran exactly once.
    let restarts = restarts_run(&logs);
    let twice: Vec<_> = restarts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "restarted more than once: {twice:?}");
    assert_eq!(
        restarts_of(&restarts, &aborted_restart),
        0,
        "ran after the abort"
    );
    let snap = http.snapshot(port, json!({"snapshotId": pending})).await;
    assert_eq!(snap["status"], "aborted", "{snap}");
    assert_eq!(restarts_of(&restarts, &orphan), 1, "the orphan's restart");
    let mut approved = 0;
    for (c, run) in runs.iter().enumerate() {
        assert_eq!(run.both_stored, 0, "client {c}: one approval stored twice");
        for a in run.approvals.iter().filter(|a| a.succeeded) {
            approved += 1;
            assert_eq!(
                restarts_of(&restarts, &a.asked),
                1,
                "client {c}: an approval told succeeded, in {}",
                a.asked.snapshot
            );
        }
    }

    // Every turn a client was told succeeded is stored exactly once, in
    // order, and nothing else is (no fork, no duplicate); every session
    // goes on.
    // Each session is read, then continued, all at once (one after the
    // other, nginx's round-robin can send every turn to the slow replica).
    let checks: Vec<_> = runs
        .iter()
        .map(|run| {
            let http = http.clone();
            let session = run.session.clone();
            tokio::spawn(async move {
                let session = session?;
                let stored = user_texts(&http.snapshot(port, json!({"sessionId": session})).await);
                for _ in 0..5 {
                    let body = json!({"data": user("one more"), "init": {"sessionId": session}});
                    if let Ok((200, out)) = http.post(port, "/opsAgent", &body).await
                        && out["result"]["finishReason"] == "stop"
                    {
                        return Some((stored, true));
                    }
                }
                Some((stored, false))
            })
        })
        .collect();
    let mut told = 0;
    for (c, (run, check)) in runs.iter().zip(checks).enumerate() {
        told += run.succeeded.len();
        let Some((stored, went_on)) = check.await.expect("check task") else {
            assert!(run.succeeded.is_empty());
            continue;
        };
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for t in &stored {
            *counts.entry(t.as_str()).or_default() += 1;
        }
        for &t in &run.succeeded {
            assert_eq!(
                counts.get(turn_text(c, t).as_str()),
                Some(&1),
                "client {c} turn {t}: {stored:?}"
            );
        }
        assert!(
            counts.values().all(|&n| n == 1),
            "a turn stored twice: {stored:?}"
        );
        let order: Vec<usize> = stored
            .iter()
            .filter_map(|t| (0..TURNS).find(|&i| *t == turn_text(c, i)))
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "out of order: {stored:?}"
        );
        assert!(went_on, "client {c}'s session cannot continue");
    }
    assert!(told >= CLIENTS * TURNS / 2, "only {told} turns succeeded");
    assert!(
        approved >= CLIENTS,
        "only {approved} approvals succeeded: the load tests too few"
    );
    eprintln!(
        "{told} of {} turns and {approved} of {} approvals succeeded; {} turns failed \
         around the kill; {} restarts ran",
        CLIENTS * TURNS,
        CLIENTS * RESTART_TURNS.len(),
        runs.iter().map(|r| r.failed).sum::<usize>(),
        restarts.len()
    );

    // A stream cut mid-way resumes through nginx, on another replica, with
    // every chunk once.
    stream_resumes(&http, &nginx).await;
}

/// The `data:` frames of an event stream's text.
fn frames(text: &str) -> Vec<Value> {
    text.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// The replica nginx's access log names for the request that opened stream
/// `id` (`opened`) or first resumed it, in the `replicas` log format of
/// deploy/nginx.conf (`upstream="A, B"` when nginx passed the request on
/// from A: B answered). Waits for the line (nginx writes it when the
/// request ends).
async fn upstream_of(access_log: &Path, id: &str, opened: bool) -> String {
    let wanted = format!("{}{id}", if opened { "stream_out=" } else { "stream_in=" });
    let start = Instant::now();
    loop {
        let text = std::fs::read_to_string(access_log).unwrap_or_default();
        let found = text
            .lines()
            .filter(|l| l.split_whitespace().any(|w| w == wanted))
            .find_map(|l| {
                let (_, rest) = l.split_once("upstream=\"")?;
                let (addrs, _) = rest.split_once('"')?;
                addrs.rsplit(", ").next().map(str::to_owned)
            });
        if let Some(upstream) = found {
            return upstream;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no access log line with {wanted}: {text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Cuts a stream after its first network chunk and resumes it through
/// nginx; again (six times at most) until nginx sends the resume to
/// another replica than the one streaming, which round-robin soon does.
async fn stream_resumes(http: &Http, nginx: &Nginx) {
    for attempt in 1..=6 {
        let id = cut_and_resume(http, nginx.port).await;
        let first = upstream_of(&nginx.access_log, &id, true).await;
        let other = upstream_of(&nginx.access_log, &id, false).await;
        if first != other {
            eprintln!("stream resumed on {other} after a cut on {first} (attempt {attempt})");
            return;
        }
    }
    panic!("six resumes all went to the replica that streamed");
}

/// One cut and resume, checked: the stream's id.
async fn cut_and_resume(http: &Http, port: u16) -> String {
    let body = json!({
        "data": user("status of every service, with their logs"),
        "init": {}
    });
    let send = |headers: Vec<(&'static str, String)>| {
        let mut request = http
            .client
            .post(format!("http://127.0.0.1:{port}/opsAgent"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            request = request.header(k, v);
        }
        request.send()
    };
    // The first connection: read one network chunk, then drop it.
    let mut first = send(Vec::new()).await.expect("streams");
    assert_eq!(first.status().as_u16(), 200);
    let id = first
        .headers()
        .get("x-genkit-stream-id")
        .and_then(|v| v.to_str().ok())
        .expect("a stream id")
        .to_owned();
    let got = first.chunk().await.expect("reads").unwrap_or_default();
    drop(first);
    let text = String::from_utf8_lossy(&got).into_owned();
    // Only whole frames count as received.
    let whole = text.rsplit_once("\n\n").map_or("", |(done, _)| done);
    let received: Vec<Value> = frames(&format!("{whole}\n\n"))
        .into_iter()
        .filter(|f| f.get("message").is_some())
        .collect();
    // Resume through nginx with the offset, and the reference: all of it.
    let resumed = send(vec![
        ("x-genkit-stream-id", id.clone()),
        ("x-genkit-stream-offset", received.len().to_string()),
    ])
    .await
    .expect("resumes")
    .text()
    .await
    .expect("reads");
    let all = send(vec![("x-genkit-stream-id", id.clone())])
        .await
        .expect("resumes")
        .text()
        .await
        .expect("reads");
    let all = frames(&all);
    let mut joined = received;
    joined.extend(frames(&resumed));
    assert!(
        all.len() >= 2,
        "a stream of one frame tests nothing: {all:?}"
    );
    assert_eq!(joined, all, "chunks lost, repeated or reordered");
    id
}
