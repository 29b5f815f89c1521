//! [`FirestoreSessionStore`]: the [`SessionStore`] on Firestore.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genkit_ai::agent::clock::now_rfc3339;
use genkit_ai::agent::json_patch;
use genkit_ai::agent::store::{SessionStore, StoredSnapshot};
use genkit_ai::agent::types::{SessionSnapshot, SessionState};
use genkit_core::context::ActionContext;
use genkit_core::tracing::current_context;
use genkit_core::{Error, Result, StatusCode};
use serde_json::{Value as Json, json};

use crate::client::{Auth, Client, TokenSource};
use crate::layout::{self, ChainMeta, Kind, Paths, PointerDoc, SnapshotDoc};
use crate::proto::{
    CollectionSelector, Document, FieldFilter, FieldReference, Filter, Precondition, Projection,
    StructuredQuery, Timestamp, Value, Write, filter, precondition, value::Kind as ValueKind,
    write,
};
use crate::value;

/// Genkit JS's default: a full checkpoint every 25 turns.
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 25;
/// Genkit JS's default shard / diff size limit: 512 KiB.
pub const DEFAULT_SHARD_SIZE: usize = 512 * 1024;
/// How long one request may take by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Genkit JS's default collection.
pub const DEFAULT_COLLECTION: &str = "genkit-sessions";
/// Genkit JS's prefix when none is configured.
pub const DEFAULT_PREFIX: &str = "global";

type PrefixFn = Arc<dyn Fn(&ActionContext) -> String + Send + Sync>;

/// Builds a [`FirestoreSessionStore`].
#[must_use]
pub struct FirestoreSessionStoreBuilder {
    project_id: Option<String>,
    database_id: String,
    collection: String,
    checkpoint_interval: u64,
    shard_size: usize,
    prefix: Option<PrefixFn>,
    emulator_host: Option<String>,
    token_source: Option<Arc<dyn TokenSource>>,
    timeout: Duration,
}

impl FirestoreSessionStoreBuilder {
    /// The Google Cloud project (default: `GOOGLE_CLOUD_PROJECT`, then
    /// `GCLOUD_PROJECT`).
    pub fn project_id(mut self, id: impl Into<String>) -> Self {
        self.project_id = Some(id.into());
        self
    }

    /// The database (default `(default)`).
    pub fn database_id(mut self, id: impl Into<String>) -> Self {
        self.database_id = id.into();
        self
    }

    /// The snapshots collection (default `genkit-sessions`); `-pointers`,
    /// `-shards`, `-effects` and `-markers` collections are derived from it.
    pub fn collection(mut self, name: impl Into<String>) -> Self {
        self.collection = name.into();
        self
    }

    /// Turns between full-state checkpoints (default 25, as Genkit JS).
    pub fn checkpoint_interval(mut self, turns: u64) -> Self {
        self.checkpoint_interval = turns;
        self
    }

    /// The largest shard or diff document, in bytes (default 512 KiB).
    pub fn shard_size(mut self, bytes: usize) -> Self {
        self.shard_size = bytes;
        self
    }

