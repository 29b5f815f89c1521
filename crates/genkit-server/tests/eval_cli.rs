//! The official `genkit` CLI (genkit-cli 1.43, `tests/js`) evaluating a
//! Rust runtime: `genkit eval:flow` runs a Rust RAG flow (a Rust retriever,
//! then a model) over a dataset file and scores it with Rust evaluators
//! (`genkitEval/faithfulness` with a judge model, and `genkitEval/regex`),
//! taking each test case's context from the retriever span of the flow's
//! trace; `genkit eval:run` scores a dataset file. The scores are read from
//! the CLI's output file and its eval store.
//!
//! Skips (saying so) only when `node` or `npm` is not installed.

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

struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    async fn genkit(&self, args: &[&str]) -> Output {
        let mut c = Command::new(js_dir().join("node_modules/.bin/genkit"));
        c.args(args)
            .current_dir(self.project())
            .env("HOME", self.dir.path().join("home"))
            .env("GENKIT_CLI_DISABLE_UPDATE_NOTIFICATIONS", "true")
            .env("NO_COLOR", "1")
            .env_remove("GENKIT_ENV")
            .env_remove("GENKIT_TELEMETRY_SERVER")
            .env_remove("GENKIT_REFLECTION_PORT")
            .env_remove("GENKIT_RUNTIME_ID")
            .kill_on_drop(true);
        tokio::time::timeout(Duration::from_secs(180), c.output())
            .await
            .unwrap_or_else(|_| panic!("genkit {args:?} timed out"))
            .expect("genkit runs")
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn genkit_eval_flow_and_eval_run_score_a_rust_rag_flow() {
    if !node_tools() {
        return;
    }
    let scratch = Scratch {
        dir: tempfile::tempdir().expect("tempdir"),
    };
    std::fs::create_dir_all(scratch.dir.path().join("home")).expect("home");
    std::fs::create_dir_all(scratch.project()).expect("project");
    std::fs::write(
        scratch.project().join("package.json"),
        r#"{"name":"scratch","private":true}"#,
    )
    .expect("package.json");
    let out = scratch
        .genkit(&["config", "set", "analyticsOptOut", "true"])
        .await;
    assert!(out.status.success(), "{}", text(&out));

    // The app runs in its own process (this test binary, running
    // `rust_rag_runtime`) with GENKIT_ENV=dev, as under `genkit start`, so it
    // sends its traces to the CLI's telemetry server.
    let mut runtime = Command::new(std::env::current_exe().expect("test binary"));
    runtime
        .args(["--ignored", "--exact", "rust_rag_runtime", "--nocapture"])
        .current_dir(scratch.project())
        .env("GENKIT_ENV", "dev")
        .env(PROJECT_ENV, scratch.project())
        .env_remove("GENKIT_TELEMETRY_SERVER")
        .env_remove("GENKIT_REFLECTION_PORT")
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
    std::fs::write(
        scratch.project().join("questions.json"),
        json!([
            {"testCaseId": "france", "input": "Is Paris the capital of France?", "reference": "^Paris"},
            {"testCaseId": "italy", "input": "Which city is the capital of Italy?", "reference": "^Paris"},
            {"testCaseId": "spain", "input": "What is the capital of Spain?", "reference": "know"},
        ])
        .to_string(),
    )
    .expect("dataset");
    let out = scratch
        .genkit(&[
            "eval:flow",
            "ask",
            "--input",
            "questions.json",
            "--evaluators",
            "genkitEval/faithfulness,genkitEval/regex",
            "--force",
            "--output",
            "flow-results.json",
        ])
        .await;
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(
        !printed.contains("Command exited with an Error"),
        "{printed}"
    );
    let results = read_json(&scratch.project().join("flow-results.json"));
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
    let run = stored_run(&scratch.project(), &printed);
    assert_eq!(run["key"]["actionRef"], "/flow/ask");
    assert_eq!(run["results"].as_array().map(Vec::len), Some(3));
    assert_eq!(run["results"], Value::Array(results.clone()));
    assert!(
        run["key"]["metricsMetadata"]["genkitEval/faithfulness"]["displayName"] == "Faithfulness",
        "{run}"
    );

    // eval:run over a dataset of already produced outputs.
    std::fs::write(
        scratch.project().join("answers.json"),
        json!([
            {"testCaseId": "supported", "input": "q", "output": "Rome is the capital of Italy.",
             "context": ["Rome is the capital of Italy."], "reference": "Rome"},
            {"testCaseId": "half", "input": "q", "output": "Rome is the capital of Italy. Rome has a moon.",
             "context": ["Rome is the capital of Italy."], "reference": "^Milan"},
        ])
        .to_string(),
    )
    .expect("dataset");
    let out = scratch
        .genkit(&[
            "eval:run",
            "answers.json",
            "--evaluators",
            "genkitEval/faithfulness,genkitEval/regex",
            "--force",
            "--output",
            "run-results.json",
        ])
        .await;
    let printed = text(&out);
    assert!(out.status.success(), "{printed}");
    assert!(
        !printed.contains("Command exited with an Error"),
        "{printed}"
    );
    let results = read_json(&scratch.project().join("run-results.json"));
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

    runtime.kill().await.expect("runtime stopped");
}

/// Names the project folder of [`rust_rag_runtime`].
const PROJECT_ENV: &str = "GENKIT_TEST_EVAL_PROJECT";

/// The Rust app the CLI evaluates, run in its own process by
/// [`genkit_eval_flow_and_eval_run_score_a_rust_rag_flow`] (ignored
/// otherwise): the dev tooling for the project folder in
/// `GENKIT_TEST_EVAL_PROJECT`, until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the runtime of genkit_eval_flow_and_eval_run_score_a_rust_rag_flow, started by it"]
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
