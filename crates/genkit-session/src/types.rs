//! The Agent API's wire types, shaped exactly as Genkit JS writes them
//! (`@genkit-ai/ai` `agent-types`; `$defs` of `genkit-schema.json`): camelCase
//! keys, optional fields omitted rather than `null`, unknown keys ignored.
//!
//! An agent is a bidirectional action: it starts with an [`AgentInit`], reads
//! [`AgentInput`]s, streams [`AgentStreamChunk`]s and ends with an
//! [`AgentOutput`]. Server-managed agents persist a [`SessionSnapshot`] per
//! turn (see [`store`](super::store)).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use genkit_core::{Error, StatusCode};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use genkit_model::types::{FinishReason, Message, ModelResponseChunk, Part, PartKind};

/// Deserializes a present value as `Some`, keeping an explicit `null` (which
/// plain `Option<Value>` would turn into `None`): for free-form fields where
/// `null` is a value (`custom`, a patch's `value`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// An error carried as data inside an agent output or a snapshot
/// (`RuntimeError`: `{status, message, details}`), rather than thrown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeError {
    /// Canonical status name (`INTERNAL`, `INVALID_ARGUMENT`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// What went wrong.
    pub message: String,
    /// Structured details, when the error carried some.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub details: Option<Value>,
}

impl RuntimeError {
    /// An error with a status and a message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status: Some(status.name().to_owned()),
            message: message.into(),
            details: None,
        }
    }

    /// The status as a [`StatusCode`], if it names one.
    pub fn status_code(&self) -> Option<StatusCode> {
        self.status.as_deref().and_then(StatusCode::from_name)
    }

    /// `e` as a remote client may see it, as the flow server shows errors
    /// ([`Error::to_public_json`]): a user-facing error's status, message and
    /// details; `INTERNAL` / `Internal Error` for any other (its text may
    /// hold internals: upstream URLs, file paths, provider messages).
    pub fn public(e: &Error) -> Self {
        if e.is_user_facing() {
            Self::from(e)
        } else {
            Self::new(StatusCode::Internal, "Internal Error")
        }
    }
}

impl From<&Error> for RuntimeError {
    fn from(e: &Error) -> Self {
        Self {
            status: Some(e.status().name().to_owned()),
            message: e.message().to_owned(),
            details: e.details().cloned(),
        }
    }
}

impl From<&RuntimeError> for Error {
    /// Back to an [`Error`]; an unknown or missing status becomes `INTERNAL`
    /// (as Genkit JS does for errors without a status).
    fn from(e: &RuntimeError) -> Self {
        let status = e.status_code().unwrap_or(StatusCode::Internal);
        let err = Error::new(status, e.message.clone());
        match &e.details {
            Some(d) => err.with_details(d.clone()),
            None => err,
        }
    }
}

/// Something an agent produced during a session (a file, a document...),
/// kept in the session state; a later artifact with the same `name` replaces
/// the earlier one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artifact {
    /// Identifies the artifact (`generated_code.go`); unnamed artifacts are
    /// never replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The content.
    pub parts: Vec<Part>,
    /// Artifact-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Artifact {
    /// A named artifact with these parts.
    pub fn new(name: impl Into<String>, parts: Vec<Part>) -> Self {
        Self {
            name: Some(name.into()),
            parts,
            metadata: None,
        }
    }
}

macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $s:literal, $doc:literal;)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub enum $name {
            $(#[doc = $doc] #[serde(rename = $s)] $variant,)*
        }

        impl $name {
            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $s,)* }
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s {
                    $($s => Ok($name::$variant),)*
                    _ => Err(Error::invalid_argument(format!(
                        concat!("`{}` is not a ", stringify!($name)), s
                    ))),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

wire_enum! {
    /// Where a snapshot is in its lifecycle (`SnapshotStatus`).
    SnapshotStatus {
        Pending => "pending", "A detached turn is still running.";
        Completed => "completed", "The turn finished; the only status a session resumes from.";
        Aborted => "aborted", "The turn was aborted.";
        Failed => "failed", "The turn failed; the snapshot carries the error.";
        Expired => "expired", "Reported on read for a pending snapshot whose heartbeat went stale.";
    }
}

impl SnapshotStatus {
    /// Whether the status is final: `completed`, `failed` and `aborted` are
    /// never changed again (an abort of such a snapshot leaves it as it is).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            SnapshotStatus::Completed | SnapshotStatus::Failed | SnapshotStatus::Aborted
        )
    }
}

