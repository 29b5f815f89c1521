//! The official `genkit` CLI (genkit-cli 1.43, `tests/js`) reading and
//! evaluating a Rust runtime:
//!
//! - `genkit eval:flow` runs a Rust RAG flow (a Rust retriever, then a model)
//!   over a dataset file and scores it with Rust evaluators
//!   (`genkitEval/faithfulness` with a judge model, and `genkitEval/regex`),
//!   taking each test case's context from the retriever span of the flow's
//!   trace; `genkit eval:run` scores a dataset file. Both against a runtime
//!   that is already running, and both in their `-- <cmd>` form, where the
//!   CLI starts the runtime itself in Reflection API v2 mode.
//! - `genkit trace:get` (JSON and tree output) and `genkit trace:list` show
//!   the span tree of a flow run under `genkit start`, as our runtime
//!   exported it to the CLI's telemetry server.
//!
//! The scores are read from the CLI's output file and its eval store.
//! Skips (saying so) only when `node` or `npm` is not installed.

mod common;

use genkit_core::Registry;
use genkit_core::flow::define_flow;
use genkit_evaluator::builtin::{GenkitMetric, define_genkit_evaluators};
use genkit_evaluator::{FaithfulnessOptions, define_faithfulness};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::model::{ModelOptions, define_model};
use genkit_model::types::{
    DocumentData, FinishReason, GenerateRequest, GenerateResponse, Message, RetrieverResponse,
};
use genkit_retrieval::retriever::{RetrieveOptions, RetrieverOptions, define_retriever, retrieve};
use genkit_server::{DevToolingOptions, start_dev_tooling_with};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;
use tokio::process::Command;

const DOCS: [&str; 3] = [
    "Paris is the capital of France.",
    "Rome is the capital of Italy.",
    "The Seine flows through Paris.",
];

fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/js")
}

fn has(cmd: &str) -> bool {
    std::process::Command::new(cmd)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether node and npm are here, installing the pinned packages if needed.
fn node_tools() -> bool {
    if !has("node") || !has("npm") {
        eprintln!("SKIPPED: node and npm are required for the eval CLI tests (not found on PATH)");
        return false;
    }
    if !js_dir().join("node_modules/.bin/genkit").exists() {
        let st = std::process::Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(js_dir())
            .status()
            .expect("running npm ci");
        assert!(st.success(), "npm ci failed in {}", js_dir().display());
    }
    true
}

/// The app: a retriever over `DOCS` (those sharing a capitalised word with
/// the query), a model answering with the first retrieved document, the
/// RAG flow `ask`, and a judge that splits an answer into its sentences and
/// supports a statement when a context line contains it.
fn define_app(registry: &Registry) {
    define_retriever(
        registry,
        RetrieverOptions::new("capitals"),
        |query: DocumentData, _o: Option<Value>, _ctx| {
            let q = query.text();
            let keys: Vec<&str> = q
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| w.chars().next().is_some_and(char::is_uppercase) && w.len() > 1)
                .filter(|w| *w != "What" && *w != "Which")
                .collect();
            let documents = DOCS
                .iter()
                .filter(|d| keys.iter().any(|k| d.contains(k)))
                .map(|d| DocumentData::from_text(*d))
                .collect();
            async move { Ok(RetrieverResponse { documents }) }
        },
    )
    .expect("retriever");
    define_model(
        registry,
        ModelOptions::new("answerer"),
        |req: GenerateRequest, _ctx| async move {
            let first = req
                .docs
                .as_ref()
                .and_then(|d| d.first())
                .map_or_else(|| "I do not know.".to_owned(), DocumentData::text);
            Ok(GenerateResponse::new(
                Message::model(first),
                FinishReason::Stop,
            ))
        },
    )
    .expect("answerer");
    define_model(
        registry,
        ModelOptions::new("judge"),
        |req: GenerateRequest, _ctx| async move {
            // The rendered prompt is the first part; format instructions follow.
            let prompt = req
                .messages
                .last()
                .and_then(|m| m.content.first())
                .and_then(|p| p.as_text())
                .unwrap_or_default()
                .to_owned();
            let reply = if prompt.contains("Statements:") {
                // The verdict call: context lines, then `statement: ...` lines.
                let (context, statements) = prompt
                    .split_once("Statements:")
                    .unwrap_or((prompt.as_str(), ""));
                let verdicts: Vec<Value> = statements
                    .lines()
                    .filter_map(|l| l.strip_prefix("statement: "))
                    .map(|s| {
                        let ok = context.contains(s);
                        json!({"statement": s, "reason": if ok { "in context" } else { "not in context" }, "verdict": ok})
                    })
                    .collect();
                json!({ "responses": verdicts })
            } else {
                // The extraction call: one statement per sentence of the answer.
                let answer = prompt
                    .split_once("Answer:\n")
                    .map_or("", |(_, a)| a)
                    .lines()
                    .next()
                    .unwrap_or_default();
                let statements: Vec<String> = answer
                    .split_inclusive('.')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect();
                json!({ "statements": statements })
            };
            Ok(GenerateResponse::new(
                Message::model(reply.to_string()),
                FinishReason::Stop,
            ))
        },
    )
    .expect("judge");
    let r = registry.clone();
    define_flow(registry, "ask", move |question: String, _ctx| {
        let r = r.clone();
        async move {
            let docs = retrieve(&r, RetrieveOptions::new("capitals", question.as_str())).await?;
            let answer = generate(
                &r,
                GenerateOptions::prompt(question)
                    .model("answerer")
                    .docs(docs),
            )
            .await?;
            Ok(answer.text())
        }
    })
    .expect("flow");
    define_faithfulness(registry, FaithfulnessOptions::new("judge")).expect("faithfulness");
    define_genkit_evaluators(registry, &[GenkitMetric::Regex]).expect("regex");
}

