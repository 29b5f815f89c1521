//! Model-facing wire types: requests, responses, streamed chunks, model metadata.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use std::sync::Arc;

use super::Metadata;
use super::document::DocumentData;
use super::message::{Message, Role, concat_reasoning, concat_text, first_data};
use super::part::{Media, Part, ToolRequest};
use crate::extract::extract_json;

/// How the model may use tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call a tool.
    Required,
    /// The model must not call tools.
    None,
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum FinishReason {
    /// Natural end or a stop sequence.
    Stop,
    /// Token limit reached.
    Length,
    /// Blocked by safety or policy filters.
    Blocked,
    /// Aborted (e.g. cancelled, or too many tool turns).
    Aborted,
    /// A tool interrupted the generate loop.
    Interrupted,
    /// Some other reason.
    Other,
    /// Unknown.
    Unknown,
}

impl FinishReason {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Blocked => "blocked",
            FinishReason::Aborted => "aborted",
            FinishReason::Interrupted => "interrupted",
            FinishReason::Other => "other",
            FinishReason::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A tool as described to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// Tool name the model uses to call it.
    pub name: String,
    /// Registry key of the tool action, when it differs from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// What the tool does and when to use it.
    pub description: String,
    /// JSON Schema (an object) of the tool's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// JSON Schema (an object) of the tool's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Extra metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl ToolDefinition {
    /// A definition with a name and description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            key: None,
            description: description.into(),
            input_schema: None,
            output_schema: None,
            metadata: None,
        }
    }

    /// Sets the input schema.
    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }

    /// Sets the output schema.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
}

/// Requested output shape in a model request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputConfig {
    /// Output format name (`json`, `text`, `array`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// JSON Schema (an object) the output should conform to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Whether the model should enforce the schema natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained: Option<bool>,
    /// MIME type of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

impl OutputConfig {
    /// True when no field is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// A request to a model (`GenerateRequest`; the same shape as `ModelRequest`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateRequest {
    /// The conversation. Shared (`Arc`): the tool loop hands each turn's
    /// history to the model without copying it. Read it through `Deref`;
    /// change it with `Arc::make_mut(&mut req.messages)` (copies only if
    /// it is still shared).
    #[schemars(description = "The conversation.")]
    pub messages: Arc<Vec<Message>>,
    /// Model-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Tools the model may call. Shared (`Arc`): the same definitions go to
    /// every turn of a tool loop without being copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(description = "Tools the model may call.")]
    pub tools: Option<Arc<[ToolDefinition]>>,
    /// How tools may be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Requested output shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputConfig>,
    /// Context documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<Vec<DocumentData>>,
    /// Legacy: number of candidates (only in the `GenerateRequest` form, not `ModelRequest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<u32>,
}

/// A request to a model action; alias of [`GenerateRequest`].
pub type ModelRequest = GenerateRequest;

impl GenerateRequest {
    /// A request with these messages.
    pub fn new(messages: impl Into<Arc<Vec<Message>>>) -> Self {
        Self {
            messages: messages.into(),
            ..Self::default()
        }
    }

    /// Sets the config.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Sets the tools.
    pub fn with_tools(mut self, tools: impl Into<Arc<[ToolDefinition]>>) -> Self {
        self.tools = Some(tools.into());
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the output config.
    pub fn with_output(mut self, output: OutputConfig) -> Self {
        self.output = Some(output);
        self
    }

    /// Sets the context documents.
    pub fn with_docs(mut self, docs: Vec<DocumentData>) -> Self {
        self.docs = Some(docs);
        self
    }

    /// The tools, or an empty slice.
    pub fn tools(&self) -> &[ToolDefinition] {
        self.tools.as_deref().unwrap_or_default()
    }
}

/// Token, character and media counts of a generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationUsage {
    /// Input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Total tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Input characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_characters: Option<u64>,
    /// Output characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_characters: Option<u64>,
    /// Input images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_images: Option<u64>,
    /// Output images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_images: Option<u64>,
    /// Input videos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_videos: Option<u64>,
    /// Output videos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_videos: Option<u64>,
    /// Input audio files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_audio_files: Option<u64>,
    /// Output audio files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_audio_files: Option<u64>,
    /// Provider-specific numeric counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<BTreeMap<String, Number>>,
    /// Tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_tokens: Option<u64>,
    /// Tokens served from a context cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_tokens: Option<u64>,
}

