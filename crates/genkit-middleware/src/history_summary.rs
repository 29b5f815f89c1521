//! Summaries of dropped history, written by a model and cached so the same
//! dropped messages are summarised once.
//!
//! The cache key is a hash (64-bit FNV-1a) of the dropped messages as
//! canonical JSON. Inside an agent turn the summary is kept in the agent's
//! session, as the artifact [`HISTORY_SUMMARY_ARTIFACT`] (`metadata.key`
//! names what it summarises), so it is stored with the session and reused
//! by later turns and after a restart; outside an agent the policy keeps
//! the last few summaries in memory.
//!
//! When the dropped messages grow (a longer conversation), the new summary
//! is written from the cached one plus the messages dropped since, not from
//! the whole prefix again.

use genkit_core::{Registry, Result};
use genkit_model::canonical::canonical_json;
use genkit_model::middleware::{ArtifactContent, ConversationArtifactsRef, ModelCallCtx};
use genkit_model::types::{GenerateRequest, Message, Part, PartKind, Role};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use std::sync::Arc;

/// The name of the session artifact holding the cached summary.
pub const HISTORY_SUMMARY_ARTIFACT: &str = "historySummary";

/// The metadata key marking the summary message a policy inserts.
pub const HISTORY_SUMMARY_KEY: &str = "historySummary";

/// What opens the summary message the model sees.
pub const SUMMARY_PREFACE: &str = "Summary of the earlier conversation: ";

const INSTRUCTIONS: &str = "You summarise the earlier part of a conversation between a user and an assistant (with its tool calls), so the assistant can continue it without the full text. Keep facts, names, numbers, decisions and open questions; leave out pleasantries. Answer with the summary only, in the conversation's language.";

/// How many summaries a policy keeps in memory outside agent sessions.
const MEMORY_ENTRIES: usize = 16;

/// The summary message a policy puts where the dropped messages were.
pub(crate) fn summary_message(text: &str) -> Message {
    Message::user(format!("{SUMMARY_PREFACE}{text}"))
        .with_metadata(HISTORY_SUMMARY_KEY, Value::Bool(true))
}

/// A cached summary: what it covers and its text.
#[derive(Debug, Clone, PartialEq)]
struct Cached {
    /// The key of the dropped messages it summarises.
    key: String,
    /// How many dropped messages it covers.
    covers: usize,
    text: String,
}

/// Summaries kept in memory (outside agent sessions), newest last.
#[derive(Default)]
pub(crate) struct SummaryCache {
    entries: Mutex<VecDeque<Cached>>,
}

impl SummaryCache {
    fn remember(&self, cached: Cached) {
        let mut entries = self.entries.lock();
        entries.retain(|e| e.key != cached.key);
        if entries.len() >= MEMORY_ENTRIES {
            entries.pop_front();
        }
        entries.push_back(cached);
    }

    fn all(&self) -> Vec<Cached> {
        self.entries.lock().iter().cloned().collect()
    }
}

