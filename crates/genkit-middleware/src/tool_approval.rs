//! Tool approval: calls of tools that need approval interrupt before they
//! run, so a human can see the request and approve or deny it (Genkit's
//! `toolApproval` middleware, from `@genkit-ai/middleware`).
//!
//! A call interrupts when its tool is marked
//! ([`Tool::needs_approval`](genkit_model::tool::Tool::needs_approval)), or, once
//! [`ToolApproval::approved`] names a list, when the tool is not on it (as
//! Genkit JS's `toolApproval({approved: [...]})` does). The interrupt is the
//! tool request itself, with `metadata.interrupt = {"message": ...}` as in
//! Genkit JS. The caller resumes with:
//! - [`approve`]: a restart with `resumed.toolApproved = true` (Genkit JS's
//!   `restartTool(interrupt, {toolApproved: true})`): the tool runs;
//! - [`deny`]: a tool response saying the call was denied (`resume.respond`);
//!   the tool does not run and the model reads the denial. A restart with
//!   `toolApproved: false` is a denial too.

use async_trait::async_trait;
use genkit_core::{Error, Result};
use genkit_model::middleware::{GenerateMiddleware, ToolCallCtx, ToolNext};
use genkit_model::tool::{ToolInterrupt, needs_approval, respond_tool, restart_tool};
use genkit_model::types::{Part, ToolResponse};
use serde_json::{Value, json};
use std::collections::HashSet;

/// The key of the `resumed` metadata that approves (`true`) or denies
/// (`false`) an interrupted call, as Genkit JS's `toolApproval` reads it.
pub const TOOL_APPROVED_KEY: &str = "toolApproved";

/// Interrupts calls of tools that need approval (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct ToolApproval {
    approved: Option<HashSet<String>>,
}