    /// A fixed tenant prefix (default `global`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.prefix = Some(Arc::new(move |_| prefix.clone()));
        self
    }

    /// A per-tenant prefix derived from the running action's context (e.g.
    /// the authenticated user), as Genkit JS's `snapshotPathPrefix`.
    pub fn prefix_fn(
        mut self,
        prefix: impl Fn(&ActionContext) -> String + Send + Sync + 'static,
    ) -> Self {
        self.prefix = Some(Arc::new(prefix));
        self
    }

    /// Talk to an emulator at `host:port` (default: `FIRESTORE_EMULATOR_HOST`).
    pub fn emulator_host(mut self, host: impl Into<String>) -> Self {
        self.emulator_host = Some(host.into());
        self
    }

    /// How long one Firestore request (or connecting) may take before it
    /// fails (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Access tokens for real Firestore.
    pub fn token_source(mut self, source: impl TokenSource) -> Self {
        self.token_source = Some(Arc::new(source));
        self
    }

    /// The store. Connects lazily; call it inside a Tokio runtime.
    /// `INVALID_ARGUMENT` without a project id, with a bad option, or with
    /// neither an emulator nor a token source.
    pub fn build(self) -> Result<FirestoreSessionStore> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        let project = self
            .project_id
            .or_else(|| env("GOOGLE_CLOUD_PROJECT"))
            .or_else(|| env("GCLOUD_PROJECT"))
            .ok_or_else(|| {
                Error::invalid_argument(
                    "FirestoreSessionStore needs a project id (project_id, GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT)",
                )
            })?;
        if self.checkpoint_interval == 0 || self.shard_size == 0 {
            return Err(Error::invalid_argument(
                "checkpoint_interval and shard_size must be positive",
            ));
        }
        if !layout::is_valid_doc_id(&self.collection) {
            return Err(Error::invalid_argument(format!(
                "{:?} is not a Firestore collection id",
                self.collection
            )));
        }
        let emulator = self
            .emulator_host
            .or_else(|| env("FIRESTORE_EMULATOR_HOST"));
        let auth = match (&emulator, self.token_source) {
            (Some(_), _) => Auth::Emulator,
            (None, Some(source)) => Auth::Token(source),
            (None, None) => {
                return Err(Error::invalid_argument(
                    "FirestoreSessionStore needs a token source for real Firestore (or FIRESTORE_EMULATOR_HOST)",
                ));
            }
        };
        let database = format!("projects/{project}/databases/{}", self.database_id);
        let client = Client::new(emulator.as_deref(), auth, database, self.timeout)?;
        Ok(FirestoreSessionStore {
            client,
            collection: self.collection,
            checkpoint_interval: self.checkpoint_interval,
            shard_size: self.shard_size,
            prefix: self.prefix,
        })
    }
}

/// A [`SessionStore`] on Firestore, wire-compatible with Genkit JS's
/// `FirestoreSessionStore`: see the [crate docs](crate).
pub struct FirestoreSessionStore {
    client: Client,
    collection: String,
    checkpoint_interval: u64,
    shard_size: usize,
    prefix: Option<PrefixFn>,
}

impl std::fmt::Debug for FirestoreSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirestoreSessionStore")
            .field("database", &self.client.database())
            .field("collection", &self.collection)
            .field("checkpoint_interval", &self.checkpoint_interval)
            .field("shard_size", &self.shard_size)
            .finish_non_exhaustive()
    }
}

