//! What the model-judged metrics share: their judge prompts (built in, or
//! `.prompt` files from a directory), rendering them to one prompt text as
//! `@genkit-ai/evaluator` does, asking the judge for JSON of a schema, and
//! the data point checks.

use super::GenkitErrorName;
use dotprompt::{DataArgument, Dotprompt, JsonMap, Part};
use genkit_core::{Error, Registry, Result, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::model::ModelRef;
use genkit_model::types::{EvalDataPoint, EvalStatus, Score, is_truthy};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// Decides a score's status in place of the metric's threshold (Genkit
/// JS's `statusOverrideFn`).
pub type StatusOverride = Arc<dyn Fn(&Score) -> EvalStatus + Send + Sync>;

/// A judge prompt: Dotprompt source, rendered for each test case.
#[derive(Clone)]
pub(crate) struct JudgePrompt {
    source: Arc<str>,
    dotprompt: Arc<Dotprompt>,
}

impl std::fmt::Debug for JudgePrompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgePrompt").finish_non_exhaustive()
    }
}

impl JudgePrompt {
    /// `<dir>/<file>` when a directory is given (e.g. the `prompts/` folder
    /// of the npm package `@genkit-ai/evaluator`, for Genkit's wording),
    /// else the built-in `builtin`. A file that cannot be read or parsed is
    /// an error now rather than at each test case.
    pub(crate) fn load(dir: Option<&Path>, file: &str, builtin: &str) -> Result<Self> {
        let source = match dir {
            None => builtin.to_owned(),
            Some(dir) => {
                let path = dir.join(file);
                std::fs::read_to_string(&path).map_err(|e| {
                    Error::invalid_argument(format!(
                        "cannot read the judge prompt {}: {e}",
                        path.display()
                    ))
                    .with_source(e)
                })?
            }
        };
        let dotprompt = Dotprompt::default();
        dotprompt.parse(&source).map_err(|e| {
            Error::invalid_argument(format!("the judge prompt {file} does not parse: {e}"))
                .with_source(e)
        })?;
        Ok(Self {
            source: source.into(),
            dotprompt: Arc::new(dotprompt),
        })
    }

    /// The prompt text for `input`: each message's text parts joined by
    /// `,`, and the messages joined by `,` — `@genkit-ai/evaluator`'s
    /// `renderText` (which calls JavaScript's `Array.join()`), so a prompt
    /// with role markers reads as Genkit sends it.
    pub(crate) async fn render(&self, input: JsonMap) -> Result<String> {
        let data = DataArgument {
            input: Some(input),
            ..DataArgument::default()
        };
        let rendered = self
            .dotprompt
            .render(&self.source, &data, None)
            .await
            .map_err(|e| {
                Error::internal(format!("rendering a judge prompt failed: {e}")).with_source(e)
            })?;
        let messages: Vec<String> = rendered
            .messages
            .iter()
            .map(|m| {
                m.content
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => t.text.as_str(),
                        // `part.text` is undefined for other parts: joined as "".
                        _ => "",
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        Ok(messages.join(","))
    }
}

/// Asks `judge` for JSON conforming to `schema` and returns it (the
/// response has been checked against the schema by `generate`).
pub(crate) async fn ask_judge(
    registry: &Registry,
    judge: &ModelRef,
    config: Option<&Value>,
    prompt: String,
    schema: Value,
) -> Result<Value> {
    let mut options = GenerateOptions::prompt(prompt)
        .model(judge.clone())
        .output_schema(schema);
    if let Some(c) = config {
        options = options.config(c.clone());
    }
    let response = generate(registry, options).await.map_err(|e| {
        // `generate`'s check of the output against its schema: in Genkit JS
        // a `GenkitError`.
        if e.status() == StatusCode::InvalidArgument
            && e.message().starts_with("Schema validation failed")
        {
            e.with_payload(GenkitErrorName)
        } else {
            e
        }
    })?;
    response.output_value_in(registry)
}

/// A value as prompt text: strings as they are, anything else as
/// `JSON.stringify` writes it.
pub(crate) fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => dotprompt::json_stringify(other),
    }
}

/// The input, output and context (each item as JSON) of a RAG test case,
/// refused as Genkit JS refuses them: a falsy input or output, or no
/// context.
pub(crate) fn rag_fields(point: &EvalDataPoint) -> Result<(String, String, Vec<String>)> {
    let input = point
        .input
        .as_ref()
        .filter(|v| is_truthy(v))
        .ok_or_else(|| Error::invalid_argument("Input was not provided"))?;
    let output = point
        .output
        .as_ref()
        .filter(|v| is_truthy(v))
        .ok_or_else(|| Error::invalid_argument("Output was not provided"))?;
    let context = point
        .context
        .as_ref()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::invalid_argument("Context was not provided"))?;
    Ok((
        as_text(input),
        as_text(output),
        context.iter().map(dotprompt::json_stringify).collect(),
    ))
}

/// A numeric score with its reasoning; `PASS` above 0.5 unless `status`
/// overrides it.
pub(crate) fn threshold_score(
    score: f64,
    reasoning: String,
    status: Option<&StatusOverride>,
) -> Score {
    let mut s = Score::new(
        score,
        if score > 0.5 {
            EvalStatus::Pass
        } else {
            EvalStatus::Fail
        },
    )
    .reasoning(reasoning);
    if let Some(f) = status {
        s.status = Some(f(&s));
    }
    s
}

/// A JSON object's field, or `null`.
pub(crate) fn field<'a>(v: &'a Value, name: &str) -> &'a Value {
    v.get(name).unwrap_or(&Value::Null)
}

/// The JSON schema `@genkit-ai/evaluator` sends for an object of these
/// fields (all required), as zod writes it.
pub(crate) fn object_schema(fields: &[(&str, Value)], top: bool) -> Value {
    let mut properties = serde_json::Map::new();
    for (name, schema) in fields {
        properties.insert((*name).to_owned(), schema.clone());
    }
    let mut schema = serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": fields.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "additionalProperties": true,
    });
    if top && let Some(m) = schema.as_object_mut() {
        m.insert(
            "$schema".into(),
            Value::from("http://json-schema.org/draft-07/schema#"),
        );
    }
    schema
}
