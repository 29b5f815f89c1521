//! Conformance harness: runs the language-independent Dotprompt spec suite.
//!
//! Every `*.yaml` file under `$DOTPROMPT_SPEC_DIR` (default: the shared
//! `conformance/dotprompt` folder beside the workspace) holds suites
//! `{name, template, data?, schemas?, tools?, partials?, resolverPartials?,
//! tests: [{desc, data?, options?, expect}]}`. Each case is checked the way
//! the reference JS runner checks it: the rendered prompt (without `raw` and
//! `input`) must equal `expect` (with `ext`, `config` and `metadata`
//! defaulting to `{}`), `raw` must match when given, and `render_metadata`
//! must equal `expect` without `messages`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dotprompt::{
    DataArgument, Dotprompt, DotpromptOptions, PartialResolver, PromptMetadata, ToolDefinition,
};
use serde_json::{Map, Value, json};

fn spec_dir() -> PathBuf {
    genkit_conformance::dotprompt_dir()
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "yaml") {
            out.push(path);
        }
    }
}

fn object(value: Option<&Value>) -> Map<String, Value> {
    value
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn string_map(value: Option<&Value>) -> HashMap<String, String> {
    object(value)
        .into_iter()
        .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_owned())))
        .collect()
}

fn build(suite: &Value) -> Result<Dotprompt, String> {
    let resolver_partials = string_map(suite.get("resolverPartials"));
    let tools = object(suite.get("tools"))
        .into_iter()
        .map(|(name, def)| serde_json::from_value::<ToolDefinition>(def).map(|d| (name, d)))
        .collect::<Result<HashMap<_, _>, _>>()
        .map_err(|e| format!("bad tools: {e}"))?;
    let dotprompt = Dotprompt::new(DotpromptOptions {
        schemas: object(suite.get("schemas")).into_iter().collect(),
        tools,
        partial_resolver: Some(PartialResolver::from_fn(move |name| {
            resolver_partials.get(name).cloned()
        })),
        ..DotpromptOptions::default()
    })
    .map_err(|e| e.to_string())?;
    for (name, source) in string_map(suite.get("partials")) {
        dotprompt
            .define_partial(&name, &source)
            .map_err(|e| e.to_string())?;
    }
    Ok(dotprompt)
}

/// `expect` without `drop` keys, with `ext`, `config`, `metadata` defaulted.
fn expected(expect: &Map<String, Value>, drop: &[&str]) -> Value {
    let mut out = expect.clone();
    for key in drop {
        out.remove(*key);
    }
    for key in ["ext", "config", "metadata"] {
        out.entry(key).or_insert_with(|| json!({}));
    }
    Value::Object(out)
}

/// Describes where two JSON values differ.
fn diff(path: &str, expected: &Value, actual: &Value, out: &mut String) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, ev) in e {
                match a.get(key) {
                    Some(av) => diff(&format!("{path}.{key}"), ev, av, out),
                    None => _ = writeln!(out, "    {path}.{key}: missing, expected {ev}"),
                }
            }
            for (key, av) in a.iter().filter(|(k, _)| !e.contains_key(*k)) {
                _ = writeln!(out, "    {path}.{key}: unexpected {av}");
            }
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => {
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                diff(&format!("{path}[{i}]"), ev, av, out);
            }
        }
        _ if expected != actual => {
            _ = writeln!(out, "    {path}: expected {expected}, got {actual}")
        }
        _ => {}
    }
}

fn check(what: &str, expected: &Value, actual: &Value) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    let mut out = format!("  {what} differs:\n");
    diff("$", expected, actual, &mut out);
    Err(out)
}

fn run_case(suite: &Value, case: &Value) -> Result<(), String> {
    let dotprompt = build(suite)?;
    let template = suite["template"].as_str().ok_or("suite has no template")?;
    let mut data = object(suite.get("data"));
    data.extend(object(case.get("data")));
    let data: DataArgument =
        serde_json::from_value(Value::Object(data)).map_err(|e| format!("bad data: {e}"))?;
    let options: Option<PromptMetadata> = case
        .get("options")
        .map(|o| serde_json::from_value(o.clone()))
        .transpose()
        .map_err(|e| format!("bad options: {e}"))?;
    let expect = object(case.get("expect"));

    let rendered = futures::executor::block_on(dotprompt.render(template, &data, options.as_ref()))
        .map_err(|e| format!("  render failed: {e}"))?;
    let mut rendered = serde_json::to_value(rendered).map_err(|e| e.to_string())?;
    let raw = rendered.as_object_mut().and_then(|o| o.remove("raw"));
    check("render", &expected(&expect, &["raw", "input"]), &rendered)?;
    if let Some(expect_raw) = expect.get("raw") {
        check("raw", expect_raw, raw.as_ref().unwrap_or(&Value::Null))?;
    }

    let metadata =
        futures::executor::block_on(dotprompt.render_metadata(template, options.as_ref()))
            .map_err(|e| format!("  render_metadata failed: {e}"))?;
    let mut metadata = serde_json::to_value(metadata).map_err(|e| e.to_string())?;
    if let Some(o) = metadata.as_object_mut() {
        o.remove("raw");
    }
    check(
        "render_metadata",
        &expected(&expect, &["messages", "raw"]),
        &metadata,
    )
}

#[test]
fn dotprompt_spec() {
    let dir = spec_dir();
    let mut files = Vec::new();
    yaml_files(&dir, &mut files);
    files.sort();

    let mut passed = 0;
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let suites: Value = serde_yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", file.display()));
        let relative = file
            .strip_prefix(&dir)
            .unwrap_or(file)
            .display()
            .to_string();
        for suite in suites.as_array().into_iter().flatten() {
            for case in suite["tests"].as_array().into_iter().flatten() {
                let id = format!(
                    "{relative} > {} > {}",
                    suite["name"].as_str().unwrap_or("?"),
                    case["desc"].as_str().unwrap_or("?")
                );
                match run_case(suite, case) {
                    Ok(()) => passed += 1,
                    Err(why) => failures.push(format!("{id}\n{why}")),
                }
            }
        }
    }

    let total = passed + failures.len();
    println!(
        "dotprompt spec: {passed}/{total} cases passed ({} files in {})",
        files.len(),
        dir.display()
    );
    assert!(total > 0, "no spec cases found in {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} of {total} spec cases failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}
