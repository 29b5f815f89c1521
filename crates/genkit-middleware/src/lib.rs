//! Genkit for Rust built-in middleware: the policies an application chooses
//! for its generate calls and agents (Genkit JS's `@genkit-ai/middleware`).
//!
//! - [`retry`]: retries a failed model call with backoff, on chosen statuses.
//! - [`fallback`]: tries other models when one fails.
//! - [`history_policy`]: trims what the model sees of a long conversation,
//!   optionally replacing what it drops with a model-written summary.
//! - [`tool_approval`]: interrupts calls of tools that need approval, until
//!   a person [`approve`]s or [`deny`]s them.
//! - [`tool_cache`]: reuses tool results for a time to live, per
//!   conversation.
//!
//! Each is a [`GenerateMiddleware`](genkit_model::middleware::GenerateMiddleware)
//! (the mechanism is in `genkit_model::middleware`); pass it to a generate
//! call's or an agent's `use_middleware`.

mod fallback;
mod history;
mod history_summary;
mod retry;
mod tool_approval;
mod tool_cache;

pub use fallback::{DEFAULT_FALLBACK_STATUSES, ErrorCallback, Fallback, fallback};
pub use history::{
    CharEstimator, HistoryPolicy, IMPORTANT_KEY, PREAMBLE_KEY, TokenEstimator, Trimmed,
    history_policy, important, is_important,
};
pub use history_summary::{HISTORY_SUMMARY_ARTIFACT, HISTORY_SUMMARY_KEY, SUMMARY_PREFACE};
pub use retry::{DEFAULT_RETRY_STATUSES, Retry, RetryCallback, retry};
pub use tool_approval::{
    TOOL_APPROVED_KEY, ToolApproval, approve, define_tool_approval, deny, tool_approval,
};
pub use tool_cache::{Clock, SystemClock, ToolCache, tool_cache};
