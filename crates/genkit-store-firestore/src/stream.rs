//! [`FirestoreStreamManager`]: durable streams (Genkit's
//! [`StreamManager`]) in Firestore, in Genkit JS's `FirestoreStreamManager`
//! layout, so a stream written by either is read by the other. See the
//! [crate docs](crate#durable-streams) for the layout.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use genkit_core::streaming::{
    StreamEvent, StreamManager, StreamPage, check_append, stale_append, stream_exists,
    stream_not_found,
};
use genkit_core::{Error, Result, StatusCode};
use genkit_session::store::new_snapshot_id;
use serde_json::{Value as Json, json};

use crate::builder::{DEFAULT_TIMEOUT, connect};
use crate::client::{Client, TokenSource};
use crate::layout;
use crate::proto::{
    ArrayValue, Document, DocumentMask, FieldTransform, Precondition, SERVER_VALUE_REQUEST_TIME,
    Value, Write, field_transform::TransformType, precondition, value::Kind, write,
};
use crate::value;

/// The default stream collection (Genkit JS has none: its `collection`
/// option is required).
pub const DEFAULT_STREAM_COLLECTION: &str = "genkit-streams";

/// The field holding a stream's owner: this crate's own, which Genkit JS
/// neither writes nor reads.
const OWNER_FIELD: &str = "rsOwner";

/// The subcollection of a stream's document holding its append markers.
const APPENDS: &str = "appends";

/// Durable streams in Firestore, wire-compatible with Genkit JS's
/// `FirestoreStreamManager` (`@genkit-ai/firebase/beta`, 1.42): see the
/// [crate docs](crate#durable-streams).
///
/// [`open`](StreamManager::open) refuses an existing stream
/// (`ALREADY_EXISTS`) where Genkit JS's `open` overwrites it with `set()`:
/// the [`StreamManager`] contract has one writer per stream, and
/// overwriting would let a second `open` of a leaked or reused id wipe the
/// events a reader is replaying and take the stream over (its owner).
#[derive(Clone)]
pub struct FirestoreStreamManager {
    client: Client,
    collection: String,
    poll: Duration,
}

impl std::fmt::Debug for FirestoreStreamManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirestoreStreamManager")
            .field("database", &self.client.database())
            .field("collection", &self.collection)
            .field("poll", &self.poll)
            .finish_non_exhaustive()
    }
}

/// Builds a [`FirestoreStreamManager`].
#[must_use]
pub struct FirestoreStreamManagerBuilder {
    project_id: Option<String>,
    database_id: String,
    collection: String,
    emulator_host: Option<String>,
    token_source: Option<Arc<dyn TokenSource>>,
    timeout: Duration,
    poll: Duration,
}

impl FirestoreStreamManagerBuilder {
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

    /// The stream collection (default `genkit-streams`): Genkit JS's
    /// `collection` option, the same on both sides to share streams.
    pub fn collection(mut self, name: impl Into<String>) -> Self {
        self.collection = name.into();
        self
    }

    /// Talk to an emulator at `host:port` (default: `FIRESTORE_EMULATOR_HOST`).
    pub fn emulator_host(mut self, host: impl Into<String>) -> Self {
        self.emulator_host = Some(host.into());
        self
    }

    /// How long one Firestore request (or connecting) may take (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Access tokens for real Firestore.
    pub fn token_source(mut self, source: impl TokenSource) -> Self {
        self.token_source = Some(Arc::new(source));
        self
    }

    /// How often a follower reads a stream that has not ended (default
    /// 250 ms; each read is one billed document read).
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every.max(Duration::from_millis(1));
        self
    }

    /// The manager. Connects lazily; call it inside a Tokio runtime.
    /// `INVALID_ARGUMENT` without a project id, with a bad collection, or
    /// with neither an emulator nor a token source.
    pub fn build(self) -> Result<FirestoreStreamManager> {
        if !layout::is_valid_doc_id(&self.collection) {
            return Err(Error::invalid_argument(format!(
                "{:?} is not a Firestore collection id",
                self.collection
            )));
        }
        let client = connect(
            "FirestoreStreamManager",
            self.project_id,
            &self.database_id,
            self.emulator_host,
            self.token_source,
            self.timeout,
        )?;
        Ok(FirestoreStreamManager {
            client,
            collection: self.collection,
            poll: self.poll,
        })
    }
}

impl FirestoreStreamManager {
    /// A builder with the defaults.
    pub fn builder() -> FirestoreStreamManagerBuilder {
        FirestoreStreamManagerBuilder {
            project_id: None,
            database_id: "(default)".to_owned(),
            collection: DEFAULT_STREAM_COLLECTION.to_owned(),
            emulator_host: None,
            token_source: None,
            timeout: DEFAULT_TIMEOUT,
            poll: Duration::from_millis(250),
        }
    }

