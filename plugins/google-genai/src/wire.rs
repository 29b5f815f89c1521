//! The Gemini API's JSON shapes (`generateContent`, `streamGenerateContent`,
//! `embedContent`, `batchEmbedContents`), as far as this plugin reads or
//! writes them. Unknown fields are kept (`other`) so nothing the API sends is
//! lost from `raw`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// A turn of the conversation (`Content`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct Content {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub parts: Vec<WirePart>,
}

/// One part of a [`Content`]. Exactly one content field is set, plus the
/// optional `thoughtSignature` / `thought` / metadata fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WirePart {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_data: Option<Blob>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<FileData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<FunctionCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_response: Option<FunctionResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable_code: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_execution_result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_metadata: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_resolution: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    pub file_uri: String,
}

/// A function call the model asks for (`functionCall`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct FunctionCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    #[serde(flatten)]
    pub other: Object,
}

/// The result of a function call (`functionResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(default)]
pub(crate) struct FunctionResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub response: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parts: Option<Vec<WirePart>>,
}

/// The body of `generateContent` / `streamGenerateContent`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentRequest {
    pub contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_config: Option<Object>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safety_settings: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation_config: Option<Object>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
}

/// A (possibly streamed, partial) `GenerateContentResponse`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateContentResponse {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_feedback: Option<PromptFeedback>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_metadata: Option<UsageMetadata>,
    #[serde(flatten)]
    pub other: Object,
}

/// One generated candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Candidate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_ratings: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citation_metadata: Option<Value>,
    #[serde(flatten)]
    pub other: Object,
}

/// Why a prompt was blocked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedback {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_reason_message: Option<String>,
    #[serde(flatten)]
    pub other: Object,
}

/// Token counts (`usageMetadata`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageMetadata {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thoughts_token_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_token_count: Option<u64>,
    #[serde(flatten)]
    pub other: Object,
}

/// One request of `embedContent` (and an item of `batchEmbedContents`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EmbedContentRequest {
    /// `models/<name>`; required inside a batch only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub content: Content,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
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
