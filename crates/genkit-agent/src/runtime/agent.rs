//! Defining an agent: [`define_agent`] builds its three actions
//! (`/agent/<name>`, `/agent-snapshot/<name>`, `/agent-abort/<name>`) over
//! the state they share, and registers them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use genkit_core::action::{Action, ActionCtx, ActionDesc, ActionKind};
use genkit_core::schema::{SchemaValidator, schema_for};
use genkit_core::tracing::current_context;
use genkit_core::{ActionContext, CancellationToken, Error, Registry, Result, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::detach_limits::{DEFAULT_DETACHED_TIMEOUT, DEFAULT_MAX_DETACHED, DetachedLimit};
use super::options::AgentOptions;
use super::replica::LeaseConfig;
use super::run::run_signed;
use super::{AgentAction, TurnFn};
use crate::limits::{HistorySizes, SessionLimits};
use crate::ownership::{PrincipalFn, default_principal};
use crate::session::AgentSession;
use crate::state_signing::StateSigner;
use crate::store::SessionStore;
use crate::transform::ClientTransform;
use crate::types::{
    AgentAbortRequest, AgentAbortResponse, AgentInit, AgentInput, AgentMetadata, AgentOutput,
    AgentResult, AgentStateManagement, AgentStreamChunk, GetSnapshotRequest, SessionSnapshot,
    SessionState, SnapshotStatus,
};

/// A defined agent: its bidirectional action and companions.
#[derive(Clone)]
pub struct Agent {
    action: AgentAction,
    snapshot: Action<GetSnapshotRequest, SessionSnapshot>,
    abort: Action<AgentAbortRequest, AgentAbortResponse>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.shared.name)
            .finish()
    }
}

/// What an agent's three actions share: its definition, and the abort
/// signals of the detached turns it runs in this process.
pub(super) struct Shared {
    pub(super) name: String,
    pub(super) store: Option<Arc<dyn SessionStore>>,
    pub(super) turn: Arc<TurnFn>,
    /// Validates the custom state a run starts from.
    pub(super) state_validator: Option<SchemaValidator>,
    pub(super) transform: Option<ClientTransform>,
    /// Abort signals of this process's detached turns, by snapshot id.
    pub(super) running: Mutex<HashMap<String, CancellationToken>>,
    pub(super) principal: PrincipalFn,
    pub(super) client_session_ids: bool,
    pub(super) allow_forks: bool,
    pub(super) detached_timeout: std::time::Duration,
    pub(super) detached: DetachedLimit,
    /// The leases of this agent's detached turns.
    pub(super) lease: LeaseConfig,
    pub(super) limits: SessionLimits,
    /// The sizes of histories the caps check measured.
    pub(super) history_sizes: HistorySizes,
    /// Signs client-managed states (`None`: they travel unsigned).
    pub(super) signer: Option<StateSigner>,
}

/// The wire schemas every agent's descriptor carries, derived once.
struct AgentSchemas {
    init: Value,
    input: Value,
    output: Value,
    stream: Value,
}

fn agent_schemas() -> &'static AgentSchemas {
    static SCHEMAS: std::sync::OnceLock<AgentSchemas> = std::sync::OnceLock::new();
    SCHEMAS.get_or_init(|| AgentSchemas {
        init: schema_for::<AgentInit>(),
        input: schema_for::<AgentInput>(),
        output: schema_for::<AgentOutput>(),
        stream: schema_for::<AgentStreamChunk>(),
    })
}

/// Defines an agent whose turns run `turn` on the session, and registers its
/// three actions. Fails if a key is taken.
pub fn define_agent<F, Fut>(
    registry: &Registry,
    name: impl Into<String>,
    options: AgentOptions,
    turn: F,
) -> Result<Agent>
where
    F: Fn(AgentSession, AgentInput) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AgentResult>> + Send + 'static,
{
    let agent = Agent::new(name, options, turn)?;
    registry.register(agent.action.to_dyn())?;
    registry.register(agent.snapshot.clone())?;
    registry.register(agent.abort.clone())?;
    Ok(agent)
}

