//! Context augmentation: the request's documents go into the last user
//! message, for models that do not take documents natively.

use super::{ModelCallCtx, ModelMiddleware, ModelNext};
use crate::types::{DocumentData, GenerateRequest, GenerateResponse, Message, Part, Role};
use async_trait::async_trait;
use genkit_core::Result;
use serde_json::Value;
use std::sync::Arc;

/// Genkit's preface for documents added to the prompt.
pub const CONTEXT_PREFACE: &str = "\n\nUse the following information to complete your task:\n\n";

type ItemTemplate = Arc<dyn Fn(&DocumentData, usize) -> String + Send + Sync>;

/// Adds the request's documents (`docs`) to the last user message, for
/// models that do not take documents natively.
pub struct AugmentWithContext {
    preface: Option<String>,
    citation_key: Option<Option<String>>,
    item_template: Option<ItemTemplate>,
}

/// Context augmentation with Genkit's defaults: the preface, then one
/// `- [ref]: text` line per document.
pub fn augment_with_context() -> AugmentWithContext {
    AugmentWithContext {
        preface: Some(CONTEXT_PREFACE.into()),
        citation_key: None,
        item_template: None,
    }
}

impl AugmentWithContext {
    /// Replaces the preface (`None` for no preface).
    pub fn preface(mut self, preface: Option<String>) -> Self {
        self.preface = preface;
        self
    }

    /// Cites each document by this metadata key (`None` for no citation).
    /// By default documents are cited by `ref`, `id`, or their index.
    pub fn citation_key(mut self, key: Option<String>) -> Self {
        self.citation_key = Some(key);
        self
    }

    /// Renders each document with a custom template.
    pub fn item_template(
        mut self,
        f: impl Fn(&DocumentData, usize) -> String + Send + Sync + 'static,
    ) -> Self {
        self.item_template = Some(Arc::new(f));
        self
    }

    fn render_item(&self, doc: &DocumentData, index: usize) -> String {
        if let Some(t) = &self.item_template {
            return t(doc, index);
        }
        let meta = |k: &str| doc.metadata.as_ref().and_then(|m| m.get(k));
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut out = String::from("- ");
        match &self.citation_key {
            Some(Some(key)) => {
                let cite = meta(key).map(show).unwrap_or_else(|| "undefined".into());
                out.push_str(&format!("[{cite}]: "));
            }
            Some(None) => {}
            None => {
                let cite = meta("ref")
                    .filter(|v| crate::types::is_truthy(v))
                    .or_else(|| meta("id").filter(|v| crate::types::is_truthy(v)))
                    .map(show)
                    .unwrap_or_else(|| index.to_string());
                out.push_str(&format!("[{cite}]: "));
            }
        }
        out.push_str(&doc.text());
        out.push('\n');
        out
    }
}

fn purpose_is(part: &Part, purpose: &str) -> bool {
    part.metadata_value("purpose").and_then(Value::as_str) == Some(purpose)
}

#[async_trait]
impl ModelMiddleware for AugmentWithContext {
    /// Only when there are documents the messages lack (`generate` has
    /// usually added them to the history already).
    fn applies(&self, req: &GenerateRequest) -> bool {
        req.docs.as_ref().is_some_and(|d| !d.is_empty()) && self.needs_context(&req.messages)
    }

    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        // Checked before `make_mut`, which copies a shared history.
        if self.applies(&req)
            && let Some(docs) = req.docs.as_deref()
        {
            self.augment(Arc::make_mut(&mut req.messages).as_mut_slice(), docs);
        }
        next.run(req, ctx).await
    }
}

impl AugmentWithContext {
    /// Whether the last user message of `messages` lacks the documents (has
    /// no context part, or only a pending one).
    fn needs_context(&self, messages: &[Message]) -> bool {
        let Some(user) = messages.iter().rev().find(|m| m.role == Role::User) else {
            return false;
        };
        match user.content.iter().find(|p| purpose_is(p, "context")) {
            Some(part) => part
                .metadata_value("pending")
                .is_some_and(crate::types::is_truthy),
            None => true,
        }
    }

    /// Adds `docs` to the last user message of `messages` as a `context`
    /// part (replacing a pending one), unless it already has them.
    pub fn augment(&self, messages: &mut [Message], docs: &[DocumentData]) {
        if docs.is_empty() || !self.needs_context(messages) {
            return;
        }
        let Some(user) = messages.iter_mut().rev().find(|m| m.role == Role::User) else {
            return;
        };
        let mut text = self.preface.clone().unwrap_or_default();
        for (i, d) in docs.iter().enumerate() {
            text.push_str(&self.render_item(d, i));
        }
        text.push('\n');
        let part = Part::text(text).with_metadata("purpose", Value::from("context"));
        match user.content.iter().position(|p| purpose_is(p, "context")) {
            Some(i) => user.content[i] = part,
            None => user.content.push(part),
        }
    }
}
as_generate_middleware!(AugmentWithContext, "augmentWithContext");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedTail, request, run_layer};

    #[tokio::test]
    async fn documents_go_into_the_last_user_message_once() {
        let tail = ScriptedTail::default();
        let mut req = request(vec![Message::user("q")]);
        req.docs = Some(vec![DocumentData::from_text("the sky is blue")]);
        run_layer(augment_with_context(), &tail, req).await.unwrap();
        let mut messages = tail.last().messages.as_ref().clone();
        let text = messages[0].text();
        assert!(text.starts_with("q"), "{text}");
        assert!(text.contains(CONTEXT_PREFACE), "{text}");
        assert!(text.contains("the sky is blue"), "{text}");
        // A second pass leaves the context that is already there.
        augment_with_context().augment(&mut messages, &[DocumentData::from_text("other")]);
        assert_eq!(messages[0].text(), text);
    }
}
