//! The assistant's tools over the simulated fleet: two read-only ones and
//! `restartService`, which changes the world and so is marked as needing a
//! person's approval (the `toolApproval` middleware interrupts before it
//! runs) and as side-effecting (never served from a cache).

use std::sync::Arc;

use genkit::agent::AgentSession;
use genkit::agent::effect::{EffectError, approved_effect_key, run_once};
use genkit::agent::store::SessionStore;
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::tool::{ToolCtx, ToolImpl};

use crate::fleet::{Fleet, Level, Service, Status, parse_window};

/// The tools' names, as the prompt lists them.
pub const TOOLS: [&str; 3] = ["getServiceStatus", "queryLogs", "restartService"];

/// A service argument's schema: the names only (the derived one gives
/// each a description, which costs a small local model's prompt about 60
/// tokens per tool and tells it nothing the name does not).
fn service_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Service::ALL.iter().map(|s| s.name()).collect();
    schemars::json_schema!({ "type": "string", "enum": names })
}

/// Input of `getServiceStatus`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
// No other fields: the schema says so (`additionalProperties: false`),
// so a model constrained by it cannot pad a call with made-up ones.
#[serde(deny_unknown_fields)]
pub struct StatusInput {
    /// Which service to check.
    #[schemars(schema_with = "service_schema")]
    pub service: Service,
}

/// `getServiceStatus`: whether a service is up, and its load.
pub struct GetServiceStatus(pub Arc<Fleet>);

impl ToolImpl for GetServiceStatus {
    type Input = StatusInput;
    type Output = Status;

    fn name(&self) -> &str {
        "getServiceStatus"
    }

    fn description(&self) -> String {
        "Current status of one service: whether it is online, its CPU and memory use, and a \
         one-line summary. Use it when the user asks whether a service is up, healthy or slow."
            .into()
    }

    async fn call(&self, input: StatusInput, _ctx: ToolCtx) -> Result<Status> {
        self.0.call_latency().await;
        Ok(self.0.status(input.service))
    }
}

fn default_window() -> String {
    "1h".into()
}

/// Input of `queryLogs`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
// No other fields: the schema says so (`additionalProperties: false`),
// so a model constrained by it cannot pad a call with made-up ones.
#[serde(deny_unknown_fields)]
pub struct LogsInput {
    /// Whose logs.
    #[schemars(schema_with = "service_schema")]
    pub service: Service,
    /// The least severe level to include (`error` by default; `warn`
    /// adds warnings, `info` everything).
    #[serde(default)]
    pub level: Level,
    /// How far back to look, relative to now: "15m", "2h", "1d" (1m..24h;
    /// "1h" by default). The tool works out the times itself.
    #[serde(default = "default_window")]
    pub window: String,
}

/// What `queryLogs` returns.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Logs {
    /// Whose logs.
    pub service: Service,
    /// The level asked for.
    pub level: Level,
    /// The window asked for, as given.
    pub window: String,
    /// Matching lines, newest first (at most 20).
    pub lines: Vec<String>,
    /// How many lines matched.
    pub total: usize,
}

/// `queryLogs`: recent log lines of a service.
pub struct QueryLogs(pub Arc<Fleet>);

impl ToolImpl for QueryLogs {
    type Input = LogsInput;
    type Output = Logs;

    fn name(&self) -> &str {
        "queryLogs"
    }

    fn description(&self) -> String {
        "Recent log lines of one service, newest first. Use it to find out why a service is down \
         or misbehaving. Give the window relative to now (\"15m\", \"2h\"); do not compute times."
            .into()
    }

    async fn call(&self, input: LogsInput, _ctx: ToolCtx) -> Result<Logs> {
        let minutes = parse_window(&input.window)?;
        self.0.call_latency().await;
        let mut lines = self.0.logs(input.service, input.level, minutes);
        let total = lines.len();
        lines.truncate(20);
        Ok(Logs {
            service: input.service,
            level: input.level,
            window: input.window,
            lines,
            total,
        })
    }
}

/// Input of `restartService`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
// No other fields: the schema says so (`additionalProperties: false`),
// so a model constrained by it cannot pad a call with made-up ones.
#[serde(deny_unknown_fields)]
pub struct RestartInput {
    /// Which service to restart.
    #[schemars(schema_with = "service_schema")]
    pub service: Service,
    /// Why, in a few words (shown to the person approving).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What `restartService` returns.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Restarted {
    /// The service restarted.
    pub service: Service,
    /// Its status right after the restart.
    pub status: Status,
}

/// `restartService`: restarts a service, once a person approved it.
///
/// Each approval restarts the service at most once, however often or
/// concurrently it arrives. The restart is keyed by the server-minted id of
/// the interrupt the person approved (`resumed.interruptId`, set by the
/// agent runtime when it accepts the restart against the interrupt stored in
/// the session), and claimed in the session store *before* it runs
/// ([`run_once`]): a second approval of the same interrupt, concurrent or a
/// retry of a turn that failed after the restart, gets the recorded outcome
/// (or `ABORTED` while the first is still restarting) and never restarts
/// again; a later approval (another interrupt) is another restart.
///
/// A call without an interrupt id was not approved through an agent: it is
/// refused (`FAILED_PRECONDITION`) and nothing restarts.
pub struct RestartService {
    /// The fleet.
    pub fleet: Arc<Fleet>,
    /// Where restarts are claimed and recorded.
    pub store: Arc<dyn SessionStore>,
}

