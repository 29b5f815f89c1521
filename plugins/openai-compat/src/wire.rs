//! The Chat Completions and Embeddings wire format (only the fields the
//! plugin reads or writes). Response types are lenient: unknown fields are
//! ignored and explicit `null`s read as absent, as compatible servers vary.

use crate::config::VisualDetailLevel;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------- request

/// One message of a Chat Completions request.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ChatMessage {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: &'static str,
    /// A string, or an array of content parts (user messages with media).
    pub content: MessageContent,
    /// Tool calls of an assistant message.
    pub tool_calls: Option<Vec<ToolCall>>,
    /// The call a tool message answers.
    pub tool_call_id: Option<String>,
}

/// Message content: plain text or parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum MessageContent {
    /// Plain text (also `""` for assistant messages holding only tool calls).
    Text(String),
    /// Text, image, audio and file parts.
    Parts(Vec<ContentPart>),
}

/// One part of a user message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum ContentPart {
    /// `{"type":"text","text":…}`
    Text { text: String },
    /// `{"type":"image_url","image_url":{"url":…,"detail":…}}`
    ImageUrl { image_url: ImageUrl },
    /// `{"type":"input_audio","input_audio":{"data":…,"format":…}}`
    InputAudio { input_audio: InputAudio },
    /// `{"type":"file","file":{"filename":…,"file_data":…}}`
    File { file: FileData },
}

/// An image by URL (`https:` or `data:`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ImageUrl {
    pub url: String,
    pub detail: Option<VisualDetailLevel>,
}

/// Base64 audio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct InputAudio {
    pub data: String,
    pub format: &'static str,
}

/// An inline file (a full `data:` URL).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct FileData {
    pub filename: String,
    pub file_data: String,
}

/// A tool call, in a request (assistant history) or a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ToolCall {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

/// The function a tool call names, with its arguments as a JSON string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct FunctionCall {
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub arguments: String,
}

// ---------------------------------------------------------------- response

/// A non-streamed Chat Completions response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatCompletion {
    pub choices: Vec<Choice>,
    pub usage: Option<Usage>,
}

/// One choice of a response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Choice {
    pub index: u32,
    pub message: ResponseMessage,
    pub finish_reason: Option<String>,
}

/// The assistant message of a choice.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ResponseMessage {
    pub content: Option<String>,
    #[serde(default, alias = "reasoning")]
    pub reasoning_content: Option<String>,
    pub refusal: Option<String>,
    pub tool_calls: Option<Vec<ToolCall>>,
}

/// Token counts.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

/// Prompt token breakdown.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct PromptTokensDetails {
    pub cached_tokens: Option<u64>,
}

/// Completion token breakdown.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct CompletionTokensDetails {
    pub reasoning_tokens: Option<u64>,
}

// ---------------------------------------------------------------- stream

/// One `data:` event of a streamed response.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChatCompletionChunk {
    pub id: Option<String>,
    pub model: Option<String>,
    pub created: Option<i64>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<ChunkChoice>,
    pub usage: Option<Usage>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ChunkChoice {
    pub index: u32,
    #[serde(default, deserialize_with = "null_as_default")]
    pub delta: Delta,
    pub finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Delta {
    pub content: Option<String>,
    #[serde(default, alias = "reasoning")]
    pub reasoning_content: Option<String>,
    pub refusal: Option<String>,
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of a tool call. OpenAI sends `id` and `name` only in the first
/// fragment of each `index`; some servers repeat them in every fragment.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ToolCallDelta {
    pub index: Option<u32>,
    pub id: Option<String>,
    pub function: Option<FunctionDelta>,
}

/// A fragment of a function call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct FunctionDelta {
    pub name: Option<String>,
    pub arguments: Option<String>,
}

// ---------------------------------------------------------------- embeddings

/// An Embeddings response.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EmbeddingsResponse {
    pub data: Vec<EmbeddingData>,
}

/// One vector.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct EmbeddingData {
    #[serde(default)]
    pub index: Option<usize>,
    pub embedding: Vec<f32>,
}

/// Reads `null` as the type's default.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn explicit_nulls_read_as_absent() {
        // The shape llama-cpp-python streams for tool calls.
        let chunk: ChatCompletionChunk = serde_json::from_value(json!({
            "id": "c1", "choices": [{"index": 0, "finish_reason": null, "logprobs": null,
              "delta": {"role": null, "content": null, "function_call": null, "tool_calls": null}}]
        }))
        .unwrap();
        assert!(chunk.choices[0].delta.tool_calls.is_none());
        let chunk: ChatCompletionChunk =
            serde_json::from_value(json!({"choices": null, "usage": null})).unwrap();
        assert!(chunk.choices.is_empty());
    }

    #[test]
    fn request_parts_serialize_as_documented() {
        let m = ChatMessage {
            role: "user",
            content: MessageContent::Parts(vec![
                ContentPart::Text { text: "hi".into() },
                ContentPart::ImageUrl {
                    image_url: ImageUrl {
                        url: "https://x/y.png".into(),
                        detail: None,
                    },
                },
            ]),
            tool_calls: None,
            tool_call_id: None,
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}}
            ]})
        );
    }
}
