//! The agent runtime: an agent is the bidirectional action `/agent/<name>`
//! with its companions `/agent-snapshot/<name>` and `/agent-abort/<name>`,
//! registered and described as Genkit JS 1.42 does.
//!
//! A run resolves its init to a session (fresh, the client's state, or a
//! stored snapshot), then runs one turn per input: the user's message is
//! added, the agent's turn function runs on the session, and the turn ends
//! with a `turnEnd` chunk (and, with a store, a snapshot chained to the
//! previous one). A failed turn ends the run gracefully (`finishReason:
//! failed`, the error in the output and snapshot) and leaves the state as it
//! was. A `detach` input hands the running turn to a background task that
//! records its outcome in a pending snapshot.
//!
//! Server-managed sessions belong to the principal that created them (see
//! [`ownership`](super::ownership)); their ids are minted here unless the
//! agent lets clients name them; a resume continues a session and never
//! branches it (forks are [`Agent::fork`], or opted into); detached turns
//! run under a deadline and a per-agent limit, and an abort cancels the
//! model calls and tools they run.

use genkit_model::middleware::{ConversationArtifactsRef, ConversationScope};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, Either, select};
use futures::{FutureExt, StreamExt};
use genkit_core::action::{Action, ActionCtx, ActionDesc, ActionKind, BidiAction, BidiInputs};
use genkit_core::schema::{SchemaValidator, schema_for};
use genkit_core::tracing::{current_context, with_cancellation_scope, with_extension};
use genkit_core::{ActionContext, CancellationToken, Error, Registry, Result, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::clock::{HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, effective_status, now_rfc3339};
pub use super::detached::{DEFAULT_DETACHED_TIMEOUT, DEFAULT_MAX_DETACHED};
use super::detached::{DetachedLimit, DetachedSlot, deadline_exceeded};
use super::input_check::admit;
use super::limits::SessionLimits;
use super::ownership::{self, PrincipalFn, default_principal};
use super::session::AgentSession;
use super::state_signing::StateSigner;
use super::store::{SessionStore, StoredSnapshot, is_conflict, new_snapshot_id};
use super::transform::ClientTransform;
use super::turn_failure::report_failed_turn;
use super::types::{
    AgentAbortRequest, AgentAbortResponse, AgentFinishReason, AgentInit, AgentInput, AgentMetadata,
    AgentOutput, AgentResult, AgentStateManagement, AgentStreamChunk, GetSnapshotRequest,
    RuntimeError, SessionSnapshot, SessionState, SnapshotStatus, TurnEnd,
};

/// The bidirectional action of an agent.
pub type AgentAction = BidiAction<AgentInit, AgentInput, AgentOutput, AgentStreamChunk>;

/// What a turn function returns.
pub type TurnFuture = BoxFuture<'static, Result<AgentResult>>;

type TurnFn = dyn Fn(AgentSession, AgentInput) -> TurnFuture + Send + Sync;

/// Options of an agent: where its sessions live, how it describes itself,
/// and what its clients may do with server-managed sessions.
///
/// Server-managed sessions are owned (see [`ownership`](super::ownership)):
/// the principal that created a session is the only one that can resume it,
/// read its snapshots or abort its turns. New session ids are minted by the
/// server (an unknown `sessionId` is `NOT_FOUND`) unless
/// [`client_session_ids`](Self::client_session_ids); resuming a snapshot
/// that is not its session's latest (a fork) is refused unless
/// [`allow_forks`](Self::allow_forks) (or done explicitly with
/// [`Agent::fork`]). Detached turns are bounded by
/// [`detached_timeout`](Self::detached_timeout) and
/// [`max_detached`](Self::max_detached).
///
/// Sessions are bounded (see [`limits`](super::limits)).
///
/// Without a store the agent is client-managed: the client holds the whole
/// state and can rewrite it (history included) unless the agent signs it
/// ([`AgentOptions::state_signing_key`], see
/// [`state_signing`](super::state_signing)).
#[derive(Clone, Default)]
pub struct AgentOptions {
    store: Option<Arc<dyn SessionStore>>,
    description: Option<String>,
    state_schema: Option<serde_json::Map<String, Value>>,
    client_transform: Option<ClientTransform>,
    principal: Option<PrincipalFn>,
    client_session_ids: bool,
    allow_forks: bool,
    detached_timeout: Option<std::time::Duration>,
    max_detached: Option<usize>,
    pub(super) limits: SessionLimits,
    pub(super) signer: Option<StateSigner>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("store", &self.store.is_some())
            .field("description", &self.description)
            .field("client_transform", &self.client_transform)
            .field("principal", &self.principal.is_some())
            .field("client_session_ids", &self.client_session_ids)
            .field("allow_forks", &self.allow_forks)
            .field("detached_timeout", &self.detached_timeout)
            .field("max_detached", &self.max_detached)
            .field("limits", &self.limits)
            .field("state_signing", &self.signer.is_some())
            .finish()
    }
}

impl AgentOptions {
    /// Client-managed state, no description.
    pub fn new() -> Self {
        Self::default()
    }

    /// Server-managed sessions kept in `store`.
    pub fn store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The agent's description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The JSON schema of the custom state: advertised in the metadata, and
    /// a custom state a run starts from (the client's, or a stored
    /// snapshot's) that fails it fails the run (`INVALID_ARGUMENT`).
    pub fn state_schema(mut self, schema: Value) -> Self {
        self.state_schema = schema.as_object().cloned();
        self
    }

