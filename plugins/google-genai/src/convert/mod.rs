//! Conversions between Genkit's wire types and the Gemini API's.

pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod schema;

use std::collections::HashMap;

use genkit_model::types::ToolDefinition;

/// Gemini rejects `/` in function names; Genkit tool names may hold one
/// (`plugin/tool`). Names are sent with `/` replaced by `__` and mapped back
/// on the way in.
#[derive(Debug, Clone, Default)]
pub(crate) struct ToolNames {
    original: HashMap<String, String>,
}

impl ToolNames {
    /// The names of a request's tools.
    pub fn new(tools: &[ToolDefinition]) -> Self {
        let original = tools
            .iter()
            .map(|t| (to_gemini_name(&t.name), t.name.clone()))
            .collect();
        Self { original }
    }

    /// The Genkit name of a function the model called.
    pub fn genkit_name(&self, name: &str) -> String {
        self.original
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.replace("__", "/"))
    }
}

/// The name a Genkit tool is declared (and called) under at Gemini.
pub(crate) fn to_gemini_name(name: &str) -> String {
    name.replace('/', "__")
}

/// `models/<name>`, unless the name is already a resource path
/// (`models/...`, `tunedModels/...`).
pub(crate) fn model_path(model: &str) -> String {
    if model.starts_with("models/") || model.starts_with("tunedModels/") {
        model.to_owned()
    } else {
        format!("models/{model}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths() {
        assert_eq!(model_path("gemini-2.5-flash"), "models/gemini-2.5-flash");
        assert_eq!(model_path("models/x"), "models/x");
        assert_eq!(model_path("tunedModels/t"), "tunedModels/t");
    }
}