impl FirestoreSessionStore {
    /// A builder with Genkit JS's defaults.
    pub fn builder() -> FirestoreSessionStoreBuilder {
        FirestoreSessionStoreBuilder {
            project_id: None,
            database_id: "(default)".to_owned(),
            collection: DEFAULT_COLLECTION.to_owned(),
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            shard_size: DEFAULT_SHARD_SIZE,
            prefix: None,
            emulator_host: None,
            token_source: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    fn paths(&self) -> Result<Paths> {
        let prefix = match &self.prefix {
            Some(f) => f(&current_context()),
            None => DEFAULT_PREFIX.to_owned(),
        };
        if !layout::is_valid_doc_id(&prefix) {
            return Err(Error::invalid_argument(format!(
                "session path prefix {prefix:?} is not a Firestore document id"
            )));
        }
        Ok(Paths::new(
            self.client.database(),
            &self.collection,
            &prefix,
        ))
    }

    /// Runs `body` in a transaction: committed (with the writes it returns)
    /// when it succeeds, rolled back when it fails. Read-only transactions
    /// commit no writes.
    async fn transact<T, F>(&self, read_only: bool, body: F) -> Result<T>
    where
        F: AsyncFnOnce(&Tx<'_>) -> Result<(T, Vec<Write>)>,
    {
        let id = self.client.begin(read_only).await?;
        let tx = Tx {
            client: &self.client,
            id: &id,
        };
        match body(&tx).await {
            Ok((value, writes)) => {
                if read_only {
                    self.client.rollback(id).await;
                } else {
                    self.client
                        .commit(writes, Some(id))
                        .await
                        .map_err(commit_conflict)?;
                }
                Ok(value)
            }
            Err(e) => {
                self.client.rollback(id).await;
                Err(e)
            }
        }
    }
}

/// A failed commit: a precondition lost to a concurrent write (a marker or
/// snapshot created meanwhile, a changed update time) or a transaction
/// aborted by contention is a conflict (`ABORTED`): re-read and retry.
fn commit_conflict(e: Error) -> Error {
    match e.status() {
        StatusCode::AlreadyExists | StatusCode::FailedPrecondition | StatusCode::Aborted => {
            Error::user_facing(
                StatusCode::Aborted,
                format!(
                    "a concurrent write came first; read again and retry ({})",
                    e.message()
                ),
            )
        }
        _ => e,
    }
}

/// Reads within one transaction.
struct Tx<'a> {
    client: &'a Client,
    id: &'a [u8],
}

impl Tx<'_> {
    /// The existing documents among `names`, by name.
    async fn get_all(&self, names: Vec<String>) -> Result<HashMap<String, Document>> {
        let docs = self.client.batch_get(names, Some(self.id)).await?;
        Ok(docs.into_iter().map(|d| (d.name.clone(), d)).collect())
    }

    async fn get(&self, name: String) -> Result<Option<Document>> {
        Ok(self.get_all(vec![name.clone()]).await?.remove(&name))
    }

    /// Every snapshot of `session_id`: `(id, parent)` pairs.
    async fn session_index(&self, paths: &Paths, session_id: &str) -> Result<SessionIndex> {
        let field = |p: &str| FieldReference {
            field_path: p.to_owned(),
        };
        let query = StructuredQuery {
            select: Some(Projection {
                fields: vec![field("snapshotId"), field("parentId")],
            }),
            from: vec![CollectionSelector {
                collection_id: "snapshots".to_owned(),
                all_descendants: false,
            }],
            r#where: Some(Filter {
                filter_type: Some(filter::FilterType::FieldFilter(FieldFilter {
                    field: Some(field("sessionId")),
                    op: crate::proto::OPERATOR_EQUAL,
                    value: Some(value::to_firestore(&json!(session_id))),
                })),
            }),
        };
        let docs = self
            .client
            .run_query(paths.snapshots_parent(), query, Some(self.id))
            .await?;
        let mut index = SessionIndex::default();
        for doc in docs {
            let id = doc.name.rsplit('/').next().unwrap_or_default().to_owned();
            if let Some(Value {
                kind: Some(ValueKind::StringValue(parent)),
            }) = doc.fields.get("parentId")
            {
                index.parents.insert(parent.clone());
            }
            index.ids.insert(id);
        }
        Ok(index)
    }

    /// A snapshot document and its reconstructed state.
    async fn reconstruct(&self, paths: &Paths, id: &str) -> Result<Option<Loaded>> {
        let Some(doc) = self.get(paths.snapshot(id)).await? else {
            return Ok(None);
        };
        let parsed: SnapshotDoc = layout::decode(&doc)?;
        let meta = ChainMeta::from(&parsed);
        let state = self.state_at(paths, &meta, id).await?;
        Ok(Some(Loaded {
            doc: parsed,
            state,
            update_time: doc.update_time,
        }))
    }

    /// The state of `target` from its checkpoint's shards and the diffs of
    /// its segment, read in one batch (as Genkit JS's `reconstructFrom`).
    async fn state_at(&self, paths: &Paths, meta: &ChainMeta, target: &str) -> Result<Json> {
        let shard_names: Vec<String> = (0..meta.checkpoint_shard_count)
            .map(|i| paths.shard(&meta.checkpoint_id, i))
            .collect();
        let segment_names: Vec<String> = meta
            .segment_path
            .iter()
            .map(|id| paths.snapshot(id))
            .collect();
        let mut names = shard_names.clone();
        names.extend(segment_names.iter().cloned());
        let mut docs = self.get_all(names).await?;

        let mut bytes = Vec::new();
        for name in &shard_names {
            let shard = docs.get(name).ok_or_else(|| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("FirestoreSessionStore: missing checkpoint shard '{name}'"),
                )
            })?;
            match shard.fields.get("chunk").and_then(|v| v.kind.as_ref()) {
                Some(ValueKind::BytesValue(b)) => bytes.extend_from_slice(b),
                _ => {
                    return Err(Error::new(
                        StatusCode::DataLoss,
                        format!("checkpoint shard '{name}' has no bytes 'chunk'"),
                    ));
                }
            }
        }
        let mut state = if shard_names.is_empty() {
            Json::Null
        } else {
            serde_json::from_slice(&bytes).map_err(|e| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("checkpoint {} does not parse: {e}", meta.checkpoint_id),
                )
            })?
        };
        let mut last = None;
        for name in &segment_names {
            let doc = docs.remove(name).ok_or_else(|| {
                Error::new(
                    StatusCode::DataLoss,
                    format!("FirestoreSessionStore: missing diff '{name}' on the way to {target}"),
                )
            })?;
            let seg: SnapshotDoc = layout::decode(&doc)?;
            state = json_patch::apply(&state, seg.state_patch.as_deref().unwrap_or_default())
                .map_err(|e| {
                    Error::new(
                        StatusCode::DataLoss,
                        format!("diff {} does not apply: {e}", seg.snapshot_id),
                    )
                })?;
            last = Some(seg.snapshot_id);
        }
        if let Some(last) = last
            && last != target
        {
            return Err(Error::new(
                StatusCode::DataLoss,
                format!("the diff chain of {target} ends at {last}"),
            ));
        }
        Ok(state)
    }
}

