//! The `Genkit` instance and its builder. Its methods live by capability
//! in the `*_methods` modules: defining actions, prompts, generating,
//! agents, evaluation, retrieval.

use crate::generate::define_generate_action;
use genkit_core::{Plugin, Registry, Result};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// A Genkit instance: a registry holding your flows, models, tools and
/// prompts, plus the framework's own actions (`/util/generate`). Cheap to
/// clone (shared).
#[derive(Clone, Debug)]
pub struct Genkit {
    registry: Registry,
}

/// Configures a [`Genkit`].
#[derive(Default)]
pub struct GenkitBuilder {
    plugins: Vec<Arc<dyn Plugin>>,
    default_model: Option<String>,
    prompt_dir: Option<Option<PathBuf>>,
}

impl GenkitBuilder {
    /// Adds a plugin (initialised lazily, on first use).
    pub fn plugin(mut self, plugin: impl Plugin) -> Self {
        self.plugins.push(Arc::new(plugin));
        self
    }

    /// The model `generate` uses when the options name none.
    pub fn default_model(mut self, name: impl Into<String>) -> Self {
        self.default_model = Some(name.into());
        self
    }

    /// Loads `.prompt` files from `dir` (default `./prompts`, skipped when absent).
    pub fn prompt_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.prompt_dir = Some(Some(dir.into()));
        self
    }

    /// Does not load prompt files.
    pub fn no_prompt_dir(mut self) -> Self {
        self.prompt_dir = Some(None);
        self
    }

    /// Builds the instance. Fails if two plugins share a name, or if a prompt
    /// file is malformed.
    pub fn build(self) -> Result<Genkit> {
        let registry = Registry::new();
        for p in self.plugins {
            registry.register_plugin(p)?;
        }
        if let Some(m) = self.default_model {
            registry.register_value("defaultModel", "defaultModel", Value::from(m));
        }
        define_generate_action(&registry)?;
        let (dir, required) = match self.prompt_dir {
            None => (
                Some(PathBuf::from(crate::prompt::DEFAULT_PROMPT_DIR)),
                false,
            ),
            Some(Some(d)) => (Some(d), true),
            Some(None) => (None, false),
        };
        if let Some(dir) = dir {
            if required && !dir.is_dir() {
                return Err(genkit_core::Error::invalid_argument(format!(
                    "prompt directory {} does not exist",
                    dir.display()
                )));
            }
            // An absent default folder loads nothing, but is remembered so
            // that a missing prompt's error can say where it was looked for.
            crate::prompt::load_prompt_folder(&registry, &dir, None)?;
        }
        Ok(Genkit { registry })
    }
}

/// The value of a registration that cannot fail in a correct program; a
/// taken or invalid name panics at the caller's `define_*` call.
#[track_caller]
pub(crate) fn registered<T>(what: &str, name: &str, r: Result<T>) -> T {
    match r {
        Ok(value) => value,
        Err(e) => panic!("defining {what} `{name}`: {e}"),
    }
}

impl AsRef<Registry> for Genkit {
    fn as_ref(&self) -> &Registry {
        &self.registry
    }
}

impl Genkit {
    /// Starts configuring an instance.
    pub fn builder() -> GenkitBuilder {
        GenkitBuilder::default()
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The instance over an existing registry (e.g. the one an action's
    /// context carries: see [`ActionCtxExt::genkit`](crate::ActionCtxExt::genkit)).
    pub fn from_registry(registry: Registry) -> Self {
        Self { registry }
    }
}
