//! Evaluators: actions of kind `evaluator` scoring a dataset's test cases
//! (Genkit's `defineEvaluator` / `evaluate`), and the built-in metrics
//! ([`builtin`]).
//!
//! The function scores one test case. The action runs a dataset in batches
//! (`batchSize` test cases at a time, one by default): test cases of a batch
//! concurrently, batches one after another. Each test case runs in its own
//! span, `Test Case <id>`, whose ids its result carries; a test case whose
//! function fails is scored with the error, and the others go on — as
//! Genkit JS does.
//!
//! Model-judged metrics: [`define_faithfulness`] and
//! [`define_answer_relevancy`] (`@genkit-ai/evaluator`'s RAG metrics).
//!
//! ```
//! # async fn demo() -> genkit_core::Result<()> {
//! use genkit_evaluator::{EvaluateOptions, EvaluatorOptions, define_evaluator, evaluate};
//! use genkit_model::types::{BaseDataPoint, Evaluation, Score};
//!
//! let registry = genkit_core::Registry::new();
//! define_evaluator(
//!     &registry,
//!     EvaluatorOptions::new("short", "Short", "The output has at most 10 characters"),
//!     |point, _options: Option<serde_json::Value>, _ctx| async move {
//!         let len = point.output.as_ref().and_then(|o| o.as_str()).map_or(0, str::len);
//!         Ok(Score::pass_fail(len <= 10))
//!     },
//! )?;
//! let dataset = vec![BaseDataPoint::new("q").output("brief"), BaseDataPoint::new("q").output("rather long")];
//! let results = evaluate(&registry, EvaluateOptions::new("short", dataset)).await?;
//! assert_eq!(results[0].evaluation, Evaluation::One(Score::pass_fail(true)));
//! assert_eq!(results[1].evaluation, Evaluation::One(Score::pass_fail(false)));
//! # Ok(()) }
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(demo()).unwrap();
//! ```

pub mod answer_relevancy;
pub mod builtin;
pub mod faithfulness;
mod judge;

pub use answer_relevancy::{AnswerRelevancyOptions, define_answer_relevancy};
pub use faithfulness::{FaithfulnessOptions, define_faithfulness};
pub use judge::StatusOverride;

use futures::future::join_all;
use genkit_core::action::ActionCtx;
use genkit_core::tracing::{Span, SpanOptions, SpanType};
use genkit_core::{Action, ActionDesc, ActionKind, Registry, Result};
use genkit_model::action_support::{
    TypedOptions, call, options_to_value, resolve, with_options_schema,
};
use genkit_model::types::{
    BaseDataPoint, EvalDataPoint, EvalFnResponse, EvalRequest, EvalResponse, Evaluation, Score,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::future::Future;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

/// Genkit's metadata key for an evaluator's display name.
pub const EVALUATOR_METADATA_KEY_DISPLAY_NAME: &str = "evaluatorDisplayName";
/// Genkit's metadata key for what an evaluator measures.
pub const EVALUATOR_METADATA_KEY_DEFINITION: &str = "evaluatorDefinition";
/// Genkit's metadata key for whether running an evaluator costs money.
pub const EVALUATOR_METADATA_KEY_IS_BILLED: &str = "evaluatorIsBilled";

/// How to define an evaluator.
#[derive(Debug, Clone)]
pub struct EvaluatorOptions {
    /// The name (`plugin/name` for plugin evaluators).
    pub name: String,
    /// The name shown in the Dev UI.
    pub display_name: String,
    /// What it measures.
    pub definition: String,
    /// Whether running it costs money (a model judges); `true` unless set,
    /// as in Genkit.
    pub is_billed: bool,
}

impl EvaluatorOptions {
    /// An evaluator `name`, shown as `display_name`, measuring `definition`.
    pub fn new(
        name: impl Into<String>,
        display_name: impl Into<String>,
        definition: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            display_name: display_name.into(),
            definition: definition.into(),
            is_billed: true,
        }
    }

    /// Sets whether running it costs money.
    pub fn is_billed(mut self, billed: bool) -> Self {
        self.is_billed = billed;
        self
    }
}

/// The action behind an evaluator.
pub type EvaluatorAction = Action<EvalRequest, EvalResponse>;

/// An evaluator whose options are `O`. Cheap to clone.
pub struct Evaluator<O = Value> {
    action: EvaluatorAction,
    _o: PhantomData<fn(O)>,
}

impl<O> Clone for Evaluator<O> {
    fn clone(&self) -> Self {
        Self {
            action: self.action.clone(),
            _o: PhantomData,
        }
    }
}

