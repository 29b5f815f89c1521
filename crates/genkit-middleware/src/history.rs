//! History policies: what part of a long conversation the model sees.
//!
//! A [`HistoryPolicy`] keeps the last N turns ([`HistoryPolicy::last_turns`])
//! and/or what fits a token budget ([`HistoryPolicy::max_tokens`]), newest
//! first, and always keeps:
//! - system messages and the messages a prompt agent's prompt contributes;
//! - messages marked important: `metadata.important = true` (see
//!   [`important`], [`IMPORTANT_KEY`]);
//! - the current turn: everything from the last user message on (the
//!   question being asked and the tool calls made for it).
//!
//! It never splits a tool request from its response: a model message with
//! `toolRequest` parts and the `tool` messages right after it are kept or
//! dropped together (Gemini rejects histories that split them). What it
//! drops can be replaced by a summary a model writes
//! ([`HistoryPolicy::summarize_with`]), cached in the agent's session as
//! the artifact [`HISTORY_SUMMARY_ARTIFACT`](crate::HISTORY_SUMMARY_ARTIFACT).
//!
//! As middleware it trims what each model call sees, not the conversation
//! itself: the generate loop and an agent's session keep every message. The
//! same rules are a plain function in [`HistoryPolicy::trim`].

use crate::history_summary::{Summarizer, SummaryCache};
use async_trait::async_trait;
use genkit_core::{Registry, Result};
use genkit_model::as_generate_middleware;
use genkit_model::middleware::{ModelCallCtx, ModelMiddleware, ModelNext};
use genkit_model::types::{GenerateRequest, GenerateResponse, Message, PartKind, Role};
use serde_json::Value;
use std::ops::Range;
use std::sync::Arc;

/// The metadata key marking a message the policies always keep
/// (`{"metadata": {"important": true}}`).
pub const IMPORTANT_KEY: &str = "important";

/// The metadata key marking the messages a prompt renders to open every
/// request (its system text and messages, as Genkit JS marks them): the
/// policies always keep them. A prompt agent marks its prompt's messages
/// with it, and keeps them out of the session.
pub const PREAMBLE_KEY: &str = "agentPreamble";

/// `message` marked important: history policies always keep it.
pub fn important(message: Message) -> Message {
    message.with_metadata(IMPORTANT_KEY, Value::Bool(true))
}

/// Whether `message` is marked important.
pub fn is_important(message: &Message) -> bool {
    message.metadata_value(IMPORTANT_KEY) == Some(&Value::Bool(true))
}

/// Estimates how many tokens a message costs a model. Plug in a model's
/// real tokenizer where one is known; [`CharEstimator`] is the default.
pub trait TokenEstimator: Send + Sync + 'static {
    /// The estimated tokens of `message`.
    fn message_tokens(&self, message: &Message) -> usize;

    /// The estimated tokens of `text` alone (used to fit a summary).
    fn text_tokens(&self, text: &str) -> usize;
}

/// The default estimate: a token per 4 characters of text (rounded up; the
/// JSON of non-text parts such as tool requests and responses counts as
/// text), plus 4 tokens of framing per message. Close for English with
/// GPT- and Gemini-style tokenizers; an over-estimate for code-heavy text.
#[derive(Debug, Clone, Copy)]
pub struct CharEstimator {
    /// Characters per token (4 by default).
    pub chars_per_token: usize,
    /// Tokens added per message for its role and framing (4 by default).
    pub per_message: usize,
}

impl Default for CharEstimator {
    fn default() -> Self {
        Self {
            chars_per_token: 4,
            per_message: 4,
        }
    }
}

impl TokenEstimator for CharEstimator {
    fn message_tokens(&self, message: &Message) -> usize {
        let chars: usize = message
            .content
            .iter()
            .map(|part| match &part.kind {
                PartKind::Text(t) | PartKind::Reasoning(t) => t.chars().count(),
                _ => serde_json::to_string(part).map_or(0, |s| s.chars().count()),
            })
            .sum();
        chars.div_ceil(self.chars_per_token.max(1)) + self.per_message
    }

    fn text_tokens(&self, text: &str) -> usize {
        text.chars().count().div_ceil(self.chars_per_token.max(1))
    }
}

/// The result of [`HistoryPolicy::trim`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trimmed {
    /// The messages kept, in their original order.
    pub kept: Vec<Message>,
    /// The messages dropped, in their original order.
    pub dropped: Vec<Message>,
}

/// Trims the history a model sees (see the module docs).
#[derive(Clone)]
pub struct HistoryPolicy {
    max_turns: Option<usize>,
    max_tokens: Option<usize>,
    estimator: Arc<dyn TokenEstimator>,
    summarizer: Option<Arc<Summarizer>>,
    summary_tokens: usize,
    cache: Arc<SummaryCache>,
}

