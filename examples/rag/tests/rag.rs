//! The RAG example end to end, with no key and no model server: the real
//! binary indexes a folder of Markdown with the in-process local embedder
//! (all-MiniLM-L6-v2) and answers questions with citations from the
//! extractive model; with `--model openai/...` the same flow talks to a
//! scripted OpenAI-compatible server on 127.0.0.1.
//!
//! The embedder's model comes from `tests-support/local-embedder/install.sh`
//! (`test.sh` runs it and sets `GENKIT_LOCAL_EMBEDDER_DIR`). Without it these
//! tests say so and pass, except under `CI=true`, where they fail.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use genkit_provider::test_server::{Reply, TestServer};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_rag");
const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs");
const NO_ANSWER: &str = "The indexed documents do not answer this question.";

/// Whether the embedder's model is installed (outside CI, a missing model
/// skips the test).
fn model_installed() -> bool {
    // Where the app's embedder will look: its option, the variable, or the
    // install script's default folder.
    let found = genkit_local_embedder::LocalEmbedder::new()
        .resolved_model_dir()
        .is_some_and(|d| d.join("model.safetensors").is_file());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "all-MiniLM-L6-v2 is not installed: run tests-support/local-embedder/install.sh \
             and set GENKIT_LOCAL_EMBEDDER_DIR to the folder it prints"
        );
        eprintln!(
            "SKIPPED: all-MiniLM-L6-v2 is not installed (tests-support/local-embedder/install.sh)"
        );
    }
    found
}

/// `rag --store <store> <args>`, with no model setting of the developer's
/// leaking in.
fn rag(store: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "RAG_MODEL",
        "RAG_STORE",
    ] {
        cmd.env_remove(var);
    }
    cmd.arg("--store")
        .arg(store)
        .args(args)
        .envs(env.iter().copied());
    cmd.output().expect("the rag binary runs")
}

fn ok(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}; stderr: {stderr}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ask_json(store: &Path, question: &str, env: &[(&str, &str)], model: Option<&str>) -> Value {
    let mut args = vec!["ask", question, "--json"];
    if let Some(m) = model {
        args.extend(["--model", m]);
    }
    let stdout = ok(&rag(store, &args, env));
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("JSON on stdout ({e}): {stdout}"))
}

/// A copy of the example's docs folder, to edit.
fn copy_docs(to: &Path) {
    for entry in walk(Path::new(DOCS)) {
        let rel = entry.strip_prefix(DOCS).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, dest).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Every `sentence [n]` the answer quotes is in the text of the source it
/// cites as `n`.
fn assert_quotes_match_citations(reply: &Value) {
    let answer = reply["answer"].as_str().unwrap();
    let citations = reply["citations"].as_array().unwrap();
    for piece in answer.split_inclusive(']') {
        let Some((sentence, n)) = piece.rsplit_once(" [") else {
            continue;
        };
        let sentence = sentence.trim_start_matches(". ").trim();
        let n: u64 = n.trim_end_matches(']').parse().unwrap();
        let cited = citations
            .iter()
            .find(|c| c["number"] == n)
            .unwrap_or_else(|| panic!("[{n}] is not among the citations: {reply:#}"));
        let text = cited["text"].as_str().unwrap().replace('\n', " ");
        assert!(
            text.contains(sentence),
            "[{n}] does not say {sentence:?}: {reply:#}"
        );
    }
}

#[test]
fn a_folder_is_indexed_and_questions_are_answered_with_citations() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("index/docs.json");
    let indexed = ok(&rag(&store, &["index", DOCS], &[]));
    assert!(indexed.starts_with("4 files, "), "{indexed}");
    assert!(store.with_extension("vdb").is_file());

    let reply = ask_json(&store, "How do I change the port?", &[], None);
    let answer = reply["answer"].as_str().unwrap();
    assert!(
        answer.contains("Set `port` under `[server]` to change the port"),
        "{reply:#}"
    );
    let first = &reply["citations"][0];
    assert_eq!(first["source"], "configuration.md", "{reply:#}");
    assert_eq!(first["headings"], json!(["Configuration", "Server"]));
    assert_eq!(reply["retrieved"], 4);
    assert!(reply.get("unknownCitations").is_none(), "{reply:#}");
    assert_quotes_match_citations(&reply);

    // A question worded apart from the text still finds it (semantic, not
    // word, search), from the nested folder.
    let reply = ask_json(&store, "How can I make a backup of my notes?", &[], None);
    assert_eq!(
        reply["citations"][0]["source"], "operations/backups.md",
        "{reply:#}"
    );
    assert_quotes_match_citations(&reply);

    // Nothing in the files answers this: no quote, no citation.
    let reply = ask_json(&store, "What is the capital of France?", &[], None);
    assert_eq!(reply["answer"], NO_ANSWER);
    assert_eq!(reply["citations"], json!([]));

    // The terminal output lists the cited sources with their headings.
    let text = ok(&rag(
        &store,
        &[
            "ask",
            "Which port does Quill listen on by default?",
            "-k",
            "2",
        ],
        &[],
    ));
    assert!(text.contains("7070"), "{text}");
    assert!(text.contains("\n\nSources:\n  ["), "{text}");
    assert!(
        text.contains("configuration.md › Configuration › Server")
            || text.contains("getting-started.md › Getting started with Quill › First start"),
        "{text}"
    );
}

