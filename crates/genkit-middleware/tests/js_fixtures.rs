//! The filesystem and skills middleware against Genkit JS's, recorded by
//! tests-support/middleware-js/record.js into fixtures/middleware_js.json:
//! the same scripted conversations (a model issuing tool calls) must give
//! the same tool definitions, tool outputs, injected messages and errors;
//! and the listings of the named middleware must carry Genkit JS's config
//! schemas.

use genkit_core::Registry;
use genkit_generate::define_generate_action;
use genkit_middleware::define_builtin_middleware;
use genkit_model::testing::ProgrammableModel;
use genkit_model::types::{GenerateActionOptions, Message, MiddlewareRef, ToolRequest};
use serde_json::{Value, json};

fn fixture() -> Value {
    let text = include_str!("fixtures/middleware_js.json");
    serde_json::from_str(text).expect("fixture parses")
}

/// The tree record.js builds for each filesystem scenario.
fn tmp_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/nested")).unwrap();
    std::fs::write(root.join("hello.txt"), "Hello, world!\n").unwrap();
    std::fs::write(
        root.join("src/main.rs"),
        "fn main() {\n    println!(\"hi\");\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/nested/deep.md"), "# Deep\n").unwrap();
    dir
}

/// The skills tree record.js builds; returns (temp root, skills dir).
fn skills_tree() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("skills");
    for d in ["pirate", "plain", ".hidden", "empty"] {
        std::fs::create_dir_all(s.join(d)).unwrap();
    }
    std::fs::write(
        s.join("pirate/SKILL.md"),
        "---\nname: pirate\ndescription: Talk like a pirate.\n---\nSay arr a lot.\n",
    )
    .unwrap();
    std::fs::write(s.join("plain/SKILL.md"), "No frontmatter here.\n").unwrap();
    std::fs::write(
        s.join(".hidden/SKILL.md"),
        "---\ndescription: hidden\n---\n",
    )
    .unwrap();
    (dir, s)
}

struct Outcome {
    tools: Vec<Value>,
    first_messages: Value,
    after_messages: Vec<Value>,
    error: Option<String>,
}

