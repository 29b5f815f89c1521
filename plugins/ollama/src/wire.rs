//! Ollama's native wire format (`/api/chat`, `/api/embed`, `/api/tags`),
//! only the fields the plugin reads or writes. Responses are read leniently.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a chat request.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// The text (always present, `""` when there is none).
    pub content: String,
    /// Base64 images (no `data:` prefix).
    pub images: Option<Vec<String>>,
    /// Tool calls of an assistant message.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The tool a tool message answers for.
    pub tool_name: Option<String>,
    /// The call a tool message answers (newer servers pair calls by id).
    pub tool_call_id: Option<String>,
}

/// A tool call: arguments are a JSON object, not a string.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    pub id: Option<String>,
    pub function: FunctionCall,
}

/// The function a tool call names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// A chat response, or one line of a streamed one.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatResponse {
    pub message: Option<ResponseMessage>,
    pub done: bool,
    pub done_reason: Option<String>,
    pub prompt_eval_count: Option<u64>,
    pub eval_count: Option<u64>,
    pub error: Option<Value>,
}

/// The assistant message (or the part of it a stream line adds).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseMessage {
    pub content: Option<String>,
    pub thinking: Option<String>,
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// An `/api/embed` response.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EmbedResponse {
    pub embeddings: Vec<Vec<f32>>,
}

/// An `/api/tags` response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TagsResponse {
    pub models: Vec<LocalModel>,
}

/// One locally available model.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LocalModel {
    pub name: Option<String>,
    pub model: Option<String>,
}

impl LocalModel {
    /// The model's name (`model`, else `name`).
    pub fn id(&self) -> Option<&str> {
        self.model
            .as_deref()
            .or(self.name.as_deref())
            .filter(|n| !n.is_empty())
    }
}
