//! Dynamic action providers: sources of actions resolved on demand (an MCP
//! host's tools), so actions that appear later are found without
//! re-registering anything. Genkit JS's `defineDynamicActionProvider`.
//!
//! A provider registered as `host` is the action
//! `/dynamic-action-provider/host`, and its actions have keys
//! `/dynamic-action-provider/host:<kind>/<name>`, where `<name>` may be `*`
//! (every action of the kind) or end with `*` (a prefix) when resolving
//! several at once ([`Registry::resolve_actions`]).
//!
//! [`Registry::resolve_actions`]: crate::Registry::resolve_actions

use crate::action::{ActionKind, DynAction};
use crate::error::Result;
use async_trait::async_trait;

/// The key prefix of dynamic action providers and their actions.
pub const DAP_PREFIX: &str = "/dynamic-action-provider/";

/// A source of actions the registry consults on demand.
///
/// The registry asks it on every lookup of one of its keys, so it decides
/// how long to cache (an MCP host caches a server's tools until the server
/// says they changed).
#[async_trait]
pub trait DynamicActionProvider: Send + Sync + 'static {
    /// The actions offered now, each with its category: the `<kind>` of its
    /// key. The category need not be the action's own kind (Genkit JS files
    /// multipart `tool.v2` tools under `tool`).
    async fn list(&self) -> Result<Vec<(ActionKind, DynAction)>>;
}

/// The dynamic key a name given to `generate` (or a prompt) stands for:
/// `<host>:<kind>/<name>` (Genkit JS's short form, e.g. `mcp:tool/*`) or a
/// full dynamic key; `None` for any other name.
pub fn dynamic_key_for(name: &str) -> Option<String> {
    if name.starts_with(DAP_PREFIX) {
        Some(name.to_owned())
    } else if !name.starts_with('/') && name.contains(':') {
        Some(format!("{DAP_PREFIX}{name}"))
    } else {
        None
    }
}

/// A parsed `/dynamic-action-provider/<host>:<kind>/<name>` key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicKey {
    /// The provider's name.
    pub host: String,
    /// The category.
    pub kind: ActionKind,
    /// The action name or a pattern (`*`, `prefix*`).
    pub name: String,
}

impl DynamicKey {
    /// Parses a dynamic action key; `None` for any other key.
    pub fn parse(key: &str) -> Option<DynamicKey> {
        let rest = key.strip_prefix(DAP_PREFIX)?;
        let (host, rest) = rest.split_once(':')?;
        let (kind, name) = rest.split_once('/')?;
        if host.is_empty() || name.is_empty() {
            return None;
        }
        Some(DynamicKey {
            host: host.to_owned(),
            kind: kind.parse().ok()?,
            name: name.to_owned(),
        })
    }

    /// Formats `/dynamic-action-provider/<host>:<kind>/<name>`.
    pub fn format(host: &str, kind: ActionKind, name: &str) -> String {
        format!("{DAP_PREFIX}{host}:{}/{name}", kind.as_str())
    }

    /// Whether the name is a pattern rather than one action.
    pub fn is_pattern(&self) -> bool {
        self.name.ends_with('*')
    }

