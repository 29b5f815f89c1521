//! The format of `genkit_js_agent/recorded.jsonl`, pinned.
//!
//! The recording holds what Genkit JS 1.42's Agent API does in each scenario
//! (see `genkit_js_agent/README.md`). The agent runtime that will replay it
//! does not exist yet; this test parses every line into typed records (Genkit's
//! wire types where the recording carries them: messages, parts, model
//! requests and chunks, JSON Patch), requires that they serialize back to the
//! same JSON (so no field is dropped or misread), and checks the recording's
//! own invariants (placeholders instead of generated ids, one result per step,
//! only known agents).

use genkit_agent::json_patch::JsonPatch;
use genkit_model::types::{GenerateRequest, GenerateResponseChunk, Message, Part, ToolDefinition};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

// ── Agent wire shapes, as recorded ─────────────────────────────────────────

/// `AgentFinishReason`: generate's reasons plus the agent's own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AgentFinishReason {
    Stop,
    Length,
    Blocked,
    Interrupted,
    Other,
    Unknown,
    Aborted,
    Detached,
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SnapshotStatus {
    Pending,
    Completed,
    Aborted,
    Failed,
    Expired,
}

/// `RuntimeError`, the error a failed turn carries.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuntimeError {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    details: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Artifact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    messages: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifacts: Option<Vec<Artifact>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Resume {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    respond: Option<Vec<Part>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    restart: Option<Vec<Part>>,
}

/// `AgentInput`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    resume: Option<Resume>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detach: Option<bool>,
}

/// An input a scenario sends: an `AgentInput`, or JSON that is not one (to
/// record how it is refused).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ScenarioInput {
    Valid(AgentInput),
    Invalid(Value),
}

/// `AgentInit` as a scenario writes it: `state` may be a `"{{capture}}"`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentInit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<StateOrCapture>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum StateOrCapture {
    Capture(String),
    State(SessionState),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TurnEnd {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<AgentFinishReason>,
}

/// `AgentStreamChunk`: exactly one of its fields is set.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentStreamChunk {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_chunk: Option<GenerateResponseChunk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom_patch: Option<JsonPatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifact: Option<Artifact>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn_end: Option<TurnEnd>,
}