/// The 64-bit FNV-1a hash of `messages` as canonical JSON, in hex.
fn key_of(messages: &[Message]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for message in messages {
        let json = serde_json::to_value(message).unwrap_or(Value::Null);
        for byte in canonical_json(&json).bytes().chain([0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

fn from_artifact(artifact: &ArtifactContent) -> Option<Cached> {
    let meta = artifact.metadata.as_ref()?;
    let text: String = artifact.parts.iter().filter_map(Part::as_text).collect();
    Some(Cached {
        key: meta.get("key")?.as_str()?.to_owned(),
        covers: usize::try_from(meta.get("covers")?.as_u64()?).ok()?,
        text,
    })
}

fn to_artifact(cached: &Cached) -> ArtifactContent {
    ArtifactContent {
        parts: vec![Part::text(cached.text.clone())],
        metadata: Some(Map::from_iter([
            ("key".to_owned(), Value::from(cached.key.clone())),
            ("covers".to_owned(), Value::from(cached.covers)),
        ])),
    }
}

/// Writes summaries with a model.
pub(crate) struct Summarizer {
    registry: Registry,
    model: String,
}

impl Summarizer {
    pub(crate) fn new(registry: &Registry, model: String) -> Self {
        Self {
            registry: registry.clone(),
            model,
        }
    }

    /// The summary of `dropped`: cached, or extended from a cached summary
    /// of its first messages, or written anew.
    pub(crate) async fn summary(
        &self,
        dropped: &[Message],
        memory: &SummaryCache,
        ctx: &ModelCallCtx,
    ) -> Result<String> {
        let key = key_of(dropped);
        // Inside an agent turn: the summary kept with the session.
        let conversation = ConversationArtifactsRef::current();
        let mut known = memory.all();
        if let Some(conversation) = &conversation {
            known.extend(
                conversation
                    .0
                    .artifact(HISTORY_SUMMARY_ARTIFACT)
                    .as_ref()
                    .and_then(from_artifact),
            );
        }
        if let Some(hit) = known.iter().find(|c| c.key == key) {
            return Ok(hit.text.clone());
        }
        // The longest cached summary of a prefix of what is dropped now.
        let base = known
            .iter()
            .filter(|c| c.covers > 0 && c.covers < dropped.len())
            .filter(|c| key_of(&dropped[..c.covers]) == c.key)
            .max_by_key(|c| c.covers);
        let text = match base {
            Some(base) => self.write(Some(&base.text), &dropped[base.covers..], ctx),
            None => self.write(None, dropped, ctx),
        }
        .await?;
        let cached = Cached {
            key,
            covers: dropped.len(),
            text: text.clone(),
        };
        if let Some(conversation) = &conversation {
            conversation
                .0
                .put_artifact(HISTORY_SUMMARY_ARTIFACT, to_artifact(&cached));
        }
        memory.remember(cached);
        Ok(text)
    }

    async fn write(
        &self,
        earlier: Option<&str>,
        messages: &[Message],
        ctx: &ModelCallCtx,
    ) -> Result<String> {
        let mut transcript = String::new();
        if let Some(earlier) = earlier {
            transcript.push_str("Summary so far: ");
            transcript.push_str(earlier);
            transcript.push_str("\n\nWhat followed:\n");
        }
        for message in messages {
            transcript.push_str(&render(message));
            transcript.push('\n');
        }
        let request = GenerateRequest {
            messages: Arc::new(vec![
                Message::system(INSTRUCTIONS),
                Message::user(transcript),
            ]),
            ..GenerateRequest::default()
        };
        let model = genkit_model::model::lookup_model(&self.registry, &self.model).await?;
        // The summary is not part of the answer: nothing of it streams.
        let quiet = ModelCallCtx {
            on_chunk: None,
            context: ctx.context.clone(),
            cancel: ctx.cancel.clone(),
        };
        let response = genkit_model::model::call_model(&model, request, &quiet).await?;
        Ok(response.text().trim().to_owned())
    }
}

/// One message as a transcript line.
fn render(message: &Message) -> String {
    let role = match message.role {
        Role::User => "user",
        Role::Model => "assistant",
        Role::Tool => "tool",
        Role::System => "system",
        other => other.as_str(),
    };
    let parts: Vec<String> = message
        .content
        .iter()
        .filter_map(|part| match &part.kind {
            PartKind::Text(t) => Some(t.clone()),
            PartKind::ToolRequest(r) => Some(format!(
                "[called {}({})]",
                r.name,
                r.input.as_ref().map(canonical_json).unwrap_or_default()
            )),
            PartKind::ToolResponse(r) => Some(format!(
                "[{} returned {}]",
                r.name,
                r.output.as_ref().map(canonical_json).unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    format!("{role}: {}", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_messages_not_their_key_order() {
        let a = vec![Message::user("x").with_metadata("a", Value::from(1))];
        let b = vec![Message::user("x").with_metadata("a", Value::from(1))];
        assert_eq!(key_of(&a), key_of(&b));
        assert_ne!(key_of(&a), key_of(&[Message::user("y")]));
        assert_ne!(key_of(&a), key_of(&[]));
    }

    #[test]
    fn the_artifact_round_trips() {
        let cached = Cached {
            key: "k".into(),
            covers: 3,
            text: "t".into(),
        };
        assert_eq!(from_artifact(&to_artifact(&cached)), Some(cached));
    }
}
