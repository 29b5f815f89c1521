//! genkit-middleware's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod middleware;
mod tool_cache;