#[test]
fn reindexing_replaces_the_index_and_a_failed_rebuild_keeps_the_old_one() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    copy_docs(&docs);
    let store = dir.path().join("docs.json");
    ok(&rag(&store, &["index", docs.to_str().unwrap()], &[]));
    let backups = "How can I make a backup of my notes?";
    let reply = ask_json(&store, backups, &[], None);
    assert_eq!(reply["citations"][0]["source"], "operations/backups.md");

    // A file that is not UTF-8: the rebuild fails naming it, and the index
    // answers as before.
    std::fs::write(docs.join("broken.md"), [0xff, 0xfe, 0xfd]).unwrap();
    let out = rag(&store, &["index", docs.to_str().unwrap()], &[]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("broken.md"), "{stderr}");
    assert!(!dir.path().join("docs.partial.vdb").exists());
    assert_eq!(ask_json(&store, backups, &[], None), reply);

    // Rebuilt without the backups page, nothing cites it any more.
    std::fs::remove_file(docs.join("broken.md")).unwrap();
    std::fs::remove_file(docs.join("operations/backups.md")).unwrap();
    let indexed = ok(&rag(&store, &["index", docs.to_str().unwrap()], &[]));
    assert!(indexed.starts_with("3 files, "), "{indexed}");
    let reply = ask_json(&store, backups, &[], None);
    let sources: Vec<&Value> = reply["citations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["source"])
        .collect();
    assert!(
        !sources.contains(&&json!("operations/backups.md")),
        "{reply:#}"
    );
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("none.json");
    let out = rag(&store, &["ask", "anything"], &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("FAILED_PRECONDITION: no index at") && stderr.contains("rag index"),
        "{stderr}"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = rag(&store, &["index", empty.to_str().unwrap()], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no Markdown (.md) files"), "{stderr}");
    assert!(!store.exists() && !store.with_extension("vdb").exists());

    std::fs::write(&store, "{}").unwrap();
    for (args, wanted) in [
        (vec!["ask", "   "], "question: must not be empty"),
        (
            vec!["ask", "q", "-k", "0"],
            "k: must be between 1 and 20, not 0",
        ),
        (
            vec!["ask", "q", "--model", "acme/x"],
            "--model: `acme/x` is not a model",
        ),
    ] {
        let out = rag(&store, &args, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("INVALID_ARGUMENT") && stderr.contains(wanted),
            "{stderr}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compatible_model_gets_numbered_sources_and_its_citations_are_resolved() {
    if !model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("docs.json");
    ok(&rag(&store, &["index", DOCS], &[]));
    let server = TestServer::start([Reply::json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1748772000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null, "message": {
            "role": "assistant", "refusal": null,
            "content": "Set `port` under `[server]` in quill.toml [1]. Restart Quill afterwards [9]."}}],
        "usage": {"prompt_tokens": 400, "completion_tokens": 20, "total_tokens": 420}
    }))])
    .await;
    let base = format!("{}/v1", server.url);
    let store2 = store.clone();
    let reply = tokio::task::spawn_blocking(move || {
        let env = [
            ("OPENAI_API_KEY", "sk-test-rag"),
            ("OPENAI_BASE_URL", base.as_str()),
        ];
        ask_json(
            &store2,
            "How do I change the port?",
            &env,
            Some("openai/gpt-4o-mini"),
        )
    })
    .await
    .unwrap();

    // The model saw the system prompt, the question and the numbered sources.
    let request = server.single_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body["model"], "gpt-4o-mini");
    let messages = request.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("square brackets, like [1]")
    );
    let user = messages[1].to_string();
    assert!(user.contains("How do I change the port?"), "{user}");
    assert!(
        user.contains("Use the following information to complete your task"),
        "{user}"
    );
    for n in 1..=4 {
        assert!(
            user.contains(&format!("- [{n}]: ")),
            "source {n} missing: {user}"
        );
    }
    assert!(!user.contains("- [5]: "), "{user}");

    // [1] is resolved to the first source; [9] names none and is reported.
    assert_eq!(reply["citations"].as_array().unwrap().len(), 1, "{reply:#}");
    assert_eq!(reply["citations"][0]["number"], 1);
    assert_eq!(reply["unknownCitations"], json!([9]));
    let first_source = user.split("- [1]: ").nth(1).unwrap();
    let cited = reply["citations"][0]["text"].as_str().unwrap();
    let cited_start: String = cited.chars().take(20).collect();
    assert!(
        first_source.starts_with(&cited_start.replace('\n', "\\n")),
        "{cited} vs {first_source}"
    );
}