impl<O> std::fmt::Debug for Evaluator<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("key", &self.action.key())
            .finish()
    }
}

impl<O: Serialize> Evaluator<O> {
    /// The action.
    pub fn action(&self) -> &EvaluatorAction {
        &self.action
    }

    /// The name.
    pub fn name(&self) -> &str {
        self.action.name()
    }

    /// Scores `dataset` (a new evaluation run).
    pub async fn evaluate(
        &self,
        dataset: Vec<BaseDataPoint>,
        options: Option<O>,
    ) -> Result<EvalResponse> {
        let options = options.as_ref().map(options_to_value).transpose()?;
        self.action
            .run(EvalRequest {
                dataset,
                eval_run_id: genkit_core::random_uuid(),
                options,
                batch_size: None,
            })
            .await
    }
}

fn request_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<EvalRequest>)
}

fn response_schema() -> &'static Value {
    static S: OnceLock<Value> = OnceLock::new();
    S.get_or_init(genkit_core::schema::schema_for::<EvalResponse>)
}

type Scorer<O> = dyn Fn(
        EvalDataPoint,
        Option<O>,
        ActionCtx,
    ) -> futures::future::BoxFuture<'static, Result<Evaluation>>
    + Send
    + Sync;

/// Builds an evaluator without registering it. The function scores one
/// test case (its `testCaseId` set), with the options decoded as `O`.
pub fn evaluator<O, E, F, Fut>(opts: EvaluatorOptions, runner: F) -> Evaluator<O>
where
    O: DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static,
    E: Into<Evaluation>,
    F: Fn(EvalDataPoint, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<E>> + Send + 'static,
{
    let options = TypedOptions::<O>::new();
    let mut meta = Map::new();
    meta.insert(
        EVALUATOR_METADATA_KEY_IS_BILLED.into(),
        Value::from(opts.is_billed),
    );
    meta.insert(
        EVALUATOR_METADATA_KEY_DISPLAY_NAME.into(),
        Value::from(opts.display_name),
    );
    meta.insert(
        EVALUATOR_METADATA_KEY_DEFINITION.into(),
        Value::from(opts.definition),
    );
    if let Some(schema) = options.schema() {
        meta.insert("customOptions".into(), schema.clone());
    }
    let mut desc = ActionDesc::new(ActionKind::Evaluator, opts.name)
        .with_metadata("type", Value::from("evaluator"))
        .with_metadata("evaluator", Value::Object(meta));
    desc.input_schema = Some(with_options_schema(
        request_schema().clone(),
        options.schema(),
    ));
    desc.output_schema = Some(response_schema().clone());
    let what = format!("evaluator {}", desc.name);
    let scorer: Arc<Scorer<O>> = Arc::new(move |point, options, ctx| {
        let fut = runner(point, options, ctx);
        Box::pin(async move { fut.await.map(Into::into) })
    });
    let action = Action::from_desc_typed(desc, move |req: EvalRequest, ctx: ActionCtx| {
        let decoded = options.decode(req.options.clone(), &what);
        let scorer = scorer.clone();
        async move { run_dataset(req, decoded?, scorer, ctx).await }
    });
    Evaluator {
        action,
        _o: PhantomData,
    }
}

/// Defines an evaluator and registers it as `/evaluator/<name>`.
pub fn define_evaluator<O, E, F, Fut>(
    registry: &Registry,
    opts: EvaluatorOptions,
    runner: F,
) -> Result<Evaluator<O>>
where
    O: DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static,
    E: Into<Evaluation>,
    F: Fn(EvalDataPoint, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<E>> + Send + 'static,
{
    let e = evaluator(opts, runner);
    registry.register(&e.action)?;
    Ok(e)
}

async fn run_dataset<O: Clone + Send + 'static>(
    req: EvalRequest,
    options: Option<O>,
    scorer: Arc<Scorer<O>>,
    ctx: ActionCtx,
) -> Result<EvalResponse> {
    let size = req.batch_size.filter(|s| *s > 0).map_or(1, |s| s as usize);
    let points: Vec<EvalDataPoint> = req
        .dataset
        .into_iter()
        .map(|p| EvalDataPoint::from_base(p, genkit_core::random_uuid))
        .collect();
    let mut out = Vec::with_capacity(points.len());
    for (batch_index, batch) in points.chunks(size).enumerate() {
        let run = |index: usize, point: EvalDataPoint| {
            let sample_index = match req.batch_size {
                Some(s) if s > 0 => s as usize * batch_index + index,
                _ => batch_index,
            };
            run_test_case(
                point,
                sample_index,
                &req.eval_run_id,
                options.clone(),
                scorer.clone(),
                ctx.clone(),
            )
        };
        let cases = batch.iter().cloned().enumerate().map(|(i, p)| run(i, p));
        if batch.len() == 1 {
            out.extend(join_all(cases).await);
        } else {
            let mut span = Span::start(&SpanOptions::new(
                format!("Batch {batch_index}"),
                SpanType::Util,
            ));
            span.set_attribute("genkit:metadata:evaluator:evalRunId", || {
                Value::from(req.eval_run_id.clone())
            });
            span.set_input(batch);
            let results = span.scope(join_all(cases)).await;
            span.set_output(&results);
            span.end_ok();
            out.extend(results);
        }
    }
    Ok(out)
}

async fn run_test_case<O: Send + 'static>(
    point: EvalDataPoint,
    sample_index: usize,
    eval_run_id: &str,
    options: Option<O>,
    scorer: Arc<Scorer<O>>,
    ctx: ActionCtx,
) -> EvalFnResponse {
    let id = point.test_case_id.clone();
    let mut span = Span::start(&SpanOptions::new(format!("Test Case {id}"), SpanType::Util));
    span.set_attribute("genkit:metadata:evaluator:evalRunId", || {
        Value::from(eval_run_id)
    });
    span.set_input(&point);
    let info = span.info();
    let result = span.scope(scorer(point, options, ctx)).await;
    let evaluation = match result {
        Ok(evaluation) => evaluation,
        Err(e) => Evaluation::One(Score::error(format!(
            "Evaluation of test case {id} failed: \n{}",
            js_error_text(&e)
        ))),
    };
    let response = EvalFnResponse {
        sample_index: Some(sample_index as u64),
        test_case_id: id,
        trace_id: Some(info.trace_id.to_string()),
        span_id: Some(info.span_id.to_string()),
        evaluation,
    };
    span.set_output(&response);
    span.end_ok();
    response
}

