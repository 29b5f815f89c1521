//! genkit-middleware's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod filesystem_confinement;
mod js_fixtures;
mod middleware;
mod tool_cache;