/// A long-running operation (background model jobs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Operation {
    /// Key of the action that runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Operation id.
    pub id: String,
    /// Whether it has finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    /// The result, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The failure, if it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<OperationError>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// Why an [`Operation`] failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OperationError {
    /// Human-readable message.
    pub message: String,
    /// Any other fields the producer attached.
    #[serde(flatten)]
    pub extra: Metadata,
}

/// Legacy: one of several generated candidates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// Position of the candidate.
    pub index: u32,
    /// The generated message.
    pub message: Message,
    /// Usage for this candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<GenerationUsage>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Details on why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_message: Option<String>,
    /// Provider-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Value>,
}

/// Legacy: error codes of a [`CandidateError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CandidateErrorCode {
    /// Blocked by filters.
    Blocked,
    /// Other error.
    Other,
    /// Unknown error.
    Unknown,
}

/// Legacy: a candidate that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CandidateError {
    /// Position of the candidate.
    pub index: u32,
    /// Error code.
    pub code: CandidateErrorCode,
    /// Details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A model's (or `generate`'s) response. `finishReason` is required in the `ModelResponse`
/// form; it is optional here so partial responses (as in Genkit's tests) still parse.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateResponse {
    // `usage`, `request` and `operation` are boxed: responses travel by
    // value through every layer of the tool loop and middleware, and those
    // three would make up most of their size.
    /// The generated message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
    /// Details on why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_message: Option<String>,
    /// Time taken in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Usage counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Box<GenerationUsage>>,
    /// Provider-specific data (deprecated in favour of `raw`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Value>,
    /// The provider's raw response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Value>,
    /// The request that produced this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Box<GenerateRequest>>,
    /// A long-running operation, for background models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Box<Operation>>,
    /// Legacy candidates (only in the `GenerateResponse` form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
}

/// A model action's response; alias of [`GenerateResponse`].
pub type ModelResponse = GenerateResponse;

impl GenerateResponse {
    /// A response holding `message` with `finish_reason`.
    pub fn new(message: Message, finish_reason: FinishReason) -> Self {
        Self {
            message: Some(message),
            finish_reason: Some(finish_reason),
            ..Self::default()
        }
    }

    /// Sets the token and character counts.
    pub fn with_usage(mut self, usage: GenerationUsage) -> Self {
        self.usage = Some(Box::new(usage));
        self
    }

    /// The generated message (falling back to the first legacy candidate).
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref().or_else(|| {
            self.candidates
                .as_ref()
                .and_then(|c| c.first())
                .map(|c| &c.message)
        })
    }

    /// Why generation stopped (falling back to the first legacy candidate).
    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finish_reason.or_else(|| {
            self.candidates
                .as_ref()
                .and_then(|c| c.first())
                .map(|c| c.finish_reason)
        })
    }

    /// The generated text (all text parts concatenated), or `""`.
    pub fn text(&self) -> String {
        self.message().map(Message::text).unwrap_or_default()
    }

    /// The generated reasoning text, or `""`.
    pub fn reasoning(&self) -> String {
        self.message().map(Message::reasoning).unwrap_or_default()
    }

    /// The first media part of the message.
    pub fn media(&self) -> Option<&Media> {
        self.message().and_then(Message::media)
    }

    /// The first truthy data part of the message.
    pub fn data(&self) -> Option<&Value> {
        self.message().and_then(Message::data)
    }

    /// Tool requests in the message.
    pub fn tool_requests(&self) -> Vec<&ToolRequest> {
        self.message()
            .map(|m| m.tool_requests().collect())
            .unwrap_or_default()
    }

    /// Tool request parts marked as interrupts.
    pub fn interrupts(&self) -> Vec<&Part> {
        self.message()
            .map(|m| m.interrupts().collect())
            .unwrap_or_default()
    }

    /// The request's messages followed by the generated message, if both are present.
    pub fn messages(&self) -> Option<Vec<Message>> {
        let mut history = self.request.as_ref()?.messages.to_vec();
        history.push(self.message()?.clone());
        Some(history)
    }
}

