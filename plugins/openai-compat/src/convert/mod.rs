//! Conversion between Genkit's wire types and Chat Completions.

pub(crate) mod request;
pub(crate) mod response;