/// The tests here take turns: each runs the CLI, which starts (or reuses) a
/// telemetry server on the first free port from 4033, and `genkit start`
/// and the `-- <cmd>` forms start a runtime.
static CLI_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn genkit_bin() -> PathBuf {
    js_dir().join("node_modules/.bin/genkit")
}

/// A scratch project (with package.json, so it is the CLI's project root)
/// and a scratch HOME with analytics off.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    async fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home")).expect("home");
        std::fs::create_dir_all(dir.path().join("project")).expect("project");
        std::fs::write(
            dir.path().join("project/package.json"),
            r#"{"name":"scratch","private":true}"#,
        )
        .expect("package.json");
        let me = Self { dir };
        let out = me
            .genkit(&["config", "set", "analyticsOptOut", "true"])
            .await;
        assert!(out.status.success(), "{}", text(&out));
        me
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    /// The CLI, in the project, with the environment a runtime it starts
    /// needs ([`rust_rag_runtime`] finds the project through `PROJECT_ENV`).
    fn command(&self) -> Command {
        let mut c = Command::new(genkit_bin());
        c.current_dir(self.project())
            .env("HOME", self.dir.path().join("home"))
            .env("GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS", "true")
            .env("NO_COLOR", "1")
            .env(PROJECT_ENV, self.project())
            .env_remove("GENKIT_ENV")
            .env_remove("GENKIT_TELEMETRY_SERVER")
            .env_remove("GENKIT_REFLECTION_PORT")
            .env_remove("GENKIT_REFLECTION_V2_SERVER")
            .env_remove("GENKIT_RUNTIME_ID")
            .kill_on_drop(true);
        c
    }

    async fn genkit(&self, args: &[&str]) -> Output {
        let mut c = self.command();
        c.args(args);
        tokio::time::timeout(Duration::from_secs(180), c.output())
            .await
            .unwrap_or_else(|_| panic!("genkit {args:?} timed out"))
            .expect("genkit runs")
    }

    /// `genkit <args> -- <the Rust runtime>`: the CLI starts the runtime.
    async fn genkit_with_runtime(&self, args: &[&str]) -> Output {
        let exe = std::env::current_exe().expect("test binary");
        let exe = exe.to_str().expect("a UTF-8 path to the test binary");
        let mut all = args.to_vec();
        all.push("--");
        all.extend([exe]);
        all.extend(RUNTIME_ARGS);
        let mut c = self.command();
        // Its own process group, which is killed afterwards: the CLI stops
        // the runtime when it is done, but not if it is killed on a timeout.
        c.args(&all)
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().expect("genkit runs");
        let _group = KillGroup::new(child.id().expect("pid"));
        tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("genkit {all:?} timed out"))
            .expect("genkit runs")
    }

    fn write_questions(&self) {
        std::fs::write(
            self.project().join("questions.json"),
            json!([
                {"testCaseId": "france", "input": "Is Paris the capital of France?", "reference": "^Paris"},
                {"testCaseId": "italy", "input": "Which city is the capital of Italy?", "reference": "^Paris"},
                {"testCaseId": "spain", "input": "What is the capital of Spain?", "reference": "know"},
            ])
            .to_string(),
        )
        .expect("dataset");
    }

    fn write_answers(&self) {
        std::fs::write(
            self.project().join("answers.json"),
            json!([
                {"testCaseId": "supported", "input": "q", "output": "Rome is the capital of Italy.",
                 "context": ["Rome is the capital of Italy."], "reference": "Rome"},
                {"testCaseId": "half", "input": "q", "output": "Rome is the capital of Italy. Rome has a moon.",
                 "context": ["Rome is the capital of Italy."], "reference": "^Milan"},
            ])
            .to_string(),
        )
        .expect("dataset");
    }
}

