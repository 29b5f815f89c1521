//! Genkit's generation wire types.
//!
//! Every type serializes to exactly the JSON of Genkit's shared schema
//! (`genkit-schema.json`): camelCase field names, absent optionals omitted (never
//! `null`), exact enum strings. Deserialization ignores unknown fields, as Genkit's
//! own (zod) parsing does, and keeps extra fields where the schema allows them.

mod document;
mod eval;
mod generate;
mod message;
mod model;
mod part;
mod retrieval;

pub use document::{DocumentData, EmbedRequest, EmbedResponse, Embedding};
pub use eval::{
    BaseDataPoint, EvalDataPoint, EvalFnResponse, EvalRequest, EvalResponse, EvalStatus,
    Evaluation, Score, ScoreDetails, ScoreValue,
};
pub use generate::{
    GenerateActionOptions, GenerateActionOutputConfig, GenerateActionResume, MiddlewareRef,
    OutputInstructions,
};
pub use message::{IntoParts, Message, Role};
pub use model::{
    Candidate, CandidateError, CandidateErrorCode, ConstrainedSupport, FinishReason,
    GenerateRequest, GenerateResponse, GenerateResponseChunk, GenerationCommonConfig,
    GenerationUsage, ModelInfo, ModelReference, ModelRequest, ModelResponse, ModelResponseChunk,
    ModelStage, ModelSupports, Operation, OperationError, OutputConfig, ToolChoice, ToolDefinition,
};
pub use part::{
    Media, MultipartToolResponse, Part, PartExtensions, PartKind, ResourceRef, ToolRequest,
    ToolResponse,
};
pub use retrieval::{
    CommonRerankerOptions, CommonRetrieverOptions, IndexerRequest, RankedDocumentData,
    RankedDocumentMetadata, RerankerRequest, RerankerResponse, RetrieverRequest, RetrieverResponse,
};

/// A free-form JSON object (`metadata`, `custom` ...).
pub type Metadata = serde_json::Map<String, serde_json::Value>;

/// JavaScript truthiness of a JSON value: `null`, `false`, `0`, `""` are false.
pub fn is_truthy(value: &serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}
