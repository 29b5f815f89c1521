//! Simulated constrained generation: the output schema goes into the prompt
//! for models that cannot constrain their output natively.

use super::{ModelCallCtx, ModelMiddleware, ModelNext};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedTail, request, run_layer};
    use crate::types::{ConstrainedSupport, Message, OutputConfig};
    use serde_json::json;

    fn constrained_request() -> GenerateRequest {
        let mut req = request(vec![Message::user("who?")]);
        req.output = Some(OutputConfig {
            constrained: Some(true),
            schema: Some(json!({"type": "object"})),
            ..OutputConfig::default()
        });
        req
    }

    #[tokio::test]
    async fn without_native_support_the_schema_goes_into_the_prompt() {
        let tail = ScriptedTail::default();
        let layer = simulate_constrained_generation(None);
        assert!(layer.applies(&constrained_request()));
        run_layer(layer, &tail, constrained_request())
            .await
            .unwrap();
        let seen = tail.last();
        assert!(
            seen.messages[0]
                .text()
                .contains("Output should be in JSON format")
        );
        assert_eq!(seen.output.unwrap().constrained, Some(false));
    }

    #[tokio::test]
    async fn a_model_with_native_support_is_left_alone() {
        let supports = ModelSupports {
            constrained: Some(ConstrainedSupport::All),
            ..ModelSupports::default()
        };
        let layer = simulate_constrained_generation(Some(supports));
        assert!(!layer.applies(&constrained_request()));
    }
}