#[derive(Default)]
struct SessionIndex {
    ids: HashSet<String>,
    parents: HashSet<String>,
}

impl SessionIndex {
    fn version(&self) -> u64 {
        self.ids.len() as u64
    }

    fn leaves(&self) -> Vec<&String> {
        let mut leaves: Vec<&String> = self.ids.difference(&self.parents).collect();
        leaves.sort();
        leaves
    }
}

struct Loaded {
    doc: SnapshotDoc,
    state: Json,
    update_time: Option<Timestamp>,
}

impl Loaded {
    fn revision(&self) -> u64 {
        self.doc.rs_revision.unwrap_or(1)
    }

    /// The snapshot as the caller wrote it (see `SnapshotDoc::rs_unset`).
    fn snapshot(&self) -> Result<SessionSnapshot> {
        let d = &self.doc;
        let unset = |f: &str| d.rs_unset.iter().any(|u| u == f);
        let state = if unset("state") {
            None
        } else {
            let state = match &self.state {
                Json::Null => Json::Object(Default::default()),
                s => s.clone(),
            };
            Some(serde_json::from_value::<SessionState>(state).map_err(|e| {
                Error::new(
                    StatusCode::DataLoss,
                    format!(
                        "the state of snapshot {} is not a session state: {e}",
                        d.snapshot_id
                    ),
                )
            })?)
        };
        Ok(SessionSnapshot {
            snapshot_id: d.snapshot_id.clone(),
            session_id: (!unset("sessionId")).then(|| d.session_id.clone()),
            parent_id: d.parent_id.clone(),
            created_at: d.created_at.clone(),
            updated_at: if unset("updatedAt") {
                None
            } else {
                d.updated_at.clone()
            },
            heartbeat_at: d.heartbeat_at.clone(),
            status: d.status,
            finish_reason: d.finish_reason,
            error: d.error.clone(),
            state,
        })
    }
}

fn not_found_snapshot(id: &str) -> Error {
    Error::user_facing(StatusCode::NotFound, format!("Snapshot {id} not found"))
}

fn stale(what: &str, base: u64, current: u64) -> Error {
    Error::user_facing(
        StatusCode::Aborted,
        format!(
            "{what} is at version {current}, but the write was based on version {base}; \
             another write came first: read it again and retry"
        ),
    )
}

/// The session a snapshot belongs to (`sessionId`, else its state's; the
/// two must agree), checked to be a usable document id.
fn session_of(snapshot: &SessionSnapshot) -> Result<String> {
    let inner = snapshot
        .state
        .as_ref()
        .and_then(|s| s.session_id.as_deref());
    if let (Some(outer), Some(inner)) = (snapshot.session_id.as_deref(), inner)
        && outer != inner
    {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!(
                "snapshot {} says it belongs to session {outer} but its state to {inner}",
                snapshot.snapshot_id
            ),
        ));
    }
    match snapshot.owner_session_id() {
        Some(id) if layout::is_valid_doc_id(id) && !id.trim().is_empty() => Ok(id.to_owned()),
        Some(id) if !id.trim().is_empty() => Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!("session id {id:?} cannot name a Firestore document"),
        )),
        _ => Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!(
                "snapshot {} has no session id; every stored snapshot belongs to a session",
                snapshot.snapshot_id
            ),
        )),
    }
}

