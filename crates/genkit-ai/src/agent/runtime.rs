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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::Arc;

use futures::future::{BoxFuture, Either, select};
use futures::{FutureExt, StreamExt};
use genkit_core::action::{Action, ActionCtx, ActionDesc, ActionKind, BidiAction, BidiInputs};
use genkit_core::schema::{SchemaValidator, schema_for};
use genkit_core::tracing::with_extension;
use genkit_core::{CancellationToken, Error, Registry, Result, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;

use super::clock::{HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT, effective_status, now_rfc3339};
use super::input_check::admit;
use super::limits::SessionLimits;
use super::session::AgentSession;
use super::state_signing::StateSigner;
use super::store::{SessionStore, is_conflict, new_snapshot_id};
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
/// and the bounds of its sessions (see [`limits`](super::limits)).
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
    pub(super) limits: SessionLimits,
    pub(super) signer: Option<StateSigner>,
}

impl std::fmt::Debug for AgentOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentOptions")
            .field("store", &self.store.is_some())
            .field("description", &self.description)
            .field("client_transform", &self.client_transform)
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
        let snapshot = Action::from_desc_typed(snapshot_desc, move |req, _ctx: ActionCtx| {
            let shared = snap_shared.clone();
            async move { shared.read_snapshot(req).await }
        });

        let abort_shared = shared.clone();
        let mut abort_desc = ActionDesc::new(ActionKind::AgentAbort, name.clone())
            .with_description(format!(
                "Aborts {name} agent by snapshotId. Returns the snapshot id and its status after the abort attempt."
            ));
        abort_desc.input_schema = Some(schema_for::<AgentAbortRequest>());
        abort_desc.output_schema = Some(schema_for::<AgentAbortResponse>());
        let abort = Action::from_desc_typed(abort_desc, move |req, _ctx: ActionCtx| {
            let shared = abort_shared.clone();
            async move { shared.abort(req).await }
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
    /// abort (`None` if there is no such snapshot).
    pub async fn abort(&self, snapshot_id: impl Into<String>) -> Result<Option<SnapshotStatus>> {
        let request = AgentAbortRequest {
            snapshot_id: snapshot_id.into(),
        };
        self.abort.run(request).await.map(|r| r.status)
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

    async fn read_snapshot(&self, req: GetSnapshotRequest) -> Result<SessionSnapshot> {
        let store = self.store("getSnapshotData")?;
        let (lookup, id) = match (&req.snapshot_id, &req.session_id) {
            (Some(id), None) => (store.get(id).await, id),
            (None, Some(session)) => (store.latest(session).await, session),
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
        let mut snapshot = match lookup {
            Ok(stored) => stored.snapshot,
            Err(e) if e.status() == StatusCode::NotFound => {
                return Err(Error::user_facing(
                    StatusCode::NotFound,
                    format!("Snapshot '{id}' not found for agent '{}'.", self.name),
                ));
            }
            Err(e) => return Err(e),
        };
        snapshot.status =
            effective_status(&snapshot, std::time::SystemTime::now(), HEARTBEAT_TIMEOUT);
        snapshot.state = snapshot.state.map(|s| self.client_state(s));
        Ok(snapshot)
    }

    async fn abort(&self, req: AgentAbortRequest) -> Result<AgentAbortResponse> {
        let store = self.store("abort")?;
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

    /// The session a run starts from, the snapshot it continues, and the
    /// session version read with it (the base of the run's first append).
    /// `Err` is misuse of the init (the invocation fails); `Ok(Err)` a
    /// start that cannot be continued: an unknown or not resumable
    /// snapshot, or a custom state failing the state schema (the run ends
    /// as a failed turn, as in Genkit JS).
    async fn resolve(
        &self,
        init: AgentInit,
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
        let stored = match (&init.snapshot_id, &init.session_id) {
            (Some(id), _) => match store.get(id).await {
                Ok(stored) => stored,
                Err(e) if e.status() == StatusCode::NotFound => return Ok(Err(e.into())),
                Err(e) => return Err(e),
            },
            (None, Some(session)) => match store.latest(session).await {
                Ok(stored) => {
                    let version = stored.session_version;
                    match self.resumable_ancestor(store, stored).await? {
                        Some(stored) => stored,
                        None => return Ok(Ok((fresh(Some(session.clone())), None, version))),
                    }
                }
                Err(e) if e.status() == StatusCode::NotFound => {
                    return Ok(Ok((fresh(Some(session.clone())), None, 0)));
                }
                Err(e) => return Err(e),
            },
            (None, None) => return Ok(Ok((fresh(None), None, 0))),
        };
        let version = stored.session_version;
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
        if let Err(error) = self.validate_custom(snapshot.state.as_ref()) {
            return Ok(Err(error.into()));
        }
        let owner = snapshot.owner_session_id().map(str::to_owned);
        let state = with_session_id(snapshot.state.unwrap_or_default(), owner);
        Ok(Ok((state, Some(snapshot.snapshot_id), version)))
    }

    /// The snapshot a session resumed by id continues: its latest, or past
    /// failed and aborted turns the newest completed ancestor (`None`: start
    /// the session afresh), as Genkit JS does. A session whose latest turn is
    /// still running is refused: two turns would race on one history.
    async fn resumable_ancestor(
        &self,
        store: &Arc<dyn SessionStore>,
        mut stored: super::store::StoredSnapshot,
    ) -> Result<Option<super::store::StoredSnapshot>> {
        if stored.snapshot.status == Some(SnapshotStatus::Pending) {
            return Err(precondition(format!(
                "Session '{}' has a turn running (snapshot {} is pending); wait until it completes or abort it.",
                stored.snapshot.owner_session_id().unwrap_or_default(),
                stored.snapshot.snapshot_id
            )));
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

    /// Appends a turn's snapshot, based on the session version the run last
    /// read or wrote (`base`). If another turn was appended to the session
    /// meanwhile, the store refuses it (`ABORTED`) and the run fails with
    /// that error, nothing written: the turn was computed from a state that
    /// is no longer the session's, so re-basing it would fork the session
    /// behind the caller's back. The caller retries the turn from a fresh
    /// read (e.g. resuming by session id again).
    async fn append(
        &self,
        store: &Arc<dyn SessionStore>,
        snapshot: SessionSnapshot,
        base: u64,
    ) -> Result<super::store::StoredSnapshot> {
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
    with_extension(session.clone(), fut).boxed()
}

struct Progress {
    parent: Option<String>,
    /// The session version `parent` was read at (or appended as).
    version: u64,
    message: Option<crate::types::Message>,
    artifacts: Option<Vec<super::types::Artifact>>,
    finish_reason: Option<AgentFinishReason>,
}

async fn run(
    shared: Arc<Shared>,
    init: AgentInit,
    mut inputs: BidiInputs<AgentInput>,
    ctx: ActionCtx<AgentStreamChunk>,
) -> Result<AgentOutput> {
    let (state, parent, version) = match shared.resolve(init).await? {
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
        // input is a turn, even one with neither message nor resume (as in
        // Genkit JS: a prompt agent's turn then fails, having no message).
        if input.is_detach() && !input.has_payload() {
            let now = session.state();
            return detach(&shared, &session, &mut progress, None, now).await;
        }
        let before = session.state();
        if input.is_detach() {
            // Refused before the turn starts: Genkit JS runs the turn (and
            // calls the model) in the background of a failed invocation.
            shared.detach_store()?;
        }
        // The client speaks as the user only, within the caps, and resumes
        // only what the stored session has pending; a refused input is a
        // failed turn (as Genkit JS fails a bad resume) that changed nothing.
        let admitted = admit(input, &before, progress.parent.as_deref(), &shared.limits);
        let detach_now = admitted.as_ref().is_ok_and(AgentInput::is_detach);
        let mut turn = match admitted {
            Ok(input) => start_turn(&shared, &session, input),
            Err(refused) => futures::future::ready(Err(refused)).boxed(),
        };
        if detach_now {
            // Detached as it starts: the pending snapshot is the session
            // before the turn (as Genkit JS writes it).
            return detach(&shared, &session, &mut progress, Some(turn), before).await;
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
                        let now = session.state();
                        return detach(&shared, &session, &mut progress, Some(turn), now).await;
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
                        let stored = shared.append(store, snap, progress.version).await?;
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
                        let stored = shared.append(store, snap, progress.version).await?;
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

/// Hands the running turn (if any) to a background task: a pending snapshot
/// of `state` is stored at once and rewritten with the turn's outcome.
async fn detach(
    shared: &Arc<Shared>,
    session: &AgentSession,
    progress: &mut Progress,
    turn: Option<TurnFuture>,
    state: SessionState,
) -> Result<AgentOutput> {
    let store = shared.detach_store()?.clone();
    session.detach_stream();
    let status = if turn.is_some() {
        SnapshotStatus::Pending
    } else {
        SnapshotStatus::Completed
    };
    let mut snap = snapshot_of(session, progress.parent.clone(), status, state);
    if turn.is_some() {
        snap.heartbeat_at = snap.updated_at.clone();
    }
    let id = shared
        .append(&store, snap, progress.version)
        .await?
        .snapshot
        .snapshot_id;
    if let Some(turn) = turn {
        shared
            .running
            .lock()
            .insert(id.clone(), session.abort_token());
        tokio::spawn(finish_detached(
            shared.clone(),
            store,
            session.clone(),
            id.clone(),
            turn,
        ));
    }
    Ok(AgentOutput {
        session_id: Some(session.session_id()),
        snapshot_id: Some(id),
        finish_reason: Some(AgentFinishReason::Detached),
        ..AgentOutput::default()
    })
}

async fn finish_detached(
    shared: Arc<Shared>,
    store: Arc<dyn SessionStore>,
    session: AgentSession,
    id: String,
    turn: TurnFuture,
) {
    let heartbeat = {
        let store = store.clone();
        let id = id.clone();
        async move {
            loop {
                tokio::time::sleep(HEARTBEAT_INTERVAL).await;
                let Ok(stored) = store.get(&id).await else {
                    return;
                };
                if stored.snapshot.status != Some(SnapshotStatus::Pending) {
                    return;
                }
                let mut snap = stored.snapshot;
                snap.heartbeat_at = Some(now_rfc3339());
                // A lost race with the final write or an abort is fine.
                let _ = store.update(snap, stored.revision).await;
            }
        }
        .boxed()
    };
    let outcome = match select(turn, heartbeat).await {
        Either::Left((outcome, _)) => outcome,
        Either::Right(((), turn)) => turn.await,
    };
    shared.running.lock().remove(&id);
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
        // as for attached turns).
        snap.state = Some(session.state());
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
