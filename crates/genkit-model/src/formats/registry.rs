//! Formats in the registry (Genkit's `defineFormat`): [`define_format`] adds
//! one, [`FormatSource`] finds one by name. The built-in formats are always
//! resolvable; a format defined under a built-in name replaces it for that
//! registry (and its children).

use super::{Format, FormatError, Formats};
use genkit_core::Registry;
use serde_json::json;
use std::sync::{Arc, OnceLock};

/// The registry object kind (and `/api/values?type=format` kind) of formats.
const FORMAT_KIND: &str = "format";

/// The built-in formats, shared by every lookup.
pub fn builtin_formats() -> &'static Formats {
    static FORMATS: OnceLock<Formats> = OnceLock::new();
    FORMATS.get_or_init(Formats::default)
}

/// Somewhere formats are found by name: a [`Formats`] set or a [`Registry`].
pub trait FormatSource {
    /// The format called `name`.
    fn format(&self, name: &str) -> Option<Arc<dyn Format>>;

    /// The format for `format` / `has_schema`: the named one; `json` when
    /// there is a schema but no name; none otherwise. An unknown name is
    /// [`FormatError::UnknownFormat`].
    fn resolve_format(
        &self,
        format: Option<&str>,
        has_schema: bool,
    ) -> Result<Option<Arc<dyn Format>>, FormatError> {
        match super::resolve_format_name(format, has_schema) {
            None => Ok(None),
            Some(name) => self
                .format(name)
                .map(Some)
                .ok_or_else(|| FormatError::UnknownFormat(name.to_owned())),
        }
    }
}

impl FormatSource for Formats {
    fn format(&self, name: &str) -> Option<Arc<dyn Format>> {
        self.get(name)
    }
}

/// Formats defined in the registry (or an ancestor), then the built-ins.
impl FormatSource for Registry {
    fn format(&self, name: &str) -> Option<Arc<dyn Format>> {
        self.lookup_object::<Arc<dyn Format>>(FORMAT_KIND, name)
            .map(|f| (*f).clone())
            .or_else(|| builtin_formats().get(name))
    }
}

/// Registers an output format under its name, so `generate`, streaming,
/// `/util/generate` requests and prompts can ask for it
/// (`output.format: "<name>"`); it is listed under `/api/values?type=format`.
/// A later definition under the same name replaces the earlier one.
pub fn define_format(registry: &Registry, format: impl Format + 'static) -> Arc<dyn Format> {
    let format: Arc<dyn Format> = Arc::new(format);
    let name = format.name().to_owned();
    let config = format.config();
    registry.register_object(FORMAT_KIND, &name, Arc::new(format.clone()));
    registry.register_value(
        FORMAT_KIND,
        &name,
        json!({
            "name": name,
            "config": {
                "format": config.format,
                "contentType": config.content_type,
                "constrained": config.constrained,
                "defaultInstructions": config.default_instructions,
            },
        }),
    );
    format
}

/// The format called `name` in `registry` (defined ones first, then the
/// built-ins).
pub fn lookup_format(registry: &Registry, name: &str) -> Option<Arc<dyn Format>> {
    registry.format(name)
}
