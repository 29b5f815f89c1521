//! Action kinds: the `type` segment of a registry key.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

macro_rules! kinds {
    ($($variant:ident => $s:literal, $doc:literal;)*) => {
        /// What an action is; the first segment of its key (`/model/...`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ActionKind {
            $(#[doc = $doc] $variant,)*
        }

        impl ActionKind {
            /// Every kind.
            pub const ALL: &'static [ActionKind] = &[$(ActionKind::$variant,)*];

            /// The kind as it appears in keys (`"executable-prompt"`).
            pub fn as_str(self) -> &'static str {
                match self { $(ActionKind::$variant => $s,)* }
            }
        }

        impl FromStr for ActionKind {
            type Err = UnknownKind;
            fn from_str(s: &str) -> Result<Self, UnknownKind> {
                match s {
                    $($s => Ok(ActionKind::$variant),)*
                    _ => Err(UnknownKind(s.to_owned())),
                }
            }
        }
    };
}

kinds! {
    Custom => "custom", "A user-defined action of no other kind.";
    DynamicActionProvider => "dynamic-action-provider", "Provides actions on demand (e.g. MCP hosts).";
    Embedder => "embedder", "Turns documents into vectors.";
    Evaluator => "evaluator", "Scores outputs.";
    ExecutablePrompt => "executable-prompt", "A prompt that renders generate options.";
    Flow => "flow", "A user workflow.";
    Indexer => "indexer", "Stores documents for retrieval.";
    Model => "model", "A generative model.";
    BackgroundModel => "background-model", "A long-running model that returns an operation.";
    CheckOperation => "check-operation", "Polls a background operation.";
    CancelOperation => "cancel-operation", "Cancels a background operation.";
    Prompt => "prompt", "A prompt that renders a model request.";
    Reranker => "reranker", "Reorders documents by relevance.";
    Retriever => "retriever", "Finds documents for a query.";
    Tool => "tool", "A function a model may call.";
    ToolV2 => "tool.v2", "A multipart tool.";
    Util => "util", "A framework utility such as `/util/generate`.";
    Resource => "resource", "Content addressed by URI.";
    Agent => "agent", "A multi-turn agent.";
    AgentSnapshot => "agent-snapshot", "Reads an agent session snapshot.";
    AgentAbort => "agent-abort", "Aborts a running agent turn.";
}

/// A string that is not an action kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action type `{0}`")]
pub struct UnknownKind(pub String);

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ActionKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ActionKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A parsed registry key: `/kind/name` or `/kind/plugin/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionKey {
    /// The kind segment.
    pub kind: ActionKind,
    /// The plugin namespace, for keys with at least three segments.
    pub plugin: Option<String>,
    /// Everything after the kind (includes the plugin prefix: `openai/gpt-4o`).
    pub name: String,
}

impl ActionKey {
    /// Parses `/kind/name` or `/kind/plugin/name...`; `None` if malformed.
    pub fn parse(key: &str) -> Option<ActionKey> {
        let rest = key.strip_prefix('/')?;
        let (kind, name) = rest.split_once('/')?;
        if name.is_empty() {
            return None;
        }
        let kind = kind.parse().ok()?;
        let plugin = name
            .split_once('/')
            .map(|(p, _)| p.to_owned())
            .filter(|p| !p.is_empty());
        Some(ActionKey {
            kind,
            plugin,
            name: name.to_owned(),
        })
    }

    /// Formats `/kind/name`.
    pub fn format(kind: ActionKind, name: &str) -> String {
        // Built by hand: `format!` costs about ten times as much, and every
        // lookup by kind and name (each model and tool of a generate call)
        // makes a key.
        let kind = kind.as_str();
        let mut key = String::with_capacity(kind.len() + name.len() + 2);
        key.push('/');
        key.push_str(kind);
        key.push('/');
        key.push_str(name);
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in ActionKind::ALL {
            assert_eq!(k.as_str().parse::<ActionKind>(), Ok(*k));
        }
        assert!("bogus".parse::<ActionKind>().is_err());
    }

    #[test]
    fn keys_parse() {
        let k = ActionKey::parse("/model/openai/gpt-4o").unwrap();
        assert_eq!(k.kind, ActionKind::Model);
        assert_eq!(k.plugin.as_deref(), Some("openai"));
        assert_eq!(k.name, "openai/gpt-4o");
        let k = ActionKey::parse("/util/generate").unwrap();
        assert_eq!(k.plugin, None);
        assert_eq!(k.name, "generate");
        let k = ActionKey::parse("/prompt/p/folder/x").unwrap();
        assert_eq!(k.name, "p/folder/x");
        assert!(ActionKey::parse("model/x").is_none());
        assert!(ActionKey::parse("/nope/x").is_none());
        assert!(ActionKey::parse("/flow/").is_none());
        assert!(ActionKey::parse("/flow").is_none());
    }
}