    /// `<collection>/<streamId>`.
    fn doc_name(&self, stream_id: &str) -> String {
        format!(
            "{}/documents/{}/{stream_id}",
            self.client.database(),
            self.collection
        )
    }

    /// `<collection>/<streamId>/appends/<at>`: created by the append that
    /// starts at index `at`.
    fn marker_name(&self, stream_id: &str, at: u64) -> String {
        format!("{}/{APPENDS}/{at}", self.doc_name(stream_id))
    }

    /// The stream's document, read in `transaction` if given.
    async fn get(&self, stream_id: &str, transaction: Option<&[u8]>) -> Result<Document> {
        let name = self.doc_name(stream_id);
        self.client
            .batch_get(vec![name.clone()], transaction)
            .await?
            .into_iter()
            .find(|d| d.name == name)
            .ok_or_else(|| stream_not_found(stream_id))
    }

    /// Checks the stream's length and state, then commits `writes` in
    /// `transaction`.
    async fn append_in(
        &self,
        transaction: &[u8],
        stream_id: &str,
        at: u64,
        events: &[StreamEvent],
    ) -> Result<Vec<Write>> {
        let doc = self.get(stream_id, Some(transaction)).await?;
        let stored = stored_events(stream_id, &doc)?;
        let length = stored.len() as u64;
        let ended = stored.last().is_some_and(is_last_stored);
        if length != at || ended {
            return Err(stale_append(stream_id, at, length, ended));
        }
        if events.is_empty() {
            return Ok(Vec::new());
        }
        let elements = events
            .iter()
            .map(encode_event)
            .collect::<Result<Vec<_>>>()?;
        let mut marker_fields = HashMap::new();
        marker_fields.insert(
            "count".to_owned(),
            value::to_firestore(&json!(events.len())),
        );
        // The marker goes first: the emulator applies a commit's writes in
        // order and stops at the first refused one.
        let marker = Write {
            operation: Some(write::Operation::Update(Document {
                name: self.marker_name(stream_id, at),
                fields: marker_fields,
                create_time: None,
                update_time: None,
            })),
            current_document: Some(Precondition {
                condition: Some(precondition::Condition::Exists(false)),
            }),
            ..Write::default()
        };
        // Genkit JS's `update({stream: arrayUnion(...), updatedAt:
        // serverTimestamp()})`, transforms in that order.
        let update = Write {
            operation: Some(write::Operation::Update(Document {
                name: doc.name.clone(),
                fields: HashMap::new(),
                create_time: None,
                update_time: None,
            })),
            update_mask: Some(DocumentMask::default()),
            current_document: Some(Precondition {
                condition: Some(precondition::Condition::Exists(true)),
            }),
            update_transforms: vec![
                FieldTransform {
                    field_path: "stream".to_owned(),
                    transform_type: Some(TransformType::AppendMissingElements(ArrayValue {
                        values: elements,
                    })),
                },
                server_time("updatedAt"),
            ],
        };
        Ok(vec![marker, update])
    }
}

fn server_time(field: &str) -> FieldTransform {
    FieldTransform {
        field_path: field.to_owned(),
        transform_type: Some(TransformType::SetToServerValue(SERVER_VALUE_REQUEST_TIME)),
    }
}

fn data_loss(message: String) -> Error {
    Error::new(StatusCode::DataLoss, message)
}

/// An event as Genkit JS stores it: chunks carry a fresh `uuid`, so equal
/// chunks stay distinct under `arrayUnion`.
fn encode_event(event: &StreamEvent) -> Result<Value> {
    let json = match event {
        StreamEvent::Chunk { chunk } => {
            json!({"type": "chunk", "chunk": chunk, "uuid": new_snapshot_id()})
        }
        other => serde_json::to_value(other)
            .map_err(|e| Error::internal(format!("encoding a stream event: {e}")).with_source(e))?,
    };
    Ok(value::to_firestore(&json))
}

/// The raw elements of the document's `stream` array.
fn stored_events<'a>(stream_id: &str, doc: &'a Document) -> Result<&'a [Value]> {
    match doc.fields.get("stream").and_then(|v| v.kind.as_ref()) {
        Some(Kind::ArrayValue(a)) => Ok(&a.values),
        // Genkit JS reads a missing array as empty (`data.stream || []`).
        None | Some(Kind::NullValue(_)) => Ok(&[]),
        Some(_) => Err(data_loss(format!(
            "stream `{stream_id}`: `stream` is not an array"
        ))),
    }
}

