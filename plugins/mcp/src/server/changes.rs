//! `list_changed` notifications: once a client has initialised, the server
//! watches its registry and, when tools, prompts or resources are
//! registered later, sends `notifications/tools/list_changed` (or the
//! prompts / resources one), as its capabilities declare.

use genkit_core::{ActionKind, Registry, WeakRegistry};
use rmcp::RoleServer;
use rmcp::service::Peer;
use std::collections::BTreeSet;
use std::time::Duration;

/// How often a watcher checks that its client is still connected when the
/// registry is quiet.
const LIVENESS: Duration = Duration::from_secs(2);

/// The keys of the registry's tools, prompts and resources.
#[derive(Default, PartialEq)]
struct Listed {
    tools: BTreeSet<String>,
    prompts: BTreeSet<String>,
    resources: BTreeSet<String>,
}

impl Listed {
    fn of(registry: &Registry) -> Self {
        let mut listed = Listed::default();
        for (key, action) in registry.registered_actions() {
            match action.desc().kind {
                ActionKind::Tool | ActionKind::ToolV2 => listed.tools.insert(key),
                ActionKind::Prompt => listed.prompts.insert(key),
                ActionKind::Resource => listed.resources.insert(key),
                _ => false,
            };
        }
        listed
    }
}

/// Watches `registry` for `peer` until the client disconnects or the
/// registry is dropped (the watcher holds it weakly).
pub(super) fn watch(registry: &Registry, peer: Peer<RoleServer>) {
    let mut changes = registry.subscribe_changes();
    let mut seen = Listed::of(registry);
    let registry: WeakRegistry = registry.downgrade();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep(LIVENESS) => {
                    if peer.is_transport_closed() {
                        return;
                    }
                    continue;
                }
            }
            let Some(registry) = registry.upgrade() else {
                return;
            };
            let now = Listed::of(&registry);
            drop(registry);
            if now == seen {
                continue;
            }
            let sent = async {
                if now.tools != seen.tools {
                    peer.notify_tool_list_changed().await?;
                }
                if now.prompts != seen.prompts {
                    peer.notify_prompt_list_changed().await?;
                }
                if now.resources != seen.resources {
                    peer.notify_resource_list_changed().await?;
                }
                Ok::<(), rmcp::service::ServiceError>(())
            };
            if let Err(e) = sent.await {
                tracing::debug!("MCP server: a client is gone, no more list changes for it: {e}");
                return;
            }
            seen = now;
        }
    });
}
