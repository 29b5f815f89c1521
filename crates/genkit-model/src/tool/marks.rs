//! Tool marks: what middleware needs to know about a tool before running
//! it. A tool is marked when it is defined ([`Tool::needs_approval`],
//! [`Tool::side_effecting`], or [`ToolImpl`](super::ToolImpl)'s methods of
//! the same names); the marks live in the tool action's metadata under
//! `tool` (`{"needsApproval": true, "sideEffects": true}`), so they travel
//! with the action and show in its descriptor.
//!
//! [`tool_approval`](crate::middleware::tool_approval) interrupts calls of
//! tools that need approval; [`tool_cache`](crate::middleware::tool_cache)
//! never caches side-effecting tools.

use super::Tool;
use genkit_core::action::{ActionResult, RunOptions};
use genkit_core::{ActionDesc, DynAction, ErasedAction, Registry, Result};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The metadata key (inside the action's `tool` metadata) marking a tool
/// whose calls need a human's approval before they run.
pub const NEEDS_APPROVAL_KEY: &str = "needsApproval";

/// The metadata key (inside the action's `tool` metadata) marking a tool
/// that changes the world (restarts a service, sends a message): its
/// results are never cached.
pub const SIDE_EFFECTS_KEY: &str = "sideEffects";

fn mark(desc: &ActionDesc, key: &str) -> bool {
    desc.metadata
        .get("tool")
        .and_then(|t| t.get(key))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// Whether the tool described by `desc` is marked as needing approval.
pub fn needs_approval(desc: &ActionDesc) -> bool {
    mark(desc, NEEDS_APPROVAL_KEY)
}

/// Whether the tool described by `desc` is marked as side-effecting.
pub fn has_side_effects(desc: &ActionDesc) -> bool {
    mark(desc, SIDE_EFFECTS_KEY)
}

/// `desc` with `key: true` in its `tool` metadata (other entries kept).
pub(super) fn marked_desc(desc: &ActionDesc, key: &str) -> ActionDesc {
    let mut desc = desc.clone();
    let mut tool = match desc.metadata.get("tool") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    tool.insert(key.to_owned(), Value::Bool(true));
    desc.metadata.insert("tool".to_owned(), Value::Object(tool));
    desc
}

/// A tool action seen through an amended description: runs, registers and
/// downcasts as the action it wraps (its typed body is unchanged).
struct Marked {
    inner: DynAction,
    desc: ActionDesc,
}

impl ErasedAction for Marked {
    fn desc(&self) -> &ActionDesc {
        &self.desc
    }

    fn run_json(
        &self,
        input: Value,
        opts: RunOptions<Value>,
    ) -> futures::future::BoxFuture<'_, Result<ActionResult<Value>>> {
        self.inner.run_json(input, opts)
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self.inner.clone().into_any()
    }

    fn on_registered(&self, registry: &Registry) {
        self.inner.on_registered(registry);
    }
}

/// `action` with `key: true` in its `tool` metadata.
pub(super) fn with_mark(action: &DynAction, key: &str) -> DynAction {
    if mark(action.desc(), key) {
        return action.clone();
    }
    Arc::new(Marked {
        inner: action.clone(),
        desc: marked_desc(action.desc(), key),
    })
}

impl<I, O> Tool<I, O> {
    /// Marks this tool as needing approval: under the
    /// [`tool_approval`](crate::middleware::tool_approval) middleware its
    /// calls interrupt before they run. Mark a tool before registering it
    /// ([`register`](Self::register)) or pass it to `generate` by value:
    /// a copy registered earlier keeps no marks.
    pub fn needs_approval(self) -> Self {
        self.marked(NEEDS_APPROVAL_KEY)
    }

    /// Marks this tool as side-effecting: the
    /// [`tool_cache`](crate::middleware::tool_cache) middleware never caches
    /// its results. As with [`needs_approval`](Self::needs_approval), mark
    /// before registering.
    pub fn side_effecting(self) -> Self {
        self.marked(SIDE_EFFECTS_KEY)
    }

    /// Whether this tool is marked as needing approval.
    pub fn is_approval_required(&self) -> bool {
        needs_approval(self.action.desc())
    }

    /// Whether this tool is marked as side-effecting.
    pub fn is_side_effecting(&self) -> bool {
        has_side_effects(self.action.desc())
    }

    /// Registers this tool (with its marks) as `/tool/<name>`.
    pub fn register(self, registry: &Registry) -> Result<Self> {
        registry.register(self.action.clone())?;
        Ok(self)
    }

    /// Adds entries to the tool action's metadata (Genkit JS's
    /// `ToolConfig.metadata`): they show in the action's descriptor
    /// (`/api/actions`, the Dev UI) and travel with the tool, for plugins and
    /// middleware that read them. `type` stays `"tool"`, and entries of a
    /// `tool` object join the tool's own marks without overriding them (a
    /// tool marked as needing approval stays marked). As with the marks, set
    /// metadata before registering.
    pub fn with_metadata(self, metadata: Map<String, Value>) -> Self {
        let desc = with_user_metadata(self.action.desc(), metadata);
        Self::from_dyn(Arc::new(Marked {
            inner: self.action.clone(),
            desc,
        }))
    }

    fn marked(self, key: &str) -> Self {
        Self::from_dyn(with_mark(&self.action, key))
    }
}

/// `desc` with a user's metadata merged in, the tool's own entries winning.
fn with_user_metadata(desc: &ActionDesc, metadata: Map<String, Value>) -> ActionDesc {
    let mut desc = desc.clone();
    for (key, value) in metadata {
        match (key.as_str(), value) {
            ("type", _) => {}
            ("tool", Value::Object(user)) => {
                let mut tool = match desc.metadata.get("tool") {
                    Some(Value::Object(own)) => own.clone(),
                    _ => Map::new(),
                };
                for (k, v) in user {
                    tool.entry(k).or_insert(v);
                }
                desc.metadata.insert("tool".to_owned(), Value::Object(tool));
            }
            (_, value) => {
                desc.metadata.insert(key, value);
            }
        }
    }
    desc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    #[tokio::test]
    async fn user_metadata_shows_in_the_descriptor_and_keeps_the_marks() {
        let registry = Registry::new();
        let tool = echo()
            .needs_approval()
            .with_metadata(
                serde_json::json!({
                    "owner": "ops",
                    "type": "not-a-tool",
                    "tool": {"needsApproval": false, "category": "io"},
                })
                .as_object()
                .cloned()
                .unwrap(),
            )
            .register(&registry)
            .unwrap();
        let desc = registry
            .lookup_action("/tool/echo")
            .await
            .unwrap()
            .unwrap()
            .desc()
            .clone();
        assert_eq!(desc.metadata["owner"], "ops");
        assert_eq!(desc.metadata["type"], "tool");
        assert_eq!(desc.metadata["tool"]["category"], "io");
        assert!(needs_approval(&desc));
        assert!(tool.is_approval_required());
        let out = registry
            .lookup_action("/tool/echo")
            .await
            .unwrap()
            .expect("registered")
            .run_json(Value::from("hi"), RunOptions::new())
            .await
            .unwrap();
        assert_eq!(out.output, Value::from("hi"));
    }

    fn echo() -> Tool<String, String> {
        Tool::new("echo", "Echoes.", |s: String, _ctx| async move { Ok(s) })
    }

    #[tokio::test]
    async fn marks_live_in_tool_metadata_and_the_tool_still_runs() {
        let plain = echo();
        assert!(!plain.is_approval_required() && !plain.is_side_effecting());
        let marked = echo().needs_approval().side_effecting();
        assert!(marked.is_approval_required() && marked.is_side_effecting());
        assert_eq!(
            marked.to_dyn().desc().metadata["tool"],
            serde_json::json!({"needsApproval": true, "sideEffects": true})
        );
        let out = marked
            .to_dyn()
            .run_json(Value::from("hi"), RunOptions::new())
            .await
            .unwrap();
        assert_eq!(out.output, Value::from("hi"));
        let reg = Registry::new();
        let registered = marked.register(&reg).unwrap();
        let found = reg
            .lookup_action("/tool/echo")
            .await
            .unwrap()
            .expect("registered");
        assert!(needs_approval(found.desc()));
        assert!(registered.is_side_effecting());
    }

    #[test]
    fn marking_keeps_other_tool_metadata() {
        let desc = ActionDesc::new(genkit_core::ActionKind::Tool, "t")
            .with_metadata("tool", serde_json::json!({"restartable": false}));
        let desc = marked_desc(&desc, SIDE_EFFECTS_KEY);
        assert_eq!(
            desc.metadata["tool"],
            serde_json::json!({"restartable": false, "sideEffects": true})
        );
        assert!(has_side_effects(&desc) && !needs_approval(&desc));
    }
}