/// The `type` of a stored event.
fn event_type(element: &Value) -> Option<&str> {
    match &element.kind {
        Some(Kind::MapValue(m)) => match m.fields.get("type").and_then(|t| t.kind.as_ref()) {
            Some(Kind::StringValue(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

fn is_last_stored(element: &Value) -> bool {
    matches!(event_type(element), Some("done" | "error"))
}

/// A stored event as a [`StreamEvent`]; a missing payload (Genkit JS's
/// `done(undefined)`) reads as `null`, the `uuid` of a chunk is dropped.
fn decode_event(stream_id: &str, index: usize, element: &Value) -> Result<StreamEvent> {
    let bad = |what: &str| data_loss(format!("stream `{stream_id}` event {index}: {what}"));
    let Some(Kind::MapValue(map)) = &element.kind else {
        return Err(bad("not a map"));
    };
    let field = |name: &str| -> Result<Json> {
        map.fields
            .get(name)
            .map_or(Ok(Json::Null), value::to_json)
            .map_err(|e| bad(e.message()))
    };
    match event_type(element) {
        Some("chunk") => Ok(StreamEvent::Chunk {
            chunk: field("chunk")?,
        }),
        Some("done") => Ok(StreamEvent::Done {
            output: field("output")?,
        }),
        Some("error") => Ok(StreamEvent::Error { err: field("err")? }),
        Some(other) => Err(bad(&format!("unknown type {other:?}"))),
        None => Err(bad("no `type`")),
    }
}

/// A failed append commit: a marker created meanwhile (another writer's
/// append at the same index) or a transaction aborted by contention.
fn commit_conflict(stream_id: &str, e: Error) -> Error {
    match e.status() {
        StatusCode::AlreadyExists | StatusCode::FailedPrecondition | StatusCode::Aborted => {
            Error::new(
                StatusCode::Aborted,
                format!(
                    "stream `{stream_id}`: a concurrent append came first ({})",
                    e.message()
                ),
            )
        }
        StatusCode::NotFound => stream_not_found(stream_id),
        _ => e,
    }
}

#[async_trait]
impl StreamManager for FirestoreStreamManager {
    async fn open(&self, stream_id: &str, owner: &str) -> Result<()> {
        if !layout::is_valid_doc_id(stream_id) {
            return Err(Error::invalid_argument(format!(
                "stream id {stream_id:?} cannot name a Firestore document"
            )));
        }
        let mut fields = HashMap::new();
        fields.insert(
            "stream".to_owned(),
            Value {
                kind: Some(Kind::ArrayValue(ArrayValue::default())),
            },
        );
        fields.insert(OWNER_FIELD.to_owned(), value::to_firestore(&json!(owner)));
        let create = Write {
            operation: Some(write::Operation::Update(Document {
                name: self.doc_name(stream_id),
                fields,
                create_time: None,
                update_time: None,
            })),
            current_document: Some(Precondition {
                condition: Some(precondition::Condition::Exists(false)),
            }),
            update_transforms: vec![server_time("createdAt")],
            ..Write::default()
        };
        match self.client.commit(vec![create], None).await {
            Ok(_) => Ok(()),
            Err(e) if e.status() == StatusCode::AlreadyExists => Err(stream_exists(stream_id)),
            Err(e) => Err(e),
        }
    }

    async fn append(&self, stream_id: &str, at: u64, events: &[StreamEvent]) -> Result<()> {
        check_append(events)?;
        if !layout::is_valid_doc_id(stream_id) {
            return Err(stream_not_found(stream_id));
        }
        let transaction = self.client.begin(false).await?;
        match self.append_in(&transaction, stream_id, at, events).await {
            Ok(writes) if writes.is_empty() => {
                self.client.rollback(transaction).await;
                Ok(())
            }
            Ok(writes) => self
                .client
                .commit(writes, Some(transaction))
                .await
                .map(|_| ())
                .map_err(|e| commit_conflict(stream_id, e)),
            Err(e) => {
                self.client.rollback(transaction).await;
                Err(e)
            }
        }
    }

    async fn read(&self, stream_id: &str, from: u64) -> Result<StreamPage> {
        if !layout::is_valid_doc_id(stream_id) {
            return Err(stream_not_found(stream_id));
        }
        // One document: a single read is consistent without a transaction.
        let doc = self.get(stream_id, None).await?;
        // A stream Genkit JS opened has no owner: it reads as the
        // anonymous caller's ("").
        let owner = match doc.fields.get(OWNER_FIELD).and_then(|v| v.kind.as_ref()) {
            Some(Kind::StringValue(owner)) => owner.clone(),
            None => String::new(),
            Some(_) => {
                return Err(data_loss(format!(
                    "stream `{stream_id}`: `{OWNER_FIELD}` is not a string"
                )));
            }
        };
        let stored = stored_events(stream_id, &doc)?;
        let from = usize::try_from(from)
            .unwrap_or(usize::MAX)
            .min(stored.len());
        let events = stored[from..]
            .iter()
            .enumerate()
            .map(|(i, e)| decode_event(stream_id, from + i, e))
            .collect::<Result<Vec<_>>>()?;
        Ok(StreamPage { owner, events })
    }

    fn poll_interval(&self) -> Duration {
        self.poll
    }
}
