//! Errors about prompts name the file (or prompt) and the line: malformed
//! frontmatter, template syntax, unknown helpers and partials, invalid
//! Picoschema, unknown schema names, and input that fails the input schema.

use std::path::PathBuf;

use genkit_core::{Error, Registry, StatusCode};
use genkit_model::testing::ProgrammableModel;
use genkit_prompt::{PromptConfig, define_prompt, load_prompt_folder, load_prompt_source, prompt};
use serde_json::{Value, json};

fn case_dir(case: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/prompts/errors")
        .join(case)
}

fn file(case: &str, name: &str) -> String {
    case_dir(case).join(name).display().to_string()
}

fn load_err(case: &str) -> Error {
    let registry = Registry::new();
    load_prompt_folder(&registry, case_dir(case), None).expect_err("the load fails")
}

/// Loads a case that loads fine and returns the error of its first render.
async fn render_err(case: &str, name: &str, input: Value) -> Error {
    let registry = Registry::new();
    ProgrammableModel::define(&registry, "programmable");
    load_prompt_folder(&registry, case_dir(case), None).expect("the folder loads");
    let p = prompt::<Value, Value>(&registry, name, None).expect("the prompt exists");
    p.render(input).await.expect_err("rendering fails")
}

fn assert_invalid(err: &Error, expected_prefix: &str, expected_text: &str) {
    assert_eq!(
        err.status(),
        StatusCode::InvalidArgument,
        "{}",
        err.message()
    );
    assert!(
        err.message().starts_with(expected_prefix),
        "expected `{expected_prefix}` at the start of: {}",
        err.message()
    );
    assert!(
        err.message().contains(expected_text),
        "expected `{expected_text}` in: {}",
        err.message()
    );
}

#[test]
fn malformed_frontmatter_names_file_and_line() {
    let err = load_err("bad_yaml");
    let path = file("bad_yaml", "broken.prompt");
    // The flow sequence opened on line 4 is still open at the closing `---`
    // (line 5); the YAML parser's own positions count from the file too.
    assert_invalid(
        &err,
        &format!("{path}:5:1: malformed frontmatter: "),
        "at line 4 column 16",
    );
}