/// One streamed piece of a response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GenerateResponseChunk {
    /// Role of the message this chunk belongs to (`model` or `tool`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Index of the message this chunk belongs to (0 for the first model message).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    /// Content generated in this chunk.
    #[serde(default)]
    pub content: Vec<Part>,
    /// Provider-specific data. Boxed: chunks are queued and moved one by
    /// one, and an inline `Value` would make up most of their size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Box<Value>>,
    /// True when the chunk repeats everything streamed so far rather than adding to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<bool>,
}

/// A model action's stream chunk; alias of [`GenerateResponseChunk`].
pub type ModelResponseChunk = GenerateResponseChunk;

impl GenerateResponseChunk {
    /// A chunk with content only.
    pub fn new(content: Vec<Part>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// Sets role and message index.
    pub fn with_position(mut self, index: u32, role: Role) -> Self {
        self.index = Some(index);
        self.role = Some(role);
        self
    }

    /// Text parts of this chunk concatenated.
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }

    /// Reasoning parts of this chunk concatenated.
    pub fn reasoning(&self) -> String {
        concat_reasoning(&self.content)
    }

    /// The first media part.
    pub fn media(&self) -> Option<&Media> {
        self.content.iter().find_map(Part::as_media)
    }

    /// The first truthy data part.
    pub fn data(&self) -> Option<&Value> {
        first_data(&self.content)
    }

    /// Tool requests in this chunk.
    pub fn tool_requests(&self) -> impl Iterator<Item = &ToolRequest> {
        self.content.iter().filter_map(Part::as_tool_request)
    }

    /// Text of `previous` chunks followed by this chunk's text.
    pub fn accumulated_text(&self, previous: &[GenerateResponseChunk]) -> String {
        let mut text: String = previous.iter().map(|c| c.text()).collect();
        text.push_str(&self.text());
        text
    }

    /// Structured output without a format parser: a data part, else JSON found in the
    /// accumulated text (partial JSON is completed).
    pub fn output(&self, previous: &[GenerateResponseChunk]) -> Option<Value> {
        self.data()
            .cloned()
            .or_else(|| extract_json(&self.accumulated_text(previous)))
    }
}

/// How far a model supports constrained (schema-enforced) output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub enum ConstrainedSupport {
    /// Not supported.
    #[serde(rename = "none")]
    None,
    /// Always supported.
    #[serde(rename = "all")]
    All,
    /// Supported only when no tools are in the request.
    #[serde(rename = "no-tools")]
    NoTools,
}

/// Release stage of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ModelStage {
    /// Recommended.
    Featured,
    /// Well tested.
    Stable,
    /// Experimental.
    Unstable,
    /// Not recommended for new work.
    Legacy,
    /// May be removed.
    Deprecated,
}

/// What a model can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSupports {
    /// Accepts conversation history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiturn: Option<bool>,
    /// Accepts media input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<bool>,
    /// Can call tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<bool>,
    /// Accepts `system` messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<bool>,
    /// Output formats it can produce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Vec<String>>,
    /// Output content types it can produce.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<Vec<String>>,
    /// Handles `docs` natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<bool>,
    /// Native constrained generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained: Option<ConstrainedSupport>,
    /// Honours `toolChoice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<bool>,
    /// Runs as a long-running operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub long_running: Option<bool>,
}

/// Metadata describing a model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// Accepted version names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// JSON Schema (an object) of the model's config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_schema: Option<Value>,
    /// Capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supports: Option<ModelSupports>,
    /// Release stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<ModelStage>,
}

impl ModelInfo {
    /// Info with a display label.
    pub fn new(label: impl Into<String>) -> Self {
        Self {
            label: Some(label.into()),
            ..Self::default()
        }
    }

    /// Sets the capabilities.
    pub fn with_supports(mut self, supports: ModelSupports) -> Self {
        self.supports = Some(supports);
        self
    }

    /// Sets the stage.
    pub fn with_stage(mut self, stage: ModelStage) -> Self {
        self.stage = Some(stage);
        self
    }
}

/// A model by name plus default config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelReference {
    /// Model name (e.g. `googleai/gemini-2.5-flash`).
    pub name: String,
    /// Default config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

/// Config options most models understand. Unknown keys are kept in `extra`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerationCommonConfig {
    /// A specific version of the model family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Maximum tokens to generate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// API key overriding the plugin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Model-specific options.
    #[serde(flatten)]
    pub extra: Metadata,
}