/// The test-harness arguments that run [`rust_rag_runtime`] alone.
const RUNTIME_ARGS: [&str; 4] = ["--ignored", "--exact", "rust_rag_runtime", "--nocapture"];

/// Kills a process group (the CLI and the runtime it started) when dropped
/// armed, so a failing test leaves no runtime behind: an orphaned Reflection
/// API v2 runtime keeps reconnecting, and would register with the next
/// CLI that listens on the same port.
struct KillGroup {
    pgid: u32,
    armed: bool,
}

impl KillGroup {
    fn new(pgid: u32) -> Self {
        Self { pgid, armed: true }
    }

    /// The group stopped on its own: nothing to kill.
    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        if self.armed {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pgid)])
                .status();
        }
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The CLI's output, which must be a success without an error report (the
/// eval commands print `Command exited with an Error` and exit 0).
fn succeeded(out: &Output) -> String {
    let printed = text(out);
    assert!(out.status.success(), "{printed}");
    assert!(
        !printed.contains("Command exited with an Error") && !printed.contains("Failed to start"),
        "{printed}"
    );
    printed
}

fn read_json(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("JSON")
}

/// The metric of `evaluator` among a result's metrics.
fn metric<'a>(result: &'a Value, evaluator: &str) -> &'a Value {
    result["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["evaluator"] == evaluator))
        .unwrap_or_else(|| panic!("no {evaluator} metric in {result}"))
}

/// The stored eval run (`.genkit/evals/<id>.json`) the CLI printed the id of.
fn stored_run(project: &Path, printed: &str) -> Value {
    let dir = project.join(".genkit/evals");
    let runs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n != "index.txt" && printed.contains(n.trim_end_matches(".json")))
        })
        .collect();
    assert_eq!(runs.len(), 1, "one stored run named in:\n{printed}");
    read_json(&runs[0])
}

