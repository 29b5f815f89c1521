//! The catalogue: which Claude models the plugin knows up front and what
//! they can do.

use genkit_model::types::ModelSupports;
use genkit_provider::wire::{chat_supports, constrained_chat_supports};

/// Claude models registered when the plugin initialises (a name also
/// stands for its dated snapshots, `<name>-<date>`). Any other name is
/// resolved on demand.
pub const KNOWN_MODELS: &[&str] = &[
    "claude-opus-4-8",
    "claude-opus-4-7",
    "claude-opus-4-6",
    "claude-opus-4-5",
    "claude-opus-4-1",
    "claude-opus-4",
    "claude-sonnet-5",
    "claude-sonnet-4-6",
    "claude-sonnet-4-5",
    "claude-sonnet-4",
    "claude-haiku-4-5",
    "claude-fable-5",
];

/// The known models without structured outputs (natively constrained JSON).
const WITHOUT_STRUCTURED_OUTPUT: &[&str] = &["claude-opus-4", "claude-sonnet-4"];

/// What a Claude model can do. Models outside the catalogue are assumed not
/// to support structured outputs: Genkit then asks for JSON in the prompt.
pub(crate) fn supports(name: &str) -> ModelSupports {
    // The first match wins: `claude-opus-4-5-<date>` is `claude-opus-4-5`.
    let known = KNOWN_MODELS
        .iter()
        .find(|n| name == **n || name.starts_with(&format!("{n}-")));
    let constrained = known.is_some_and(|n| !WITHOUT_STRUCTURED_OUTPUT.contains(n));
    if constrained {
        return constrained_chat_supports();
    }
    ModelSupports {
        output: Some(vec!["text".into()]),
        ..chat_supports()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::ConstrainedSupport;

    #[test]
    fn structured_output_support_by_name() {
        assert_eq!(
            supports("claude-sonnet-4-5").constrained,
            Some(ConstrainedSupport::All)
        );
        assert_eq!(
            supports("claude-sonnet-4-5-20250929").constrained,
            Some(ConstrainedSupport::All)
        );
        assert_eq!(supports("claude-sonnet-4").constrained, None);
        assert_eq!(supports("claude-3-haiku").constrained, None);
        assert_eq!(supports("claude-3-haiku").tools, Some(true));
    }
}