/// Frontmatter opened by `---` and never closed is refused at load (the
/// whole file would otherwise be sent to the model as the template).
#[test]
fn unclosed_frontmatter_names_file_and_line() {
    let err = load_err("unclosed_frontmatter");
    let path = file("unclosed_frontmatter", "open.prompt");
    assert_eq!(
        err.message(),
        format!("{path}:2:1: the frontmatter opened by this `---` line has no closing `---` line")
    );
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[test]
fn template_syntax_error_names_file_and_line() {
    let err = load_err("bad_syntax");
    let path = file("bad_syntax", "broken.prompt");
    // The `{{#if}}` opened on line 5 is still open at the end of line 6.
    assert_invalid(
        &err,
        &format!("{path}:6:13: template syntax error: "),
        "left unclosed",
    );
}

#[test]
fn wrongly_typed_frontmatter_key_names_its_line() {
    let err = load_err("bad_max_turns");
    let path = file("bad_max_turns", "turns.prompt");
    assert_invalid(
        &err,
        &format!("{path}:3: "),
        "`maxTurns` must be a positive integer",
    );
}

#[test]
fn invalid_picoschema_names_the_file() {
    let err = load_err("bad_picoschema");
    let path = file("bad_picoschema", "pico.prompt");
    assert_invalid(&err, &format!("{path}: "), "invalid input schema");
    assert!(
        err.message().contains("parenthetical types"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn unknown_helper_names_file_line_and_column() {
    let err = render_err("unknown_helper", "shouty", json!({"name": "x"})).await;
    let path = file("unknown_helper", "shouty.prompt");
    assert_invalid(&err, &format!("{path}:5:1: "), "unknown helper `shout`");
}

#[tokio::test]
async fn unknown_partial_names_file_and_line() {
    let err = render_err("unknown_partial", "lonely", json!({})).await;
    let path = file("unknown_partial", "lonely.prompt");
    assert_invalid(&err, &format!("{path}:4:4: "), "unknown partial `missing`");
}

#[tokio::test]
async fn error_inside_a_partial_names_the_partial_file() {
    let err = render_err("partial_helper", "main", json!({"name": "x"})).await;
    let partial = file("partial_helper", "_footer.prompt");
    let main = file("partial_helper", "main.prompt");
    assert_invalid(&err, &format!("{partial}:2:1: "), "unknown helper `shout`");
    assert!(
        err.message()
            .contains(&format!("(in partial `footer`, used by {main})")),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn unknown_schema_name_is_reported_on_use() {
    let err = render_err("unknown_schema", "named", json!({"name": "x"})).await;
    let path = file("unknown_schema", "named.prompt");
    assert_invalid(
        &err,
        &format!("{path}: "),
        "could not find schema with name 'Nobody'",
    );
}

#[tokio::test]
async fn input_failing_the_schema_names_the_field() {
    let registry = Registry::new();
    let source = "---\ninput:\n  schema:\n    name: string\n    address(object):\n      city: string\n---\nHi {{name}} from {{address.city}}";
    let p = load_prompt_source(&registry, "visitor", source, None).unwrap();

    let err = p
        .render(json!({"name": "Ada", "address": {"city": 5}}))
        .await
        .unwrap_err();
    assert_invalid(
        &err,
        "invalid input for prompt `visitor`",
        "- address.city:",
    );
    assert_eq!(
        err.details().map(|d| d["errors"].clone()),
        Some(json!([{"path": "address.city", "message": "must be string"}]))
    );

    let err = p
        .render(json!({"address": {"city": "Paris"}}))
        .await
        .unwrap_err();
    assert_invalid(
        &err,
        "invalid input for prompt `visitor`",
        "- (root): must have required property 'name'",
    );

    let err = p.render(json!("Ada")).await.unwrap_err();
    assert_invalid(
        &err,
        "the input of prompt `visitor` must be a JSON object",
        "\"Ada\"",
    );

    // The same check guards the prompt's actions.
    let action = registry
        .require_action("/executable-prompt/visitor")
        .await
        .unwrap();
    let err = action
        .run_json(
            json!({"name": 1, "address": {"city": "Paris"}}),
            Default::default(),
        )
        .await
        .unwrap_err();
    assert_invalid(&err, "invalid input for prompt `visitor`", "- name:");
}

#[tokio::test]
async fn code_defined_prompts_name_the_prompt_and_template() {
    let registry = Registry::new();
    let err = define_prompt(
        &registry,
        PromptConfig::new("broken").prompt("Hello\n{{#each items}}{{name}}"),
    )
    .unwrap_err();
    assert_invalid(
        &err,
        "prompt `broken` (prompt template): template syntax error: unexpected end of template",
        "(line 2, column 24)",
    );

    let p = define_prompt(
        &registry,
        PromptConfig::new("shouty").system("{{loud name}}"),
    )
    .unwrap();
    let err = p.render(json!({"name": "x"})).await.unwrap_err();
    assert_invalid(
        &err,
        "prompt `shouty` (system template): unknown helper `loud` (line 1, column 1)",
        "",
    );

    let err = define_prompt(
        &registry,
        PromptConfig::new("pico").input_picoschema(json!({"c(enum)": "RED"})),
    )
    .unwrap_err();
    assert_invalid(
        &err,
        "prompt `pico`: invalid input schema",
        "enum field 'c'",
    );

    let err = define_prompt(&registry, PromptConfig::new("cfg").config(json!([1]))).unwrap_err();
    assert_invalid(&err, "prompt `cfg`: `config` must be an object", "[1]");
}

#[tokio::test]
async fn source_errors_count_lines_from_the_source() {
    let registry = Registry::new();
    let source = "---\nmodel: m\n---\n\nfirst\n{{nope 1}}\n";
    let p = load_prompt_source(&registry, "inline", source, None).unwrap();
    let err = p.render(json!({})).await.unwrap_err();
    assert_invalid(
        &err,
        "prompt `inline`: unknown helper `nope` (line 6, column 1)",
        "",
    );
}

#[tokio::test]
async fn duplicate_and_missing_prompts() {
    let registry = Registry::new();
    define_prompt(&registry, PromptConfig::new("once").prompt("hi")).unwrap();
    let err = define_prompt(&registry, PromptConfig::new("once").prompt("hi")).unwrap_err();
    assert_eq!(err.status(), StatusCode::AlreadyExists);

    let err = prompt::<Value, Value>(&registry, "once", Some("other")).unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(err.message(), "Prompt once (variant other) not found");
}

#[tokio::test]
async fn a_missing_prompt_names_the_folder_searched_and_the_file_looked_for() {
    let registry = Registry::new();
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prompts/valid");
    load_prompt_folder(&registry, &folder, None).unwrap();

    let err = prompt::<Value, Value>(&registry, "nope", None).unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        err.message(),
        format!(
            "Prompt nope not found: no file {}/nope.prompt in the prompt folder `{}`",
            folder.display(),
            folder.display()
        )
    );
    let err = prompt::<Value, Value>(&registry, "nope", Some("formal")).unwrap_err();
    assert_eq!(
        err.message(),
        format!(
            "Prompt nope (variant formal) not found: no file {}/nope.formal.prompt in the \
             prompt folder `{}`",
            folder.display(),
            folder.display()
        )
    );
}

#[tokio::test]
async fn a_missing_prompt_says_when_the_folder_did_not_exist() {
    let registry = Registry::new();
    // Relative, as the default `./prompts` is: resolved against the working
    // directory (the crate's folder under `cargo test`).
    let loaded = load_prompt_folder(&registry, "./no-such-prompts", None).unwrap();
    assert_eq!(loaded, 0);
    let cwd = std::env::current_dir().unwrap();
    let err = prompt::<Value, Value>(&registry, "greet", None).unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        err.message(),
        format!(
            "Prompt greet not found: the prompt folder `./no-such-prompts` ({abs}, relative to \
             the working directory {cwd}) does not exist, so no prompt files were loaded: \
             create {abs}/greet.prompt, or point `prompt_dir` at your folder",
            abs = cwd.join("no-such-prompts").display(),
            cwd = cwd.display(),
        )
    );
}
