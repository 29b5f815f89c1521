//! genkit-generate's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod generate_conformance;
mod generate_history;
mod generate_interrupts;
mod generate_limits;
mod generate_loop;
mod generate_stream;
mod generate_tracing;
mod genkit_js;
mod models_and_tools;
mod resources;
mod streaming_linear;
mod typed_tools;
