//! The built-in middleware as a plugin: what an app installs, as a Genkit
//! JS app installs `@genkit-ai/middleware`'s definitions with their
//! `.plugin()`, to have them registered by name (usable from requests and
//! prompt files, listed by the Reflection API) without further calls.

use crate::{define_builtin_middleware, define_tool_approval};
use async_trait::async_trait;
use genkit_core::{DynAction, Plugin, Registry, Result};
use std::fmt;
use std::sync::Arc;

/// Registers more named middleware when the plugin is added.
type Definer = Arc<dyn Fn(&Registry) -> Result<()> + Send + Sync>;

/// A plugin (named [`MiddlewarePlugin::NAME`]) registering `retry`,
/// `fallback`, `filesystem`, `skills` and `toolApproval` by name as soon as
/// it is added to a registry, plus what [`with`](MiddlewarePlugin::with)
/// adds. It contributes no actions.
///
/// ```
/// use genkit_core::Registry;
/// use genkit_middleware::middleware_plugin;
/// use std::sync::Arc;
///
/// let registry = Registry::new();
/// registry.register_plugin(Arc::new(middleware_plugin())).unwrap();
/// assert!(registry.list_values("middleware").contains_key("filesystem"));
/// ```
#[derive(Clone, Default)]
pub struct MiddlewarePlugin {
    more: Vec<Definer>,
}

impl MiddlewarePlugin {
    /// The plugin's name (its namespace, which holds no actions).
    pub const NAME: &'static str = "middleware";

    /// The built-in middleware.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also registers what `define` registers (other named middleware, such
    /// as the agent crate's `agents` and `artifacts`).
    pub fn with(
        mut self,
        define: impl Fn(&Registry) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.more.push(Arc::new(define));
        self
    }
}

impl fmt::Debug for MiddlewarePlugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiddlewarePlugin")
            .field("more", &self.more.len())
            .finish()
    }
}

/// The built-in middleware as a plugin: `retry`, `fallback`, `filesystem`,
/// `skills` and `toolApproval`.
pub fn middleware_plugin() -> MiddlewarePlugin {
    MiddlewarePlugin::new()
}

#[async_trait]
impl Plugin for MiddlewarePlugin {
    fn name(&self) -> &str {
        Self::NAME
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(Vec::new())
    }

    fn on_register(&self, registry: &Registry) -> Result<()> {
        define_builtin_middleware(registry)?;
        define_tool_approval(registry);
        for define in &self.more {
            define(registry)?;
        }
        Ok(())
    }
}