/// Runs one scenario through `/util/generate` with `use: [{name, config}]`.
async fn run(name: &str, config: Value, calls: &[Value], system: Option<&str>) -> Outcome {
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    define_builtin_middleware(&reg).unwrap();
    let mut model = ProgrammableModel::define(&reg, "scripted");
    if !calls.is_empty() {
        let requests = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                serde_json::from_value::<ToolRequest>(
                    json!({"ref": i.to_string(), "name": c["name"], "input": c["input"]}),
                )
                .unwrap()
            })
            .collect();
        model = model.respond_tool_calls(requests);
    }
    model = model.respond_text("done");
    let mut messages = Vec::new();
    if let Some(s) = system {
        messages.push(Message::system(s));
    }
    messages.push(Message::user("go"));
    let mut opts = GenerateActionOptions::new(messages).with_model("scripted");
    opts.middleware = Some(vec![MiddlewareRef {
        name: name.into(),
        config: Some(config),
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    let error = action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .err()
        .map(|e| e.message().to_owned());
    let requests = model.requests();
    let first = &requests[0];
    let tools = first
        .tools
        .iter()
        .flat_map(|ts| ts.iter())
        .map(|t| {
            let t = serde_json::to_value(t).unwrap();
            json!({"name": t["name"], "description": t["description"],
                   "inputSchema": t["inputSchema"], "outputSchema": t["outputSchema"]})
        })
        .collect();
    let first_messages = serde_json::to_value(&first.messages).unwrap();
    let after_messages = if requests.len() > 1 {
        let last = requests.last().unwrap();
        last.messages[first.messages.len() + 1..]
            .iter()
            .map(|m| serde_json::to_value(m).unwrap())
            .collect()
    } else {
        Vec::new()
    };
    Outcome {
        tools,
        first_messages,
        after_messages,
        error,
    }
}

/// Tool responses by ref (Genkit JS runs a turn's tools concurrently, so
/// their order is not part of the behaviour), with listings sorted by path
/// (Genkit JS keeps the OS's directory order) and the root as JS scrubbed it
/// removed from paths (we name paths as the model gave them).
fn responses(messages: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .map(|mut p| {
            let out = &mut p["toolResponse"]["output"];
            if let Some(list) = out.as_array_mut() {
                list.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
            }
            if let Some(s) = out.as_str() {
                *out = Value::from(s.replace("<ROOT>/", ""));
            }
            p
        })
        .collect();
    out.sort_by(|a, b| {
        a["toolResponse"]["ref"]
            .as_str()
            .cmp(&b["toolResponse"]["ref"].as_str())
    });
    out
}

fn user_messages(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .cloned()
        .collect()
}

fn assert_tools(ours: &[Value], js: &Value, scenario: &str) {
    assert_eq!(
        ours,
        js.as_array().unwrap().as_slice(),
        "tools of {scenario}"
    );
}

#[tokio::test]
async fn filesystem_matches_genkit_js() {
    let fx = fixture();
    for (scenario, rec) in fx["filesystem"].as_object().unwrap() {
        let dir = tmp_tree();
        let root = dir.path().to_str().unwrap();
        let config = match scenario.as_str() {
            "read_only_write" => json!({"rootDirectory": root}),
            "prefixed" => json!({"rootDirectory": root, "toolNamePrefix": "fs_"}),
            _ => json!({"rootDirectory": root, "allowWriteAccess": true}),
        };
        let calls = rec["calls"].as_array().unwrap();
        let out = run("filesystem", config, calls, None).await;
        assert_tools(&out.tools, &rec["tools"], scenario);
        let js_after = rec["afterMessages"].as_array().unwrap();
        match scenario.as_str() {
            // Genkit JS fails on `{}` (it declares defaults it does not
            // apply); ours lists the root, as JS does for `{dirPath: ""}`.
            "list_root" | "prefixed" => {
                let explicit = responses(
                    fx["filesystem"]["list_root_explicit"]["afterMessages"]
                        .as_array()
                        .unwrap(),
                );
                let ours = responses(&out.after_messages);
                assert_eq!(
                    ours[0]["toolResponse"]["output"], explicit[0]["toolResponse"]["output"],
                    "{scenario}"
                );
                let js = responses(js_after);
                assert_eq!(
                    ours[0]["toolResponse"]["name"],
                    js[0]["toolResponse"]["name"]
                );
            }
            // The write and the read ran concurrently in Genkit JS, so its
            // read saw no file; compare the write, and check the file.
            "write_new" => {
                let ours = responses(&out.after_messages);
                assert_eq!(ours[0], responses(js_after)[0], "{scenario}");
                assert_eq!(
                    std::fs::read_to_string(dir.path().join("out/new.txt")).unwrap(),
                    "fresh"
                );
            }
            "replace_ok" => {
                let ours = responses(&out.after_messages);
                assert_eq!(ours[0], responses(js_after)[0], "{scenario}");
                assert_eq!(
                    std::fs::read_to_string(dir.path().join("src/main.rs")).unwrap(),
                    "fn main() {\n    println!(\"bye\");\n}\n"
                );
            }
            _ => {
                assert_eq!(
                    responses(&out.after_messages),
                    responses(js_after),
                    "{scenario}"
                );
                assert_eq!(
                    user_messages(&out.after_messages),
                    user_messages(js_after),
                    "{scenario}"
                );
            }
        }
        match rec.get("error").and_then(Value::as_str) {
            // "NOT_FOUND: Tool write_file not found": the tool is not offered.
            Some(js) => {
                let ours = out
                    .error
                    .unwrap_or_else(|| panic!("{scenario} should fail like JS: {js}"));
                assert!(
                    ours.contains("write_file") && ours.to_lowercase().contains("not found"),
                    "{scenario}: {ours}"
                );
            }
            None => assert_eq!(out.error, None, "{scenario}"),
        }
    }
}

#[tokio::test]
async fn skills_match_genkit_js() {
    let fx = fixture();
    for (scenario, rec) in fx["skills"].as_object().unwrap() {
        let (dir, skills) = skills_tree();
        let path = if scenario == "no_skills" {
            dir.path().join("none")
        } else {
            skills
        };
        let system = (scenario == "with_system").then_some("Be brief.");
        let calls = rec["calls"].as_array().unwrap();
        let out = run("skills", json!({"skillPaths": [path]}), calls, system).await;
        assert_tools(&out.tools, &rec["tools"], scenario);
        assert_eq!(out.first_messages, rec["firstMessages"], "{scenario}");
        assert_eq!(
            responses(&out.after_messages),
            responses(rec["afterMessages"].as_array().unwrap()),
            "{scenario}"
        );
        match rec.get("error").and_then(Value::as_str) {
            Some(js) => {
                let ours = out
                    .error
                    .unwrap_or_else(|| panic!("{scenario} should fail like JS: {js}"));
                assert!(ours.contains(js), "{scenario}: {ours} vs {js}");
            }
            None => assert_eq!(out.error, None, "{scenario}"),
        }
    }
}

#[test]
fn listings_carry_genkit_js_config_schemas() {
    let fx = fixture();
    let reg = Registry::new();
    define_builtin_middleware(&reg).unwrap();
    let listed = reg.list_values("middleware");
    for name in ["filesystem", "skills", "retry", "fallback"] {
        assert_eq!(listed[name], fx["configSchemas"][name], "{name}");
    }
}

#[tokio::test]
async fn a_config_that_breaks_the_schema_names_the_field() {
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    define_builtin_middleware(&reg).unwrap();
    ProgrammableModel::define(&reg, "m").respond_text("ok");
    let mut opts = GenerateActionOptions::new(vec![Message::user("hi")]).with_model("m");
    opts.middleware = Some(vec![MiddlewareRef {
        name: "retry".into(),
        config: Some(json!({"maxRetries": "three"})),
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    let err = action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    assert!(
        err.message().contains("middleware `retry` config"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("maxRetries"), "{}", err.message());
}

/// A prompt file naming `retry` with Genkit JS's config keys: the failing
/// first call is retried without delay (`initialDelayMs: 0`, `noJitter`).
#[tokio::test]
async fn a_prompt_file_uses_retry_by_name() {
    let reg = Registry::new();
    define_builtin_middleware(&reg).unwrap();
    let model = ProgrammableModel::define(&reg, "flaky")
        .respond_error(genkit_core::Error::new(
            genkit_core::StatusCode::Unavailable,
            "down",
        ))
        .respond_text("recovered");
    let source = "---\nmodel: flaky\nuse:\n  - name: retry\n    config:\n      maxRetries: 2\n      initialDelayMs: 0\n      noJitter: true\n      statuses: [UNAVAILABLE]\n---\nHello\n";
    let prompt = genkit_prompt::load_prompt_source(&reg, "flaky_prompt", source, None).unwrap();
    let out = prompt.call(json!({})).await.unwrap();
    assert_eq!(out.text(), "recovered");
    assert_eq!(model.call_count(), 2);

    // And `maxRetries` as configured: with none left, the error surfaces.
    let reg = Registry::new();
    define_builtin_middleware(&reg).unwrap();
    ProgrammableModel::define(&reg, "flaky")
        .respond_error(genkit_core::Error::new(
            genkit_core::StatusCode::Unavailable,
            "down",
        ))
        .respond_text("unused");
    let source = source
        .replace("maxRetries: 2", "maxRetries: 0.5")
        .replace("statuses: [UNAVAILABLE]", "statuses: [INTERNAL]");
    let prompt = genkit_prompt::load_prompt_source(&reg, "flaky_prompt", &source, None).unwrap();
    let err = prompt.call(json!({})).await.unwrap_err();
    assert_eq!(err.status(), genkit_core::StatusCode::Unavailable);
}

/// A fallback named in a request, with a model given as `{name, config}`.
#[tokio::test]
async fn fallback_by_name_with_per_model_config() {
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    define_builtin_middleware(&reg).unwrap();
    ProgrammableModel::define(&reg, "primary").respond_error(genkit_core::Error::new(
        genkit_core::StatusCode::Unavailable,
        "down",
    ));
    let backup = ProgrammableModel::define(&reg, "backup").respond_text("from backup");
    let mut opts = GenerateActionOptions::new(vec![Message::user("hi")]).with_model("primary");
    opts.middleware = Some(vec![MiddlewareRef {
        name: "fallback".into(),
        config: Some(json!({"models": [{"name": "backup", "config": {"temperature": 0.1}}]})),
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    let out = action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap();
    assert_eq!(out.output["message"]["content"][0]["text"], "from backup");
    assert_eq!(
        backup.requests()[0].config,
        Some(json!({"temperature": 0.1}))
    );
}

/// A file read in one turn stays in the conversation for every later turn
/// (Genkit JS pushes it onto the request the loop carries on with), and a
/// tool failure is answered to the model instead of ending the call.
#[tokio::test]
async fn read_file_content_persists_across_turns() {
    let dir = tmp_tree();
    let reg = Registry::new();
    define_generate_action(&reg).unwrap();
    define_builtin_middleware(&reg).unwrap();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_call("read_file", json!({"filePath": "hello.txt"}))
        .respond_tool_call("read_file", json!({"filePath": "../escape"}))
        .respond_text("done");
    let mut opts = GenerateActionOptions::new(vec![Message::user("go")]).with_model("m");
    opts.middleware = Some(vec![MiddlewareRef {
        name: "filesystem".into(),
        config: Some(json!({"rootDirectory": dir.path()})),
    }]);
    let action = reg.require_action("/util/generate").await.unwrap();
    action
        .run_json(serde_json::to_value(&opts).unwrap(), Default::default())
        .await
        .unwrap();
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let last = serde_json::to_value(&requests[2].messages).unwrap();
    let roles: Vec<_> = last
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(
        roles,
        vec![
            json!("user"),
            json!("model"),
            json!("tool"),
            json!("user"),
            json!("model"),
            json!("tool")
        ]
    );
    assert_eq!(
        last[3]["content"][0]["text"],
        "<read_file path=\"hello.txt\">\nHello, world!\n\n</read_file>"
    );
    assert_eq!(
        last[5]["content"][0]["toolResponse"]["output"],
        "Tool 'read_file' failed: Access denied: Path is outside of root directory."
    );
}
