//! Plugins: bundles of actions (models, embedders, ...) contributed under a
//! namespace and initialised lazily, exactly once.

use crate::action::{ActionDesc, ActionKind, DynAction};
use crate::error::Result;
use crate::registry::Registry;
use async_trait::async_trait;

/// A provider of actions under the namespace [`name`](Plugin::name): its
/// actions have keys `/kind/<name>/...`.
///
/// The registry calls [`init`](Plugin::init) once, on the first lookup in the
/// plugin's namespace or the first full listing; [`resolve`](Plugin::resolve)
/// on a lookup of an action `init` did not return; and
/// [`list_actions`](Plugin::list_actions) to show what the plugin offers
/// without initialising it.
#[async_trait]
pub trait Plugin: Send + Sync + 'static {
    /// The namespace, e.g. `openai`.
    fn name(&self) -> &str;

    /// Returns the actions to register up front. Runs once. Action names must
    /// start with `<name>/`.
    async fn init(&self, registry: &Registry) -> Result<Vec<DynAction>>;

    /// Builds one action on demand (`name` is without the plugin prefix:
    /// `gpt-4o` for `/model/openai/gpt-4o`). `Ok(None)` if it does not exist.
    async fn resolve(
        &self,
        _registry: &Registry,
        _kind: ActionKind,
        _name: &str,
    ) -> Result<Option<DynAction>> {
        Ok(None)
    }

    /// Describes the actions the plugin can provide, without initialising it.
    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(Vec::new())
    }

    /// Registers, at once when the plugin is added to a registry, what must
    /// be there before any lookup: named values and objects such as
    /// middleware definitions (Genkit JS's `GenkitPluginV2.middleware()`),
    /// which are listed and resolved without initialising plugins. Runs once,
    /// before [`init`](Plugin::init); an error keeps the plugin out of the
    /// registry. Default: nothing.
    fn on_register(&self, _registry: &Registry) -> Result<()> {
        Ok(())
    }
}