wire_enum! {
    /// Why a turn or an invocation finished (`AgentFinishReason`): generate's
    /// finish reasons plus the agent's own.
    AgentFinishReason {
        Stop => "stop", "The model finished naturally.";
        Length => "length", "The model hit its token limit.";
        Blocked => "blocked", "The model's output was blocked.";
        Interrupted => "interrupted", "A tool interrupted the turn; resume with `resume`.";
        Other => "other", "Some other reason.";
        Unknown => "unknown", "Unknown.";
        Aborted => "aborted", "The turn was aborted.";
        Detached => "detached", "The turn goes on in the background.";
        Failed => "failed", "The turn failed; the output carries the error.";
    }
}

impl From<FinishReason> for AgentFinishReason {
    fn from(reason: FinishReason) -> Self {
        reason
            .as_str()
            .parse()
            .unwrap_or(AgentFinishReason::Unknown)
    }
}

wire_enum! {
    /// Who keeps an agent's session state (`AgentStateManagement`).
    AgentStateManagement {
        Server => "server", "A session store on the server: clients send snapshot or session ids.";
        Client => "client", "No store: the state travels in the init and the output.";
    }
}

/// A conversation's state (`SessionState`): its history, the agent's custom
/// state and the artifacts produced so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// The session this state belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The conversation so far. Shared rather than owned (as in
    /// [`GenerateRequest`](genkit_model::types::GenerateRequest)): a turn's state is
    /// copied for its snapshot, the state to restore on failure and the
    /// store, and the history is the part that grows with every turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Arc<Vec<Message>>>,
    /// The agent's own state (any JSON; typed agents declare its schema).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub custom: Option<Value>,
    /// Artifacts produced so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
}

impl SessionState {
    /// The messages (empty when absent).
    pub fn messages(&self) -> &[Message] {
        self.messages.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The messages to change (created empty when absent; copied first if
    /// another state shares them).
    pub fn messages_mut(&mut self) -> &mut Vec<Message> {
        Arc::make_mut(self.messages.get_or_insert_with(Default::default))
    }

    /// Replaces the messages.
    pub fn set_messages(&mut self, messages: Vec<Message>) {
        self.messages = Some(Arc::new(messages));
    }

    /// The artifacts (empty when absent).
    pub fn artifacts(&self) -> &[Artifact] {
        self.artifacts.as_deref().unwrap_or_default()
    }

    /// The custom state as `T` (`None` when absent); a custom state of
    /// another shape is `INVALID_ARGUMENT`.
    pub fn custom_as<T: serde::de::DeserializeOwned>(&self) -> genkit_core::Result<Option<T>> {
        self.custom
            .as_ref()
            .map(|v| {
                T::deserialize(v).map_err(|e| {
                    Error::invalid_argument(format!("custom session state: {e}")).with_source(e)
                })
            })
            .transpose()
    }
}

/// Answers to the interrupts a turn stopped on (`AgentInput.resume`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentResume {
    /// `toolResponse` parts answering interrupted tool requests.
    #[serde(
        default,
        deserialize_with = "tool_response_parts",
        skip_serializing_if = "Option::is_none"
    )]
    pub respond: Option<Vec<Part>>,
    /// `toolRequest` parts to run again (with `resumed` metadata).
    #[serde(
        default,
        deserialize_with = "tool_request_parts",
        skip_serializing_if = "Option::is_none"
    )]
    pub restart: Option<Vec<Part>>,
}

fn parts_of_kind<'de, D: Deserializer<'de>>(
    d: D,
    key: &str,
    is_kind: fn(&PartKind) -> bool,
) -> Result<Option<Vec<Part>>, D::Error> {
    let parts = Vec::<Part>::deserialize(d)?;
    if let Some((i, p)) = parts.iter().enumerate().find(|(_, p)| !is_kind(&p.kind)) {
        return Err(serde::de::Error::custom(format!(
            "part {i} must be a `{key}` part, not `{}`",
            p.kind.key()
        )));
    }
    Ok(Some(parts))
}

fn tool_response_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Part>>, D::Error> {
    parts_of_kind(d, "toolResponse", |k| {
        matches!(k, PartKind::ToolResponse(_))
    })
}