/// `eval:flow ask` over `questions.json`, as the CLI wrote it to `file` and
/// stored it: outputs, contexts from the retriever span, and scores.
fn check_flow_results(project: &Path, file: &str, printed: &str) {
    let results = read_json(&project.join(file));
    let results = results.as_array().expect("results");
    assert_eq!(results.len(), 3, "{printed}");
    let by_id = |id: &str| {
        results
            .iter()
            .find(|r| r["testCaseId"] == id)
            .unwrap_or_else(|| panic!("no {id} in {results:?}"))
    };
    // The context is what the retriever span returned, in its order.
    let france = by_id("france");
    assert_eq!(france["input"], "Is Paris the capital of France?");
    assert_eq!(france["output"], "Paris is the capital of France.");
    assert_eq!(
        france["context"],
        json!([
            "Paris is the capital of France.",
            "The Seine flows through Paris."
        ])
    );
    assert_eq!(
        france["traceIds"].as_array().map(Vec::len),
        Some(1),
        "{france}"
    );
    let faith = metric(france, "/evaluator/genkitEval/faithfulness");
    assert_eq!(faith["score"], json!(1));
    assert_eq!(faith["status"], "PASS");
    assert_eq!(faith["rationale"], "in context");
    let regex = metric(france, "/evaluator/genkitEval/regex");
    assert_eq!(
        (&regex["score"], &regex["status"]),
        (&json!(true), &json!("PASS"))
    );

    let italy = by_id("italy");
    assert_eq!(italy["context"], json!(["Rome is the capital of Italy."]));
    assert_eq!(italy["output"], "Rome is the capital of Italy.");
    assert_eq!(
        metric(italy, "/evaluator/genkitEval/faithfulness")["score"],
        json!(1)
    );
    let regex = metric(italy, "/evaluator/genkitEval/regex");
    assert_eq!(
        (&regex["score"], &regex["status"]),
        (&json!(false), &json!("FAIL"))
    );

    // Nothing retrieved: faithfulness refuses a test case without context.
    let spain = by_id("spain");
    assert_eq!(spain["context"], json!([]));
    assert_eq!(spain["output"], "I do not know.");
    let faith = metric(spain, "/evaluator/genkitEval/faithfulness");
    assert_eq!(
        faith["error"],
        "Evaluation of test case spain failed: \nError: Context was not provided"
    );
    assert_eq!(
        metric(spain, "/evaluator/genkitEval/regex")["score"],
        json!(true)
    );

    // The run is stored with its results and summaries.
    let run = stored_run(project, printed);
    assert_eq!(run["key"]["actionRef"], "/flow/ask");
    assert_eq!(run["results"].as_array().map(Vec::len), Some(3));
    assert_eq!(run["results"], Value::Array(results.clone()));
    assert!(
        run["key"]["metricsMetadata"]["genkitEval/faithfulness"]["displayName"] == "Faithfulness",
        "{run}"
    );
}

/// `eval:run` over `answers.json`, as the CLI wrote it to `file`.
fn check_run_results(project: &Path, file: &str) {
    let results = read_json(&project.join(file));
    let half = results
        .as_array()
        .and_then(|r| r.iter().find(|r| r["testCaseId"] == "half"))
        .expect("half");
    let faith = metric(half, "/evaluator/genkitEval/faithfulness");
    assert_eq!(faith["score"], json!(0.5));
    assert_eq!(faith["status"], "FAIL");
    assert_eq!(faith["rationale"], "in context; not in context");
    assert_eq!(
        metric(half, "/evaluator/genkitEval/regex")["status"],
        "FAIL"
    );
    let supported = results
        .as_array()
        .and_then(|r| r.iter().find(|r| r["testCaseId"] == "supported"))
        .expect("supported");
    assert_eq!(
        metric(supported, "/evaluator/genkitEval/faithfulness")["status"],
        "PASS"
    );
    assert_eq!(
        metric(supported, "/evaluator/genkitEval/regex")["score"],
        json!(true)
    );
}

