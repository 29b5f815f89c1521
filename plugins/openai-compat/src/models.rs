//! What the plugin knows about models and embedders: names, labels,
//! capabilities, and the wire details that differ between them.

use genkit_model::types::{ConstrainedSupport, ModelSupports};
use genkit_provider::ModelSpec as KitSpec;
pub use genkit_provider::plugin::EmbedderSpec;
use genkit_provider::plugin::Spec;
use genkit_provider::wire::chat_supports;
use std::ops::Deref;

/// Which body field carries a token limit given as `maxOutputTokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenLimitField {
    /// `max_tokens` (classic chat models and most compatible servers).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (OpenAI reasoning models, which reject `max_tokens`).
    MaxCompletionTokens,
}

impl TokenLimitField {
    /// The field name on the wire.
    pub fn wire_name(self) -> &'static str {
        match self {
            TokenLimitField::MaxTokens => "max_tokens",
            TokenLimitField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// The field OpenAI expects for a model named `name`: reasoning models
    /// (`o1…`, `o3…`, `o4…`, `gpt-5…`) take `max_completion_tokens`.
    pub fn for_model_name(name: &str) -> Self {
        let reasoning = ["o1", "o3", "o4", "gpt-5"].iter().any(|p| {
            name.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
        });
        if reasoning {
            TokenLimitField::MaxCompletionTokens
        } else {
            TokenLimitField::MaxTokens
        }
    }
}

/// A chat model the plugin offers: the kit's [`genkit_provider::ModelSpec`]
/// (name, label, capabilities, read through this one) and where
/// `maxOutputTokens` goes.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    spec: genkit_provider::ModelSpec,
    /// Where `maxOutputTokens` goes.
    pub token_limit: TokenLimitField,
}

impl ModelSpec {
    /// A model with the capabilities most OpenAI-compatible chat models have:
    /// multi-turn, images, tools, tool choice, system messages, text and JSON
    /// output. Constrained (schema-enforced) output is not assumed: Genkit
    /// then adds the schema to the prompt instead. The token-limit field
    /// follows [`TokenLimitField::for_model_name`].
    pub fn new(name: impl Into<String>) -> Self {
        let spec = genkit_provider::ModelSpec::new(name).supports(chat_supports());
        let token_limit = TokenLimitField::for_model_name(&spec.name);
        Self { spec, token_limit }
    }

    /// This spec with the kit's part changed by `change`.
    fn with(mut self, change: impl FnOnce(KitSpec) -> KitSpec) -> Self {
        self.spec = change(self.spec);
        self
    }

    /// Sets the label.
    pub fn label(self, label: impl Into<String>) -> Self {
        self.with(|s| s.label(label))
    }

    /// Sets the capabilities.
    pub fn supports(self, supports: ModelSupports) -> Self {
        self.with(|s| s.supports(supports))
    }

    /// Declares native constrained output (`response_format` with a schema).
    pub fn constrained(self, constrained: ConstrainedSupport) -> Self {
        self.with(|s| s.constrained(constrained))
    }

    /// Declares whether the model accepts images.
    pub fn media(self, media: bool) -> Self {
        self.with(|s| s.media(media))
    }

    /// Sets where `maxOutputTokens` goes.
    pub fn token_limit(self, field: TokenLimitField) -> Self {
        Self {
            token_limit: field,
            ..self
        }
    }
}

impl Deref for ModelSpec {
    type Target = KitSpec;

    fn deref(&self) -> &KitSpec {
        &self.spec
    }
}

impl Spec for ModelSpec {
    fn name(&self) -> &str {
        self.spec.name()
    }

    fn unlisted(name: &str) -> Self {
        ModelSpec::new(name)
    }
}

impl AsRef<KitSpec> for ModelSpec {
    fn as_ref(&self) -> &KitSpec {
        &self.spec
    }
}

fn openai_model(name: &str, label: &str, media: bool) -> ModelSpec {
    ModelSpec::new(name)
        .label(format!("OpenAI - {label}"))
        .media(media)
        .constrained(ConstrainedSupport::All)
}

/// OpenAI's chat models, with their capabilities.
pub fn openai_models() -> Vec<ModelSpec> {
    vec![
        openai_model("gpt-5", "GPT-5", true),
        openai_model("gpt-5-mini", "GPT-5 mini", true),
        openai_model("gpt-5-nano", "GPT-5 nano", true),
        openai_model("gpt-4.1", "GPT-4.1", true),
        openai_model("gpt-4.1-mini", "GPT-4.1 mini", true),
        openai_model("gpt-4.1-nano", "GPT-4.1 nano", true),
        openai_model("gpt-4o", "GPT-4o", true),
        openai_model("gpt-4o-mini", "GPT-4o mini", true),
        openai_model("o4-mini", "o4-mini", true),
        openai_model("o3", "o3", true),
        openai_model("o3-mini", "o3-mini", false),
        openai_model("o1", "o1", true),
        openai_model("gpt-4-turbo", "GPT-4 Turbo", true),
        openai_model("gpt-3.5-turbo", "GPT-3.5 Turbo", false),
    ]
}

/// OpenAI's embedding models, with their dimensions.
pub fn openai_embedders() -> Vec<EmbedderSpec> {
    vec![
        EmbedderSpec::new("text-embedding-3-small")
            .label("OpenAI - text-embedding-3-small")
            .dimensions(1536),
        EmbedderSpec::new("text-embedding-3-large")
            .label("OpenAI - text-embedding-3-large")
            .dimensions(3072),
        EmbedderSpec::new("text-embedding-ada-002")
            .label("OpenAI - text-embedding-ada-002")
            .dimensions(1536),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_limit_field_by_name() {
        for n in ["o1", "o3-mini", "o4-mini", "gpt-5", "gpt-5-nano", "gpt-5.1"] {
            assert_eq!(
                TokenLimitField::for_model_name(n),
                TokenLimitField::MaxCompletionTokens,
                "{n}"
            );
        }
        for n in ["gpt-4o", "smollm2", "o1x", "gpt-50", "llama3"] {
            assert_eq!(
                TokenLimitField::for_model_name(n),
                TokenLimitField::MaxTokens,
                "{n}"
            );
        }
    }

    #[test]
    fn catalogue_is_consistent() {
        let models = openai_models();
        assert!(models.iter().all(|m| m.supports.tools == Some(true)));
        assert!(
            models
                .iter()
                .all(|m| m.supports.constrained == Some(ConstrainedSupport::All))
        );
        let o3 = models.iter().find(|m| m.name == "o3-mini").unwrap();
        assert_eq!(o3.supports.media, Some(false));
        assert_eq!(o3.token_limit, TokenLimitField::MaxCompletionTokens);
        assert!(openai_embedders().iter().all(|e| e.dimensions.is_some()));
    }
}
