//! Conversion between Genkit's wire types and Ollama's.

pub(crate) mod request;
pub(crate) mod response;
