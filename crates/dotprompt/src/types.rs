//! Wire types shared with other Dotprompt implementations (camelCase JSON,
//! absent optionals omitted).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object.
pub type JsonMap = Map<String, Value>;

/// A tool a prompt may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDefinition {
    /// Unique tool name.
    pub name: String,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the tool's input.
    #[serde(default)]
    pub input_schema: Value,
    /// JSON Schema of the tool's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// The `input` section of prompt metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptInput {
    /// Default values for template variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<JsonMap>,
    /// Input schema, as Picoschema or JSON Schema (JSON Schema once resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Any other keys, kept as written.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// The `output` section of prompt metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptOutput {
    /// Desired output format, e.g. `json` or `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Output schema, as Picoschema or JSON Schema (JSON Schema once resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Any other keys, kept as written.
    #[serde(flatten)]
    pub extra: JsonMap,
}

/// Metadata of a prompt: its frontmatter, merged with defaults and options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMetadata {
    /// Prompt name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Variant name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// Version identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Model name, e.g. `googleai/gemini-2.5-flash`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Names of tools; after resolution, only those that could not be resolved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Resolved tool definitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_defs: Option<Vec<ToolDefinition>>,
    /// Model configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<JsonMap>,
    /// Input defaults and schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<PromptInput>,
    /// Output format and schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<PromptOutput>,
    /// The whole frontmatter as parsed, before any processing. Shared:
    /// copies of the metadata (every rendered prompt has one) do not copy
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Arc<JsonMap>>,
    /// Namespaced frontmatter keys: `a.b.c: v` becomes `{"a.b": {"c": v}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ext: Option<BTreeMap<String, JsonMap>>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

impl PromptMetadata {
    /// Overlays `other` on `self`: every field `other` sets replaces ours,
    /// except `config`, which is merged key by key (shallowly).
    pub fn merge(&mut self, other: &PromptMetadata) {
        fn set<T: Clone>(ours: &mut Option<T>, theirs: &Option<T>) {
            if theirs.is_some() {
                ours.clone_from(theirs);
            }
        }
        let mut config = self.config.take().unwrap_or_default();
        if let Some(extra) = &other.config {
            config.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        set(&mut self.name, &other.name);
        set(&mut self.variant, &other.variant);
        set(&mut self.version, &other.version);
        set(&mut self.description, &other.description);
        set(&mut self.model, &other.model);
        set(&mut self.tools, &other.tools);
        set(&mut self.tool_defs, &other.tool_defs);
        set(&mut self.input, &other.input);
        set(&mut self.output, &other.output);
        set(&mut self.raw, &other.raw);
        set(&mut self.ext, &other.ext);
        set(&mut self.metadata, &other.metadata);
        self.config = Some(config);
    }
}

/// A prompt split into metadata and its Handlebars template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedPrompt {
    /// Metadata from the frontmatter.
    #[serde(flatten)]
    pub meta: PromptMetadata,
    /// The template body (trimmed when there was frontmatter).
    pub template: String,
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The end user.
    User,
    /// The model.
    Model,
    /// A tool's response.
    Tool,
    /// System instructions.
    System,
}

impl Role {
    /// Parses a role name as written in `{{role "..."}}`.
    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "user" => Some(Role::User),
            "model" => Some(Role::Model),
            "tool" => Some(Role::Tool),
            "system" => Some(Role::System),
            _ => None,
        }
    }
}

/// A media reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    /// URL (possibly a `data:` URL).
    pub url: String,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// A request from the model to call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// Tool name.
    pub name: String,
    /// Tool input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Value>,
    /// Correlation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResponse {
    /// Tool name.
    pub name: String,
    /// Tool output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Correlation id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#ref: Option<String>,
}

/// A text part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A media part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaPart {
    /// The media reference.
    pub media: Media,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A structured-data part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataPart {
    /// The data.
    pub data: Value,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A tool-request part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRequestPart {
    /// The request.
    pub tool_request: ToolRequest,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A tool-response part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResponsePart {
    /// The response.
    pub tool_response: ToolResponse,
    /// Part metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A placeholder part (e.g. the start of a `{{section}}`), carrying only
/// metadata with `pending: true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PendingPart {
    /// Metadata: `{"purpose": ..., "pending": true}`.
    pub metadata: JsonMap,
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Part {
    /// Text.
    Text(TextPart),
    /// Media reference.
    Media(MediaPart),
    /// Structured data.
    Data(DataPart),
    /// Tool request.
    ToolRequest(ToolRequestPart),
    /// Tool response.
    ToolResponse(ToolResponsePart),
    /// Pending placeholder.
    Pending(PendingPart),
    /// Any other kind of part, kept as written.
    Other(JsonMap),
}

impl Part {
    /// A plain text part.
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text(TextPart {
            text: text.into(),
            metadata: None,
        })
    }
}

/// A message in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who sent it.
    pub role: Role,
    /// Its content.
    pub content: Vec<Part>,
    /// Message metadata (history messages get `purpose: "history"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// A document passed to a prompt (e.g. retrieved context).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Its content.
    pub content: Vec<Part>,
    /// Document metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<JsonMap>,
}

/// The data a prompt is rendered with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataArgument {
    /// Template variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<JsonMap>,
    /// Documents, visible as `@metadata.docs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<Vec<Document>>,
    /// Conversation history, inserted by `{{history}}` or automatically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Message>>,
    /// Extra `@`-variables: `{"state": ...}` is visible as `@state`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<JsonMap>,
}

/// A rendered prompt: resolved metadata plus the messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RenderedPrompt {
    /// Resolved metadata (without `input`, which no longer applies).
    #[serde(flatten)]
    pub meta: PromptMetadata,
    /// The messages.
    pub messages: Vec<Message>,
}
