//! `genkitEval/faithfulness`: how much of an answer its context supports
//! (Genkit JS `@genkit-ai/evaluator`'s `FAITHFULNESS`).
//!
//! The judge model first splits the answer into statements, then gives a
//! verdict on each against the context. The score is the fraction of
//! statements supported, `PASS` above 0.5; the reasoning is the verdicts'
//! reasons joined by `"; "`. A test case without input, output or context,
//! or whose answer yields no statements, is an error.

use super::judge::{
    JudgePrompt, StatusOverride, ask_judge, field, object_schema, rag_fields, threshold_score,
};
use super::{Evaluator, EvaluatorOptions, builtin::PLUGIN_NAME, define_evaluator};
use genkit_core::{Error, Registry, Result};
use genkit_model::model::ModelRef;
use genkit_model::types::{EvalDataPoint, Score};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const LONG_FORM_FILE: &str = "faithfulness_long_form.prompt";
const NLI_FILE: &str = "faithfulness_nli.prompt";

/// How to define the faithfulness evaluator.
#[derive(Clone)]
pub struct FaithfulnessOptions {
    /// The judge model.
    pub judge: ModelRef,
    /// Its config, sent with the statement extraction (Genkit JS sends
    /// none with the verdicts).
    pub judge_config: Option<Value>,
    /// A directory holding `faithfulness_long_form.prompt` and
    /// `faithfulness_nli.prompt` to use instead of the built-in prompts
    /// (point it at `@genkit-ai/evaluator`'s `prompts/` for Genkit's own
    /// wording). Their inputs: `question` and `answer`; `context` and
    /// `statements`.
    pub prompt_dir: Option<PathBuf>,
    /// Decides the status in place of the 0.5 threshold.
    pub status_override: Option<StatusOverride>,
}

impl std::fmt::Debug for FaithfulnessOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaithfulnessOptions")
            .field("judge", &self.judge)
            .field("judge_config", &self.judge_config)
            .field("prompt_dir", &self.prompt_dir)
            .finish_non_exhaustive()
    }
}

impl FaithfulnessOptions {
    /// Judged by `judge`.
    pub fn new(judge: impl Into<ModelRef>) -> Self {
        Self {
            judge: judge.into(),
            judge_config: None,
            prompt_dir: None,
            status_override: None,
        }
    }

    /// Sets the judge's config.
    pub fn judge_config(mut self, config: Value) -> Self {
        self.judge_config = Some(config);
        self
    }

    /// Loads the prompts from `dir`.
    pub fn prompt_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.prompt_dir = Some(dir.into());
        self
    }

    /// Decides the status with `f`.
    pub fn status_override(
        mut self,
        f: impl Fn(&Score) -> genkit_model::types::EvalStatus + Send + Sync + 'static,
    ) -> Self {
        self.status_override = Some(Arc::new(f));
        self
    }
}

struct Faithfulness {
    registry: Registry,
    options: FaithfulnessOptions,
    long_form: JudgePrompt,
    nli: JudgePrompt,
}

/// The name of the faithfulness evaluator.
pub fn faithfulness_name() -> String {
    format!("{PLUGIN_NAME}/faithfulness")
}

/// Defines `genkitEval/faithfulness`.
pub fn define_faithfulness(registry: &Registry, options: FaithfulnessOptions) -> Result<Evaluator> {
    let dir = options.prompt_dir.as_deref();
    let metric = Arc::new(Faithfulness {
        registry: registry.clone(),
        long_form: JudgePrompt::load(
            dir,
            LONG_FORM_FILE,
            include_str!("prompts/faithfulness_long_form.prompt"),
        )?,
        nli: JudgePrompt::load(
            dir,
            NLI_FILE,
            include_str!("prompts/faithfulness_nli.prompt"),
        )?,
        options,
    });
    define_evaluator(
        registry,
        EvaluatorOptions::new(
            faithfulness_name(),
            "Faithfulness",
            "Measures the factual consistency of the generated answer against the given context",
        ),
        move |point, _o: Option<Value>, _ctx| {
            let metric = metric.clone();
            async move { metric.score(&point).await }
        },
    )
}

fn long_form_schema() -> Value {
    object_schema(
        &[(
            "statements",
            json!({"type": "array", "items": {"type": "string"}}),
        )],
        true,
    )
}

fn nli_schema() -> Value {
    let verdict = object_schema(
        &[
            ("statement", json!({"type": "string"})),
            ("reason", json!({"type": "string"})),
            ("verdict", json!({"type": "boolean"})),
        ],
        false,
    );
    object_schema(
        &[("responses", json!({"type": "array", "items": verdict}))],
        true,
    )
}

impl Faithfulness {
    async fn score(&self, point: &EvalDataPoint) -> Result<Score> {
        let (question, answer, context) = rag_fields(point)?;
        let mut vars = dotprompt::JsonMap::new();
        vars.insert("question".into(), question.into());
        vars.insert("answer".into(), answer.into());
        let extracted = ask_judge(
            &self.registry,
            &self.options.judge,
            self.options.judge_config.as_ref(),
            self.long_form.render(vars).await?,
            long_form_schema(),
        )
        .await?;
        let statements: Vec<String> = field(&extracted, "statements")
            .as_array()
            .map(|a| a.iter().map(super::judge::as_text).collect())
            .unwrap_or_default();
        if statements.is_empty() {
            return Err(Error::invalid_argument("No statements returned"));
        }
        let mut vars = dotprompt::JsonMap::new();
        vars.insert("context".into(), context.join("\n").into());
        vars.insert(
            "statements".into(),
            statements
                .iter()
                .map(|s| format!("statement: {s}"))
                .collect::<Vec<_>>()
                .join("\n")
                .into(),
        );
        let judged = ask_judge(
            &self.registry,
            &self.options.judge,
            None,
            self.nli.render(vars).await?,
            nli_schema(),
        )
        .await?;
        let verdicts = field(&judged, "responses")
            .as_array()
            .cloned()
            .unwrap_or_default();
        let supported = verdicts
            .iter()
            .filter(|v| field(v, "verdict").as_bool() == Some(true))
            .count();
        // An empty list scores 0/0 (NaN), as in Genkit JS.
        let score = supported as f64 / verdicts.len() as f64;
        let reasoning = verdicts
            .iter()
            .map(|v| super::judge::as_text(field(v, "reason")))
            .collect::<Vec<_>>()
            .join("; ");
        Ok(threshold_score(
            score,
            reasoning,
            self.options.status_override.as_ref(),
        ))
    }
}
