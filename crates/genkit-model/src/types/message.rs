//! [`Message`] and [`Role`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::part::{Media, Part, ToolRequest, ToolResponse};
use super::{Metadata, is_truthy};
use crate::extract::extract_json;

/// Who produced a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The end user (or the application on their behalf).
    User,
    /// The model.
    Model,
    /// Results of tool calls.
    Tool,
}

/// Genkit's `RoleSchema`: a string enum. (Derived, the variants' docs
/// would make it a `oneOf` of described constants, which validates the same
/// but words a wrong role differently than Genkit JS.)
impl JsonSchema for Role {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Role".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "enum": ["system", "user", "model", "tool"]
        })
    }
}

impl Role {
    /// The wire name (`system`, `user`, `model`, `tool`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Model => "model",
            Role::Tool => "tool",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Things that can become a message's content: a string, a [`Part`], or a list of either.
pub trait IntoParts {
    /// Converts into a list of parts.
    fn into_parts(self) -> Vec<Part>;
}

impl IntoParts for &str {
    fn into_parts(self) -> Vec<Part> {
        vec![Part::text(self)]
    }
}

impl IntoParts for String {
    fn into_parts(self) -> Vec<Part> {
        vec![Part::text(self)]
    }
}

impl IntoParts for &String {
    fn into_parts(self) -> Vec<Part> {
        vec![Part::text(self.as_str())]
    }
}

impl IntoParts for Part {
    fn into_parts(self) -> Vec<Part> {
        vec![self]
    }
}

impl<P: Into<Part>> IntoParts for Vec<P> {
    fn into_parts(self) -> Vec<Part> {
        self.into_iter().map(Into::into).collect()
    }
}

impl<P: Into<Part>, const N: usize> IntoParts for [P; N] {
    fn into_parts(self) -> Vec<Part> {
        self.into_iter().map(Into::into).collect()
    }
}

/// One role's turn in a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Message {
    /// Who produced it.
    pub role: Role,
    /// Its parts, in order.
    pub content: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Message {
    /// A message with `role` and `content`.
    pub fn new(role: Role, content: impl IntoParts) -> Self {
        Self {
            role,
            content: content.into_parts(),
            metadata: None,
        }
    }

    /// A user message.
    pub fn user(content: impl IntoParts) -> Self {
        Self::new(Role::User, content)
    }

    /// A model message.
    pub fn model(content: impl IntoParts) -> Self {
        Self::new(Role::Model, content)
    }

    /// A system message.
    pub fn system(content: impl IntoParts) -> Self {
        Self::new(Role::System, content)
    }

    /// A tool message.
    pub fn tool(content: impl IntoParts) -> Self {
        Self::new(Role::Tool, content)
    }

    /// Sets one metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata
            .get_or_insert_with(Default::default)
            .insert(key.into(), value);
        self
    }

    /// All text parts concatenated with no separator.
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }

    /// All reasoning parts concatenated with no separator.
    pub fn reasoning(&self) -> String {
        concat_reasoning(&self.content)
    }

    /// The first media part's media.
    pub fn media(&self) -> Option<&Media> {
        self.content.iter().find_map(Part::as_media)
    }

    /// The first data part whose value is truthy (JS semantics: not null, false, 0 or "").
    pub fn data(&self) -> Option<&Value> {
        first_data(&self.content)
    }

    /// Structured output: the first data part, else the first JSON value found in the text.
    pub fn output(&self) -> Option<Value> {
        self.data().cloned().or_else(|| extract_json(&self.text()))
    }

    /// Parts that are tool requests.
    pub fn tool_request_parts(&self) -> impl Iterator<Item = &Part> {
        self.content.iter().filter(|p| p.is_tool_request())
    }

    /// The tool requests in this message.
    pub fn tool_requests(&self) -> impl Iterator<Item = &ToolRequest> {
        self.content.iter().filter_map(Part::as_tool_request)
    }

    /// Parts that are tool responses.
    pub fn tool_response_parts(&self) -> impl Iterator<Item = &Part> {
        self.content.iter().filter(|p| p.is_tool_response())
    }

    /// The tool responses in this message.
    pub fn tool_responses(&self) -> impl Iterator<Item = &ToolResponse> {
        self.content.iter().filter_map(Part::as_tool_response)
    }

    /// Tool request parts marked as interrupts (truthy `metadata.interrupt`).
    pub fn interrupts(&self) -> impl Iterator<Item = &Part> {
        self.content.iter().filter(|p| p.is_interrupt())
    }

    /// True when the message holds at least one tool request.
    pub fn has_tool_requests(&self) -> bool {
        self.content.iter().any(Part::is_tool_request)
    }

    /// One metadata entry.
    pub fn metadata_value(&self, key: &str) -> Option<&Value> {
        self.metadata.as_ref()?.get(key)
    }
}

pub(crate) fn concat_text(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

pub(crate) fn concat_reasoning(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_reasoning).collect()
}

pub(crate) fn first_data(parts: &[Part]) -> Option<&Value> {
    parts
        .iter()
        .filter_map(Part::as_data)
        .find(|d| is_truthy(d))
}