fn tool_request_parts<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Part>>, D::Error> {
    parts_of_kind(d, "toolRequest", |k| matches!(k, PartKind::ToolRequest(_)))
}

impl AgentResume {
    /// Whether it answers or restarts anything.
    pub fn is_empty(&self) -> bool {
        self.respond.as_ref().is_none_or(Vec::is_empty)
            && self.restart.as_ref().is_none_or(Vec::is_empty)
    }
}

/// One input of an agent invocation (`AgentInput`): a user message, answers
/// to interrupts, and/or a request to detach.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentInput {
    /// The user's message for this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Resumes an interrupted turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<AgentResume>,
    /// Return at once with a pending snapshot; the turn goes on in the
    /// background (server-managed agents only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach: Option<bool>,
}

impl AgentInput {
    /// An input carrying a message.
    pub fn message(message: Message) -> Self {
        Self {
            message: Some(message),
            ..Self::default()
        }
    }

    /// An input resuming an interrupted turn.
    pub fn resume(resume: AgentResume) -> Self {
        Self {
            resume: Some(resume),
            ..Self::default()
        }
    }

    /// A detach-only input.
    pub fn detach() -> Self {
        Self {
            detach: Some(true),
            ..Self::default()
        }
    }

    /// Sets the detach flag.
    pub fn with_detach(mut self) -> Self {
        self.detach = Some(true);
        self
    }

    /// Whether it asks to detach.
    pub fn is_detach(&self) -> bool {
        self.detach == Some(true)
    }

    /// Whether it carries work for a turn (a message or a non-empty resume);
    /// a detach-only input does not.
    pub fn has_payload(&self) -> bool {
        self.message.is_some() || self.resume.as_ref().is_some_and(|r| !r.is_empty())
    }
}

/// How an invocation starts (`AgentInit`): `{}` for a new session, a
/// `snapshotId` or `sessionId` to resume a server-managed one (both: the
/// session id guards that the snapshot belongs to it), or the whole `state`
/// for a client-managed agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentInit {
    /// The snapshot to resume from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// The session to resume (its latest snapshot), or to create under this id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The state to continue from (client-managed agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionState>,
}

impl AgentInit {
    /// Resumes the session `session_id` from its latest snapshot.
    pub fn resume_session(session_id: impl Into<String>) -> Self {
        Self {
            session_id: Some(session_id.into()),
            ..Self::default()
        }
    }

    /// Resumes from the snapshot `snapshot_id`.
    pub fn from_snapshot(snapshot_id: impl Into<String>) -> Self {
        Self {
            snapshot_id: Some(snapshot_id.into()),
            ..Self::default()
        }
    }

    /// Continues from a whole state the client kept (client-managed agents).
    pub fn from_state(state: SessionState) -> Self {
        Self {
            state: Some(state),
            ..Self::default()
        }
    }
}

/// What a turn function returns (`AgentResult`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentResult {
    /// The reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Artifacts to report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// Why the invocation finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<AgentFinishReason>,
}

/// The final output of an invocation (`AgentOutput`).
///
/// A failed turn does not fail the invocation: it ends with `finishReason:
/// failed`, the `error`, and the last good state (the state the failed turn
/// started from).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentOutput {
    /// The session the invocation belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The snapshot written last (server-managed agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// The whole state (client-managed agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionState>,
    /// The last reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// The session's artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<Artifact>>,
    /// Why the invocation finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<AgentFinishReason>,
    /// What failed, when `finish_reason` is `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RuntimeError>,
}

impl AgentOutput {
    /// The text of the last reply (empty when there is none).
    pub fn text(&self) -> String {
        self.message.as_ref().map(Message::text).unwrap_or_default()
    }

    /// The output of a turn that did not fail; for a failed one
    /// (`finish_reason: failed`), its error as an [`Error`] (status and
    /// message), so it cannot pass for an answer.
    pub fn into_result(self) -> Result<AgentOutput, Error> {
        if self.finish_reason != Some(AgentFinishReason::Failed) {
            return Ok(self);
        }
        Err(self
            .error
            .as_ref()
            .map(Error::from)
            .unwrap_or_else(|| Error::internal("the agent turn failed")))
    }
}

/// The end of one turn (`TurnEnd`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnEnd {
    /// The snapshot the turn wrote (server-managed agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// Why the turn finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<AgentFinishReason>,
}