impl RestartService {
    /// The restart approved as `effect_key` (see [`approved_effect_key`]) in
    /// `session_id`: run now if it never ran, else its recorded outcome.
    pub async fn restart_once(
        &self,
        session_id: &str,
        effect_key: &str,
        input: RestartInput,
    ) -> Result<Restarted> {
        run_once(&*self.store, session_id, effect_key, || async {
            self.fleet.call_latency().await;
            // The audit line of every restart that actually happens.
            tracing::info!(
                session = session_id,
                effect = effect_key,
                "restartService: restarting {}",
                input.service.name()
            );
            let status = self.fleet.restart(input.service);
            Ok::<_, EffectError>(Restarted {
                service: input.service,
                status,
            })
        })
        .await
    }
}

impl ToolImpl for RestartService {
    type Input = RestartInput;
    type Output = Restarted;

    fn name(&self) -> &str {
        "restartService"
    }

    fn description(&self) -> String {
        "Restarts one service. Disruptive: the user is asked to approve every call. Use it when \
         the user asks for a restart, or after proposing one the user agreed to."
            .into()
    }

    fn needs_approval(&self) -> bool {
        true
    }

    fn side_effecting(&self) -> bool {
        true
    }

    async fn call(&self, input: RestartInput, ctx: ToolCtx) -> Result<Restarted> {
        let key = approved_effect_key(&ctx, self.name())?;
        let session = ctx.extension::<AgentSession>().ok_or_else(|| {
            Error::user_facing(
                StatusCode::FailedPrecondition,
                "restartService runs only in an agent session, where its restarts are recorded",
            )
        })?;
        let restarted = self
            .restart_once(&session.session_id(), &key, input)
            .await?;
        // After the outcome is recorded: a turn cut short here is retried
        // with that outcome, never with a second restart.
        if let Some(settle) = self.fleet.restart_settle_time() {
            tracing::info!(
                effect = key,
                "restartService: {} restarted (outcome recorded); waiting {} ms for it to settle",
                restarted.service.name(),
                settle.as_millis()
            );
            tokio::time::sleep(settle).await;
        }
        Ok(restarted)
    }
}

/// Registers the three tools over `fleet`; restarts are recorded in `store`.
pub fn define_tools(ai: &Genkit, fleet: &Arc<Fleet>, store: &Arc<dyn SessionStore>) {
    ai.define_tool_impl(GetServiceStatus(fleet.clone()));
    ai.define_tool_impl(QueryLogs(fleet.clone()));
    ai.define_tool_impl(RestartService {
        fleet: fleet.clone(),
        store: store.clone(),
    });
}

#[cfg(test)]
mod tests {
    use genkit::action::{ActionCtx, Cancellation};
    use genkit::agent::store::InMemorySessionStore;
    use genkit::context::ActionContext;
    use genkit::tracing::{SpanId, TraceId, TraceInfo};

    use super::*;

    fn restart_tool() -> (Arc<Fleet>, RestartService) {
        let fleet = Arc::new(Fleet::default());
        let tool = RestartService {
            fleet: fleet.clone(),
            store: Arc::new(InMemorySessionStore::new()),
        };
        (fleet, tool)
    }

    fn db() -> RestartInput {
        RestartInput {
            service: Service::Db,
            reason: None,
        }
    }

    /// Two approvals of one interrupt arriving at once: one restart. The
    /// other approval waits for it and gets its recorded outcome.
    #[tokio::test]
    async fn two_concurrent_approvals_of_one_restart_restart_once() -> Result<()> {
        // A slow fleet API: the second approval arrives mid-restart.
        let fleet = Arc::new(Fleet::new(std::time::Duration::from_millis(50)));
        let tool = RestartService {
            fleet: fleet.clone(),
            store: Arc::new(InMemorySessionStore::new()),
        };
        let key = "restartService/snap-1/0";
        let (a, b) = tokio::join!(
            tool.restart_once("s1", key, db()),
            tool.restart_once("s1", key, db())
        );
        assert_eq!(fleet.restarts(), 1, "one approval, two restarts");
        assert_eq!(a?.service, Service::Db);
        assert_eq!(b?.service, Service::Db);
        // Once the first finished, the same approval gets its outcome.
        let again = tool.restart_once("s1", key, db()).await?;
        assert_eq!(again.service, Service::Db);
        assert_eq!(fleet.restarts(), 1);
        Ok(())
    }

    /// A later approval (another interrupt) of the same service restarts
    /// it again: it is never mistaken for the earlier one.
    #[tokio::test]
    async fn a_later_approved_restart_of_the_same_service_runs() -> Result<()> {
        let (fleet, tool) = restart_tool();
        tool.restart_once("s1", "restartService/snap-1/0", db())
            .await?;
        tool.restart_once("s1", "restartService/snap-7/0", db())
            .await?;
        assert_eq!(fleet.restarts(), 2);
        Ok(())
    }

    /// Called without a server-minted interrupt id (not through an approved
    /// agent resume), the tool refuses and nothing restarts.
    #[tokio::test]
    async fn a_call_without_an_approved_interrupt_is_refused() {
        let (fleet, tool) = restart_tool();
        let trace = TraceInfo {
            trace_id: TraceId::random(),
            span_id: SpanId::random(),
        };
        let mut ctx = ActionCtx::new(ActionContext::default(), Cancellation::default(), trace);
        // Even a call that claims approval, but has no interrupt id.
        ctx.metadata = Some(json!({"resumed": {"toolApproved": true}}));
        let refused = tool.call(db(), ToolCtx::new(ctx)).await.err();
        assert_eq!(
            refused.map(|e| (e.status(), e.message().to_owned())),
            Some((
                StatusCode::FailedPrecondition,
                "restartService needs a person's approval: it runs only when an agent resumes \
                 its interrupt (the call carries no resumed.interruptId)"
                    .to_owned()
            ))
        );
        assert_eq!(fleet.restarts(), 0);
    }
}
