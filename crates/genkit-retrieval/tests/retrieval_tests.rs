//! genkit-retrieval's integration tests, one test binary (one link) for the crate:
//! each module is one suite.

mod local_vector_store;
mod local_vector_store_files;
mod local_vector_store_hnsw;
mod retrieval_genkit_js;