/// Marks an error that Genkit JS raises as a `GenkitError` (one of its own
/// checks, such as a judge's output failing its schema) rather than as a
/// plain `Error`: test case errors then read as JavaScript prints it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GenkitErrorName;

/// An error as JavaScript's `${error}` prints Genkit JS's: `GenkitError:
/// STATUS: message` for its own errors, `Error: message` for the others.
fn js_error_text(e: &genkit_core::Error) -> String {
    if e.payload::<GenkitErrorName>().is_some() {
        format!("GenkitError: {}: {}", e.status().name(), e.message())
    } else {
        format!("Error: {}", e.message())
    }
}

/// What to evaluate, with which evaluator (Genkit's `EvaluatorParams`).
#[derive(Debug, Clone)]
pub struct EvaluateOptions {
    evaluator: String,
    dataset: Vec<BaseDataPoint>,
    eval_run_id: Option<String>,
    batch_size: Option<u32>,
    options: Option<Result<Value>>,
}

impl EvaluateOptions {
    /// Scores `dataset` with the evaluator `evaluator` (a name or a key).
    pub fn new(
        evaluator: impl Into<String>,
        dataset: impl IntoIterator<Item = BaseDataPoint>,
    ) -> Self {
        Self {
            evaluator: evaluator.into(),
            dataset: dataset.into_iter().collect(),
            eval_run_id: None,
            batch_size: None,
            options: None,
        }
    }

    /// Sets the evaluator's options.
    pub fn options(mut self, options: impl Serialize) -> Self {
        self.options = Some(options_to_value(&options));
        self
    }

    /// Names the evaluation run (a random UUID by default).
    pub fn eval_run_id(mut self, id: impl Into<String>) -> Self {
        self.eval_run_id = Some(id.into());
        self
    }

    /// Scores this many test cases at a time, concurrently.
    pub fn batch_size(mut self, size: u32) -> Self {
        self.batch_size = Some(size);
        self
    }
}

/// Scores a dataset (Genkit's `evaluate`): one result per test case, in
/// order. `NOT_FOUND` when there is no such evaluator.
pub async fn evaluate(registry: &Registry, params: EvaluateOptions) -> Result<EvalResponse> {
    let action = resolve(registry, ActionKind::Evaluator, &params.evaluator).await?;
    let request = EvalRequest {
        dataset: params.dataset,
        eval_run_id: params.eval_run_id.unwrap_or_else(genkit_core::random_uuid),
        options: params.options.transpose()?,
        batch_size: params.batch_size,
    };
    call(&action, request).await
}
