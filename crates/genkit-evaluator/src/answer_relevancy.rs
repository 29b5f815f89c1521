//! `genkitEval/answer_relevancy`: how well an answer addresses its question
//! (Genkit JS `@genkit-ai/evaluator`'s `ANSWER_RELEVANCY`).
//!
//! The judge model writes a question the answer would reply to, and says
//! whether the answer answered the question and whether it was
//! noncommittal. The score is the absolute cosine similarity of the
//! question's and the written question's embeddings, less 0.5 (not below
//! 0) when the answer did not answer, and 0 when it was noncommittal;
//! `PASS` above 0.5. The reasoning names which of these applied.

use super::judge::{
    JudgePrompt, StatusOverride, ask_judge, field, object_schema, rag_fields, threshold_score,
};
use super::{Evaluator, EvaluatorOptions, builtin::PLUGIN_NAME, define_evaluator};
use genkit_core::action::RunOptions;
use genkit_core::{ActionKind, Error, Registry, Result};
use genkit_model::action_support::resolve;
use genkit_model::model::ModelRef;
use genkit_model::types::{DocumentData, EmbedRequest, EvalDataPoint, Score};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;

const PROMPT_FILE: &str = "answer_relevancy.prompt";

/// How to define the answer relevancy evaluator.
#[derive(Clone)]
pub struct AnswerRelevancyOptions {
    /// The judge model.
    pub judge: ModelRef,
    /// Its config.
    pub judge_config: Option<Value>,
    /// The embedder comparing the questions (a name or a key).
    pub embedder: String,
    /// Its options.
    pub embedder_options: Option<Value>,
    /// A directory holding `answer_relevancy.prompt` to use instead of the
    /// built-in prompt (point it at `@genkit-ai/evaluator`'s `prompts/` for
    /// Genkit's own wording). Its inputs: `question`, `answer`, `context`.
    pub prompt_dir: Option<PathBuf>,
    /// Decides the status in place of the 0.5 threshold.
    pub status_override: Option<StatusOverride>,
}

impl std::fmt::Debug for AnswerRelevancyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnswerRelevancyOptions")
            .field("judge", &self.judge)
            .field("embedder", &self.embedder)
            .field("prompt_dir", &self.prompt_dir)
            .finish_non_exhaustive()
    }
}

impl AnswerRelevancyOptions {
    /// Judged by `judge`, comparing questions with `embedder`.
    pub fn new(judge: impl Into<ModelRef>, embedder: impl Into<String>) -> Self {
        Self {
            judge: judge.into(),
            judge_config: None,
            embedder: embedder.into(),
            embedder_options: None,
            prompt_dir: None,
            status_override: None,
        }
    }

    /// Sets the judge's config.
    pub fn judge_config(mut self, config: Value) -> Self {
        self.judge_config = Some(config);
        self
    }

    /// Sets the embedder's options.
    pub fn embedder_options(mut self, options: Value) -> Self {
        self.embedder_options = Some(options);
        self
    }

    /// Loads the prompt from `dir`.
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

/// The name of the answer relevancy evaluator.
pub fn answer_relevancy_name() -> String {
    format!("{PLUGIN_NAME}/answer_relevancy")
}

struct AnswerRelevancy {
    registry: Registry,
    options: AnswerRelevancyOptions,
    prompt: JudgePrompt,
}

/// Defines `genkitEval/answer_relevancy`.
pub fn define_answer_relevancy(
    registry: &Registry,
    options: AnswerRelevancyOptions,
) -> Result<Evaluator> {
    let metric = Arc::new(AnswerRelevancy {
        registry: registry.clone(),
        prompt: JudgePrompt::load(
            options.prompt_dir.as_deref(),
            PROMPT_FILE,
            include_str!("prompts/answer_relevancy.prompt"),
        )?,
        options,
    });
    define_evaluator(
        registry,
        EvaluatorOptions::new(
            answer_relevancy_name(),
            "Answer Relevancy",
            "Assesses how pertinent the generated answer is to the given prompt",
        ),
        move |point, _o: Option<Value>, _ctx| {
            let metric = metric.clone();
            async move { metric.score(&point).await }
        },
    )
}

fn schema() -> Value {
    object_schema(
        &[
            ("question", json!({"type": "string"})),
            ("answered", json!({"type": "boolean"})),
            ("noncommittal", json!({"type": "boolean"})),
        ],
        true,
    )
}

impl AnswerRelevancy {
    async fn score(&self, point: &EvalDataPoint) -> Result<Score> {
        let (question, answer, context) = rag_fields(point)?;
        let mut vars = dotprompt::JsonMap::new();
        vars.insert("question".into(), question.clone().into());
        vars.insert("answer".into(), answer.into());
        vars.insert("context".into(), context.join(" ").into());
        let judged = ask_judge(
            &self.registry,
            &self.options.judge,
            self.options.judge_config.as_ref(),
            self.prompt.render(vars).await?,
            schema(),
        )
        .await?;
        let generated = match field(&judged, "question") {
            Value::String(q) if !q.is_empty() => q.clone(),
            _ => {
                return Err(Error::invalid_argument(
                    "Error generating question for answer relevancy",
                ));
            }
        };
        let asked = self.embed(&question).await?;
        let written = self.embed(&generated).await?;
        let similarity = cosine_similarity(&asked, &written)?;
        let answered = field(&judged, "answered").as_bool().unwrap_or(false);
        let noncommittal = field(&judged, "noncommittal").as_bool().unwrap_or(false);
        let penalty = if answered { 0.0 } else { 0.5 };
        let adjusted = if similarity - penalty < 0.0 {
            0.0
        } else {
            similarity - penalty
        };
        let reasoning = if noncommittal {
            "Noncommittal"
        } else if answered {
            "Cosine similarity"
        } else {
            "Cosine similarity with penalty for insufficient answer"
        };
        let score = adjusted * if noncommittal { 0.0 } else { 1.0 };
        Ok(threshold_score(
            score,
            reasoning.into(),
            self.options.status_override.as_ref(),
        ))
    }

