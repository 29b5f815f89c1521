//! Conversions between Genkit's wire types and the Messages API's.

pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod schema;
