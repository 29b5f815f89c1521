//! The assistant's tools over the simulated fleet: two read-only ones and
//! `restartService`, which changes the world and so is marked as needing a
//! person's approval (the `toolApproval` middleware interrupts before it
//! runs) and as side-effecting (never served from a cache).

use std::sync::Arc;

use genkit::agent::store::SessionStore;
use genkit::prelude::*;

use crate::fleet::{Fleet, Level, Service, Status, parse_window};

/// The tools' names, as the prompt lists them.
pub const TOOLS: [&str; 3] = ["getServiceStatus", "queryLogs", "restartService"];

/// Input of `getServiceStatus`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct StatusInput {
    /// Which service to check.
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
pub struct LogsInput {
    /// Whose logs.
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
pub struct RestartInput {
    /// Which service to restart.
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
/// A restart is recorded in the session store the moment it ran, outside
/// the turn's snapshot (`record_effect`): if the turn then fails (the
/// model errors on the follow-up call, the process dies) the session goes
/// back to before the turn, and the retried turn finds the record instead
/// of restarting the service a second time.
pub struct RestartService {
    /// The fleet.
    pub fleet: Arc<Fleet>,
    /// Where restarts are recorded.
    pub store: Arc<dyn SessionStore>,
}

impl RestartService {
    /// The session and the key this call's record goes under: one per
    /// service and point in the session's history, so a retry of the same
    /// turn finds it and a later turn's restart does not.
    fn effect_key(ctx: &ToolCtx, service: Service) -> Option<(String, String)> {
        let session = ctx.extension::<AgentSession>()?;
        let at = session.messages().len();
        Some((
            session.session_id(),
            format!("restartService/{}/{at}", service.name()),
        ))
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
        let key = Self::effect_key(&ctx, input.service);
        if let Some((session, key)) = &key
            && let Some(done) = self.store.effect(session, key).await?
        {
            return Ok(serde_json::from_value(done)?);
        }
        self.fleet.call_latency().await;
        let status = self.fleet.restart(input.service);
        let done = Restarted {
            service: input.service,
            status,
        };
        match &key {
            // The first record under a key wins; report what it says.
            Some((session, key)) => {
                let recorded = self
                    .store
                    .record_effect(session, key, serde_json::to_value(&done)?)
                    .await?;
                Ok(serde_json::from_value(recorded)?)
            }
            None => Ok(done),
        }
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