impl AgentStreamChunk {
    fn kinds(&self) -> usize {
        [
            self.model_chunk.is_some(),
            self.custom_patch.is_some(),
            self.artifact.is_some(),
            self.turn_end.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

/// `AgentOutput`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AgentOutput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<SessionState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    artifacts: Option<Vec<Artifact>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<AgentFinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<RuntimeError>,
}

/// `SessionSnapshot`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionSnapshot {
    snapshot_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent_id: Option<String>,
    created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    heartbeat_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<SnapshotStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<AgentFinishReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<RuntimeError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<SessionState>,
}

/// `AgentAbortResponse`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AbortResponse {
    snapshot_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<SnapshotStatus>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SnapshotLookup {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
}

// ── The recording ──────────────────────────────────────────────────────────

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Line {
    Header(Header),
    Local(LocalScenario),
    Http(HttpScenario),
    Reflection(ReflectionScenario),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    genkit: String,
    agents: Vec<AgentDefinition>,
    tools: Vec<ToolDefinition>,
    actions: Vec<ActionDescriptor>,
    /// JSON schemas of one agent's actions, by action key.
    schemas: BTreeMap<String, ActionSchemas>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ActionSchemas {
    input_schema: Value,
    output_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_schema: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentDefinition {
    name: String,
    kind: AgentKind,
    store: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt: Option<PromptDefinition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    behaviour: Option<String>,
    /// The custom state's schema, described (`field: type`).
    #[serde(
        rename = "stateSchema",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    state_schema: Option<BTreeMap<String, String>>,
    /// What the client transform does to `state` and `chunk`, described.
    #[serde(
        rename = "clientTransform",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    client_transform: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum AgentKind {
    Prompt,
    Custom,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PromptDefinition {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Vec<String>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionDescriptor {
    key: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
}

/// A scripted model answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScriptedResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wait_for_gate: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LocalScenario {
    name: String,
    agent: String,
    steps: Vec<Step>,
    expect: LocalExpect,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
enum Step {
    Send(Box<SendStep>),
    GetSnapshot {
        lookup: SnapshotLookup,
        #[serde(
            rename = "captureSnapshotId",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        capture_snapshot_id: Option<String>,
    },
    Abort {
        #[serde(rename = "snapshotId")]
        snapshot_id: String,
    },
    WaitUntilCompleted {
        #[serde(rename = "snapshotId")]
        snapshot_id: String,
    },
    Release {},
    Wait {
        ms: u64,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SendStep {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init: Option<AgentInit>,
    inputs: Vec<ScenarioInput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_responses: Option<Vec<ScriptedResponse>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_chunks: Option<Vec<Vec<GenerateResponseChunk>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capture_snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capture_session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capture_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    abort_after_first_chunk: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LocalExpect {
    /// Parsed per step type by [`StepResult::parse`].
    steps: Vec<Value>,
    #[serde(rename = "modelRequests")]
    model_requests: Vec<GenerateRequest>,
    captures: BTreeMap<String, Value>,
}

/// An error as recorded: status (null when the error had none) and message.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorRecord {
    status: Option<String>,
    message: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SendResult {
    chunks: Vec<AgentStreamChunk>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<AgentOutput>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_error: Option<ErrorRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshots: Option<Vec<SessionSnapshot>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SnapshotResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<SessionSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorRecord>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AbortResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<AbortResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ErrorRecord>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Nothing {}

#[derive(Debug)]
enum StepResult {
    Send(SendResult),
    Snapshot(SnapshotResult),
    Abort(AbortResult),
    Nothing,
}

impl StepResult {
    /// Parses `value` as the result of `step`, requiring a lossless round trip.
    fn parse(step: &Step, value: &Value) -> Result<Self, String> {
        Ok(match step {
            Step::Send(_) => Self::Send(round_trip(value)?),
            Step::GetSnapshot { .. } | Step::WaitUntilCompleted { .. } => {
                Self::Snapshot(round_trip(value)?)
            }
            Step::Abort { .. } => Self::Abort(round_trip(value)?),
            Step::Release {} | Step::Wait { .. } => {
                round_trip::<Nothing>(value)?;
                Self::Nothing
            }
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpScenario {
    name: String,
    agent: String,
    calls: Vec<Call>,
    expect: HttpExpect,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "camelCase")]
enum Call {
    Send(TurnCall),
    SendStream(TurnCall),
    Resume {
        resume: Resume,
        #[serde(
            rename = "modelResponses",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        model_responses: Option<Vec<ScriptedResponse>>,
    },
    Detach {
        input: String,
    },
    WaitDetached {},
    GetSnapshot {
        lookup: SnapshotLookup,
    },
    Abort {
        #[serde(rename = "snapshotId")]
        snapshot_id: String,
    },
    Release {},
    NewChat {
        init: AgentInit,
    },
    LoadChat {
        lookup: SnapshotLookup,
    },
    Post(PostCall),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TurnCall {
    input: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_responses: Option<Vec<ScriptedResponse>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_chunks: Option<Vec<Vec<GenerateResponseChunk>>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PostCall {
    path: String,
    body: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    accept: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_responses: Option<Vec<ScriptedResponse>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpExpect {
    calls: Vec<CallResult>,
    exchanges: Vec<Exchange>,
    #[serde(rename = "modelRequests")]
    model_requests: Vec<GenerateRequest>,
}

/// What one client call gave back (which fields depends on the call).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CallResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    response: Option<ClientResponse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chunks: Option<Vec<ClientChunk>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    messages: Option<Vec<Message>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<SessionSnapshot>,
    /// `abort`: the previous status (null for none); `post`: the HTTP status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<ClientError>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClientResponse {
    text: String,
    finish_reason: AgentFinishReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<Message>,
    messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state: Option<Value>,
    artifacts: Vec<Artifact>,
    interrupts: Vec<ClientInterrupt>,
    raw: AgentOutput,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientInterrupt {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    r#ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClientChunk {
    raw: AgentStreamChunk,
    text: String,
    accumulated_text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientError {
    name: Option<String>,
    status: Option<String>,
    message: String,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Exchange {
    request: HttpRequest,
    response: HttpResponse,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HttpRequest {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
    body: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HttpResponse {
    status: u16,
    headers: BTreeMap<String, String>,
    genkit_headers: Vec<String>,
    body: String,
    parsed: Option<ParsedBody>,
}

/// A response body as Genkit's client reads it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ParsedBody {
    Events(Vec<SseFrame>),
    Json(Value),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SseFrame {
    field: SseField,
    value: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum SseField {
    Data,
    Error,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReflectionScenario {
    name: String,
    requests: Vec<ReflectionRequest>,
    expect: ReflectionExpect,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReflectionRequest {
    method: String,
    path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<RunActionRequest>,
    /// For `GET /api/actions`: the keys recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    only_keys: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model_responses: Option<Vec<ScriptedResponse>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stream_chunks: Option<Vec<Vec<GenerateResponseChunk>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    capture_snapshot_id: Option<String>,
}

/// The body of `POST /api/runAction`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunActionRequest {
    key: String,
    input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    init: Option<AgentInit>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReflectionExpect {
    exchanges: Vec<ReflectionExchange>,
    model_requests: Vec<GenerateRequest>,
    captures: BTreeMap<String, Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReflectionExchange {
    status: u16,
    content_type: Option<String>,
    genkit_headers: Vec<String>,
    body: ReflectionBody,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ReflectionBody {
    /// `?stream=true`: one JSON value per line.
    Lines(Vec<ReflectionLine>),
    One(Box<ReflectionLine>),
    /// `GET /api/actions`: descriptors by key.
    Actions(BTreeMap<String, ReflectionAction>),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ReflectionLine {
    Result {
        result: Box<ReflectionResult>,
        telemetry: Telemetry,
    },
    Error {
        error: ReflectionError,
    },
    Chunk(Box<AgentStreamChunk>),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ReflectionResult {
    Output(AgentOutput),
    Snapshot(SessionSnapshot),
    Abort(AbortResponse),
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Telemetry {
    trace_id: String,
}

/// A reflection error: a numeric status code, the message, details.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReflectionError {
    code: u16,
    message: String,
    details: Value,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReflectionAction {
    key: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Value>,
    input_schema: Value,
    output_schema: Value,
}

// ── Checks ─────────────────────────────────────────────────────────────────

/// Parses `value` as `T` and requires `T` to serialize back to the same JSON.
fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(value: &Value) -> Result<T, String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if &back != value {
        return Err(format!(
            "does not serialize back the same:\n  recorded {value}\n  typed    {back}"
        ));
    }
    Ok(typed)
}

fn recorded() -> Vec<(usize, Value)> {
    include_str!("genkit_js_agent/recorded.jsonl")
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("line {}: not JSON: {e}", i + 1));
            (i + 1, value)
        })
        .collect()
}

/// Whether `text` holds a UUID (8-4-4-4-12 hex digits): a generated id the
/// recorder should have replaced by a placeholder.
fn contains_uuid(text: &str) -> bool {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let bytes = text.as_bytes();
    (0..bytes.len()).any(|start| {
        let mut at = start;
        GROUPS.iter().enumerate().all(|(g, &len)| {
            let hex = bytes
                .get(at..at + len)
                .is_some_and(|s| s.iter().all(u8::is_ascii_hexdigit));
            at += len;
            let dash = g == GROUPS.len() - 1 || bytes.get(at) == Some(&b'-');
            at += 1;
            hex && dash
        })
    })
}

#[test]
fn the_uuid_check_works() {
    assert!(contains_uuid("x 02b864c3-4f9a-40cf-8699-e6ea7c72731a y"));
    assert!(!contains_uuid("<snapshotId:1> 11111111-1111-4111-8111"));
}

#[test]
fn every_recorded_line_parses_into_typed_records() {
    let lines = recorded();
    let mut header = None;
    let (mut local, mut http, mut reflection) = (0, 0, 0);
    for (number, value) in &lines {
        let line: Line = round_trip(value).unwrap_or_else(|e| panic!("line {number}: {e}"));
        let text = value.to_string();
        assert!(
            !contains_uuid(&text),
            "line {number}: a generated id was left in"
        );
        match line {
            Line::Header(h) => {
                assert_eq!(*number, 1, "the header comes first");
                header = Some(h);
            }
            Line::Local(scenario) => {
                local += 1;
                let agents = &header.as_ref().expect("a header first").agents;
                assert!(
                    agents.iter().any(|a| a.name == scenario.agent),
                    "line {number}: unknown agent {}",
                    scenario.agent
                );
                assert_eq!(
                    scenario.steps.len(),
                    scenario.expect.steps.len(),
                    "line {number}: one result per step"
                );
                for (step, result) in scenario.steps.iter().zip(&scenario.expect.steps) {
                    let parsed = StepResult::parse(step, result)
                        .unwrap_or_else(|e| panic!("line {number} ({}): {e}", scenario.name));
                    check_result(&parsed, &scenario.name);
                    if let (Step::Send(send), StepResult::Send(result)) = (step, &parsed) {
                        let invalid = send
                            .inputs
                            .iter()
                            .any(|i| matches!(i, ScenarioInput::Invalid(_)));
                        let refused = result.error.as_ref().and_then(|e| e.status.as_deref())
                            == Some("INVALID_ARGUMENT");
                        assert!(
                            !invalid || refused,
                            "{}: an input that is no AgentInput must be refused",
                            scenario.name
                        );
                    }
                }
            }
            Line::Reflection(scenario) => {
                reflection += 1;
                assert_eq!(scenario.requests.len(), scenario.expect.exchanges.len());
                for (request, exchange) in scenario.requests.iter().zip(&scenario.expect.exchanges)
                {
                    assert_eq!(
                        matches!(exchange.body, ReflectionBody::Lines(_)),
                        request.path.contains("stream=true"),
                        "{}: streamed bodies are JSON lines",
                        scenario.name
                    );
                }
            }
            Line::Http(scenario) => {
                http += 1;
                assert_eq!(scenario.calls.len(), scenario.expect.calls.len());
                assert!(!scenario.expect.exchanges.is_empty());
                for exchange in &scenario.expect.exchanges {
                    assert_eq!(exchange.request.method, "POST");
                    assert!(
                        exchange
                            .request
                            .path
                            .starts_with(&format!("/{}", scenario.agent))
                    );
                }
            }
        }
    }
    let header = header.expect("a header line");
    assert_eq!(header.genkit, "1.42.0");
    assert_eq!(header.actions.len(), header.agents.len() * 3);
    assert!(local >= 25, "only {local} local scenarios");
    assert!(http >= 5, "only {http} HTTP scenarios");
    assert!(reflection >= 1, "no Reflection API scenario");
}

/// Invariants of one step's result.
fn check_result(result: &StepResult, scenario: &str) {
    match result {
        StepResult::Send(send) => {
            assert!(
                send.output.is_some() != send.error.is_some(),
                "{scenario}: a send has an output or an error"
            );
            for chunk in &send.chunks {
                assert_eq!(chunk.kinds(), 1, "{scenario}: one kind per chunk");
            }
        }
        StepResult::Snapshot(snapshot) => assert!(
            snapshot.snapshot.is_some() != snapshot.error.is_some(),
            "{scenario}: a snapshot or an error"
        ),
        StepResult::Abort(abort) => assert!(
            abort.output.is_some() != abort.error.is_some(),
            "{scenario}: an abort result or an error"
        ),
        StepResult::Nothing => {}
    }
}

#[test]
fn the_scenarios_cover_the_agent_api() {
    let lines = recorded();
    let text: Vec<String> = lines.iter().map(|(_, v)| v.to_string()).collect();
    let any = |needle: &str| text.iter().any(|line| line.contains(needle));
    for needle in [
        r#""customPatch":[{"op":"replace","path":"""#,
        r#""artifact":{"name":"doc1""#,
        r#""status":"aborted""#,
        r#""status":"pending""#,
        r#""status":"failed""#,
        r#""finishReason":"interrupted""#,
        r#""finishReason":"detached""#,
        r#""status":"NOT_FOUND""#,
        r#""status":"FAILED_PRECONDITION""#,
        r#""status":"INVALID_ARGUMENT""#,
        r#""type":"waitUntilCompleted""#,
        r#""restart":[{"toolRequest""#,
        r#""respond":[{"toolResponse""#,
        r#""field":"error""#,
        r#""path":"/promptAgentWithStore/getSnapshot""#,
        r#""path":"/customAgentBlocking/abort""#,
        r#""stateSchema":{"type":"object""#,
        r#""key":"/agent-snapshot/promptAgentWithStore""#,
    ] {
        assert!(any(needle), "no scenario records {needle}");
    }
}