/// Tool approval middleware: calls of tools marked
/// [`needs_approval`](genkit_model::tool::Tool::needs_approval) interrupt until the
/// caller [`approve`]s or [`deny`]s them.
///
/// ```
/// use genkit_generate::{GenerateOptions, generate};
/// use genkit_middleware::{approve, tool_approval};
/// use genkit_model::testing::ProgrammableModel;
/// use genkit_model::tool::Tool;
/// use genkit_core::Registry;
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> genkit_core::Result<()> {
/// let registry = Registry::new();
/// ProgrammableModel::define(&registry, "m")
///     .respond_tool_call("restartService", json!("api"))
///     .respond_text("Restarted.");
/// let restart = Tool::new("restartService", "Restarts a service.", |s: String, _ctx| async move {
///     Ok(format!("{s} restarted"))
/// })
/// .needs_approval();
/// let first = generate(
///     &registry,
///     GenerateOptions::prompt("restart api").model("m").tool(&restart).use_middleware(tool_approval()),
/// )
/// .await?;
/// let interrupt = first.interrupts()[0].clone(); // shown to the user
/// assert_eq!(interrupt.as_tool_request().unwrap().input, Some(json!("api")));
///
/// let done = generate(
///     &registry,
///     GenerateOptions::messages(first.messages().unwrap_or_default())
///         .model("m")
///         .tool(&restart)
///         .use_middleware(tool_approval())
///         .resume_restart([approve(&interrupt)?]),
/// )
/// .await?;
/// assert_eq!(done.text(), "Restarted.");
/// # Ok(()) }
/// ```
pub fn tool_approval() -> ToolApproval {
    ToolApproval::default()
}

impl ToolApproval {
    /// Pre-approved tool names: these never interrupt, and every other tool
    /// does, marked or not (Genkit JS's `approved` list).
    pub fn approved<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.approved = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// The middleware from the JSON config a request names it with
    /// (`{"use": [{"name": "toolApproval", "config": {"approved": [..]}}]}`,
    /// Genkit JS's config shape); no config means marked tools only. See
    /// [`define_tool_approval`].
    pub fn from_config(config: Option<&Value>) -> Result<Self> {
        let Some(config) = config.filter(|c| !c.is_null()) else {
            return Ok(tool_approval());
        };
        let bad = || {
            Error::invalid_argument(
                "toolApproval config: `approved` must be an array of tool names",
            )
        };
        match config.get("approved") {
            None => Ok(tool_approval()),
            Some(Value::Array(names)) => {
                let names: Option<Vec<&str>> = names.iter().map(Value::as_str).collect();
                Ok(tool_approval().approved(names.ok_or_else(bad)?))
            }
            Some(_) => Err(bad()),
        }
    }

    /// Why a call of `name` must wait for approval, if it must.
    fn reason(&self, name: &str, ctx: &ToolCallCtx) -> Option<String> {
        let marked = ctx.tool.as_ref().is_some_and(|t| needs_approval(t.desc()));
        match &self.approved {
            Some(list) if list.contains(name) => None,
            Some(_) => Some(format!("Tool not in approved list: {name}")),
            None if marked => Some(format!("Tool requires approval: {name}")),
            None => None,
        }
    }
}

/// Registers `toolApproval` as a named middleware, so serialized requests
/// (`/util/generate`, the Dev UI) can use it by name with Genkit JS's config
/// (`{"approved": ["readInbox"]}`).
pub fn define_tool_approval(registry: &genkit_core::Registry) {
    genkit_model::middleware::define_middleware(
        registry,
        "toolApproval",
        "Interrupts tool execution unless the tool is in the approved list or approved via metadata.",
        |config| Ok(std::sync::Arc::new(ToolApproval::from_config(config)?)),
    );
}

/// What the caller decided, read from the restart's `resumed` metadata.
fn decision(ctx: &ToolCallCtx) -> Option<bool> {
    ctx.metadata
        .as_ref()?
        .get("resumed")?
        .get(TOOL_APPROVED_KEY)?
        .as_bool()
}

#[async_trait]
impl GenerateMiddleware for ToolApproval {
    fn name(&self) -> &str {
        "toolApproval"
    }

    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        let Some(request) = part.as_tool_request() else {
            return next.run(part, ctx).await;
        };
        let Some(message) = self.reason(&request.name, &ctx) else {
            return next.run(part, ctx).await;
        };
        match decision(&ctx) {
            Some(true) => next.run(part, ctx).await,
            Some(false) => Ok(Some(Part::tool_response(ToolResponse::for_request(
                request,
                denial(&request.name, None),
            )))),
            None => {
                tracing::debug!("tool '{}' is waiting for approval", request.name);
                Err(ToolInterrupt::new(Some(json!({ "message": message }))).into())
            }
        }
    }
}

/// The output the model reads for a denied call.
fn denial(tool: &str, reason: Option<&str>) -> Value {
    let mut message = format!("The user denied this call of {tool}; it did not run.");
    if let Some(reason) = reason.filter(|r| !r.is_empty()) {
        message.push_str(" Reason: ");
        message.push_str(reason);
    }
    json!({ "denied": true, "error": message })
}

/// Approves an interrupted call: a restart part (for `resume.restart`) with
/// `resumed = {"toolApproved": true}`; the tool runs on resume.
pub fn approve(interrupt: &Part) -> Result<Part> {
    restart_tool(interrupt, Some(json!({ TOOL_APPROVED_KEY: true })), None)
}

/// Denies an interrupted call: a tool response part (for `resume.respond`)
/// telling the model the user denied it (`{"denied": true, "error": ...}`,
/// with `reason` when given); the tool does not run.
pub fn deny(interrupt: &Part, reason: Option<&str>) -> Result<Part> {
    let name = interrupt
        .as_tool_request()
        .map(|r| r.name.clone())
        .ok_or_else(|| Error::invalid_argument("expected an interrupted tool request part"))?;
    respond_tool(
        interrupt,
        denial(&name, reason),
        Some(json!({ TOOL_APPROVED_KEY: false })),
    )
}
