//! A format defined in the registry (Genkit's `defineFormat`) works end to
//! end: `generate`, `generate_stream` (partial output), `/util/generate` with
//! a serialized request, and a prompt whose frontmatter names it.

use futures::StreamExt;
use genkit_core::{Registry, RunOptions, StatusCode};
use genkit_generate::{GenerateOptions, define_generate_action, generate, generate_stream};
use genkit_model::formats::{
    ChunkParseContext, Format, FormatConfig, FormatError, FormatHandler, OutputFormat,
    define_format, lookup_format,
};
use genkit_model::testing::ProgrammableModel;
use genkit_model::types::{
    FinishReason, GenerateResponse, GenerateResponseChunk, Message, Part, Role,
};
use genkit_prompt::load_prompt_source;
use serde_json::{Map, Value, json};

const INSTRUCTIONS: &str = "Answer with one key=value pair per line.";

/// `kv`: `key=value` lines read as an object of strings.
struct KeyValueFormat;

impl Format for KeyValueFormat {
    fn name(&self) -> &str {
        "kv"
    }

    fn config(&self) -> FormatConfig {
        FormatConfig {
            format: Some("kv".into()),
            content_type: Some("text/plain".into()),
            ..FormatConfig::default()
        }
    }

    fn handler(&self, _schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError> {
        Ok(Box::new(KeyValueHandler))
    }
}

struct KeyValueHandler;

fn pairs(text: &str) -> Value {
    let map: Map<String, Value> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), Value::from(v.trim())))
        .collect();
    Value::Object(map)
}

impl FormatHandler for KeyValueHandler {
    fn instructions(&self) -> Option<String> {
        Some(INSTRUCTIONS.into())
    }

    fn parse_message(&self, message: &Message) -> Result<Value, FormatError> {
        Ok(pairs(&message.text()))
    }

    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError> {
        // Only complete lines count while streaming.
        let text = context.accumulated_text();
        let complete = text.rsplit_once('\n').map_or("", |(done, _)| done);
        Ok(Some(pairs(complete)))
    }
}

fn registry_with_kv() -> Registry {
    let reg = Registry::new();
    define_format(&reg, KeyValueFormat);
    reg
}

fn last_user_text(model: &ProgrammableModel) -> String {
    let requests = model.requests();
    let request = requests.last().expect("the model was called");
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(|m| m.text())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_defined_format_is_found_in_the_registry_and_its_children() {
    let reg = registry_with_kv();
    assert!(lookup_format(&reg, "kv").is_some());
    assert!(lookup_format(&reg.child(), "kv").is_some());
    assert!(
        lookup_format(&reg, "json").is_some(),
        "built-ins are always there"
    );
    assert!(lookup_format(&Registry::new(), "kv").is_none());
    assert_eq!(reg.list_values("format")["kv"]["name"], "kv");
}

#[tokio::test]
async fn generate_uses_a_defined_format() {
    let reg = registry_with_kv();
    let model = ProgrammableModel::define(&reg, "m").respond_text("a=1\nb=2");
    let response = generate(
        &reg,
        GenerateOptions::prompt("pairs please")
            .model("m")
            .output_format(OutputFormat::custom("kv")),
    )
    .await
    .unwrap();
    assert_eq!(
        response.output_value_in(&reg).unwrap(),
        json!({"a": "1", "b": "2"})
    );
    // The format's instructions and config reached the model.
    assert!(last_user_text(&model).contains(INSTRUCTIONS));
    let output = model.requests()[0].output.clone().unwrap();
    assert_eq!(output.format.as_deref(), Some("kv"));
    assert_eq!(output.content_type.as_deref(), Some("text/plain"));
    // Without the registry only the built-ins are known.
    assert!(response.output_value().is_err());
}

#[tokio::test]
async fn an_unknown_format_is_invalid_argument() {
    let reg = Registry::new();
    ProgrammableModel::define(&reg, "m").respond_text("x");
    let err = generate(
        &reg,
        GenerateOptions::prompt("x").model("m").output_format("kv"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(err.message(), "unknown output format 'kv'");
}

#[tokio::test]
async fn generate_stream_parses_partial_output_with_a_defined_format() {
    let reg = registry_with_kv();
    let chunk = |text: &str| GenerateResponseChunk::new(vec![Part::text(text)]);
    ProgrammableModel::define(&reg, "m").respond_with_chunks(
        vec![chunk("a=1\n"), chunk("b="), chunk("2\n")],
        GenerateResponse::new(Message::new(Role::Model, "a=1\nb=2\n"), FinishReason::Stop),
    );
    let mut stream = generate_stream(
        &reg,
        GenerateOptions::prompt("pairs")
            .model("m")
            .output_format("kv"),
    );
    let mut partials = Vec::new();
    while let Some(chunk) = stream.next().await {
        partials.push(chunk.unwrap().output().cloned());
    }
    assert_eq!(
        partials,
        vec![
            Some(json!({"a": "1"})),
            Some(json!({"a": "1"})),
            Some(json!({"a": "1", "b": "2"})),
        ]
    );
    let response = stream.response().await.unwrap();
    assert_eq!(
        response.output_value_in(&reg).unwrap(),
        json!({"a": "1", "b": "2"})
    );
}

#[tokio::test]
async fn util_generate_takes_a_defined_format_by_name() {
    let reg = registry_with_kv();
    let model = ProgrammableModel::define(&reg, "m").respond_text("k=v");
    let action = define_generate_action(&reg).unwrap();
    let request = json!({
        "model": "m",
        "messages": [{"role": "user", "content": [{"text": "pairs"}]}],
        "output": {"format": "kv"},
    });
    let out = action
        .to_dyn()
        .run_json(request, RunOptions::default())
        .await
        .unwrap();
    let response: GenerateResponse = serde_json::from_value(out.output).unwrap();
    assert_eq!(response.output_value_in(&reg).unwrap(), json!({"k": "v"}));
    assert_eq!(
        response.request.unwrap().output.unwrap().format.as_deref(),
        Some("kv")
    );
    assert!(last_user_text(&model).contains(INSTRUCTIONS));
}

#[tokio::test]
async fn a_prompt_whose_frontmatter_names_a_defined_format() {
    let reg = registry_with_kv();
    let model = ProgrammableModel::define(&reg, "m").respond_text("city=Paris");
    let prompt = load_prompt_source(
        &reg,
        "capital",
        "---\nmodel: m\noutput:\n  format: kv\n---\nThe capital of {{country}}?",
        None,
    )
    .unwrap();
    let output = prompt.run(json!({"country": "France"})).await.unwrap();
    assert_eq!(output, json!({"city": "Paris"}));
    let text = last_user_text(&model);
    assert!(text.starts_with("The capital of France?"), "{text}");
    assert!(text.contains(INSTRUCTIONS), "{text}");
}
