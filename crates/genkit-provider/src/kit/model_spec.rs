//! [`ModelSpec`]: a model description most plugins use.

use super::*;

/// A model description most plugins use: a name, a label, and the
/// capabilities that differ from the provider's defaults for that name
/// (capabilities left unset take the provider's).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// The model's name at the provider, without the plugin prefix.
    pub name: String,
    /// A human-readable label.
    pub label: Option<String>,
    /// What the model can do.
    pub supports: ModelSupports,
}

impl ModelSpec {
    /// A model with no capabilities declared (the provider fills them in).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: None,
            supports: ModelSupports::default(),
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets all capabilities.
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }

    /// Declares whether the model can call tools.
    pub fn tools(mut self, tools: bool) -> Self {
        self.supports.tools = Some(tools);
        self
    }

    /// Declares whether the model accepts images and other media.
    pub fn media(mut self, media: bool) -> Self {
        self.supports.media = Some(media);
        self
    }

    /// Declares native constrained (schema-enforced) output.
    pub fn constrained(mut self, constrained: genkit_ai::types::ConstrainedSupport) -> Self {
        self.supports.constrained = Some(constrained);
        self
    }

    /// This spec with `defaults` for every capability it leaves unset, and
    /// the label `<provider> - <name>` unless it has one.
    pub fn with_defaults(mut self, defaults: ModelSupports, provider: &str) -> Self {
        self.supports = overlay(defaults, &self.supports);
        if self.label.is_none() {
            self.label = Some(format!("{provider} - {}", self.name));
        }
        self
    }
}

/// `base` with every capability `over` sets replaced by it.
fn overlay(base: ModelSupports, over: &ModelSupports) -> ModelSupports {
    let (Ok(Value::Object(mut merged)), Ok(Value::Object(over))) =
        (serde_json::to_value(&base), serde_json::to_value(over))
    else {
        return base;
    };
    merged.extend(over.into_iter().filter(|(_, v)| !v.is_null()));
    serde_json::from_value(Value::Object(merged)).unwrap_or(base)
}

impl Spec for ModelSpec {
    fn name(&self) -> &str {
        &self.name
    }

    fn unlisted(name: &str) -> Self {
        ModelSpec::new(name)
    }
}

impl ModelDescriptor for ModelSpec {
    fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    fn supports(&self) -> &ModelSupports {
        &self.supports
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::constrained_chat_supports;

    #[test]
    fn declared_capabilities_win_over_the_provider_defaults() {
        let spec = ModelSpec::new("m")
            .tools(false)
            .with_defaults(constrained_chat_supports(), "P");
        assert_eq!(spec.supports.tools, Some(false));
        assert_eq!(spec.supports.multiturn, Some(true));
        assert_eq!(spec.label.as_deref(), Some("P - m"));
        let labelled = ModelSpec::new("m")
            .label("Mine")
            .with_defaults(ModelSupports::default(), "P");
        assert_eq!(labelled.label.as_deref(), Some("Mine"));
        assert_eq!(labelled.supports, ModelSupports::default());
    }
}
