//! genkit-evaluator's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod evaluators_genkit_js;