const EVALUATORS: &str = "genkitEval/faithfulness,genkitEval/regex";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_eval_flow_and_eval_run_score_a_rust_rag_flow() {
    if !node_tools() {
        return;
    }
    let _turn = CLI_TURN.lock().await;
    let scratch = Scratch::new().await;

    // The app runs in its own process (this test binary, running
    // `rust_rag_runtime`) with GENKIT_ENV=dev, as under `genkit start`, so it
    // sends its traces to the CLI's telemetry server.
    let mut runtime = Command::new(std::env::current_exe().expect("test binary"));
    runtime
        .args(RUNTIME_ARGS)
        .current_dir(scratch.project())
        .env("GENKIT_ENV", "dev")
        .env(PROJECT_ENV, scratch.project())
        .env_remove("GENKIT_TELEMETRY_SERVER")
        .env_remove("GENKIT_REFLECTION_PORT")
        .env_remove("GENKIT_REFLECTION_V2_SERVER")
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    let mut runtime = runtime.spawn().expect("runtime starts");
    let runtimes = scratch.project().join(".genkit/runtimes");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(&runtimes).is_ok_and(|mut d| d.next().is_some()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the runtime wrote no file under {}",
            runtimes.display()
        );
        assert!(
            runtime.try_wait().expect("status").is_none(),
            "the runtime exited"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // eval:flow over a dataset file.
    scratch.write_questions();
    let out = scratch
        .genkit(&[
            "eval:flow",
            "ask",
            "--input",
            "questions.json",
            "--evaluators",
            EVALUATORS,
            "--force",
            "--output",
            "flow-results.json",
        ])
        .await;
    let printed = succeeded(&out);
    check_flow_results(&scratch.project(), "flow-results.json", &printed);

    // eval:run over a dataset of already produced outputs.
    scratch.write_answers();
    let out = scratch
        .genkit(&[
            "eval:run",
            "answers.json",
            "--evaluators",
            EVALUATORS,
            "--force",
            "--output",
            "run-results.json",
        ])
        .await;
    succeeded(&out);
    check_run_results(&scratch.project(), "run-results.json");

    runtime.kill().await.expect("runtime stopped");
}

/// `genkit eval:flow ... -- <cmd>` and `genkit eval:run ... -- <cmd>`: the
/// CLI starts our runtime itself, in Reflection API v2 mode (it sets
/// `GENKIT_REFLECTION_V2_SERVER`, and the runtime connects to it), waits
/// for the flow and the evaluators to register, evaluates, and stops the
/// runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_eval_commands_start_the_rust_runtime_themselves() {
    if !node_tools() {
        return;
    }
    let _turn = CLI_TURN.lock().await;
    let scratch = Scratch::new().await;
    scratch.write_questions();
    let out = scratch
        .genkit_with_runtime(&[
            "eval:flow",
            "ask",
            "--input",
            "questions.json",
            "--evaluators",
            EVALUATORS,
            "--force",
            "--output",
            "flow-results.json",
        ])
        .await;
    let printed = succeeded(&out);
    check_flow_results(&scratch.project(), "flow-results.json", &printed);
    // v2 mode: the runtime wrote no runtime file (it was never a v1 runtime).
    let runtimes = scratch.project().join(".genkit/runtimes");
    assert!(
        std::fs::read_dir(&runtimes).map_or(true, |mut d| d.next().is_none()),
        "a runtime file under {}",
        runtimes.display()
    );

    scratch.write_answers();
    let out = scratch
        .genkit_with_runtime(&[
            "eval:run",
            "answers.json",
            "--evaluators",
            EVALUATORS,
            "--force",
            "--output",
            "run-results.json",
        ])
        .await;
    succeeded(&out);
    check_run_results(&scratch.project(), "run-results.json");
}

/// The span of `trace` whose `genkit:name` is `name`.
fn span<'a>(trace: &'a Value, name: &str) -> &'a Value {
    trace["spans"]
        .as_object()
        .and_then(|s| s.values().find(|s| s["attributes"]["genkit:name"] == name))
        .unwrap_or_else(|| panic!("no span {name} in {trace:#}"))
}

