//! The evaluation wire types: data points, requests, scores, responses.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Metadata;

/// One test case of a dataset (Genkit's `BaseDataPoint`); `testCaseId` is
/// filled in (a random UUID) before an evaluator sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BaseDataPoint {
    /// What the evaluated flow or model got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// What it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The context it used (for RAG: the retrieved documents' texts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<Value>>,
    /// The expected answer (or, for some evaluators, a pattern).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Value>,
    /// The test case's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test_case_id: Option<String>,
    /// Traces of the run that produced the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_ids: Option<Vec<String>>,
}

impl BaseDataPoint {
    /// A data point with this input.
    pub fn new(input: impl Into<Value>) -> Self {
        Self {
            input: Some(input.into()),
            ..Self::default()
        }
    }

    /// Sets the output.
    pub fn output(mut self, output: impl Into<Value>) -> Self {
        self.output = Some(output.into());
        self
    }

    /// Sets the reference.
    pub fn reference(mut self, reference: impl Into<Value>) -> Self {
        self.reference = Some(reference.into());
        self
    }

    /// Sets the context.
    pub fn context<V: Into<Value>>(mut self, context: impl IntoIterator<Item = V>) -> Self {
        self.context = Some(context.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the test case id.
    pub fn test_case_id(mut self, id: impl Into<String>) -> Self {
        self.test_case_id = Some(id.into());
        self
    }
}

/// A data point as an evaluator sees it: its `testCaseId` is always set
/// (Genkit's `BaseEvalDataPoint`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalDataPoint {
    /// What the evaluated flow or model got.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// What it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The context it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Vec<Value>>,
    /// The expected answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Value>,
    /// The test case's id.
    pub test_case_id: String,
    /// Traces of the run that produced the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_ids: Option<Vec<String>>,
}

impl EvalDataPoint {
    /// `point` with `id` as its test case id when it has none.
    pub fn from_base(point: BaseDataPoint, id: impl FnOnce() -> String) -> Self {
        Self {
            input: point.input,
            output: point.output,
            context: point.context,
            reference: point.reference,
            test_case_id: point.test_case_id.unwrap_or_else(id),
            trace_ids: point.trace_ids,
        }
    }
}

/// Input of an evaluator action (Genkit's `EvalRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalRequest {
    /// The test cases.
    pub dataset: Vec<BaseDataPoint>,
    /// The evaluation run this belongs to.
    pub eval_run_id: String,
    /// Evaluator-specific options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
    /// How many test cases one batch holds (Genkit JS's extension of the
    /// request; absent: one per batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<u32>,
}

/// Whether a test case passed (Genkit's `EvalStatusEnum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EvalStatus {
    /// Not judged.
    Unknown,
    /// Passed.
    Pass,
    /// Failed.
    Fail,
}

/// A score's value: a number, a string or a boolean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ScoreValue {
    /// A boolean score (pass or fail).
    Bool(bool),
    /// A numeric score.
    Number(f64),
    /// A label.
    Text(String),
}

impl From<bool> for ScoreValue {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl From<f64> for ScoreValue {
    fn from(v: f64) -> Self {
        Self::Number(v)
    }
}

impl From<&str> for ScoreValue {
    fn from(v: &str) -> Self {
        Self::Text(v.into())
    }
}

impl From<String> for ScoreValue {
    fn from(v: String) -> Self {
        Self::Text(v)
    }
}

/// Why a score is what it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScoreDetails {
    /// The reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Anything else.
    #[serde(flatten)]
    pub rest: Metadata,
}

/// One score of a test case (Genkit's `Score`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Score {
    /// Which score this is, when an evaluator gives several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<ScoreValue>,
    /// Pass or fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<EvalStatus>,
    /// Why the test case could not be scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Reasoning and other details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<ScoreDetails>,
}

impl Score {
    /// A score with a value and a status.
    pub fn new(score: impl Into<ScoreValue>, status: EvalStatus) -> Self {
        Self {
            score: Some(score.into()),
            status: Some(status),
            ..Self::default()
        }
    }

    /// A boolean score: `PASS` when true, `FAIL` when false.
    pub fn pass_fail(pass: bool) -> Self {
        Self::new(
            pass,
            if pass {
                EvalStatus::Pass
            } else {
                EvalStatus::Fail
            },
        )
    }

    /// A score that could not be computed.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            error: Some(message.into()),
            ..Self::default()
        }
    }

    /// Sets the reasoning.
    pub fn reasoning(mut self, reasoning: impl Into<String>) -> Self {
        self.details
            .get_or_insert_with(ScoreDetails::default)
            .reasoning = Some(reasoning.into());
        self
    }

    /// Sets the id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// One score or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Evaluation {
    /// One score.
    One(Score),
    /// Several scores (distinguished by `id`).
    Many(Vec<Score>),
}

impl From<Score> for Evaluation {
    fn from(s: Score) -> Self {
        Self::One(s)
    }
}

impl From<Vec<Score>> for Evaluation {
    fn from(s: Vec<Score>) -> Self {
        Self::Many(s)
    }
}

/// An evaluator's result for one test case (Genkit's `EvalFnResponse`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvalFnResponse {
    /// The test case's position in the dataset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_index: Option<u64>,
    /// The test case's id.
    pub test_case_id: String,
    /// The trace of the evaluation of this test case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Its span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// The score or scores.
    pub evaluation: Evaluation,
}

impl EvalFnResponse {
    /// The result `evaluation` for the test case `test_case_id`.
    pub fn new(test_case_id: impl Into<String>, evaluation: impl Into<Evaluation>) -> Self {
        Self {
            sample_index: None,
            test_case_id: test_case_id.into(),
            trace_id: None,
            span_id: None,
            evaluation: evaluation.into(),
        }
    }
}

/// Output of an evaluator action (Genkit's `EvalResponse`): one result per
/// test case that was evaluated.
pub type EvalResponse = Vec<EvalFnResponse>;