/// The snapshot's state as JSON (`{}` when it has none, as Genkit JS).
fn state_json(snapshot: &SessionSnapshot) -> Result<Json> {
    match &snapshot.state {
        Some(state) => serde_json::to_value(state)
            .map_err(|e| Error::internal(format!("encoding a session state: {e}"))),
        None => Ok(Json::Object(Default::default())),
    }
}

fn byte_len(value: &impl serde::Serialize) -> Result<usize> {
    serde_json::to_vec(value)
        .map(|v| v.len())
        .map_err(|e| Error::internal(format!("encoding a patch: {e}")))
}

fn create_only(doc: Document) -> Write {
    Write {
        operation: Some(write::Operation::Update(doc)),
        current_document: Some(Precondition {
            condition: Some(precondition::Condition::Exists(false)),
        }),
    }
}

fn set(doc: Document) -> Write {
    Write {
        operation: Some(write::Operation::Update(doc)),
        current_document: None,
    }
}

fn delete(name: String) -> Write {
    Write {
        operation: Some(write::Operation::Delete(name)),
        current_document: None,
    }
}

/// How a snapshot's state is stored.
struct Placement {
    kind: Kind,
    meta: ChainMeta,
    state_patch: Option<json_patch::JsonPatch>,
    shard_writes: Vec<Write>,
}

impl FirestoreSessionStore {
    /// A checkpoint at `id`: the state split into `shard_size`-byte shards
    /// `<id>_<i>` (Genkit JS's `writeShards`), trailing old shards deleted.
    fn checkpoint(
        &self,
        paths: &Paths,
        id: &str,
        state: &Json,
        old_shards: u64,
    ) -> Result<Placement> {
        let bytes = serde_json::to_vec(state)
            .map_err(|e| Error::internal(format!("encoding a session state: {e}")))?;
        let chunks: Vec<&[u8]> = if bytes.is_empty() {
            vec![&[][..]]
        } else {
            bytes.chunks(self.shard_size).collect()
        };
        let count = chunks.len() as u64;
        let mut shard_writes = Vec::new();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let mut fields = HashMap::new();
            fields.insert(
                "chunk".to_owned(),
                Value {
                    kind: Some(ValueKind::BytesValue(chunk.to_vec())),
                },
            );
            shard_writes.push(set(Document {
                name: paths.shard(id, i as u64),
                fields,
                create_time: None,
                update_time: None,
            }));
        }
        for i in count..old_shards {
            shard_writes.push(delete(paths.shard(id, i)));
        }
        Ok(Placement {
            kind: Kind::Checkpoint,
            meta: ChainMeta {
                checkpoint_id: id.to_owned(),
                checkpoint_shard_count: count,
                segment_path: Vec::new(),
            },
            state_patch: None,
            shard_writes,
        })
    }

    /// The document for `snapshot` placed as `placement`.
    fn snapshot_doc(
        snapshot: &SessionSnapshot,
        session_id: &str,
        placement: &Placement,
        revision: u64,
    ) -> SnapshotDoc {
        let mut unset = Vec::new();
        if snapshot.session_id.is_none() {
            unset.push("sessionId".to_owned());
        }
        if snapshot.updated_at.is_none() {
            unset.push("updatedAt".to_owned());
        }
        if snapshot.state.is_none() {
            unset.push("state".to_owned());
        }
        SnapshotDoc {
            snapshot_id: snapshot.snapshot_id.clone(),
            session_id: session_id.to_owned(),
            parent_id: snapshot.parent_id.clone(),
            created_at: snapshot.created_at.clone(),
            // Genkit JS: `updatedAt ?? createdAt`.
            updated_at: Some(
                snapshot
                    .updated_at
                    .clone()
                    .unwrap_or_else(|| snapshot.created_at.clone()),
            ),
            status: snapshot.status,
            heartbeat_at: snapshot.heartbeat_at.clone(),
            finish_reason: snapshot.finish_reason,
            error: snapshot.error.clone(),
            kind: placement.kind,
            checkpoint_id: placement.meta.checkpoint_id.clone(),
            checkpoint_shard_count: placement.meta.checkpoint_shard_count,
            segment_path: placement.meta.segment_path.clone(),
            state_patch: placement.state_patch.clone(),
            rs_revision: (revision > 1).then_some(revision),
            rs_unset: unset,
        }
    }

    fn pointer_doc(id: &str, meta: &ChainMeta) -> PointerDoc {
        PointerDoc {
            current_snapshot_id: id.to_owned(),
            checkpoint_id: meta.checkpoint_id.clone(),
            checkpoint_shard_count: meta.checkpoint_shard_count,
            segment_path: meta.segment_path.clone(),
            updated_at: now_rfc3339(),
        }
    }
}

