//! [`AgentOptions`]: what an agent is defined with (its store, description,
//! state schema, client view, ownership, forks and detached turns' bounds).

use std::sync::Arc;

use genkit_core::ActionContext;
use genkit_core::schema::schema_for;
use serde_json::Value;

use crate::limits::SessionLimits;
use crate::ownership::PrincipalFn;
use crate::state_signing::StateSigner;
use crate::store::SessionStore;
use crate::transform::ClientTransform;

/// Options of an agent: where its sessions live, how it describes itself,
/// and what its clients may do with server-managed sessions.
///
/// Server-managed sessions are owned (see [`ownership`](crate::ownership)):
/// the principal that created a session is the only one that can resume it,
/// read its snapshots or abort its turns. New session ids are minted by the
/// server (an unknown `sessionId` is `NOT_FOUND`) unless
/// [`client_session_ids`](Self::client_session_ids); resuming a snapshot
/// that is not its session's latest (a fork) is refused unless
/// [`allow_forks`](Self::allow_forks) (or done explicitly with
/// [`Agent::fork`](super::Agent::fork)). Detached turns are bounded by
/// [`detached_timeout`](Self::detached_timeout) and
/// [`max_detached`](Self::max_detached). A detached turn holds its session
/// through a lease in the store, renewed by its heartbeat, so replicas
/// sharing the store can resume the session of one that died and abort its
/// turns: see [`lease_time`](Self::lease_time) and
/// [`heartbeat_interval`](Self::heartbeat_interval).
///
/// Sessions are bounded (see [`limits`](crate::limits)).
///
/// Without a store the agent is client-managed: the client holds the whole
/// state and can rewrite it (history included) unless the agent signs it
/// ([`AgentOptions::state_signing_key`], see
/// [`state_signing`](crate::state_signing)).
#[derive(Clone, Default)]
pub struct AgentOptions {
    pub(super) store: Option<Arc<dyn SessionStore>>,
    pub(super) description: Option<String>,
    pub(super) state_schema: Option<serde_json::Map<String, Value>>,
    pub(super) client_transform: Option<ClientTransform>,
    pub(super) principal: Option<PrincipalFn>,
    pub(super) client_session_ids: bool,
    pub(super) allow_forks: bool,
    pub(super) detached_timeout: Option<std::time::Duration>,
    pub(super) max_detached: Option<usize>,
    pub(super) lease_time: Option<std::time::Duration>,
    pub(super) heartbeat_interval: Option<std::time::Duration>,
    pub(super) replica_id: Option<String>,
    pub(crate) limits: SessionLimits,
    pub(crate) signer: Option<StateSigner>,
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
            .field("lease_time", &self.lease_time)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("replica_id", &self.replica_id)
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
    /// [`default_principal`](crate::ownership::default_principal), a hash
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
    /// `FAILED_PRECONDITION`; [`Agent::fork`](super::Agent::fork) copies a
    /// snapshot into a new session instead.
    pub fn allow_forks(mut self, allow: bool) -> Self {
        self.allow_forks = allow;
        self
    }

    /// How long a detached turn may run before it is cancelled and its
    /// snapshot marked failed with a `DEADLINE_EXCEEDED` error (default
    /// [`DEFAULT_DETACHED_TIMEOUT`](super::DEFAULT_DETACHED_TIMEOUT), 15
    /// minutes).
    pub fn detached_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.detached_timeout = Some(timeout);
        self
    }

    /// How many detached turns of this agent may run at once in this
    /// process (default [`DEFAULT_MAX_DETACHED`](super::DEFAULT_MAX_DETACHED),
    /// 64); a detach over it is refused with `RESOURCE_EXHAUSTED` and writes
    /// nothing.
    pub fn max_detached(mut self, max: usize) -> Self {
        self.max_detached = Some(max);
        self
    }

    /// How long a detached turn's lease in the store lasts from its last
    /// renewal (default [`DEFAULT_LEASE_TIME`](super::DEFAULT_LEASE_TIME),
    /// 30 s). When the replica running the turn dies, its session is
    /// blocked until the lease lapses; then any replica resuming the session
    /// records the turn as failed and continues from the last completed
    /// snapshot. A replica that cannot renew the lease for this long stops
    /// the turn itself.
    pub fn lease_time(mut self, ttl: std::time::Duration) -> Self {
        self.lease_time = Some(ttl);
        self
    }

    /// How often a detached turn's heartbeat renews its lease and looks in
    /// the store for an abort (default
    /// [`DEFAULT_HEARTBEAT_INTERVAL`](super::DEFAULT_HEARTBEAT_INTERVAL),
    /// 10 s, or a third of a shorter lease time). An abort sent to another
    /// replica stops the turn within this delay (plus one store round
    /// trip). Must be shorter than the lease time: defining the agent fails
    /// otherwise (`INVALID_ARGUMENT`).
    pub fn heartbeat_interval(mut self, interval: std::time::Duration) -> Self {
        self.heartbeat_interval = Some(interval);
        self
    }

    /// The id this replica's detached turns hold their leases under
    /// (default [`process_replica_id`](super::process_replica_id), random
    /// per process). Give every replica sharing a store its own id, e.g.
    /// its host name; two processes under one id could renew each other's
    /// leases.
    pub fn replica_id(mut self, id: impl Into<String>) -> Self {
        self.replica_id = Some(id.into());
        self
    }
}
