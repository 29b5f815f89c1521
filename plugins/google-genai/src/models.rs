//! The catalogue: which models and embedders the plugin knows up front, and
//! what each kind of model can do.

use genkit_model::embedder::{EmbedderInfo, EmbedderSupports};
use genkit_model::types::{ConstrainedSupport, ModelSupports};
use genkit_provider::wire::constrained_chat_supports;

/// Gemini models registered when the plugin initialises. Any other name is
/// resolved on demand.
pub const KNOWN_MODELS: &[&str] = &[
    "gemini-pro-latest",
    "gemini-flash-latest",
    "gemini-flash-lite-latest",
    "gemini-3.5-flash",
    "gemini-3.1-flash-lite",
    "gemini-3.1-pro-preview",
    "gemini-3-flash-preview",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-2.5-flash-preview-tts",
    "gemini-2.5-pro-preview-tts",
    "gemini-3.1-flash-image",
    "gemini-3-pro-image",
    "gemini-2.5-flash-image",
    "gemma-4-26b-a4b-it",
    "gemma-4-31b-it",
];

/// Embedding models registered when the plugin initialises. Any other name
/// is resolved on demand.
pub const KNOWN_EMBEDDERS: &[&str] = &[
    "gemini-embedding-001",
    "gemini-embedding-2",
    "gemini-embedding-2-preview",
];

/// The embedders that take images and video besides text.
const MULTIMODAL_EMBEDDERS: &[&str] = &["gemini-embedding-2", "gemini-embedding-2-preview"];

/// The kinds of model behind the `generateContent` API, told apart by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ModelKind {
    /// Text (and multimodal) Gemini models.
    Gemini,
    /// Speech generation (`gemini-*-tts*`).
    Tts,
    /// Image generation (`gemini-*-image*`).
    Image,
    /// Gemma open models (`gemma-*`).
    Gemma,
}

impl ModelKind {
    pub fn of(name: &str) -> Self {
        if name.starts_with("gemma-") {
            ModelKind::Gemma
        } else if name.starts_with("gemini-") && name.contains("-tts") {
            ModelKind::Tts
        } else if name.starts_with("gemini-") && name.contains("-image") {
            ModelKind::Image
        } else {
            ModelKind::Gemini
        }
    }

    /// What models of this kind can do.
    pub fn supports(self) -> ModelSupports {
        let full = constrained_chat_supports();
        match self {
            ModelKind::Gemini | ModelKind::Gemma => full,
            ModelKind::Image => ModelSupports {
                output: None,
                ..full
            },
            ModelKind::Tts => ModelSupports {
                multiturn: Some(false),
                media: Some(false),
                tools: Some(false),
                tool_choice: Some(false),
                system_role: Some(false),
                constrained: Some(ConstrainedSupport::All),
                ..ModelSupports::default()
            },
        }
    }

    /// Output modalities asked for when the config names none.
    pub fn default_modalities(self) -> Option<&'static [&'static str]> {
        match self {
            ModelKind::Tts => Some(&["AUDIO"]),
            ModelKind::Image => Some(&["TEXT", "IMAGE"]),
            ModelKind::Gemini | ModelKind::Gemma => None,
        }
    }
}

/// Capabilities of an embedding model.
pub(crate) fn embedder_info(name: &str) -> EmbedderInfo {
    let input: &[&str] = if MULTIMODAL_EMBEDDERS.contains(&name) {
        &["text", "image", "video"]
    } else {
        &["text"]
    };
    EmbedderInfo {
        label: Some(format!("Google AI - {name}")),
        dimensions: Some(3072),
        supports: Some(EmbedderSupports {
            input: Some(input.iter().map(|s| (*s).to_owned()).collect()),
            multilingual: Some(true),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        assert_eq!(ModelKind::of("gemini-2.5-flash"), ModelKind::Gemini);
        assert_eq!(
            ModelKind::of("gemini-2.5-flash-preview-tts"),
            ModelKind::Tts
        );
        assert_eq!(ModelKind::of("gemini-2.5-flash-image"), ModelKind::Image);
        assert_eq!(ModelKind::of("gemma-4-31b-it"), ModelKind::Gemma);
        assert_eq!(ModelKind::Tts.supports().tools, Some(false));
        assert_eq!(
            ModelKind::Image.default_modalities(),
            Some(&["TEXT", "IMAGE"][..])
        );
    }
}
