//! The Messages API's JSON shapes (`POST /v1/messages`, its stream events),
//! as far as this plugin reads or writes them. Content blocks of kinds this
//! plugin does not model are kept whole ([`AnyBlock::Other`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// The body of `POST /v1/messages`.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct MessagesRequest {
    pub model: String,
    pub max_tokens: u32,
    pub messages: Vec<WireMessage>,
    pub system: Option<Vec<AnyBlock>>,
    pub stop_sequences: Option<Vec<String>>,
    pub temperature: Option<f64>,
    pub top_k: Option<u32>,
    pub top_p: Option<f64>,
    pub tools: Option<Vec<WireTool>>,
    pub tool_choice: Option<Value>,
    pub thinking: Option<Value>,
    pub metadata: Option<Value>,
    pub output_config: Option<Object>,
    pub stream: Option<bool>,
    /// Other top-level fields from the config, passed through.
    #[serde(flatten)]
    pub extra: Object,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WireMessage {
    pub role: &'static str,
    pub content: Vec<AnyBlock>,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct WireTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A content block: one this plugin models, or any other, kept as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum AnyBlock {
    Known(Block),
    Other(Value),
}

/// The content blocks this plugin reads and writes.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block {
    Text {
        text: String,
        citations: Option<Vec<Value>>,
        cache_control: Option<Value>,
    },
    Image {
        source: Source,
        cache_control: Option<Value>,
    },
    Document {
        source: Source,
        cache_control: Option<Value>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
        cache_control: Option<Value>,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<AnyBlock>,
        is_error: Option<bool>,
        cache_control: Option<Value>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
}

impl Block {
    /// A text block without citations or cache control.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text {
            text: text.into(),
            citations: None,
            cache_control: None,
        }
    }
}

/// Where image or document bytes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Source {
    Base64 { media_type: String, data: String },
    Url { url: String },
}

/// The answer of `POST /v1/messages` (and the `message` of `message_start`).
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct MessagesResponse {
    pub id: Option<String>,
    pub model: Option<String>,
    pub content: Vec<AnyBlock>,
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
    pub usage: Usage,
    #[serde(flatten)]
    pub other: Object,
}

/// Token counts.
#[genkit_provider::skip_serializing_none]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Usage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    #[serde(flatten)]
    pub other: Object,
}

impl Usage {
    /// Takes every count `newer` reports (stream events report cumulative
    /// counts).
    pub fn update(&mut self, newer: Usage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.other.extend(newer.other);
    }
}

/// One server-sent event of a streamed message.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum StreamEvent {
    MessageStart {
        message: MessagesResponse,
    },
    ContentBlockStart {
        index: usize,
        content_block: AnyBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Usage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    /// Event types added to the API later; ignored.
    #[serde(other)]
    Unknown,
}

/// An increment to a content block.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(rename = "citations_delta")]
    Citations { citation: Value },
    /// Delta types added to the API later; ignored.
    #[serde(other)]
    Unknown,
}

/// The message-level change of `message_delta`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub(crate) struct MessageDelta {
    pub stop_reason: Option<String>,
    pub stop_sequence: Option<String>,
}

/// The `error` of an error event.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}
