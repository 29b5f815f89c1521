//! The catalogue: which Claude models the plugin knows up front and what
//! they can do.

use genkit_ai::types::ModelSupports;
use genkit_provider::wire::{chat_supports, constrained_chat_supports};

/// Claude models registered when the plugin initialises, with whether they
/// support structured outputs (natively constrained JSON). Any other name
/// is resolved on demand.
pub const KNOWN_MODELS: &[(&str, bool)] = &[
    ("claude-opus-4-8", true),
    ("claude-opus-4-7", true),
    ("claude-opus-4-6", true),
    ("claude-opus-4-5", true),
    ("claude-opus-4-1", true),
    ("claude-opus-4", false),
    ("claude-sonnet-5", true),
    ("claude-sonnet-4-6", true),
    ("claude-sonnet-4-5", true),
    ("claude-sonnet-4", false),
    ("claude-haiku-4-5", true),
    ("claude-fable-5", true),
];

/// What a Claude model can do. Models outside the catalogue are assumed not
/// to support structured outputs: Genkit then asks for JSON in the prompt.
pub(crate) fn supports(name: &str) -> ModelSupports {
    let constrained = KNOWN_MODELS
        .iter()
        .find(|(n, _)| name == *n || name.starts_with(&format!("{n}-")))
        .is_some_and(|(_, c)| *c);
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
    use genkit_ai::types::ConstrainedSupport;

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
