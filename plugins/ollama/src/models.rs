//! What the plugin knows about models and embedders.

use genkit_ai::types::{ConstrainedSupport, ModelSupports};
pub use genkit_provider::plugin::EmbedderSpec;
use genkit_provider::plugin::Spec;

/// A chat model the plugin offers.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// The model's name on the server (`llama3.2`, `qwen3:4b`), without the
    /// plugin prefix.
    pub name: String,
    /// A human-readable label.
    pub label: Option<String>,
    /// What the model can do.
    pub supports: ModelSupports,
}

impl ModelSpec {
    /// A model with the capabilities Ollama gives most chat models:
    /// multi-turn, system messages, images, tools, text and JSON output, and
    /// schema-constrained output (`format`). Ollama has no tool choice.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: None,
            supports: ModelSupports {
                multiturn: Some(true),
                media: Some(true),
                tools: Some(true),
                system_role: Some(true),
                output: Some(vec!["text".into(), "json".into()]),
                constrained: Some(ConstrainedSupport::All),
                tool_choice: Some(false),
                ..ModelSupports::default()
            },
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets the capabilities.
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }

    /// Declares whether the model can call tools.
    pub fn tools(mut self, tools: bool) -> Self {
        self.supports.tools = Some(tools);
        self
    }

    /// Declares whether the model accepts images.
    pub fn media(mut self, media: bool) -> Self {
        self.supports.media = Some(media);
        self
    }
}

impl Spec for ModelSpec {
    fn name(&self) -> &str {
        &self.name
    }

    fn unlisted(name: &str) -> Self {
        ModelSpec::new(name)
    }
}

/// Whether a model listed by `/api/tags` looks like an embedding model (the
/// API does not say; Genkit goes by the name).
pub(crate) fn looks_like_embedder(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.contains("embed") || lower.contains("minilm") || lower.starts_with("bge-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedder_names() {
        for n in [
            "nomic-embed-text:latest",
            "mxbai-embed-large",
            "all-minilm:l6-v2",
            "bge-m3",
        ] {
            assert!(looks_like_embedder(n), "{n}");
        }
        for n in ["llama3.2:latest", "qwen3:4b", "gemma3"] {
            assert!(!looks_like_embedder(n), "{n}");
        }
    }
}