impl Agent {
    /// An agent (not registered; see [`define_agent`]).
    pub fn new<F, Fut>(name: impl Into<String>, options: AgentOptions, turn: F) -> Result<Self>
    where
        F: Fn(AgentSession, AgentInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentResult>> + Send + 'static,
    {
        let name = name.into();
        let state_validator = options
            .state_schema
            .as_ref()
            .map(|schema| SchemaValidator::compile(&Value::Object(schema.clone())))
            .transpose()?;
        let shared = Arc::new(Shared {
            name: name.clone(),
            store: options.store.clone(),
            turn: Arc::new(move |session, input| turn(session, input).boxed()),
            state_validator,
            transform: options.client_transform.clone(),
            running: Mutex::new(HashMap::new()),
            principal: options
                .principal
                .clone()
                .unwrap_or_else(|| Arc::new(default_principal)),
            client_session_ids: options.client_session_ids,
            allow_forks: options.allow_forks,
            detached_timeout: options.detached_timeout.unwrap_or(DEFAULT_DETACHED_TIMEOUT),
            detached: DetachedLimit::new(options.max_detached.unwrap_or(DEFAULT_MAX_DETACHED)),
            lease: LeaseConfig::new(
                options.replica_id.clone(),
                options.lease_time,
                options.heartbeat_interval,
            )?,
            limits: options.limits,
            history_sizes: HistorySizes::default(),
            signer: options.signer.clone().filter(|_| options.store.is_none()),
        });
        let metadata = AgentMetadata {
            state_management: if options.store.is_some() {
                AgentStateManagement::Server
            } else {
                AgentStateManagement::Client
            },
            abortable: options.store.is_some(),
            state_schema: options.state_schema.clone(),
        };
        let mut desc = ActionDesc::new(ActionKind::Agent, name.clone())
            .with_metadata("agent", serde_json::to_value(&metadata)?);
        if let Some(d) = &options.description {
            desc = desc.with_description(d.clone());
        }
        let schemas = agent_schemas();
        desc.init_schema = Some(schemas.init.clone());
        desc.input_schema = Some(schemas.input.clone());
        desc.output_schema = Some(schemas.output.clone());
        desc.stream_schema = Some(schemas.stream.clone());
        let run_shared = shared.clone();
        let action = AgentAction::from_desc(desc, move |init, inputs, ctx| {
            run_signed(run_shared.clone(), init, inputs, ctx)
        })?;

        let snap_shared = shared.clone();
        let snapshot_desc = ActionDesc::new(ActionKind::AgentSnapshot, name.clone())
            .with_description(format!(
                "Gets snapshot data for {name} by snapshotId or sessionId"
            ));
        let mut snapshot_desc = snapshot_desc;
        snapshot_desc.input_schema = Some(schema_for::<GetSnapshotRequest>());
        snapshot_desc.output_schema = Some(schema_for::<SessionSnapshot>());
        let snapshot = Action::from_desc_typed(snapshot_desc, move |req, ctx: ActionCtx| {
            let shared = snap_shared.clone();
            async move {
                let principal = shared.principal_of(&ctx.context);
                shared.read_snapshot(req, principal.as_deref()).await
            }
        });

        let abort_shared = shared.clone();
        let mut abort_desc = ActionDesc::new(ActionKind::AgentAbort, name.clone())
            .with_description(format!(
                "Aborts {name} agent by snapshotId. Returns the snapshot id and its status after the abort attempt."
            ));
        abort_desc.input_schema = Some(schema_for::<AgentAbortRequest>());
        abort_desc.output_schema = Some(schema_for::<AgentAbortResponse>());
        let abort = Action::from_desc_typed(abort_desc, move |req, ctx: ActionCtx| {
            let shared = abort_shared.clone();
            async move {
                let principal = shared.principal_of(&ctx.context);
                shared.abort(req, principal.as_deref()).await
            }
        });
        Ok(Self {
            action,
            snapshot,
            abort,
            shared,
        })
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The `/agent/<name>` bidirectional action.
    pub fn action(&self) -> &AgentAction {
        &self.action
    }

    /// The `/agent-snapshot/<name>` action.
    pub fn snapshot_action(&self) -> &Action<GetSnapshotRequest, SessionSnapshot> {
        &self.snapshot
    }

    /// The `/agent-abort/<name>` action.
    pub fn abort_action(&self) -> &Action<AgentAbortRequest, AgentAbortResponse> {
        &self.abort
    }

    /// Reads a snapshot by snapshot id or (its latest) by session id.
    pub async fn get_snapshot(&self, request: GetSnapshotRequest) -> Result<SessionSnapshot> {
        self.snapshot.run(request).await
    }

    /// Aborts a detached turn; returns the snapshot's status before the
    /// abort (`None` if there is no such snapshot, or it is another
    /// principal's).
    pub async fn abort(&self, snapshot_id: impl Into<String>) -> Result<Option<SnapshotStatus>> {
        let request = AgentAbortRequest {
            snapshot_id: snapshot_id.into(),
        };
        self.abort.run(request).await.map(|r| r.status)
    }

    /// Forks a session explicitly: copies the state of a completed snapshot
    /// into a new session with a server-minted id, owned by the caller (the
    /// principal of the running action's context), and returns the new
    /// session's id. The snapshot's session is left as it is. A snapshot
    /// the caller does not own is `NOT_FOUND`, as an unknown one.
    pub async fn fork(&self, snapshot_id: &str) -> Result<String> {
        let principal = self.shared.principal_of(&current_context());
        self.shared.fork(snapshot_id, principal.as_deref()).await
    }
}

impl Shared {
    /// The store an `operation` needs (worded as Genkit JS words it).
    pub(super) fn store(&self, operation: &str) -> Result<&Arc<dyn SessionStore>> {
        self.store.as_ref().ok_or_else(|| {
            precondition(format!(
                "{operation} requires a persistent store. Provide a 'store' when defining '{}'.",
                self.name
            ))
        })
    }

    /// The state as clients see it.
    pub(super) fn client_state(&self, state: SessionState) -> SessionState {
        match &self.transform {
            Some(t) => t.client_state(state),
            None => state,
        }
    }

    /// Checks the custom state a run starts from against the state schema.
    pub(super) fn validate_custom(&self, state: Option<&SessionState>) -> Result<()> {
        match (&self.state_validator, state.and_then(|s| s.custom.as_ref())) {
            (Some(validator), Some(custom)) => validator.validate(custom),
            _ => Ok(()),
        }
    }

    /// The principal a request with this context speaks for.
    pub(super) fn principal_of(&self, context: &ActionContext) -> Option<String> {
        (self.principal)(context)
    }
}

pub(super) fn precondition(message: String) -> Error {
    Error::user_facing(StatusCode::FailedPrecondition, message)
}

/// JSON of an agent's metadata, as the descriptor carries it.
pub fn agent_metadata(action: &AgentAction) -> Option<Value> {
    action.desc().metadata.get("agent").cloned()
}
