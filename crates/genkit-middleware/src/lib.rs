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
//! - [`filesystem()`]: `list_files`, `read_file`, `write_file` and
//!   `search_and_replace` tools confined to a root directory.
//! - [`skills()`]: a library of `SKILL.md` instructions offered through a
//!   `use_skill` tool.
//!
//! [`define_builtin_middleware`] registers retry, fallback, filesystem and
//! skills by name with Genkit JS's config schemas, for requests and prompt
//! files that name them (`use: [{name: retry, config: {...}}]`);
//! [`middleware_plugin`] does the same (and registers `toolApproval`) as a
//! plugin given to the Genkit builder.
//!
//! Each is a [`GenerateMiddleware`](genkit_model::middleware::GenerateMiddleware)
//! (the mechanism is in `genkit_model::middleware`); pass it to a generate
//! call's or an agent's `use_middleware`.

mod fallback;
pub mod filesystem;
mod history;
mod history_summary;
mod named;
mod plugin;
mod retry;
mod skills;
mod tool_approval;
mod tool_cache;

pub use fallback::{DEFAULT_FALLBACK_STATUSES, ErrorCallback, Fallback, fallback};
pub use filesystem::{Filesystem, FilesystemOptions, filesystem};
pub use history::{
    CharEstimator, HistoryPolicy, IMPORTANT_KEY, PREAMBLE_KEY, TokenEstimator, Trimmed,
    history_policy, important, is_important,
};
pub use history_summary::{HISTORY_SUMMARY_ARTIFACT, HISTORY_SUMMARY_KEY, SUMMARY_PREFACE};
pub use named::{
    define_builtin_middleware, fallback_desc, fallback_from_config, filesystem_desc, retry_desc,
    skills_desc,
};
pub use plugin::{MiddlewarePlugin, middleware_plugin};
pub use retry::{DEFAULT_RETRY_STATUSES, Retry, RetryCallback, retry};
pub use skills::{SKILLS_INSTRUCTIONS_KEY, Skills, SkillsOptions, skills};
pub use tool_approval::{
    TOOL_APPROVED_KEY, ToolApproval, approve, define_tool_approval, deny, tool_approval,
};
pub use tool_cache::{Clock, SystemClock, ToolCache, tool_cache};
