//! Chunking: splitting texts and Markdown into pieces small enough to embed
//! and index, as documents with where they came from in their metadata.
//!
//! Sizes are counted in characters (Unicode scalar values), not bytes.
//!
//! ```
//! use genkit_retrieval::chunk::{ChunkOptions, chunk_text, markdown_documents};
//!
//! let opts = ChunkOptions::new(40, 10)?;
//! let chunks = chunk_text("One sentence here. Another one follows. And a third.", &opts);
//! assert_eq!(chunks, ["One sentence here. Another one follows.", "follows. And a third."]);
//!
//! let docs = markdown_documents("guide.md", "# Guide\n\nInstall it.\n\n## Use\n\nRun it.", &opts);
//! assert_eq!(docs[1].text(), "## Use\n\nRun it.");
//! assert_eq!(docs[1].metadata.as_ref().unwrap()["headings"], serde_json::json!(["Guide", "Use"]));
//! # Ok::<(), genkit_core::Error>(())
//! ```

mod markdown;
mod text;

pub use markdown::{MarkdownChunk, chunk_markdown};
pub use text::chunk_text;

use genkit_core::{Error, Result};
use genkit_model::types::{DocumentData, Metadata};
use serde_json::Value;

/// How big chunks are and how much consecutive ones share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkOptions {
    size: usize,
    overlap: usize,
}

impl ChunkOptions {
    /// Chunks of at most `size` characters, consecutive chunks of one text
    /// repeating up to `overlap` characters (whole words where there are
    /// words). `INVALID_ARGUMENT` when `size` is 0 or `overlap >= size`
    /// (no chunk could make progress).
    pub fn new(size: usize, overlap: usize) -> Result<Self> {
        if size == 0 {
            return Err(Error::invalid_argument(
                "chunk size must be at least 1 character",
            ));
        }
        if overlap >= size {
            return Err(Error::invalid_argument(format!(
                "chunk overlap ({overlap}) must be smaller than the chunk size ({size})"
            )));
        }
        Ok(Self { size, overlap })
    }

    /// The largest chunk, in characters.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The most characters consecutive chunks share.
    pub fn overlap(&self) -> usize {
        self.overlap
    }
}

fn chunk_metadata(source: &str, index: usize) -> Metadata {
    let mut m = Metadata::new();
    m.insert("source".into(), Value::from(source));
    m.insert("chunk".into(), Value::from(index));
    m
}

/// `text` chunked into documents, each with metadata `source` and `chunk`
/// (its position).
pub fn text_documents(source: &str, text: &str, opts: &ChunkOptions) -> Vec<DocumentData> {
    chunk_text(text, opts)
        .into_iter()
        .enumerate()
        .map(|(i, t)| DocumentData::from_text(t).with_metadata(chunk_metadata(source, i)))
        .collect()
}

/// Markdown chunked into documents, each with metadata `source`, `chunk`
/// and `headings` (the headings it is under, outermost first).
pub fn markdown_documents(source: &str, markdown: &str, opts: &ChunkOptions) -> Vec<DocumentData> {
    chunk_markdown(markdown, opts)
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let mut m = chunk_metadata(source, i);
            m.insert(
                "headings".into(),
                Value::Array(c.headings.into_iter().map(Value::from).collect()),
            );
            DocumentData::from_text(c.text).with_metadata(m)
        })
        .collect()
}
