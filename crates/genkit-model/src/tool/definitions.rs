//! The tool definitions a model request carries, built once per set of
//! tools and shared by every request that offers the same set: building
//! them deep-copies each tool's JSON schemas, which used to be a large part
//! of a tool-loop call.

use crate::tool::to_tool_definition;
use crate::types::ToolDefinition;
use genkit_core::tracing::SharedPiece;
use genkit_core::{DynAction, ErasedAction};
use parking_lot::RwLock;
use std::sync::{Arc, Weak};

/// How many distinct tool sets are remembered (oldest forgotten first).
const CAPACITY: usize = 64;

/// A remembered tool set. The weak references pin the tools' allocations
/// (not the tools), so an address seen here cannot be reused by another
/// action while the entry exists: pointer equality is identity.
struct Entry {
    tools: Vec<Weak<dyn ErasedAction>>,
    defs: Arc<[ToolDefinition]>,
    /// The definitions as the spans of model requests record them, encoded
    /// once for every request that offers them.
    piece: SharedPiece<Arc<[ToolDefinition]>>,
}

impl Entry {
    fn is_for(&self, tools: &[DynAction]) -> bool {
        self.tools.len() == tools.len()
            && self
                .tools
                .iter()
                .zip(tools)
                .all(|(w, t)| std::ptr::addr_eq(w.as_ptr(), Arc::as_ptr(t)))
    }
}

#[derive(Default)]
struct Cache {
    entries: Vec<Entry>,
    /// Where the next new entry goes once the cache is full.
    next: usize,
}

static CACHE: RwLock<Cache> = RwLock::new(Cache {
    entries: Vec::new(),
    next: 0,
});

/// The definitions models see for `tools`, in order.
pub fn tool_definitions(tools: &[DynAction]) -> Arc<[ToolDefinition]> {
    if let Some(e) = CACHE.read().entries.iter().find(|e| e.is_for(tools)) {
        return e.defs.clone();
    }
    let defs: Arc<[ToolDefinition]> = tools.iter().map(|t| to_tool_definition(t.desc())).collect();
    let entry = Entry {
        tools: tools.iter().map(Arc::downgrade).collect(),
        defs: defs.clone(),
        piece: SharedPiece::new(defs.clone()),
    };
    let mut cache = CACHE.write();
    if cache.entries.len() < CAPACITY {
        cache.entries.push(entry);
    } else {
        let slot = cache.next;
        cache.entries[slot] = entry;
        cache.next = (slot + 1) % CAPACITY;
    }
    defs
}

/// `defs` as a piece the spans of model requests copy (see
/// [`SharedPiece`]), if they are definitions [`tool_definitions`] still
/// remembers.
pub fn tool_definitions_piece(
    defs: &Arc<[ToolDefinition]>,
) -> Option<SharedPiece<Arc<[ToolDefinition]>>> {
    CACHE
        .read()
        .entries
        .iter()
        .find(|e| Arc::ptr_eq(&e.defs, defs))
        .map(|e| e.piece.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;

    fn tool(name: &str, description: &str) -> DynAction {
        Tool::new(name, description, |x: i64, _ctx| async move { Ok(x) }).to_dyn()
    }

    #[test]
    fn same_tools_share_definitions_and_other_tools_do_not() {
        let a = tool("cacheA", "first");
        let b = tool("cacheB", "second");
        let ab = tool_definitions(&[a.clone(), b.clone()]);
        assert!(Arc::ptr_eq(&ab, &tool_definitions(&[a.clone(), b.clone()])));
        let ba = tool_definitions(&[b.clone(), a.clone()]);
        assert!(!Arc::ptr_eq(&ab, &ba));
        assert_eq!(ba[0].name, "cacheB");
        assert_eq!(ba[1].description, "first");
    }

    #[test]
    fn a_new_tool_at_a_dropped_tools_address_gets_its_own_definition() {
        // Many short-lived tools with the same name but different
        // descriptions: each must see its own description.
        for i in 0..(CAPACITY * 3) {
            let t = tool("ephemeral", &format!("version {i}"));
            let defs = tool_definitions(std::slice::from_ref(&t));
            assert_eq!(defs[0].description, format!("version {i}"));
        }
    }
}
