//! What the plugin knows about models and embedders.

use genkit_model::types::ModelSupports;
use genkit_provider::wire::constrained_chat_supports;

/// The capabilities Ollama gives most chat models: multi-turn, system
/// messages, images, tools, text and JSON output, and schema-constrained
/// output (`format`). Ollama has no tool choice.
pub(crate) fn supports() -> ModelSupports {
    ModelSupports {
        tool_choice: Some(false),
        ..constrained_chat_supports()
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