    /// The custom state's schema derived from `T`.
    pub fn state_type<T: schemars::JsonSchema>(self) -> Self {
        self.state_schema(schema_for::<T>())
    }

    /// What clients see of the sessions (see [`ClientTransform`]); the
    /// store and the turns keep the untransformed state.
    pub fn client_transform(mut self, transform: ClientTransform) -> Self {
        self.client_transform = Some(transform);
        self
    }

    /// How a request's principal (who owns the sessions it creates, and
    /// whose sessions it may use) is derived from its action context;
    /// `None` is anonymous. Default:
    /// [`default_principal`](super::ownership::default_principal), a hash
    /// of the context's `auth`.
    pub fn principal<F>(mut self, principal: F) -> Self
    where
        F: Fn(&ActionContext) -> Option<String> + Send + Sync + 'static,
    {
        self.principal = Some(Arc::new(principal));
        self
    }

    /// Lets clients name new sessions: an init `sessionId` that does not
    /// exist yet starts a session under that id (as Genkit JS does).
    /// Off by default: new session ids are minted by the server (the
    /// output's `sessionId`), and an unknown `sessionId` is `NOT_FOUND`, so
    /// a mistyped id is an error rather than a new, empty session.
    pub fn client_session_ids(mut self, allow: bool) -> Self {
        self.client_session_ids = allow;
        self
    }

    /// Lets clients fork sessions: resuming by `snapshotId` a snapshot that
    /// is not its session's latest starts a second branch (as Genkit JS
    /// does; such a session has no latest and can only be resumed by
    /// snapshot id from then on). Off by default: refused with
    /// `FAILED_PRECONDITION`; [`Agent::fork`] copies a snapshot into a new
    /// session instead.
    pub fn allow_forks(mut self, allow: bool) -> Self {
        self.allow_forks = allow;
        self
    }

    /// How long a detached turn may run before it is cancelled and its
    /// snapshot marked failed with a `DEADLINE_EXCEEDED` error (default
    /// [`DEFAULT_DETACHED_TIMEOUT`], 15 minutes).
    pub fn detached_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.detached_timeout = Some(timeout);
        self
    }

    /// How many detached turns of this agent may run at once in this
    /// process (default [`DEFAULT_MAX_DETACHED`], 64); a detach over it is
    /// refused with `RESOURCE_EXHAUSTED` and writes nothing.
    pub fn max_detached(mut self, max: usize) -> Self {
        self.max_detached = Some(max);
        self
    }
}

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

struct Shared {
    name: String,
    store: Option<Arc<dyn SessionStore>>,
    turn: Arc<TurnFn>,
    /// Validates the custom state a run starts from.
    state_validator: Option<SchemaValidator>,
    transform: Option<ClientTransform>,
    /// Abort signals of this process's detached turns, by snapshot id.
    running: Mutex<HashMap<String, CancellationToken>>,
    principal: PrincipalFn,
    client_session_ids: bool,
    allow_forks: bool,
    detached_timeout: std::time::Duration,
    detached: DetachedLimit,
    limits: SessionLimits,
    /// Signs client-managed states (`None`: they travel unsigned).
    signer: Option<StateSigner>,
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
            limits: options.limits,
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
    fn store(&self, operation: &str) -> Result<&Arc<dyn SessionStore>> {
        self.store.as_ref().ok_or_else(|| {
            precondition(format!(
                "{operation} requires a persistent store. Provide a 'store' when defining '{}'.",
                self.name
            ))
        })
    }

    fn detach_store(&self) -> Result<&Arc<dyn SessionStore>> {
        self.store.as_ref().ok_or_else(|| {
            precondition("Detach is only supported when a session store is provided.".to_owned())
        })
    }

    /// The state as clients see it.
    fn client_state(&self, state: SessionState) -> SessionState {
        match &self.transform {
            Some(t) => t.client_state(state),
            None => state,
        }
    }

    /// Checks the custom state a run starts from against the state schema.
    fn validate_custom(&self, state: Option<&SessionState>) -> Result<()> {
        match (&self.state_validator, state.and_then(|s| s.custom.as_ref())) {
            (Some(validator), Some(custom)) => validator.validate(custom),
            _ => Ok(()),
        }
    }

    /// The principal a request with this context speaks for.
    fn principal_of(&self, context: &ActionContext) -> Option<String> {
        (self.principal)(context)
    }

    /// What a caller who may not see a snapshot is told: exactly what an
    /// unknown snapshot id gets.
    fn snapshot_not_found(&self, id: &str) -> Error {
        Error::user_facing(
            StatusCode::NotFound,
            format!("Snapshot '{id}' not found for agent '{}'.", self.name),
        )
    }

    /// What resuming an unknown session (or another principal's) is told.
    fn session_not_found(&self, id: &str) -> Error {
        Error::user_facing(
            StatusCode::NotFound,
            format!(
                "Session '{id}' not found for agent '{}'; omit `sessionId` to start a new session.",
                self.name
            ),
        )
    }

