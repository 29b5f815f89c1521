//! The retriever, indexer and reranker wire types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Metadata;
use super::document::DocumentData;
use super::part::Part;

/// Input of a retriever action (Genkit's `RetrieverRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrieverRequest {
    /// What to look for.
    pub query: DocumentData,
    /// Retriever-specific options (the retriever's `customOptions` schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Output of a retriever action (Genkit's `RetrieverResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RetrieverResponse {
    /// The documents found, best first.
    pub documents: Vec<DocumentData>,
}

impl RetrieverResponse {
    /// A response holding `documents`.
    pub fn new(documents: Vec<DocumentData>) -> Self {
        Self { documents }
    }
}

impl From<Vec<DocumentData>> for RetrieverResponse {
    fn from(documents: Vec<DocumentData>) -> Self {
        Self { documents }
    }
}

/// Input of an indexer action (Genkit JS's `IndexerRequestSchema`; the
/// shared schema has no definition for it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IndexerRequest {
    /// Documents to store.
    pub documents: Vec<DocumentData>,
    /// Indexer-specific options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Options most retrievers take (Genkit's `CommonRetrieverOptions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommonRetrieverOptions {
    /// Number of documents to retrieve.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
}

/// Options most rerankers take (Genkit's `CommonRerankerOptions`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommonRerankerOptions {
    /// Number of documents to rerank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
}

/// Input of a reranker action (Genkit's `RerankerRequest`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RerankerRequest {
    /// What the documents are ranked against.
    pub query: DocumentData,
    /// The documents to rank.
    pub documents: Vec<DocumentData>,
    /// Reranker-specific options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// Output of a reranker action (Genkit's `RerankerResponse`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RerankerResponse {
    /// The documents with their scores, best first.
    pub documents: Vec<RankedDocumentData>,
}

impl From<Vec<RankedDocumentData>> for RerankerResponse {
    fn from(documents: Vec<RankedDocumentData>) -> Self {
        Self { documents }
    }
}

/// A document with a relevance score (Genkit's `RankedDocumentData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankedDocumentData {
    /// The parts (text and media).
    pub content: Vec<Part>,
    /// The score, and the document's other metadata.
    pub metadata: RankedDocumentMetadata,
}

impl RankedDocumentData {
    /// `document` ranked with `score` (its metadata kept beside the score).
    pub fn new(document: DocumentData, score: f64) -> Self {
        let mut rest = document.metadata.unwrap_or_default();
        rest.remove("score");
        Self {
            content: document.content,
            metadata: RankedDocumentMetadata { score, rest },
        }
    }

    /// The score.
    pub fn score(&self) -> f64 {
        self.metadata.score
    }

    /// The document again, the score in its metadata as `score`.
    pub fn into_document(self) -> DocumentData {
        let mut metadata = self.metadata.rest;
        metadata.insert("score".into(), Value::from(self.metadata.score));
        DocumentData {
            content: self.content,
            metadata: Some(metadata),
        }
    }
}

/// A ranked document's metadata: `score` and anything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RankedDocumentMetadata {
    /// The relevance score (higher is more relevant).
    pub score: f64,
    /// The other metadata.
    #[serde(flatten)]
    pub rest: Metadata,
}