/// A history policy that keeps everything until given a limit.
///
/// ```
/// use genkit_middleware::{history_policy, important};
/// use genkit_model::types::Message;
///
/// let policy = history_policy().last_turns(2).max_tokens(4_000);
/// let history = vec![
///     Message::system("You are an ops assistant."),
///     important(Message::user("We are on call for the api service.")),
///     Message::model("Noted."),
///     Message::user("Is the worker up?"),
///     Message::model("Yes."),
///     Message::user("And the scheduler?"),
///     Message::model("Also up."),
///     Message::user("Thanks. Restart the api?"),
/// ];
/// let trimmed = policy.trim(&history);
/// // The system prompt, the important message and the last two turns.
/// assert_eq!(trimmed.kept.len(), 5);
/// assert_eq!(trimmed.dropped.len(), 3);
/// // As middleware: GenerateOptions::prompt(..).use_middleware(policy)
/// ```
pub fn history_policy() -> HistoryPolicy {
    HistoryPolicy {
        max_turns: None,
        max_tokens: None,
        estimator: Arc::new(CharEstimator::default()),
        summarizer: None,
        summary_tokens: 256,
        cache: Arc::new(SummaryCache::default()),
    }
}

/// One unit the policy keeps or drops whole: a message, or a model message
/// with tool requests and the tool messages answering it.
struct Unit {
    range: Range<usize>,
    /// Always kept (system, prompt preamble, important).
    pinned: bool,
    /// 1-based turn (a turn starts at each user message; 0 before the first).
    turn: usize,
    tokens: usize,
}

fn is_pinned(message: &Message) -> bool {
    message.role == Role::System
        || is_important(message)
        || message.metadata_value(PREAMBLE_KEY) == Some(&Value::Bool(true))
}

fn units(messages: &[Message], estimator: &dyn TokenEstimator) -> Vec<Unit> {
    let mut out = Vec::new();
    let mut turn = 0;
    let mut i = 0;
    while i < messages.len() {
        let start = i;
        let opens_pair = messages[i].role == Role::Model
            && messages[i].content.iter().any(|p| p.is_tool_request());
        if messages[i].role == Role::User {
            turn += 1;
        }
        i += 1;
        if opens_pair || messages[start].role == Role::Tool {
            while i < messages.len() && messages[i].role == Role::Tool {
                i += 1;
            }
        }
        let range = start..i;
        let slice = &messages[range.clone()];
        out.push(Unit {
            pinned: slice.iter().any(is_pinned),
            tokens: slice.iter().map(|m| estimator.message_tokens(m)).sum(),
            range,
            turn,
        });
    }
    out
}

impl HistoryPolicy {
    /// Keeps at most the last `n` turns (a turn starts at a user message).
    pub fn last_turns(mut self, n: usize) -> Self {
        self.max_turns = Some(n);
        self
    }