    /// The stored snapshot `id` if `principal` may see it (its session is
    /// theirs); `None` alike for unknown ids and other principals'.
    async fn owned_snapshot(
        &self,
        store: &Arc<dyn SessionStore>,
        id: &str,
        principal: Option<&str>,
    ) -> Result<Option<StoredSnapshot>> {
        let stored = match store.get(id).await {
            Ok(stored) => stored,
            Err(e) if e.status() == StatusCode::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let session = stored.snapshot.owner_session_id().unwrap_or_default();
        if session.is_empty() || !ownership::may_use(store, session, principal).await? {
            return Ok(None);
        }
        Ok(Some(stored))
    }

    /// Reads a snapshot by id, or a session's latest; a snapshot or session
    /// of another principal reads as unknown (`NOT_FOUND`).
    async fn read_snapshot(
        &self,
        req: GetSnapshotRequest,
        principal: Option<&str>,
    ) -> Result<SessionSnapshot> {
        let store = self.store("getSnapshotData")?;
        let mut snapshot = match (&req.snapshot_id, &req.session_id) {
            (Some(id), None) => match self.owned_snapshot(store, id, principal).await? {
                Some(stored) => stored.snapshot,
                None => return Err(self.snapshot_not_found(id)),
            },
            (None, Some(session)) => {
                let lookup = if ownership::may_use(store, session, principal).await? {
                    store.latest(session).await
                } else {
                    Err(Error::new(StatusCode::NotFound, "not the caller's"))
                };
                match lookup {
                    Ok(stored) => stored.snapshot,
                    Err(e) if e.status() == StatusCode::NotFound => {
                        return Err(self.snapshot_not_found(session));
                    }
                    Err(e) => return Err(e),
                }
            }
            (snapshot, _) => {
                let got = if snapshot.is_some() {
                    "snapshotId and sessionId"
                } else {
                    "neither"
                };
                return Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    format!(
                        "getSnapshot requires exactly one of 'snapshotId' or 'sessionId' (got {got})."
                    ),
                ));
            }
        };
        snapshot.status =
            effective_status(&snapshot, std::time::SystemTime::now(), HEARTBEAT_TIMEOUT);
        snapshot.state = snapshot.state.map(|s| self.client_state(s));
        Ok(snapshot)
    }

    /// Aborts a detached turn: marks its snapshot `aborted` and cancels the
    /// turn (its model calls and tools) if it runs in this process. A
    /// snapshot of another principal is left alone and answered as an
    /// unknown one (no status).
    async fn abort(
        &self,
        req: AgentAbortRequest,
        principal: Option<&str>,
    ) -> Result<AgentAbortResponse> {
        let store = self.store("abort")?;
        let unknown = AgentAbortResponse {
            snapshot_id: req.snapshot_id.clone(),
            status: None,
        };
        if self
            .owned_snapshot(store, &req.snapshot_id, principal)
            .await?
            .is_none()
        {
            return Ok(unknown);
        }
        let status = match store.abort(&req.snapshot_id).await {
            Ok(status) => status,
            Err(e) if e.status() == StatusCode::NotFound => None,
            Err(e) => return Err(e),
        };
        if let Some(token) = self.running.lock().remove(&req.snapshot_id) {
            token.cancel();
        }
        Ok(AgentAbortResponse {
            snapshot_id: req.snapshot_id,
            status,
        })
    }

    /// Copies a completed snapshot the caller owns into a new session
    /// (server-minted id, owned by the caller); returns its id.
    async fn fork(&self, snapshot_id: &str, principal: Option<&str>) -> Result<String> {
        let store = self.store("fork")?;
        let snapshot = self
            .owned_snapshot(store, snapshot_id, principal)
            .await?
            .ok_or_else(|| self.snapshot_not_found(snapshot_id))?
            .snapshot;
        if let Some(status) = snapshot.status.filter(|s| *s != SnapshotStatus::Completed) {
            return Err(precondition(format!(
                "Snapshot '{snapshot_id}' cannot be forked (status: {status}); only completed snapshots can."
            )));
        }
        let session_id = new_snapshot_id();
        let state = with_session_id(
            snapshot.state.unwrap_or_else(|| fresh(None)),
            Some(session_id.clone()),
        );
        let now = now_rfc3339();
        let mut copy = SessionSnapshot::new(new_snapshot_id(), now.clone());
        copy.session_id = Some(session_id.clone());
        copy.updated_at = Some(now);
        copy.status = Some(SnapshotStatus::Completed);
        copy.finish_reason = snapshot.finish_reason;
        copy.state = Some(state);
        self.append(store, copy, 0, principal).await?;
        Ok(session_id)
    }

    /// The session a run starts from, the snapshot it continues, and the
    /// session version read with it (the base of the run's first append).
    /// `Err` is misuse of the init (the invocation fails); `Ok(Err)` a
    /// start that cannot be continued: an unknown or not resumable
    /// snapshot, an unknown session (or another principal's: the same
    /// answer), or a custom state failing the state schema (the run ends
    /// as a failed turn, as in Genkit JS).
    async fn resolve(
        &self,
        init: AgentInit,
        principal: Option<&str>,
    ) -> Result<std::result::Result<(SessionState, Option<String>, u64), StartFailure>> {
        let Some(store) = &self.store else {
            for (field, given) in [
                ("snapshotId", init.snapshot_id.is_some()),
                ("sessionId", init.session_id.is_some()),
            ] {
                if given {
                    return Err(precondition(format!(
                        "Cannot use '{field}' with agent '{}': this agent has no store configured (client-managed state). Send 'state' instead.",
                        self.name
                    )));
                }
            }
            let state = match init.state {
                Some(state) => {
                    if let Err(error) = self.validate_custom(Some(&state)) {
                        // The client gets back the state it sent, as is.
                        return Ok(Err(StartFailure {
                            error,
                            state: Some(state),
                        }));
                    }
                    with_session_id(state, None)
                }
                None => fresh(None),
            };
            return Ok(Ok((state, None, 0)));
        };
        if init.state.is_some() {
            return Err(precondition(format!(
                "Cannot send 'state' to agent '{}': this agent uses a server-managed store. Send 'snapshotId' or 'sessionId' instead.",
                self.name
            )));
        }
        if let Some(session) = &init.session_id
            && session.trim().is_empty()
        {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "'sessionId' must not be empty.",
            ));
        }
        let (stored, version) = match (&init.snapshot_id, &init.session_id) {
            (Some(id), _) => {
                let Some(stored) = self.owned_snapshot(store, id, principal).await? else {
                    // As the stores word an unknown snapshot id.
                    let unknown = Error::user_facing(
                        StatusCode::NotFound,
                        format!("Snapshot {id} not found"),
                    );
                    return Ok(Err(unknown.into()));
                };
                let version = stored.session_version;
                (stored, version)
            }
            (None, Some(session)) => {
                let latest = if ownership::may_use(store, session, principal).await? {
                    store.latest(session).await
                } else {
                    Err(Error::new(StatusCode::NotFound, "not the caller's"))
                };
                match latest {
                    Ok(latest) => {
                        // Appends are based on the version read with the
                        // latest: a turn appended since (say, past the same
                        // failed leaf) makes this run's append conflict.
                        let version = latest.session_version;
                        match self.resumable_ancestor(store, latest).await? {
                            Some(stored) => (stored, version),
                            None => return Ok(Ok((fresh(Some(session.clone())), None, version))),
                        }
                    }
                    Err(e) if e.status() == StatusCode::NotFound => {
                        // No snapshot: a new session, if clients may name
                        // them, or one this principal owns (created, but
                        // its first write failed).
                        let starts = match ownership::owned_by(store, session, principal).await? {
                            None => self.client_session_ids,
                            Some(ours) => ours,
                        };
                        if starts {
                            return Ok(Ok((fresh(Some(session.clone())), None, 0)));
                        }
                        return Ok(Err(self.session_not_found(session).into()));
                    }
                    Err(e) => return Err(e),
                }
            }
            (None, None) => return Ok(Ok((fresh(None), None, 0))),
        };
        let snapshot = stored.snapshot;
        if let Some(session) = &init.session_id
            && snapshot.owner_session_id() != Some(session.as_str())
        {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                format!(
                    "Snapshot {} does not belong to session {session} (it belongs to {}).",
                    snapshot.snapshot_id,
                    snapshot.owner_session_id().unwrap_or("no session")
                ),
            ));
        }
        match snapshot.status {
            Some(SnapshotStatus::Completed) | None => {}
            Some(status) => {
                return Ok(Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    format!(
                        "Snapshot {} is not resumable (status: {status}). Only 'completed' snapshots can be resumed.",
                        snapshot.snapshot_id
                    ),
                )
                .into()));
            }
        }
        let version = match &init.snapshot_id {
            Some(id) if !self.allow_forks => self.unforked_base(store, &snapshot, id).await?,
            _ => version,
        };
        if let Err(error) = self.validate_custom(snapshot.state.as_ref()) {
            return Ok(Err(error.into()));
        }
        let owner = snapshot.owner_session_id().map(str::to_owned);
        let state = with_session_id(snapshot.state.unwrap_or_default(), owner);
        Ok(Ok((state, Some(snapshot.snapshot_id), version)))
    }

    /// The session version a run resumed by snapshot id appends on, when
    /// the snapshot is what its session resumed by id would continue (its
    /// latest, or the completed ancestor past failed turns): then the run
    /// continues the session, based on the version read with its latest.
    /// Any other snapshot would start a second branch (a fork), refused.
    async fn unforked_base(
        &self,
        store: &Arc<dyn SessionStore>,
        snapshot: &SessionSnapshot,
        id: &str,
    ) -> Result<u64> {
        let session = snapshot.owner_session_id().unwrap_or_default();
        let fork_refused = |latest: &str| {
            precondition(format!(
                "Snapshot '{id}' is not the latest of session '{session}' ({latest}); continuing it would fork the session. Resume by 'sessionId', or fork it into a new session explicitly (Agent::fork)."
            ))
        };
        let latest = match store.latest(session).await {
            Ok(latest) => latest,
            Err(e) if e.status() == StatusCode::FailedPrecondition => {
                return Err(fork_refused("the session has branched"));
            }
            Err(e) => return Err(e),
        };
        let version = latest.session_version;
        let latest_id = latest.snapshot.snapshot_id.clone();
        match self.resumable_ancestor(store, latest).await? {
            Some(head) if head.snapshot.snapshot_id == id => Ok(version),
            _ => Err(fork_refused(&format!("its latest is '{latest_id}'"))),
        }
    }

    /// The snapshot a session resumed by id continues: its latest, or past
    /// failed and aborted turns the newest completed ancestor (`None`: start
    /// the session afresh), as Genkit JS does. A session whose latest turn is
    /// still running is refused: two turns would race on one history. A
    /// pending latest whose heartbeat expired (its worker died) is rewritten
    /// `failed` and passed like any failed turn.
    async fn resumable_ancestor(
        &self,
        store: &Arc<dyn SessionStore>,
        mut stored: StoredSnapshot,
    ) -> Result<Option<StoredSnapshot>> {
        if stored.snapshot.status == Some(SnapshotStatus::Pending) {
            stored = self.fail_expired(store, stored).await?;
        }
        loop {
            match stored.snapshot.status {
                Some(SnapshotStatus::Completed) | None => return Ok(Some(stored)),
                _ => match stored.snapshot.parent_id.clone() {
                    Some(parent) if parent != stored.snapshot.snapshot_id => {
                        stored = store.get(&parent).await?;
                    }
                    _ => return Ok(None),
                },
            }
        }
    }

    /// A pending snapshot: refused while its turn runs (a live heartbeat);
    /// rewritten `failed` (`UNAVAILABLE`) once its heartbeat expired, so
    /// the session is continued past it and it no longer counts as a leaf.
    /// Returns the snapshot as it now stands.
    async fn fail_expired(
        &self,
        store: &Arc<dyn SessionStore>,
        mut stored: StoredSnapshot,
    ) -> Result<StoredSnapshot> {
        for _ in 0..4 {
            if stored.snapshot.status != Some(SnapshotStatus::Pending) {
                return Ok(stored);
            }
            let now = std::time::SystemTime::now();
            if effective_status(&stored.snapshot, now, HEARTBEAT_TIMEOUT)
                != Some(SnapshotStatus::Expired)
            {
                return Err(precondition(format!(
                    "Session '{}' has a turn running (snapshot {} is pending); wait until it completes or abort it.",
                    stored.snapshot.owner_session_id().unwrap_or_default(),
                    stored.snapshot.snapshot_id
                )));
            }
            let mut failed = stored.snapshot.clone();
            failed.status = Some(SnapshotStatus::Failed);
            failed.finish_reason = Some(AgentFinishReason::Failed);
            failed.updated_at = Some(now_rfc3339());
            failed.heartbeat_at = None;
            failed.error = Some(RuntimeError::new(
                StatusCode::Unavailable,
                "The detached turn stopped reporting (its heartbeat expired); the session continues from its last completed snapshot.",
            ));
            match store.update(failed, stored.revision).await {
                Ok(rewritten) => return Ok(rewritten),
                // A heartbeat, an outcome or an abort won: look again.
                Err(e) if is_conflict(&e) || e.status() == StatusCode::FailedPrecondition => {
                    stored = store.get(&stored.snapshot.snapshot_id).await?;
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::user_facing(
            StatusCode::Aborted,
            format!(
                "Snapshot {} kept changing while its expired turn was being closed; retry.",
                stored.snapshot.snapshot_id
            ),
        ))
    }

    /// Appends a turn's snapshot, based on the session version the run last
    /// read or wrote (`base`). If another turn was appended to the session
    /// meanwhile, the store refuses it (`ABORTED`) and the run fails with
    /// that error, nothing written: the turn was computed from a state that
    /// is no longer the session's, so re-basing it would fork the session
    /// behind the caller's back. The caller retries the turn from a fresh
    /// read (e.g. resuming by session id again).
    ///
    /// A session's first snapshot (`base` 0) creates it: its owner,
    /// `principal`, is recorded first; a session someone else created
    /// meanwhile under the same (client-chosen) id is `NOT_FOUND`.
    async fn append(
        &self,
        store: &Arc<dyn SessionStore>,
        snapshot: SessionSnapshot,
        base: u64,
        principal: Option<&str>,
    ) -> Result<StoredSnapshot> {
        if base == 0 {
            let session = snapshot.owner_session_id().unwrap_or_default().to_owned();
            if !session.is_empty() && !ownership::claim(store, &session, principal).await? {
                return Err(self.session_not_found(&session));
            }
        }
        store.append(snapshot, base).await
    }
}

/// Why a run could not start from its init; the run ends as a failed turn.
struct StartFailure {
    error: Error,
    /// The state the client sent, returned as is (client-managed agents).
    state: Option<SessionState>,
}

impl From<Error> for StartFailure {
    fn from(error: Error) -> Self {
        Self { error, state: None }
    }
}

fn precondition(message: String) -> Error {
    Error::user_facing(StatusCode::FailedPrecondition, message)
}

/// A new session's state, with the lists Genkit JS writes for one.
fn fresh(session_id: Option<String>) -> SessionState {
    let state = SessionState {
        messages: Some(Arc::default()),
        artifacts: Some(Vec::new()),
        ..SessionState::default()
    };
    with_session_id(state, session_id)
}

/// The state with `session_id` (or its own, or a new one).
fn with_session_id(mut state: SessionState, session_id: Option<String>) -> SessionState {
    if let Some(id) = session_id {
        state.session_id = Some(id);
    }
    if state.session_id.as_deref().is_none_or(str::is_empty) {
        state.session_id = Some(new_snapshot_id());
    }
    state
}

fn snapshot_of(
    session: &AgentSession,
    parent: Option<String>,
    status: SnapshotStatus,
    state: SessionState,
) -> SessionSnapshot {
    let now = now_rfc3339();
    let mut snapshot = SessionSnapshot::new(new_snapshot_id(), now.clone());
    snapshot.session_id = Some(session.session_id());
    snapshot.parent_id = parent;
    snapshot.updated_at = Some(now);
    snapshot.status = Some(status);
    snapshot.state = Some(state);
    snapshot
}

/// The turn function's future, with the session in the context of
/// everything it calls.
fn start_turn(shared: &Shared, session: &AgentSession, mut input: AgentInput) -> TurnFuture {
    session.begin_turn();
    if let Some(message) = &input.message {
        session.add_messages([message.clone()]);
    }
    input.detach = None;
    let fut = (shared.turn)(session.clone(), input);
    // Middleware that remembers results (the tool cache) keeps them per
    // session. (The inner extension is added once the outer one is in
    // place: `with_extension` starts from the frame current when called.)
    // The history policy keeps its summaries with the session, as
    // artifacts.
    let scope = ConversationScope::new(session.session_id());
    let artifacts = ConversationArtifactsRef(Arc::new(session.clone()));
    with_extension(session.clone(), async move {
        with_extension(scope, async move { with_extension(artifacts, fut).await }).await
    })
    .boxed()
}

struct Progress {
    parent: Option<String>,
    /// The session version `parent` was read at (or appended as).
    version: u64,
    message: Option<genkit_model::types::Message>,
    artifacts: Option<Vec<super::types::Artifact>>,
    finish_reason: Option<AgentFinishReason>,
    /// Who the run speaks for: the owner of a session it creates.
    principal: Option<String>,
}

/// The turn function's future for `input`, built so that the model calls,
/// tools and flows it runs see the session's abort signal as their
/// cancellation (`ActionCtx::is_cancelled`): an abort or a detached turn's
/// deadline stops them, not only the turn function.
fn cancellable_turn(shared: &Shared, session: &AgentSession, input: AgentInput) -> TurnFuture {
    with_cancellation_scope(session.abort_token(), || start_turn(shared, session, input))
}

async fn run(
    shared: Arc<Shared>,
    init: AgentInit,
    mut inputs: BidiInputs<AgentInput>,
    ctx: ActionCtx<AgentStreamChunk>,
) -> Result<AgentOutput> {
    let principal = shared.principal_of(&ctx.context);
    let (state, parent, version) = match shared.resolve(init, principal.as_deref()).await? {
        Ok(start) => start,
        Err(failure) => {
            return Ok(AgentOutput {
                finish_reason: Some(AgentFinishReason::Failed),
                error: Some(RuntimeError::from(&failure.error)),
                state: failure.state,
                ..AgentOutput::default()
            });
        }
    };
    let session = AgentSession::with_transform(
        state,
        Some(ctx.clone()),
        ctx.registry().cloned(),
        shared.transform.clone(),
    );
    let mut progress = Progress {
        parent,
        version,
        message: None,
        artifacts: None,
        finish_reason: None,
        principal,
    };
    let mut queue: VecDeque<AgentInput> = VecDeque::new();
    let mut open = true;
    loop {
        let input = match queue.pop_front() {
            Some(input) => input,
            None if !open => break,
            None => match inputs.next().await {
                Some(input) => input?,
                None => break,
            },
        };
        // A detach-only input detaches the session as it is; any other
        // input is a turn (one with neither message nor resume is refused
        // by `admit`, as a failed turn).
        if input.is_detach() && !input.has_payload() {
            let now = session.state();
            return detach(&shared, &session, &mut progress, None, now).await;
        }
        let before = session.state();
        let mut slot = None;
        if input.is_detach() {
            // Refused before the turn starts: Genkit JS runs the turn (and
            // calls the model) in the background of a failed invocation.
            shared.detach_store()?;
            slot = Some(shared.detached.acquire(&shared.name)?);
        }
        // The client speaks as the user only, within the caps, and resumes
        // only what the stored session has pending; a refused input is a
        // failed turn (as Genkit JS fails a bad resume) that changed nothing,
        // and is not detached.
        let admitted = admit(input, &before, progress.parent.as_deref(), &shared.limits);
        let refused = admitted.is_err();
        let mut turn = match admitted {
            Ok(input) => cancellable_turn(&shared, &session, input),
            Err(refused) => futures::future::ready(Err(refused)).boxed(),
        };
        if let Some(slot) = slot.filter(|_| !refused) {
            // Detached as it starts: the pending snapshot is the session
            // before the turn (as Genkit JS writes it).
            let turn = Some((turn, slot));
            return detach(&shared, &session, &mut progress, turn, before).await;
        }
        let outcome = loop {
            if !open {
                break (&mut turn).await;
            }
            match select(&mut turn, inputs.next()).await {
                Either::Left((outcome, _)) => break outcome,
                Either::Right((None, _)) => open = false,
                Either::Right((Some(next), _)) => {
                    let next = next?;
                    if next.is_detach() && !next.has_payload() {
                        // Detached mid-turn: the pending snapshot is the
                        // session as the turn has it so far.
                        let slot = shared.detached.acquire(&shared.name)?;
                        let now = session.state();
                        let turn = Some((turn, slot));
                        return detach(&shared, &session, &mut progress, turn, now).await;
                    }
                    queue.push_back(next);
                }
            }
        };
        // A turn that grew the session past a cap fails, and the session
        // stays as it was before it (its failed snapshot too: it is not
        // stored over the cap).
        let mut over_cap = false;
        let outcome = outcome.and_then(|result| {
            let grown = session.state();
            shared.limits.check_state(&grown, 0, 0).inspect_err(|_| {
                over_cap = true;
            })?;
            Ok(result)
        });
        match outcome {
            Ok(result) => {
                let finish = result.finish_reason;
                let snapshot_id = match &shared.store {
                    Some(store) => {
                        let mut snap = snapshot_of(
                            &session,
                            progress.parent.clone(),
                            SnapshotStatus::Completed,
                            session.state(),
                        );
                        snap.finish_reason = finish;
                        let principal = progress.principal.as_deref();
                        let stored = shared
                            .append(store, snap, progress.version, principal)
                            .await?;
                        let id = stored.snapshot.snapshot_id;
                        progress.parent = Some(id.clone());
                        progress.version = stored.session_version;
                        Some(id)
                    }
                    None => None,
                };
                session.send_chunk(AgentStreamChunk::turn_end(TurnEnd {
                    snapshot_id,
                    finish_reason: finish,
                }));
                progress.message = result.message.or(progress.message.take());
                progress.artifacts = result.artifacts;
                progress.finish_reason = finish;
            }
            Err(error) => {
                // The failed snapshot records the state as the turn left it
                // (as Genkit JS does); the run goes on from the state before.
                let left = if over_cap {
                    before.clone()
                } else {
                    session.state()
                };
                session.restore(before);
                let runtime_error = report_failed_turn(&shared.name, &error).await;
                let failed_id = match &shared.store {
                    Some(store) => {
                        let mut snap = snapshot_of(
                            &session,
                            progress.parent.clone(),
                            SnapshotStatus::Failed,
                            left,
                        );
                        snap.finish_reason = Some(AgentFinishReason::Failed);
                        snap.error = Some(runtime_error.clone());
                        let principal = progress.principal.as_deref();
                        let stored = shared
                            .append(store, snap, progress.version, principal)
                            .await?;
                        Some(stored.snapshot.snapshot_id)
                    }
                    None => None,
                };
                session.send_chunk(AgentStreamChunk::turn_end(TurnEnd {
                    snapshot_id: failed_id,
                    finish_reason: Some(AgentFinishReason::Failed),
                }));
                let mut output = output_of(&shared, &session, &progress);
                // No message: the previous turn's reply is not this turn's,
                // and a client showing it would show a stale answer.
                output.message = None;
                output.artifacts = None;
                output.finish_reason = Some(AgentFinishReason::Failed);
                output.error = Some(runtime_error);
                return Ok(output);
            }
        }
    }
    Ok(output_of(&shared, &session, &progress))
}

/// [`run`], with a client-managed agent's state signed on the way out and
/// checked on the way in when the agent signs its states.
async fn run_signed(
    shared: Arc<Shared>,
    mut init: AgentInit,
    inputs: BidiInputs<AgentInput>,
    ctx: ActionCtx<AgentStreamChunk>,
) -> Result<AgentOutput> {
    let Some(signer) = shared.signer.clone() else {
        return run(shared, init, inputs, ctx).await;
    };
    if let Some(state) = init.state.take() {
        init.state = Some(signer.verify(state)?);
    }
    let mut output = run(shared, init, inputs, ctx).await?;
    if let Some(state) = output.state.take() {
        output.state = Some(signer.sign(state)?);
    }
    Ok(output)
}

fn output_of(shared: &Shared, session: &AgentSession, progress: &Progress) -> AgentOutput {
    let server = shared.store.is_some();
    AgentOutput {
        session_id: Some(session.session_id()),
        snapshot_id: if server {
            progress.parent.clone()
        } else {
            None
        },
        state: (!server).then(|| shared.client_state(session.state())),
        message: progress.message.clone(),
        artifacts: progress.artifacts.clone(),
        finish_reason: progress.finish_reason,
        error: None,
    }
}

/// Hands the running turn (if any, with its place under the agent's limit
/// of detached turns) to a background task: a pending snapshot of `state`
/// is stored at once and rewritten with the turn's outcome.
///
/// With no turn (a detach-only input between turns) the session is as its
/// last snapshot left it, so nothing is written and that snapshot's id is
/// returned: writing a copy would give its parent a second child, a fork
/// that leaves the session without a latest snapshot. A session not stored
/// yet gets its first, completed snapshot.
async fn detach(
    shared: &Arc<Shared>,
    session: &AgentSession,
    progress: &mut Progress,
    turn: Option<(TurnFuture, DetachedSlot)>,
    state: SessionState,
) -> Result<AgentOutput> {
    let store = shared.detach_store()?.clone();
    session.detach_stream();
    let detached = |snapshot_id: String| AgentOutput {
        session_id: Some(session.session_id()),
        snapshot_id: Some(snapshot_id),
        finish_reason: Some(AgentFinishReason::Detached),
        ..AgentOutput::default()
    };
    if turn.is_none()
        && let Some(current) = &progress.parent
    {
        return Ok(detached(current.clone()));
    }
    let status = if turn.is_some() {
        SnapshotStatus::Pending
    } else {
        SnapshotStatus::Completed
    };
    let mut snap = snapshot_of(session, progress.parent.clone(), status, state);
    if turn.is_some() {
        snap.heartbeat_at = snap.updated_at.clone();
    }
    let principal = progress.principal.as_deref();
    let id = shared
        .append(&store, snap, progress.version, principal)
        .await?
        .snapshot
        .snapshot_id;
    if let Some((turn, slot)) = turn {
        shared
            .running
            .lock()
            .insert(id.clone(), session.abort_token());
        // The caller's lease (the server's concurrency permit) goes with
        // the turn: it counts as in flight until it ends.
        let lease = genkit_core::RunLease::current();
        tokio::spawn(finish_detached(
            shared.clone(),
            store,
            session.clone(),
            id.clone(),
            turn,
            (slot, lease),
        ));
    }
    Ok(detached(id))
}

/// How a detached turn's run ended.
enum Ending {
    /// The turn function returned.
    Returned(Result<AgentResult>),
    /// Its abort signal fired (an abort here, or one seen in the store).
    Aborted,
    /// It ran past the agent's detached timeout.
    Deadline,
}

/// Runs a detached turn to its end, keeping its pending snapshot's
/// heartbeat fresh, and records the outcome. An abort (through this
/// process's abort action, or an `aborted` status the heartbeat finds in
/// the store) or the deadline stops the turn at once: its future, with the
/// model calls and tools it is running, is dropped, and actions started
/// after that see their cancellation.
async fn finish_detached(
    shared: Arc<Shared>,
    store: Arc<dyn SessionStore>,
    session: AgentSession,
    id: String,
    turn: TurnFuture,
    // The lease is held to the end, the outcome's write included.
    (slot, _lease): (DetachedSlot, Option<genkit_core::RunLease>),
) {
    let abort = session.abort_token();
    let heartbeat = {
        let store = store.clone();
        let id = id.clone();
        let abort = abort.clone();
        async move {
            loop {
                tokio::time::sleep(HEARTBEAT_INTERVAL).await;
                let Ok(stored) = store.get(&id).await else {
                    continue; // the store is unreachable for now
                };
                if stored.snapshot.status != Some(SnapshotStatus::Pending) {
                    // Closed elsewhere (aborted by another process, or
                    // failed as expired): stop the turn.
                    abort.cancel();
                    return;
                }
                let mut snap = stored.snapshot;
                snap.heartbeat_at = Some(now_rfc3339());
                // A lost race with the final write or an abort is fine.
                let _ = store.update(snap, stored.revision).await;
            }
        }
    };
    let ending = tokio::select! {
        outcome = turn => Ending::Returned(outcome),
        () = abort.cancelled() => Ending::Aborted,
        () = tokio::time::sleep(shared.detached_timeout) => Ending::Deadline,
        () = heartbeat => Ending::Aborted,
    };
    // Anything the turn started elsewhere (spawned with its context) stops.
    abort.cancel();
    shared.running.lock().remove(&id);
    drop(slot);
    let outcome = match ending {
        Ending::Returned(outcome) => outcome,
        Ending::Aborted => Err(Error::cancelled()),
        Ending::Deadline => Err(deadline_exceeded(shared.detached_timeout)),
    };
    // A turn that grew the session past a cap fails as an attached one
    // does: the session stays as the pending snapshot holds it.
    let mut over_cap = false;
    let outcome = outcome.and_then(|result| {
        shared
            .limits
            .check_state(&session.state(), 0, 0)
            .inspect_err(|_| over_cap = true)?;
        Ok(result)
    });
    for _ in 0..16 {
        let Ok(stored) = store.get(&id).await else {
            return;
        };
        if stored.snapshot.status != Some(SnapshotStatus::Pending) {
            return; // aborted meanwhile: the abort stands
        }
        let mut snap = stored.snapshot;
        let now = now_rfc3339();
        snap.updated_at = Some(now);
        // Heartbeats only tell a running turn from a dead one.
        snap.heartbeat_at = None;
        // The outcome with the state as the turn left it (a failed one too,
        // as for attached turns), unless that state is over a cap.
        if !over_cap {
            snap.state = Some(session.state());
        }
        match &outcome {
            Ok(result) => {
                snap.status = Some(SnapshotStatus::Completed);
                snap.finish_reason = result.finish_reason;
            }
            Err(error) => {
                snap.status = Some(SnapshotStatus::Failed);
                snap.finish_reason = Some(AgentFinishReason::Failed);
                snap.error = Some(report_failed_turn(&shared.name, error).await);
            }
        }
        match store.update(snap, stored.revision).await {
            Err(e) if is_conflict(&e) => continue,
            Err(e) => {
                tracing::warn!(snapshot = %id, error = %e, "could not record a detached turn's outcome");
                return;
            }
            Ok(_) => return,
        }
    }
}

/// JSON of an agent's metadata, as the descriptor carries it.
pub fn agent_metadata(action: &AgentAction) -> Option<Value> {
    action.desc().metadata.get("agent").cloned()
}
