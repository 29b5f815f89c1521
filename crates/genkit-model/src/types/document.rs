//! [`DocumentData`] and the embedder wire types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Metadata;
use super::message::{concat_text, first_data};
use super::part::{Media, Part};

/// A document: content parts (text and media) plus metadata. Used for context
/// (`docs`), retrieval and embedding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DocumentData {
    /// The parts; Genkit expects text or media parts here.
    pub content: Vec<Part>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl DocumentData {
    /// A document holding one text part.
    pub fn from_text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Part::text(text)],
            metadata: None,
        }
    }

    /// A document holding one media part.
    pub fn from_media(url: impl Into<String>, content_type: Option<&str>) -> Self {
        Self {
            content: vec![Part::media(url, content_type)],
            metadata: None,
        }
    }

    /// Sets the metadata.
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = Some(metadata);
        self
    }

    /// All text parts concatenated.
    pub fn text(&self) -> String {
        concat_text(&self.content)
    }

    /// The media of all media parts.
    pub fn media(&self) -> impl Iterator<Item = &Media> {
        self.content.iter().filter_map(Part::as_media)
    }

    /// The first truthy data part's value.
    pub fn data(&self) -> Option<&Value> {
        first_data(&self.content)
    }
}

impl From<&str> for DocumentData {
    fn from(text: &str) -> Self {
        Self::from_text(text)
    }
}

impl From<String> for DocumentData {
    fn from(text: String) -> Self {
        Self::from_text(text)
    }
}

/// Input of an embedder action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmbedRequest {
    /// Documents to embed.
    pub input: Vec<DocumentData>,
    /// Embedder-specific options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Output of an embedder action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmbedResponse {
    /// One or more embeddings per input document, in order.
    pub embeddings: Vec<Embedding>,
}

/// One embedding vector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Embedding {
    /// The vector.
    pub embedding: Vec<f32>,
    /// Which part of the input this embeds, and other metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}
