//! The facade's evaluators (Genkit's `defineEvaluator` and `evaluate`).

use std::future::Future;

use crate::evaluator::{EvaluateOptions, Evaluator, EvaluatorOptions, define_evaluator, evaluate};
use crate::types::{EvalDataPoint, EvalResponse, Evaluation};
use genkit_core::Result;
use genkit_core::action::ActionCtx;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::genkit::{Genkit, registered};

impl Genkit {
    /// Defines an evaluator, registered as `/evaluator/<name>`: the function
    /// scores one test case; the action runs whole datasets, in batches.
    ///
    /// # Panics
    /// If an evaluator with this name is already defined or the name is
    /// invalid. The fallible path is
    /// [`genkit::evaluator::define_evaluator`](crate::evaluator::define_evaluator),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_evaluator<O, E, F, Fut>(&self, opts: EvaluatorOptions, runner: F) -> Evaluator<O>
    where
        O: DeserializeOwned + JsonSchema + Clone + Send + Sync + 'static,
        E: Into<Evaluation>,
        F: Fn(EvalDataPoint, Option<O>, ActionCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<E>> + Send + 'static,
    {
        let name = opts.name.clone();
        registered(
            "evaluator",
            &name,
            define_evaluator(self.registry(), opts, runner),
        )
    }

    /// Scores a dataset with a registered evaluator: one result per test
    /// case, in order.
    pub async fn evaluate(&self, params: EvaluateOptions) -> Result<EvalResponse> {
        evaluate(self.registry(), params).await
    }
}