// The patch type is the one `json_patch::diff` produces, so what a turn
// streams and what agent.yaml compares op by op are the same operations.
// Imported, not re-exported: its one public path is `json_patch::JsonPatch`.
use super::json_patch::JsonPatch;

/// One streamed event of an invocation (`AgentStreamChunk`): exactly one of
/// its fields is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentStreamChunk {
    /// A chunk of the model's response, or a tool message produced in the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_chunk: Option<ModelResponseChunk>,
    /// A change to the custom state: the first of a turn replaces the root
    /// (`""`), later ones are diffs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_patch: Option<JsonPatch>,
    /// An artifact added or replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<Artifact>,
    /// The end of a turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_end: Option<TurnEnd>,
}

impl AgentStreamChunk {
    /// A model chunk event.
    pub fn model_chunk(chunk: ModelResponseChunk) -> Self {
        Self {
            model_chunk: Some(chunk),
            ..Self::default()
        }
    }

    /// A custom-state patch event.
    pub fn custom_patch(patch: JsonPatch) -> Self {
        Self {
            custom_patch: Some(patch),
            ..Self::default()
        }
    }

    /// An artifact event.
    pub fn artifact(artifact: Artifact) -> Self {
        Self {
            artifact: Some(artifact),
            ..Self::default()
        }
    }

    /// A turn-end event.
    pub fn turn_end(turn_end: TurnEnd) -> Self {
        Self {
            turn_end: Some(turn_end),
            ..Self::default()
        }
    }
}

/// A session's state at the end of a turn, as stored (`SessionSnapshot`).
///
/// Snapshots form a chain through `parentId`; resuming an older snapshot
/// branches the session. A detached turn's snapshot is written `pending`
/// first and rewritten when the turn completes, fails or is aborted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSnapshot {
    /// This snapshot's id.
    pub snapshot_id: String,
    /// The session it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The snapshot this one continues.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it was last written (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// Last sign of life of a detached turn (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<String>,
    /// Lifecycle status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SnapshotStatus>,
    /// Why the turn finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<AgentFinishReason>,
    /// What failed, for a failed turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RuntimeError>,
    /// The state at this point (empty while pending).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SessionState>,
    /// The replica whose detached turn holds this pending snapshot's lease
    /// (a Genkit for Rust extension, absent from Genkit JS's snapshots; see
    /// [`store::lease`](crate::store::lease)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub lease_owner: Option<String>,
    /// When that lease lapses unless its heartbeat renews it (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub lease_expires_at: Option<String>,
}

impl SessionSnapshot {
    /// A snapshot with an id and a creation time, nothing else.
    pub fn new(snapshot_id: impl Into<String>, created_at: impl Into<String>) -> Self {
        Self {
            snapshot_id: snapshot_id.into(),
            session_id: None,
            parent_id: None,
            created_at: created_at.into(),
            updated_at: None,
            heartbeat_at: None,
            status: None,
            finish_reason: None,
            error: None,
            state: None,
            lease_owner: None,
            lease_expires_at: None,
        }
    }

    /// The conversation as of this snapshot (empty when it has no state).
    pub fn messages(&self) -> &[Message] {
        self.state.as_ref().map_or(&[], SessionState::messages)
    }

    /// The session it belongs to: `sessionId`, else its state's (as Genkit
    /// JS resolves snapshots written before snapshots carried a session id).
    pub fn owner_session_id(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .or_else(|| self.state.as_ref()?.session_id.as_deref())
    }

    /// Whether a session may resume from it (only `completed` snapshots).
    pub fn is_resumable(&self) -> bool {
        self.status == Some(SnapshotStatus::Completed)
    }
}

/// Input of an agent's `/agent-snapshot/<name>` action: exactly one of the two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetSnapshotRequest {
    /// The snapshot to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot_id: Option<String>,
    /// The session whose latest snapshot to read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Input of an agent's `/agent-abort/<name>` action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentAbortRequest {
    /// The snapshot whose turn to abort.
    pub snapshot_id: String,
}

/// Output of an agent's `/agent-abort/<name>` action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentAbortResponse {
    /// The snapshot.
    pub snapshot_id: String,
    /// Its status before the abort (absent for an unknown snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SnapshotStatus>,
}