    /// Whether an action named `name` matches: `*` matches all, `prefix*`
    /// names starting with `prefix`, anything else only itself.
    pub fn matches(&self, name: &str) -> bool {
        match self.name.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => name == self.name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::{Action, ActionDesc, RunOptions};
    use crate::registry::Registry;
    use parking_lot::Mutex;
    use serde_json::{Value, json};
    use std::sync::Arc;

    /// A provider whose actions can change between lookups.
    #[derive(Default)]
    struct Changing(Mutex<Vec<(ActionKind, DynAction)>>);

    #[async_trait]
    impl DynamicActionProvider for Changing {
        async fn list(&self) -> Result<Vec<(ActionKind, DynAction)>> {
            Ok(self.0.lock().clone())
        }
    }

    fn echo(kind: ActionKind, name: &str) -> DynAction {
        Action::<Value, Value>::from_desc(ActionDesc::new(kind, name), |i, _| async move { Ok(i) })
            .unwrap()
            .to_dyn()
    }

    #[tokio::test]
    async fn the_registry_resolves_dynamic_actions_on_demand() {
        let registry = Registry::new();
        let provider = Arc::new(Changing::default());
        let dap = registry
            .register_dynamic_action_provider("mcp", provider.clone())
            .unwrap();
        assert_eq!(dap.key(), "/dynamic-action-provider/mcp");
        let taken = registry.register_dynamic_action_provider("mcp", provider.clone());
        assert_eq!(
            taken.unwrap_err().status(),
            crate::StatusCode::AlreadyExists
        );
        let bad = registry.register_dynamic_action_provider("a:b", provider.clone());
        assert_eq!(
            bad.unwrap_err().status(),
            crate::StatusCode::InvalidArgument
        );
        let key = "/dynamic-action-provider/mcp:tool/fs/read";
        assert!(registry.lookup_action(key).await.unwrap().is_none());

        // Added after registration: found without re-registering.
        provider
            .0
            .lock()
            .push((ActionKind::Tool, echo(ActionKind::ToolV2, "fs/read")));
        provider
            .0
            .lock()
            .push((ActionKind::Tool, echo(ActionKind::Tool, "git/log")));
        let found = registry.lookup_action(key).await.unwrap().unwrap();
        assert_eq!(found.name(), "fs/read");
        // A child registry (a generate call's) finds them through its parent.
        let child = registry.child();
        assert!(child.lookup_action(key).await.unwrap().is_some());

        let all = child
            .resolve_actions("/dynamic-action-provider/mcp:tool/*")
            .await
            .unwrap();
        assert_eq!(all.len(), 2);
        let fs = registry
            .resolve_actions("/dynamic-action-provider/mcp:tool/fs/*")
            .await
            .unwrap();
        assert_eq!(fs.len(), 1);
        // Patterns are not one action; other categories and hosts match nothing.
        let star = "/dynamic-action-provider/mcp:tool/*";
        assert!(registry.lookup_action(star).await.unwrap().is_none());
        for none in [
            "/dynamic-action-provider/mcp:model/*",
            "/dynamic-action-provider/other:tool/*",
        ] {
            assert!(registry.resolve_actions(none).await.unwrap().is_empty());
        }
        // Plain keys resolve to the one registered action.
        assert_eq!(
            registry
                .resolve_actions("/dynamic-action-provider/mcp")
                .await
                .unwrap()
                .len(),
            1
        );

        let listed = registry.list_resolvable_actions().await;
        assert!(listed.contains_key("/dynamic-action-provider/mcp"));
        assert_eq!(listed[key].name, "fs/read");
        assert!(listed.contains_key("/dynamic-action-provider/mcp:tool/git/log"));

        let out = dap
            .run_json(Value::Null, RunOptions::default())
            .await
            .unwrap()
            .output;
        assert_eq!(out[0]["key"], json!(key));
        assert_eq!(out[1]["name"], json!("git/log"));

        // Removed later: gone.
        provider.0.lock().clear();
        assert!(registry.lookup_action(key).await.unwrap().is_none());
    }

    #[test]
    fn keys_parse_and_match() {
        let k = DynamicKey::parse("/dynamic-action-provider/mcp:tool/fs/read").unwrap();
        assert_eq!(k.host, "mcp");
        assert_eq!(k.kind, ActionKind::Tool);
        assert_eq!(k.name, "fs/read");
        assert!(!k.is_pattern());
        assert!(k.matches("fs/read") && !k.matches("fs/readx"));
        let all = DynamicKey::parse("/dynamic-action-provider/mcp:tool/*").unwrap();
        assert!(all.is_pattern() && all.matches("anything"));
        let prefix = DynamicKey::parse("/dynamic-action-provider/mcp:tool/fs/*").unwrap();
        assert!(prefix.matches("fs/write") && !prefix.matches("git/log"));
        assert_eq!(
            DynamicKey::format("mcp", ActionKind::Tool, "fs/read"),
            "/dynamic-action-provider/mcp:tool/fs/read"
        );
        assert_eq!(
            dynamic_key_for("mcp:tool/*").as_deref(),
            Some("/dynamic-action-provider/mcp:tool/*")
        );
        let full = "/dynamic-action-provider/mcp:tool/x";
        assert_eq!(dynamic_key_for(full).as_deref(), Some(full));
        assert_eq!(dynamic_key_for("add"), None);
        assert_eq!(dynamic_key_for("/tool/a:b"), None);
        for bad in [
            "/tool/x",
            "/dynamic-action-provider/mcp",
            "/dynamic-action-provider/:tool/x",
            "/dynamic-action-provider/mcp:tool/",
            "/dynamic-action-provider/mcp:nokind/x",
        ] {
            assert!(DynamicKey::parse(bad).is_none(), "{bad}");
        }
    }
}