fn marker(name: String, fields: Json) -> Result<Write> {
    Ok(create_only(layout::encode(name, &fields)?))
}

#[async_trait]
impl SessionStore for FirestoreSessionStore {
    async fn get(&self, snapshot_id: &str) -> Result<StoredSnapshot> {
        if !layout::is_valid_doc_id(snapshot_id) {
            return Err(not_found_snapshot(snapshot_id));
        }
        let paths = self.paths()?;
        self.transact(true, async |tx: &Tx<'_>| {
            let loaded = tx
                .reconstruct(&paths, snapshot_id)
                .await?
                .ok_or_else(|| not_found_snapshot(snapshot_id))?;
            let index = tx.session_index(&paths, &loaded.doc.session_id).await?;
            let stored = StoredSnapshot {
                snapshot: loaded.snapshot()?,
                revision: loaded.revision(),
                session_version: index.version(),
            };
            Ok((stored, Vec::new()))
        })
        .await
    }

    async fn latest(&self, session_id: &str) -> Result<StoredSnapshot> {
        let not_found = || {
            Error::user_facing(
                StatusCode::NotFound,
                format!("Session {session_id} not found"),
            )
        };
        if !layout::is_valid_doc_id(session_id) {
            return Err(not_found());
        }
        let paths = self.paths()?;
        self.transact(true, async |tx: &Tx<'_>| {
            let index = tx.session_index(&paths, session_id).await?;
            let leaves = index.leaves();
            let leaf = match leaves.as_slice() {
                [] if index.ids.is_empty() => return Err(not_found()),
                [leaf] => (*leaf).clone(),
                _ => {
                    return Err(Error::user_facing(
                        StatusCode::FailedPrecondition,
                        format!(
                            "Session '{session_id}' has branching snapshots ({} leaves), so there is no \
                             single latest snapshot. Resume by snapshotId instead.",
                            leaves.len()
                        ),
                    ));
                }
            };
            let loaded = tx
                .reconstruct(&paths, &leaf)
                .await?
                .ok_or_else(|| Error::internal(format!("leaf {leaf} of session {session_id} vanished")))?;
            let stored = StoredSnapshot {
                snapshot: loaded.snapshot()?,
                revision: loaded.revision(),
                session_version: index.version(),
            };
            Ok((stored, Vec::new()))
        })
        .await
    }

    async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.clone();
        if id.trim().is_empty() || !layout::is_valid_doc_id(&id) {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                format!("snapshot id {id:?} is empty or cannot name a Firestore document"),
            ));
        }
        let session_id = session_of(&snapshot)?;
        if let Some(parent) = &snapshot.parent_id
            && !layout::is_valid_doc_id(parent)
        {
            return Err(not_found_snapshot(parent));
        }
        let paths = self.paths()?;
        let new_state = state_json(&snapshot)?;
        self.transact(false, async |tx: &Tx<'_>| {
            let index = tx.session_index(&paths, &session_id).await?;
            if index.version() != base {
                return Err(stale(
                    &format!("Session {session_id}"),
                    base,
                    index.version(),
                ));
            }
            let pointer_name = paths.pointer(&session_id);
            let mut names = vec![paths.snapshot(&id), pointer_name.clone()];
            if let Some(parent) = &snapshot.parent_id {
                names.push(paths.snapshot(parent));
            }
            let docs = tx.get_all(names).await?;
            if docs.contains_key(&paths.snapshot(&id)) {
                return Err(Error::user_facing(
                    StatusCode::AlreadyExists,
                    format!("Snapshot {id} already exists"),
                ));
            }
            let pointer: Option<PointerDoc> =
                docs.get(&pointer_name).map(layout::decode).transpose()?;
            let placement = match &snapshot.parent_id {
                None => self.checkpoint(&paths, &id, &new_state, 0)?,
                Some(parent) => {
                    let parent_doc: SnapshotDoc = match docs.get(&paths.snapshot(parent)) {
                        Some(d) => layout::decode(d)?,
                        None => return Err(not_found_snapshot(parent)),
                    };
                    if parent_doc.session_id != session_id || !index.ids.contains(parent) {
                        return Err(Error::user_facing(
                            StatusCode::InvalidArgument,
                            format!(
                                "Snapshot {parent} belongs to session {}, not {session_id}",
                                parent_doc.session_id
                            ),
                        ));
                    }
                    // Genkit JS reads the chain off the pointer when the
                    // parent is the current leaf, else off the parent.
                    let meta = match &pointer {
                        Some(p) if &p.current_snapshot_id == parent => ChainMeta::from(p),
                        _ => ChainMeta::from(&parent_doc),
                    };
                    if meta.segment_path.len() as u64 + 1 >= self.checkpoint_interval {
                        self.checkpoint(&paths, &id, &new_state, 0)?
                    } else {
                        let parent_state = tx.state_at(&paths, &meta, parent).await?;
                        let patch = json_patch::diff(&parent_state, &new_state);
                        if byte_len(&patch)? > self.shard_size {
                            self.checkpoint(&paths, &id, &new_state, 0)?
                        } else {
                            let mut segment_path = meta.segment_path.clone();
                            segment_path.push(id.clone());
                            Placement {
                                kind: Kind::Diff,
                                meta: ChainMeta {
                                    segment_path,
                                    ..meta
                                },
                                state_patch: Some(patch),
                                shard_writes: Vec::new(),
                            }
                        }
                    }
                }
            };
            let doc = Self::snapshot_doc(&snapshot, &session_id, &placement, 1);
            // The marker goes first: if another append took this version,
            // nothing of this one is written, even on a store that applies
            // a commit's writes one by one (the emulator).
            let mut writes = vec![
                marker(
                    paths.append_marker(&session_id, base + 1),
                    json!({"sessionId": session_id, "version": base + 1, "snapshotId": id}),
                )?,
                create_only(layout::encode(paths.snapshot(&id), &doc)?),
            ];
            writes.extend(placement.shard_writes);
            writes.push(set(layout::encode(
                pointer_name,
                &Self::pointer_doc(&id, &placement.meta),
            )?));
            let stored = StoredSnapshot {
                snapshot: snapshot.clone(),
                revision: 1,
                session_version: base + 1,
            };
            Ok((stored, writes))
        })
        .await
    }

    async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.clone();
        if !layout::is_valid_doc_id(&id) {
            return Err(not_found_snapshot(&id));
        }
        let paths = self.paths()?;
        let new_state = state_json(&snapshot)?;
        self.transact(false, async |tx: &Tx<'_>| {
            let loaded = tx
                .reconstruct(&paths, &id)
                .await?
                .ok_or_else(|| not_found_snapshot(&id))?;
            let revision = loaded.revision();
            if revision != base {
                return Err(stale(&format!("Snapshot {id}"), base, revision));
            }
            let old = &loaded.doc;
            let same_session = session_of(&snapshot)? == old.session_id;
            if !same_session
                || snapshot.parent_id != old.parent_id
                || snapshot.created_at != old.created_at
            {
                return Err(Error::user_facing(
                    StatusCode::InvalidArgument,
                    format!(
                        "an update of snapshot {id} must keep its session, parent and creation time"
                    ),
                ));
            }
            if let Some(status) = old.status.filter(|s| s.is_terminal()) {
                return Err(Error::user_facing(
                    StatusCode::FailedPrecondition,
                    format!("Snapshot {id} is {status}; a finished snapshot is not rewritten"),
                ));
            }
            let index = tx.session_index(&paths, &old.session_id).await?;
            let unchanged = json_patch::json_equal(&loaded.state, &new_state);
            let placement = if unchanged {
                // Only metadata changes: the stored state stays as it is.
                Placement {
                    kind: old.kind,
                    meta: ChainMeta::from(old),
                    state_patch: old.state_patch.clone(),
                    shard_writes: Vec::new(),
                }
            } else if index.parents.contains(&id) {
                // Its children's diffs (or reads of its checkpoint) assume
                // its state; rewriting it would corrupt them.
                return Err(Error::user_facing(
                    StatusCode::FailedPrecondition,
                    format!(
                        "Snapshot {id} is continued by other snapshots; its state is not rewritten"
                    ),
                ));
            } else if old.kind == Kind::Checkpoint {
                self.checkpoint(&paths, &id, &new_state, old.checkpoint_shard_count)?
            } else {
                let parent_state = match &old.parent_id {
                    Some(parent) => match tx.reconstruct(&paths, parent).await? {
                        Some(p) => p.state,
                        None => Json::Null,
                    },
                    None => Json::Null,
                };
                let patch = json_patch::diff(&parent_state, &new_state);
                if byte_len(&patch)? > self.shard_size {
                    self.checkpoint(&paths, &id, &new_state, 0)?
                } else {
                    Placement {
                        kind: Kind::Diff,
                        meta: ChainMeta::from(old),
                        state_patch: Some(patch),
                        shard_writes: Vec::new(),
                    }
                }
            };
            let doc = Self::snapshot_doc(&snapshot, &old.session_id, &placement, base + 1);
            let unchanged_since_read = loaded.update_time.clone().map(|t| Precondition {
                condition: Some(precondition::Condition::UpdateTime(t)),
            });
            let mut writes = vec![marker(
                paths.revision_marker(&id, base, loaded.update_time.as_ref()),
                json!({"snapshotId": id, "revision": base + 1}),
            )?];
            if self.client.is_emulator() {
                // The emulator merges a replacing write into the old fields
                // (it never drops one, e.g. a heartbeat the new snapshot no
                // longer has), so the document is deleted first there.
                let mut delete = delete(paths.snapshot(&id));
                delete.current_document = unchanged_since_read;
                writes.push(delete);
                writes.push(set(layout::encode(paths.snapshot(&id), &doc)?));
            } else {
                let mut replace = set(layout::encode(paths.snapshot(&id), &doc)?);
                replace.current_document = unchanged_since_read;
                writes.push(replace);
            }
            writes.extend(placement.shard_writes);
            // As Genkit JS: a rewrite of the current leaf refreshes the pointer.
            let pointer_name = paths.pointer(&old.session_id);
            if let Some(p) = tx.get(pointer_name.clone()).await? {
                let pointer: PointerDoc = layout::decode(&p)?;
                if pointer.current_snapshot_id == id {
                    writes.push(set(layout::encode(
                        pointer_name,
                        &Self::pointer_doc(&id, &placement.meta),
                    )?));
                }
            }
            let stored = StoredSnapshot {
                snapshot: snapshot.clone(),
                revision: base + 1,
                session_version: index.version(),
            };
            Ok((stored, writes))
        })
        .await
    }

    async fn record_effect(&self, session_id: &str, key: &str, result: Json) -> Result<Json> {
        if session_id.trim().is_empty() || key.is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a side-effect record needs a session id and a key",
            ));
        }
        let paths = self.paths()?;
        let name = paths.effect(session_id, key).ok_or_else(|| {
            Error::user_facing(
                StatusCode::InvalidArgument,
                "the side-effect key is too long",
            )
        })?;
        let record = json!({
            "sessionId": session_id,
            "key": key,
            "result": result,
            "recordedAt": now_rfc3339(),
        });
        // Its own commit, outside any turn's transaction; create-only, so
        // the first record wins.
        let write = create_only(layout::encode(name.clone(), &record)?);
        match self.client.commit(vec![write], None).await {
            Ok(_) => Ok(result),
            Err(e) if e.status() == StatusCode::AlreadyExists => self
                .read_effect(&name)
                .await?
                .ok_or_else(|| Error::internal(format!("effect record {name} vanished"))),
            Err(e) => Err(e),
        }
    }

    async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Json>> {
        let paths = self.paths()?;
        match paths.effect(session_id, key) {
            Some(name) => self.read_effect(&name).await,
            None => Ok(None),
        }
    }
}

impl FirestoreSessionStore {
    async fn read_effect(&self, name: &str) -> Result<Option<Json>> {
        let docs = self.client.batch_get(vec![name.to_owned()], None).await?;
        docs.first()
            .map(|doc| {
                doc.fields
                    .get("result")
                    .map_or(Ok(Json::Null), value::to_json)
            })
            .transpose()
    }
}