/// What an agent's descriptor says about it, under `metadata.agent`
/// (`AgentMetadata`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentMetadata {
    /// Who keeps the session state.
    pub state_management: AgentStateManagement,
    /// Whether its turns can be aborted (its store supports it).
    pub abortable: bool,
    /// JSON schema of the custom state, when the agent declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_schema: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_patch::JsonPatchOperation;
    use serde_json::json;

    #[test]
    fn init_constructors_serialize_as_the_wire_expects() {
        assert_eq!(
            serde_json::to_value(AgentInit::resume_session("s1")).unwrap(),
            json!({"sessionId": "s1"})
        );
        assert_eq!(
            serde_json::to_value(AgentInit::from_snapshot("snap")).unwrap(),
            json!({"snapshotId": "snap"})
        );
        let state = SessionState {
            session_id: Some("s2".into()),
            ..SessionState::default()
        };
        assert_eq!(
            serde_json::to_value(AgentInit::from_state(state)).unwrap(),
            json!({"state": {"sessionId": "s2"}})
        );
    }

    #[test]
    fn output_text_is_the_last_reply_or_empty() {
        let output = AgentOutput {
            message: Some(Message::model("Booked.")),
            ..AgentOutput::default()
        };
        assert_eq!(output.text(), "Booked.");
        assert_eq!(AgentOutput::default().text(), "");
    }

    #[test]
    fn null_stays_a_value_where_null_is_a_value() {
        let op: JsonPatchOperation =
            serde_json::from_value(json!({"op": "replace", "path": "", "value": null})).unwrap();
        assert_eq!(
            op,
            JsonPatchOperation::Replace {
                path: String::new(),
                value: Value::Null
            }
        );
        assert_eq!(
            serde_json::to_value(&op).unwrap(),
            json!({"op": "replace", "path": "", "value": null})
        );
        let state: SessionState = serde_json::from_value(json!({"custom": null})).unwrap();
        assert_eq!(
            serde_json::to_value(&state).unwrap(),
            json!({"custom": null})
        );
        let state: SessionState = serde_json::from_value(json!({})).unwrap();
        assert_eq!(serde_json::to_value(&state).unwrap(), json!({}));
    }

    #[test]
    fn a_snapshot_reads_its_messages_and_an_empty_one_none() {
        let mut snapshot = SessionSnapshot::new("s1", "2026-01-01T00:00:00Z");
        assert!(snapshot.messages().is_empty());
        let mut state = SessionState::default();
        state.set_messages(vec![Message::user("hi")]);
        snapshot.state = Some(state);
        assert_eq!(snapshot.messages().len(), 1);
        assert_eq!(snapshot.messages()[0].text(), "hi");
    }

    #[test]
    fn resume_parts_must_be_of_their_kind() {
        let err =
            serde_json::from_value::<AgentResume>(json!({"respond": [{"text": "x"}]})).unwrap_err();
        assert!(
            err.to_string().contains("must be a `toolResponse` part"),
            "{err}"
        );
        let err = serde_json::from_value::<AgentResume>(
            json!({"restart": [{"toolResponse": {"name": "t", "output": 1}}]}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("must be a `toolRequest` part"),
            "{err}"
        );
    }

    #[test]
    fn finish_reasons_convert_from_generate() {
        assert_eq!(
            AgentFinishReason::from(FinishReason::Interrupted),
            AgentFinishReason::Interrupted
        );
        assert_eq!(
            AgentFinishReason::from(FinishReason::Stop),
            AgentFinishReason::Stop
        );
    }

    #[test]
    fn a_custom_state_of_another_shape_keeps_the_json_error() {
        use std::error::Error as _;
        let state: SessionState = serde_json::from_value(json!({"custom": {"n": "x"}})).unwrap();
        let err = state.custom_as::<u32>().unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert!(err.message().starts_with("custom session state: "), "{err}");
        let source = err.source().expect("a source");
        assert!(source.downcast_ref::<serde_json::Error>().is_some());
    }

    #[test]
    fn runtime_errors_carry_the_status_name() {
        let e = Error::invalid_argument("bad").with_details(json!({"x": 1}));
        let r = RuntimeError::from(&e);
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"status": "INVALID_ARGUMENT", "message": "bad", "details": {"x": 1}})
        );
        let back = Error::from(&r);
        assert_eq!(back.status(), StatusCode::InvalidArgument);
        let unknown = RuntimeError {
            status: None,
            message: "m".into(),
            details: None,
        };
        assert_eq!(Error::from(&unknown).status(), StatusCode::Internal);
    }
}
