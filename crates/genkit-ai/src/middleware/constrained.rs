//! Simulated constrained generation: the output schema goes into the prompt
//! for models that cannot constrain their output natively.

use super::{GenerateMiddleware, ModelCallCtx, ModelMiddleware, ModelNext};
use crate::formats::{needs_simulated_constraints, simulate_constrained_generation as simulate};
use crate::types::{GenerateRequest, GenerateResponse, ModelSupports};
use async_trait::async_trait;
use genkit_core::Result;

/// For models without native constrained output: puts the output schema into
/// the prompt as instructions and clears the output constraints.
pub struct SimulateConstrainedGeneration {
    supports: Option<ModelSupports>,
}

/// Simulates constrained generation when the model's `supports.constrained`
/// says it cannot do it natively (always, if `supports` is `None`).
pub fn simulate_constrained_generation(
    supports: Option<ModelSupports>,
) -> SimulateConstrainedGeneration {
    SimulateConstrainedGeneration { supports }
}

#[async_trait]
impl ModelMiddleware for SimulateConstrainedGeneration {
    fn applies(&self, req: &GenerateRequest) -> bool {
        req.output
            .as_ref()
            .is_some_and(|o| o.constrained == Some(true) && o.schema.is_some())
            && needs_simulated_constraints(self.supports.as_ref(), req)
    }

    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        if needs_simulated_constraints(self.supports.as_ref(), &req) {
            simulate(&mut req);
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(
    SimulateConstrainedGeneration,
    "simulateConstrainedGeneration"
);