/// `genkit start -- <our runtime>`, a run of the RAG flow through the CLI's
/// tools API, then `genkit trace:get <id>` (JSON and tree) and
/// `genkit trace:list` in another shell: the span tree our runtime exported
/// is the one the CLI and its trace viewer read (root flow span, the
/// retriever, generate and model spans under it, Genkit's attributes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_trace_get_shows_the_span_tree_of_a_rust_flow() {
    if !node_tools() {
        return;
    }
    let _turn = CLI_TURN.lock().await;
    let scratch = Scratch::new().await;
    let ui_port = common::free_port();
    let env_file = scratch.dir.path().join("genkit.env");
    let exe = std::env::current_exe().expect("test binary");
    // The CLI's and the runtime's output go to a file, shown if the runtime
    // never registers (the one clue to why, on a loaded CI machine).
    let cli_log = scratch.dir.path().join("genkit-start.log");
    let log_file = std::fs::File::create(&cli_log).expect("log file");
    let mut start = scratch.command();
    start
        .args(["start", "--port", &ui_port.to_string(), "--non-interactive"])
        .arg("--write-env-file")
        .arg(&env_file)
        .arg("--")
        .arg(&exe)
        .args(RUNTIME_ARGS)
        .stdout(log_file.try_clone().expect("log file"))
        .stderr(log_file)
        // Its own process group, so the CLI and our runtime get Ctrl-C together.
        .process_group(0);
    let mut cli = start.spawn().expect("genkit start");
    let pgid = cli.id().expect("pid");
    let mut group = KillGroup::new(pgid);
    common::wait_for_port(ui_port).await;
    let http = common::client();
    let tools = format!("http://localhost:{ui_port}");
    // Generous: node and the debug test binary start slowly at a load of 10
    // on 2 cores (a cold .ci/run here at load 9-11 gave up at 60 s).
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    loop {
        let listed: Value = match http.get(format!("{tools}/api/listActions")).send().await {
            Ok(r) => r.json().await.unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        if listed["result"]["data"]["/flow/ask"].is_object() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the runtime never registered: {listed}\n`genkit start` printed:\n{}",
            std::fs::read_to_string(&cli_log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Run the flow as the Dev UI does; the trace id comes in a header.
    let question = "Is Paris the capital of France?";
    let r = http
        .post(format!("{tools}/api/streamAction"))
        .json(&json!({"key": "/flow/ask", "input": question}))
        .send()
        .await
        .expect("streamAction");
    let trace_id = r.headers()["x-genkit-trace-id"]
        .to_str()
        .expect("a trace id")
        .to_owned();
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    let body = r.text().await.expect("body");
    assert!(body.contains("Paris is the capital of France."), "{body}");

    // Wait until the four spans reached the CLI's telemetry server.
    let env = std::fs::read_to_string(&env_file).expect("env file");
    let telemetry = env
        .lines()
        .find_map(|l| l.strip_prefix("GENKIT_TELEMETRY_SERVER="))
        .unwrap_or_else(|| panic!("{env}"))
        .to_owned();
    let mut stored = Value::Null;
    for _ in 0..100 {
        stored = http
            .get(format!("{telemetry}/api/traces/{trace_id}"))
            .send()
            .await
            .expect("telemetry server")
            .json()
            .await
            .unwrap_or(Value::Null);
        if stored["spans"]
            .as_object()
            .is_some_and(|s| s.len() == 4 && s.values().all(|s| s["endTime"].as_f64() > Some(0.0)))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        stored["spans"].as_object().map(|s| s.len()),
        Some(4),
        "the telemetry server has: {stored:#}"
    );

    // trace:get, JSON: the trace and its spans with Genkit's attributes
    // (JSON-valued attributes parsed by the CLI).
    let out = scratch
        .genkit(&["trace:get", &trace_id, "--format", "json"])
        .await;
    assert!(out.status.success(), "{}", text(&out));
    let trace: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out)));
    assert_eq!(trace["traceId"], trace_id.as_str());
    assert_eq!(trace["displayName"], "ask", "{trace:#}");
    assert_eq!(
        trace["spans"].as_object().map(|s| s.len()),
        Some(4),
        "{trace:#}"
    );
    let root = span(&trace, "ask");
    assert!(root.get("parentSpanId").is_none(), "{root:#}");
    let a = &root["attributes"];
    assert_eq!(a["genkit:isRoot"], true);
    assert_eq!(a["genkit:type"], "action");
    assert_eq!(a["genkit:metadata:subtype"], "flow");
    assert_eq!(a["genkit:path"], "/{ask,t:flow}");
    assert_eq!(a["genkit:state"], "success");
    assert_eq!(a["genkit:input"], json!(question).to_string());
    assert_eq!(
        a["genkit:output"],
        json!("Paris is the capital of France.").to_string()
    );
    assert_eq!(root["status"]["code"], 0, "{root:#}");

    let retriever = span(&trace, "capitals");
    assert_eq!(retriever["parentSpanId"], root["spanId"]);
    let a = &retriever["attributes"];
    assert_eq!(a["genkit:type"], "action");
    assert_eq!(a["genkit:metadata:subtype"], "retriever");
    assert_eq!(
        a["genkit:path"],
        "/{ask,t:flow}/{capitals,t:action,s:retriever}"
    );
    assert_eq!(
        a["genkit:output"]["documents"][0]["content"][0]["text"], "Paris is the capital of France.",
        "{a:#}"
    );

    let generate = span(&trace, "generate");
    assert_eq!(generate["parentSpanId"], root["spanId"]);
    assert_eq!(generate["attributes"]["genkit:type"], "util");
    assert_eq!(
        generate["attributes"]["genkit:path"],
        "/{ask,t:flow}/{generate,t:util}"
    );

    let model = span(&trace, "answerer");
    assert_eq!(model["parentSpanId"], generate["spanId"]);
    let a = &model["attributes"];
    assert_eq!(a["genkit:type"], "action");
    assert_eq!(a["genkit:metadata:subtype"], "model");
    assert_eq!(
        a["genkit:path"],
        "/{ask,t:flow}/{generate,t:util}/{answerer,t:action,s:model}"
    );
    assert_eq!(a["genkit:input"]["messages"][0]["role"], "user", "{a:#}");
    assert_eq!(
        a["genkit:output"]["message"]["content"][0]["text"],
        "Paris is the capital of France."
    );
    for s in trace["spans"]
        .as_object()
        .into_iter()
        .flat_map(|s| s.values())
    {
        assert_eq!(s["traceId"], trace_id.as_str());
        assert_eq!(s["attributes"]["genkit:state"], "success", "{s:#}");
        assert!(s["startTime"].as_f64() <= s["endTime"].as_f64(), "{s:#}");
    }

    // trace:get, tree: the CLI assembled the same tree from our spans.
    let out = scratch.genkit(&["trace:get", &trace_id]).await;
    let tree = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", text(&out));
    assert!(tree.contains(&format!("Trace ID: {trace_id}")), "{tree}");
    assert!(tree.contains("Name:     ask"), "{tree}");
    let lines: Vec<&str> = tree.lines().map(str::trim_end).collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` in\n{tree}"))
    };
    let (root, retriever, generate, model) = (
        at("└─ ask (flow) ["),
        at("capitals (retriever) ["),
        at("generate (util) ["),
        at("answerer (model) ["),
    );
    assert!(
        root < retriever && retriever < generate && generate < model,
        "{tree}"
    );
    for l in [root, retriever, generate, model] {
        assert!(lines[l].ends_with('✔'), "{}", lines[l]);
    }
    assert!(
        lines[model..]
            .iter()
            .any(|l| l.contains("Model: \"Paris is the capital of France.\"")),
        "{tree}"
    );

    // trace:list names it, with its root span's type and state.
    let out = scratch.genkit(&["trace:list", "--name", "ask"]).await;
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", text(&out));
    let entry = listed
        .split("---")
        .find(|e| e.contains(&format!("ID:       {trace_id}")))
        .unwrap_or_else(|| panic!("{trace_id} not in\n{listed}"));
    assert!(entry.contains("Type:     flow"), "{entry}");
    assert!(entry.contains("Name:     ask"), "{entry}");
    assert!(entry.contains("Status:   success"), "{entry}");

    let st = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .expect("kill");
    assert!(st.success());
    tokio::time::timeout(Duration::from_secs(20), cli.wait())
        .await
        .expect("genkit start did not stop")
        .expect("genkit start");
    group.disarm();
}

/// Names the project folder of [`rust_rag_runtime`].
const PROJECT_ENV: &str = "GENKIT_TEST_EVAL_PROJECT";

/// The Rust app the CLI evaluates, run in its own process by the tests
/// above (ignored otherwise): the dev tooling for the project folder in
/// `GENKIT_TEST_EVAL_PROJECT` (or, when the CLI started it in Reflection API
/// v2 mode, connected to the CLI), until it is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the runtime of the CLI tests here, started by them"]
async fn rust_rag_runtime() {
    let project = std::env::var_os(PROJECT_ENV)
        .unwrap_or_else(|| panic!("{PROJECT_ENV} is not set: this runs inside the eval CLI test"));
    let registry = Registry::new();
    define_app(&registry);
    let dev = start_dev_tooling_with(
        &registry,
        DevToolingOptions {
            project_dir: Some(project.into()),
            name: Some("rag".into()),
            exit_on_signal: false,
            ..DevToolingOptions::default()
        },
    )
    .await
    .expect("dev tooling")
    .expect("GENKIT_ENV=dev starts the dev tooling");
    genkit_server::shutdown::signal().await;
    dev.shutdown().await;
}
