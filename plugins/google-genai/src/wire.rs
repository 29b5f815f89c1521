//! The Gemini API's JSON shapes (`generateContent`, `streamGenerateContent`,
//! `embedContent`, `batchEmbedContents`), as far as this plugin reads or
//! writes them. Unknown fields are kept (`other`) so nothing the API sends is
//! lost from `raw`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// A turn of the conversation (`Content`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct Content {
    pub role: Option<String>,
    pub parts: Vec<WirePart>,
}

/// One part of a [`Content`]. Exactly one content field is set, plus the
/// optional `thoughtSignature` / `thought` / metadata fields.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WirePart {
    pub text: Option<String>,
    pub thought: Option<bool>,
    pub thought_signature: Option<String>,
    pub inline_data: Option<Blob>,
    pub file_data: Option<FileData>,
    pub function_call: Option<FunctionCall>,
    pub function_response: Option<FunctionResponse>,
    pub executable_code: Option<Value>,
    pub code_execution_result: Option<Value>,
    pub video_metadata: Option<Value>,
    pub media_resolution: Option<Value>,
    pub part_metadata: Option<Object>,
    /// Part kinds this plugin does not model (`toolCall`, `toolResponse`, ...).
    #[serde(flatten)]
    pub other: Object,
}

impl WirePart {
    /// A part holding only text.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// True for a text or thought part with nothing else on it (no signature,
    /// metadata or other content): such parts can be concatenated.
    pub fn is_plain_text(&self) -> bool {
        self.text.is_some()
            && self.thought_signature.is_none()
            && self.inline_data.is_none()
            && self.file_data.is_none()
            && self.function_call.is_none()
            && self.function_response.is_none()
            && self.executable_code.is_none()
            && self.code_execution_result.is_none()
            && self.video_metadata.is_none()
            && self.media_resolution.is_none()
            && self.part_metadata.is_none()
            && self.other.is_empty()
    }

    /// True when no field is set (the API sometimes sends `{}` parts).
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// Inline bytes (`inlineData`), base64-encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Blob {
    pub mime_type: String,
    pub data: String,
}

/// A file by URI (`fileData`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileData {
    pub mime_type: Option<String>,
    pub file_uri: String,
}

/// A function call the model asks for (`functionCall`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct FunctionCall {
    pub id: Option<String>,
    pub name: String,
    pub args: Option<Value>,
    #[serde(flatten)]
    pub other: Object,
}

/// The result of a function call (`functionResponse`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct FunctionResponse {
    pub id: Option<String>,
    pub name: String,
    pub response: Value,
    pub parts: Option<Vec<WirePart>>,
}

/// The body of `generateContent` / `streamGenerateContent`.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentRequest {
    pub contents: Vec<Content>,
    pub system_instruction: Option<Content>,
    pub tools: Option<Vec<Value>>,
    pub tool_config: Option<Object>,
    pub safety_settings: Option<Vec<Value>>,
    pub generation_config: Option<Object>,
    pub cached_content: Option<String>,
    pub service_tier: Option<String>,
}

/// A (possibly streamed, partial) `GenerateContentResponse`.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentResponse {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    pub prompt_feedback: Option<PromptFeedback>,
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(flatten)]
    pub other: Object,
}

/// One generated candidate.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    pub content: Option<Content>,
    pub finish_reason: Option<String>,
    pub finish_message: Option<String>,
    pub index: Option<u32>,
    pub safety_ratings: Option<Vec<Value>>,
    pub citation_metadata: Option<Value>,
    #[serde(flatten)]
    pub other: Object,
}

/// Why a prompt was blocked.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    pub block_reason: Option<String>,
    pub block_reason_message: Option<String>,
    #[serde(flatten)]
    pub other: Object,
}

/// Token counts (`usageMetadata`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    pub prompt_token_count: Option<u64>,
    pub candidates_token_count: Option<u64>,
    pub total_token_count: Option<u64>,
    pub thoughts_token_count: Option<u64>,
    pub cached_content_token_count: Option<u64>,
    #[serde(flatten)]
    pub other: Object,
}

/// One request of `embedContent` (and an item of `batchEmbedContents`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmbedContentRequest {
    /// `models/<name>`; required inside a batch only.
    pub model: Option<String>,
    pub content: Content,
    pub task_type: Option<String>,
    pub title: Option<String>,
    pub output_dimensionality: Option<u32>,
}

/// The body of `batchEmbedContents`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct BatchEmbedContentsRequest {
    pub requests: Vec<EmbedContentRequest>,
}

/// One embedding vector.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ContentEmbedding {
    #[serde(default)]
    pub values: Vec<f32>,
}

/// The answer of `embedContent`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct EmbedContentResponse {
    pub embedding: ContentEmbedding,
}

/// The answer of `batchEmbedContents`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct BatchEmbedContentsResponse {
    #[serde(default)]
    pub embeddings: Vec<ContentEmbedding>,
}

/// `embedContent` answers one `embedding`, `batchEmbedContents` a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum EmbedAnswer {
    One(EmbedContentResponse),
    Batch(BatchEmbedContentsResponse),
}