    /// Keeps what fits `tokens` (as the estimator counts), newest first.
    /// Pinned messages and the current turn count too and are kept even
    /// when they alone exceed it.
    pub fn max_tokens(mut self, tokens: usize) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Counts tokens with `estimator` (a model's tokenizer) instead of
    /// [`CharEstimator`].
    pub fn estimator(mut self, estimator: impl TokenEstimator) -> Self {
        self.estimator = Arc::new(estimator);
        self
    }

    /// Replaces what is dropped with a summary written by `model` (a model
    /// name such as `googleai/gemini-2.5-flash`). A summary is cached by
    /// what it summarises (a hash of the dropped messages): inside an agent
    /// turn in the session, as the artifact
    /// [`HISTORY_SUMMARY_ARTIFACT`](crate::HISTORY_SUMMARY_ARTIFACT), else in
    /// this policy's memory; when more is dropped later, the new summary
    /// extends the cached one. It reaches the model as a user message
    /// opening with [`SUMMARY_PREFACE`](crate::SUMMARY_PREFACE), marked
    /// `metadata.historySummary = true`.
    pub fn summarize_with(mut self, registry: &Registry, model: impl Into<String>) -> Self {
        self.summarizer = Some(Arc::new(Summarizer::new(registry, model.into())));
        self
    }

    /// The tokens set aside for the summary within [`max_tokens`](Self::max_tokens)
    /// (256 by default); a longer summary is cut to fit.
    pub fn summary_tokens(mut self, tokens: usize) -> Self {
        self.summary_tokens = tokens;
        self
    }

    /// The budget trimming works to: the summary's share comes off first.
    fn trim_budget(&self) -> Option<usize> {
        let reserve = if self.summarizer.is_some() {
            self.summary_tokens
        } else {
            0
        };
        self.max_tokens.map(|b| b.saturating_sub(reserve))
    }

    /// Which messages to keep, by index, in order.
    fn keep(&self, messages: &[Message]) -> Vec<bool> {
        let units = units(messages, &*self.estimator);
        let mut keep = vec![false; units.len()];
        let Some(last) = units.len().checked_sub(1) else {
            return Vec::new();
        };
        let total_turns = units[last].turn;
        // The current turn: from the unit of the last user message on (or
        // just the last unit when there is no user message).
        let current = units
            .iter()
            .rposition(|u| messages[u.range.start].role == Role::User)
            .unwrap_or(last);
        let mut tokens = 0;
        for (i, unit) in units.iter().enumerate() {
            if unit.pinned || i >= current {
                keep[i] = true;
                tokens += unit.tokens;
            }
        }
        let budget = self.trim_budget();
        for i in (0..current).rev() {
            if keep[i] {
                continue;
            }
            let unit = &units[i];
            let in_turns = self.max_turns.is_none_or(|n| unit.turn + n > total_turns);
            let fits = budget.is_none_or(|b| tokens + unit.tokens <= b);
            if !in_turns || !fits {
                break; // keep a contiguous recent history
            }
            keep[i] = true;
            tokens += unit.tokens;
        }
        let mut by_message = vec![false; messages.len()];
        for (unit, kept) in units.iter().zip(keep) {
            for i in unit.range.clone() {
                by_message[i] = kept;
            }
        }
        by_message
    }

    /// Splits `messages` into what the policy keeps and what it drops
    /// (without a summary).
    pub fn trim(&self, messages: &[Message]) -> Trimmed {
        let keep = self.keep(messages);
        let mut out = Trimmed::default();
        for (message, kept) in messages.iter().zip(keep) {
            if kept {
                out.kept.push(message.clone());
            } else {
                out.dropped.push(message.clone());
            }
        }
        out
    }

    /// The messages a model sees: the kept ones, with the summary of the
    /// dropped ones (when summarising) where the first dropped one was.
    pub async fn apply(&self, messages: &[Message], ctx: &ModelCallCtx) -> Result<Vec<Message>> {
        Ok(self
            .apply_if_trimmed(messages, ctx)
            .await?
            .unwrap_or_else(|| messages.to_vec()))
    }

    /// Like [`apply`](Self::apply); `None` when everything is kept.
    async fn apply_if_trimmed(
        &self,
        messages: &[Message],
        ctx: &ModelCallCtx,
    ) -> Result<Option<Vec<Message>>> {
        let keep = self.keep(messages);
        if keep.iter().all(|k| *k) {
            return Ok(None);
        }
        let Some(summarizer) = &self.summarizer else {
            return Ok(Some(kept_only(messages, &keep)));
        };
        let dropped: Vec<Message> = messages
            .iter()
            .zip(&keep)
            .filter(|(_, k)| !**k)
            .map(|(m, _)| m.clone())
            .collect();
        let text = summarizer.summary(&dropped, &self.cache, ctx).await?;
        let text = fit(&text, self.summary_tokens, &*self.estimator);
        let first_dropped = keep.iter().position(|k| !k).unwrap_or(0);
        let mut out = Vec::with_capacity(messages.len());
        for (i, (message, kept)) in messages.iter().zip(&keep).enumerate() {
            if i == first_dropped && !text.is_empty() {
                out.push(crate::history_summary::summary_message(&text));
            }
            if *kept {
                out.push(message.clone());
            }
        }
        Ok(Some(out))
    }
}

fn kept_only(messages: &[Message], keep: &[bool]) -> Vec<Message> {
    messages
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(m, _)| m.clone())
        .collect()
}

/// `text` cut (at a character boundary) until its summary message fits
/// `tokens`.
fn fit(text: &str, tokens: usize, estimator: &dyn TokenEstimator) -> String {
    let cost = |t: &str| estimator.message_tokens(&crate::history_summary::summary_message(t));
    if cost(text) <= tokens {
        return text.to_owned();
    }
    let chars: Vec<char> = text.chars().collect();
    let (mut lo, mut hi) = (0, chars.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let candidate: String = chars[..mid].iter().collect();
        if cost(&candidate) <= tokens {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    chars[..lo].iter().collect()
}

#[async_trait]
impl ModelMiddleware for HistoryPolicy {
    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        if let Some(messages) = self.apply_if_trimmed(&req.messages, &ctx).await? {
            req.messages = Arc::new(messages);
        }
        next.run(req, ctx).await
    }

    fn applies(&self, _req: &GenerateRequest) -> bool {
        self.max_turns.is_some() || self.max_tokens.is_some()
    }
}
as_generate_middleware!(HistoryPolicy, "historyPolicy");
