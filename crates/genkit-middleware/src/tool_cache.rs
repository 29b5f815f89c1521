//! Tool result cache: answers a repeated tool call (same tool, same input)
//! from an earlier result while it is younger than that tool's time to
//! live, without running the tool again.
//!
//! Calls are keyed by the tool's name and its input as canonical JSON
//! ([`canonical_json`](genkit_model::canonical::canonical_json): object keys sorted, so `{"a":1,"b":2}` and
//! `{"b":2,"a":1}` are one call), within a scope: the conversation the call
//! runs in ([`ConversationScope`], an agent's session) and the caller's
//! `auth` context. A result is never served to another session or another
//! caller, since a tool's answer may depend on who asks; a cache whose
//! tools answer everyone alike can say so with
//! [`ToolCache::shared_across_sessions`]. Only tools given a time to live
//! ([`ToolCache::ttl`], or all with [`ToolCache::default_ttl`]) are cached;
//! tools marked [`side_effecting`](genkit_model::tool::Tool::side_effecting) never
//! are, nor tools marked [`needs_approval`](genkit_model::tool::Tool::needs_approval)
//! (each call is asked for, whatever the order of the middleware), nor
//! failures or interrupts, nor restarted calls (a human asked for that call
//! to run).

use async_trait::async_trait;
use genkit_core::Result;
use genkit_model::canonical::canonical_json;
use genkit_model::middleware::{ConversationScope, GenerateMiddleware, ToolCallCtx, ToolNext};
use genkit_model::tool::{has_side_effects, needs_approval};
use genkit_model::types::{Part, PartKind, ToolRequest};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Where the cache reads the time: [`SystemClock`] by default, a hand-moved
/// clock in tests.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> Instant;
}

/// Tokio's clock (so a paused test runtime's time applies too).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// How many results a cache keeps unless told otherwise.
const DEFAULT_MAX_ENTRIES: usize = 1024;

struct Entry {
    expires: Instant,
    response: Part,
}

/// A cached call: its scope (see the module docs), the tool's name and its
/// input as canonical JSON.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    conversation: Option<ConversationScope>,
    /// The caller's `auth` as canonical JSON.
    caller: Option<String>,
    tool: String,
    input: String,
}

/// Caches tool results per tool for a time to live (see the module docs).
pub struct ToolCache {
    ttls: HashMap<String, Duration>,
    default_ttl: Option<Duration>,
    max_entries: usize,
    clock: Arc<dyn Clock>,
    shared: bool,
    entries: Mutex<HashMap<Key, Entry>>,
}

/// A tool result cache that caches nothing until given a time to live.
///
/// ```
/// use genkit_middleware::tool_cache;
/// use std::time::Duration;
///
/// let cache = tool_cache()
///     .ttl("getServiceStatus", Duration::from_secs(30))
///     .ttl("listServices", Duration::from_secs(300));
/// // GenerateOptions::prompt(..).use_middleware(cache)
/// # let _ = cache;
/// ```
pub fn tool_cache() -> ToolCache {
    ToolCache {
        ttls: HashMap::new(),
        default_ttl: None,
        max_entries: DEFAULT_MAX_ENTRIES,
        clock: Arc::new(SystemClock),
        shared: false,
        entries: Mutex::new(HashMap::new()),
    }
}

impl ToolCache {
    /// Caches results of the tool `name` for `ttl`.
    pub fn ttl(mut self, name: impl Into<String>, ttl: Duration) -> Self {
        self.ttls.insert(name.into(), ttl);
        self
    }

    /// Caches results of tools without their own time to live for `ttl`.
    pub fn default_ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = Some(ttl);
        self
    }

    /// Keeps at most `n` results (the ones expiring first go first); 1024
    /// by default.
    pub fn max_entries(mut self, n: usize) -> Self {
        self.max_entries = n.max(1);
        self
    }

    /// Serves one result to every session and caller alike, for tools whose
    /// answers do not depend on who asks (by default results are kept per
    /// session and per caller's `auth`).
    pub fn shared_across_sessions(mut self) -> Self {
        self.shared = true;
        self
    }

    /// Reads the time from `clock`.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How many results are kept now (expired ones included until touched).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every result.
    pub fn clear(&self) {
        self.entries.lock().clear();
    }

    /// The key of a call: in its conversation and for its caller's `auth`,
    /// unless the cache is shared.
    fn key_of(&self, request: &ToolRequest, ctx: &ToolCallCtx) -> Key {
        let (conversation, caller) = if self.shared {
            (None, None)
        } else {
            (
                ConversationScope::current(),
                ctx.context.auth().map(canonical_json),
            )
        };
        Key {
            conversation,
            caller,
            tool: request.name.clone(),
            input: canonical_json(request.input.as_ref().unwrap_or(&Value::Null)),
        }
    }

    fn ttl_of(&self, name: &str) -> Option<Duration> {
        self.ttls.get(name).copied().or(self.default_ttl)
    }

    fn lookup(&self, key: &Key, now: Instant) -> Option<Part> {
        let mut entries = self.entries.lock();
        match entries.get(key) {
            Some(e) if e.expires > now => Some(e.response.clone()),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    fn store(&self, key: Key, response: Part, expires: Instant, now: Instant) {
        let mut entries = self.entries.lock();
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            entries.retain(|_, e| e.expires > now);
            while entries.len() >= self.max_entries {
                let Some(first) = entries
                    .iter()
                    .min_by_key(|(_, e)| e.expires)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                entries.remove(&first);
            }
        }
        entries.insert(key, Entry { expires, response });
    }
}

/// Whether the call is a restart (its metadata has `resumed`).
fn is_restart(ctx: &ToolCallCtx) -> bool {
    ctx.metadata
        .as_ref()
        .is_some_and(|m| m.get("resumed").is_some())
}

#[async_trait]
impl GenerateMiddleware for ToolCache {
    fn name(&self) -> &str {
        "toolCache"
    }

    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        let Some(request) = part.as_tool_request() else {
            return next.run(part, ctx).await;
        };
        let uncacheable = ctx
            .tool
            .as_ref()
            .is_some_and(|t| has_side_effects(t.desc()) || needs_approval(t.desc()));
        let ttl = match self.ttl_of(&request.name) {
            Some(ttl) if !uncacheable && !ttl.is_zero() && !is_restart(&ctx) => ttl,
            _ => return next.run(part, ctx).await,
        };
        let key = self.key_of(request, &ctx);
        let reference = request.reference.clone();
        if let Some(mut hit) = self.lookup(&key, self.clock.now()) {
            tracing::debug!("tool '{}' answered from the cache", request.name);
            // The cached answer now answers this call.
            if let PartKind::ToolResponse(r) = &mut hit.kind {
                r.reference = reference;
            }
            return Ok(Some(hit));
        }
        let response = next.run(part, ctx).await?;
        if let Some(response) = &response {
            let now = self.clock.now();
            if let Some(expires) = now.checked_add(ttl) {
                self.store(key, response.clone(), expires, now);
            }
        }
        Ok(response)
    }
}
