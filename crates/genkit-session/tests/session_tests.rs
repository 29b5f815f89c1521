//! genkit-session's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod agent_store;
mod agent_types;
mod genkit_js_json_patch;
