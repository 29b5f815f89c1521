//! genkit-model's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod extract;
mod formats;
mod media_download_safety;
mod retrieval_wire_types;
mod wire_types;