    /// The first embedding of `text`. Read from the embedder's JSON as
    /// `f64`, as JavaScript reads it, so the similarity is the same to the
    /// last bit (the typed `Embedding` holds `f32`).
    async fn embed(&self, text: &str) -> Result<Vec<f64>> {
        let action = resolve(&self.registry, ActionKind::Embedder, &self.options.embedder).await?;
        let request = EmbedRequest {
            input: vec![DocumentData::from_text(text)],
            options: self.options.embedder_options.clone(),
        };
        let out = action
            .run_json(serde_json::to_value(&request)?, RunOptions::default())
            .await?;
        let vector = out
            .output
            .get("embeddings")
            .and_then(|e| e.get(0))
            .and_then(|e| e.get("embedding"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                Error::internal(format!(
                    "embedder {} returned no embedding",
                    self.options.embedder
                ))
            })?;
        vector
            .iter()
            .map(|x| {
                x.as_f64().ok_or_else(|| {
                    Error::internal(format!(
                        "embedder {} returned a non-numeric embedding",
                        self.options.embedder
                    ))
                })
            })
            .collect()
    }
}

/// `|cos(x, y)|` as npm `compute-cosine-similarity` computes it (its dot
/// product and scaled L2 norms, in the same order); refused when it is 0 or
/// undefined, as Genkit JS refuses it.
fn cosine_similarity(x: &[f64], y: &[f64]) -> Result<f64> {
    let fail = || Error::invalid_argument("Unable to compute cosine similarity");
    if x.len() != y.len() {
        return Err(Error::invalid_argument(
            "cosine-similarity()::invalid input argument. Input arrays must have the same length.",
        ));
    }
    if x.is_empty() {
        return Err(fail());
    }
    let dot: f64 = x.iter().zip(y).fold(0.0, |s, (a, b)| s + a * b);
    let c = dot / (l2norm(x) * l2norm(y));
    // JavaScript's `!score`: 0 and NaN are refused.
    if c == 0.0 || c.is_nan() {
        return Err(fail());
    }
    Ok(c.abs())
}

/// The L2 norm, scaled by the largest magnitude so far to avoid overflow
/// (npm `compute-l2norm`'s algorithm).
fn l2norm(v: &[f64]) -> f64 {
    let (mut t, mut s) = (0.0_f64, 1.0_f64);
    for &val in v {
        let abs = val.abs();
        if abs > 0.0 {
            if abs > t {
                let r = t / val;
                s = 1.0 + s * r * r;
                t = abs;
            } else {
                let r = val / t;
                s += r * r;
            }
        }
    }
    t * s.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosine_matches_the_scaled_algorithm_and_refuses_zero() {
        let c = cosine_similarity(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).expect("similar");
        assert!((c - 1.0).abs() < 1e-15);
        // Opposite vectors: the absolute value.
        let c = cosine_similarity(&[1.0, 0.0], &[-2.0, 0.0]).expect("opposite");
        assert_eq!(c, 1.0);
        assert!(cosine_similarity(&[1.0, 0.0], &[0.0, 1.0]).is_err());
        assert!(cosine_similarity(&[0.0, 0.0], &[0.0, 1.0]).is_err());
        assert!(cosine_similarity(&[], &[]).is_err());
        assert!(cosine_similarity(&[1.0], &[1.0, 2.0]).is_err());
        assert_eq!(l2norm(&[3.0, -4.0]), 5.0);
    }
}
