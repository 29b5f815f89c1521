//! The Reflection API v2: instead of serving HTTP, the runtime connects to
//! the WebSocket server of `genkit start --experimental-reflection-v2`
//! (`GENKIT_REFLECTION_V2_SERVER`, a `ws://` URL) and speaks JSON-RPC 2.0
//! over it. See `docs/reflection-v2.md` for the protocol.
//!
//! The runtime calls `register` once connected; the CLI then calls
//! `listActions`, `listValues`, `runAction` (answered with `streamChunk` and
//! `runActionState` notifications before the result), `cancelAction`, and
//! sends the `configure`, `sendInputStreamChunk` and `endInputStream`
//! notifications. The answers are those of the v1 endpoints, over the same
//! [`ReflectionState`]. When the connection drops (the CLI restarted), the
//! runtime reconnects with a growing delay (0.5 s doubling up to 5 s).

use super::ReflectionState;
use super::routes::REFLECTION_API_SPEC_VERSION;
use crate::run::{Event, Events, Source};
use futures::{SinkExt, StreamExt};
use genkit_core::action::{as_bidi, stream_json};
use genkit_core::tracing::TraceInfo;
use genkit_core::{ActionContext, CancellationToken, Error, RunOptions};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// The environment variable the CLI sets to its WebSocket server's URL.
pub const SERVER_ENV: &str = "GENKIT_REFLECTION_V2_SERVER";

/// JSON-RPC: the method does not exist.
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid params (also: unknown action, unknown run to cancel).
const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC server error: the action failed (its Genkit error in `data`).
const SERVER_ERROR: i64 = -32000;

const BASE_DELAY: Duration = Duration::from_millis(500);
const MAX_DELAY: Duration = Duration::from_secs(5);
/// How long the final answer waits for the trace to reach the telemetry server.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Who the runtime says it is in `register`.
#[derive(Debug, Clone)]
pub struct Registration {
    /// Display name; the runtime id if `None`.
    pub name: Option<String>,
}

/// Connects to `url` and serves the CLI until `stop` is cancelled,
/// reconnecting whenever the connection fails or drops.
pub async fn run_client(
    state: Arc<ReflectionState>,
    url: String,
    registration: Registration,
    stop: tokio_util::sync::CancellationToken,
) {
    let mut attempt: u32 = 0;
    while !stop.is_cancelled() {
        let connected = tokio::select! {
            () = stop.cancelled() => return,
            r = tokio_tungstenite::connect_async(url.as_str()) => r,
        };
        match connected {
            Ok((ws, _)) => {
                attempt = 0;
                ::tracing::debug!("connected to the Reflection v2 server at {url}");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = serve_connection(&state, &registration, ws) => {}
                }
                ::tracing::debug!("the Reflection v2 connection closed");
            }
            Err(e) => ::tracing::debug!("connecting to the Reflection v2 server at {url}: {e}"),
        }
        let delay = BASE_DELAY
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(MAX_DELAY);
        attempt = attempt.saturating_add(1);
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
    }
}

/// Outgoing messages of one connection (a writer task sends them in order).
#[derive(Clone)]
struct Outbox(mpsc::UnboundedSender<Value>);

impl Outbox {
    fn send(&self, message: Value) {
        // A closed connection drops what is left to say; the CLI that asked
        // is gone with it.
        let _ = self.0.send(message);
    }

    fn result(&self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "result": result, "id": id}));
    }

    fn error(&self, id: &Value, code: i64, message: &str, data: Option<Value>) {
        let mut error = json!({"code": code, "message": message});
        if let Some(d) = data {
            error["data"] = d;
        }
        self.send(json!({"jsonrpc": "2.0", "error": error, "id": id}));
    }

    fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }
}

/// The input sides of `runAction`s with `streamInput`, by request id. Each
/// is opened as soon as its request is read (before the action is even looked
/// up), so input chunks that follow the request at once are kept, in order;
/// dropping the sender ends the run's input.
type InputStreams = Arc<Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>>;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn serve_connection(state: &Arc<ReflectionState>, registration: &Registration, ws: Socket) {
    let (mut sink, mut incoming) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let out = Outbox(tx);
    let writer = async move {
        while let Some(message) = rx.recv().await {
            if sink
                .send(Message::Text(message.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
    };
    let inputs: InputStreams = Arc::default();
    let register_id = "1";
    out.send(json!({
        "jsonrpc": "2.0",
        "id": register_id,
        "method": "register",
        "params": {
            "id": state.runtime_id,
            "pid": std::process::id(),
            "name": registration.name.clone().unwrap_or_else(|| state.runtime_id.clone()),
            "genkitVersion": genkit_core::GENKIT_VERSION,
            "reflectionApiSpecVersion": REFLECTION_API_SPEC_VERSION,
            "envs": state.envs,
        },
    }));
    let reader = async {
        while let Some(frame) = incoming.next().await {
            let text = match frame {
                Ok(Message::Text(t)) => t,
                Ok(Message::Close(_)) | Err(_) => break,
                Ok(_) => continue,
            };
            let message: Value = match serde_json::from_str(text.as_str()) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    ::tracing::warn!("Reflection v2: ignoring a message that is not a JSON object");
                    continue;
                }
            };
            if message.get("method").is_some() {
                dispatch(state, &out, &inputs, message);
            } else if message.get("id").and_then(Value::as_str) == Some(register_id) {
                on_registered(state, &message);
            }
        }
    };
    tokio::select! {
        () = reader => {}
        () = writer => {}
    }
    // Dropping the senders closes the input of runs still reading it.
    inputs.lock().clear();
}

/// The CLI's answer to `register` names its telemetry server.
fn on_registered(state: &ReflectionState, answer: &Value) {
    if let Some(e) = answer.get("error") {
        ::tracing::error!("the Genkit CLI refused to register this runtime: {e}");
        return;
    }
    if let Some(url) = answer
        .pointer("/result/telemetryServerUrl")
        .and_then(Value::as_str)
    {
        notify_telemetry(state, url);
    }
}

fn notify_telemetry(state: &ReflectionState, url: &str) {
    if let Some(t) = &state.telemetry
        && t.notify_telemetry_server(url)
    {
        ::tracing::debug!("connected to the telemetry server at {url}");
    }
}

/// Serves one request or notification from the CLI. Requests that may take
/// long (running an action) run in their own task, so others are answered
/// meanwhile (a `cancelAction` for a run in flight, its input chunks).
fn dispatch(state: &Arc<ReflectionState>, out: &Outbox, inputs: &InputStreams, message: Value) {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let id = message.get("id").cloned().filter(|v| !v.is_null());
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    match method.as_str() {
        "listActions" => {
            if let Some(id) = id {
                let (state, out) = (state.clone(), out.clone());
                tokio::spawn(async move {
                    let mut actions = Map::new();
                    for (key, desc) in state.registry.list_resolvable_actions().await {
                        actions.insert(key, desc.to_descriptor());
                    }
                    out.result(&id, json!({ "actions": actions }));
                });
            }
        }
        "listValues" => {
            if let Some(id) = id {
                list_values(state, out, &id, &params);
            }
        }
        "runAction" => {
            if let Some(id) = id {
                let input_stream =
                    (params.get("streamInput") == Some(&Value::Bool(true))).then(|| {
                        let (tx, rx) = mpsc::unbounded_channel();
                        inputs.lock().insert(request_key(&id), tx);
                        rx
                    });
                let (state, out, inputs) = (state.clone(), out.clone(), inputs.clone());
                tokio::spawn(async move {
                    let request = request_key(&id);
                    run_action(state, out, id, params, input_stream).await;
                    inputs.lock().remove(&request);
                });
            }
        }
        "cancelAction" => {
            if let Some(id) = id {
                cancel_action(state, out, &id, &params);
            }
        }
        "configure" => {
            if let Some(url) = params.get("telemetryServerUrl").and_then(Value::as_str) {
                notify_telemetry(state, url);
            }
        }
        "sendInputStreamChunk" => {
            let request = params.get("requestId").map(request_key);
            let sender = request.and_then(|r| inputs.lock().get(&r).cloned());
            match sender {
                Some(s) => {
                    // Fails only once the run is over: nobody reads it then.
                    let _ = s.send(params.get("chunk").cloned().unwrap_or(Value::Null));
                }
                None => ::tracing::warn!("Reflection v2: input chunk for an unknown request"),
            }
        }
        "endInputStream" => {
            let request = params.get("requestId").map(request_key);
            if request.and_then(|r| inputs.lock().remove(&r)).is_none() {
                ::tracing::warn!("Reflection v2: end of input for an unknown request");
            }
        }
        other => {
            if let Some(id) = id {
                out.error(
                    &id,
                    METHOD_NOT_FOUND,
                    &format!("Method not found: {other}"),
                    None,
                );
            }
        }
    }
}

/// Request ids are strings in the CLI; a number is keyed by its text.
fn request_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn list_values(state: &ReflectionState, out: &Outbox, id: &Value, params: &Value) {
    let kind = params
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != "defaultModel" && kind != "middleware" {
        out.error(
            id,
            INVALID_PARAMS,
            &format!(
                "'type' {kind} is not supported. Only 'defaultModel' and 'middleware' are supported"
            ),
            None,
        );
        return;
    }
    let values: Map<String, Value> = state.registry.list_values(kind).into_iter().collect();
    out.result(id, json!({ "values": values }));
}

fn cancel_action(state: &ReflectionState, out: &Outbox, id: &Value, params: &Value) {
    let trace_id = params
        .get("traceId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match state.active.lock().remove(trace_id) {
        Some(token) => {
            token.cancel();
            out.result(id, json!({"message": "Action cancelled"}));
        }
        None => out.error(
            id,
            INVALID_PARAMS,
            "Action not found or already completed",
            None,
        ),
    }
}

/// Runs the action of a `runAction` request and answers it; `input_stream`
/// (with `streamInput`) carries a bidirectional action's input.
async fn run_action(
    state: Arc<ReflectionState>,
    out: Outbox,
    id: Value,
    params: Value,
    input_stream: Option<mpsc::UnboundedReceiver<Value>>,
) {
    let Value::Object(mut params) = params else {
        out.error(
            &id,
            INVALID_PARAMS,
            "params must be an object {key, input, ...}",
            None,
        );
        return;
    };
    let Some(key) = params.get("key").and_then(Value::as_str).map(str::to_owned) else {
        out.error(&id, INVALID_PARAMS, "`key` is required", None);
        return;
    };
    let action = match state.registry.lookup_action(&key).await {
        Ok(Some(a)) => a,
        Ok(None) => {
            out.error(
                &id,
                INVALID_PARAMS,
                &format!("action {key} not found"),
                None,
            );
            return;
        }
        Err(e) => {
            send_failure(&out, &id, &e, None);
            return;
        }
    };
    let flag = |name: &str| params.get(name).and_then(Value::as_bool).unwrap_or(false);
    let streaming = flag("stream");
    let input = params.remove("input").unwrap_or(Value::Null);
    let init = params.remove("init");
    let context = ActionContext::from_value(params.remove("context").unwrap_or(Value::Null));
    let labels: BTreeMap<String, String> = match params.remove("telemetryLabels") {
        Some(Value::Object(m)) => m
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect(),
        _ => BTreeMap::new(),
    };

    let token = CancellationToken::new();
    let trace: Arc<Mutex<Option<String>>> = Arc::default();
    let opts = {
        let (state, out, trace, id, token) = (
            state.clone(),
            out.clone(),
            trace.clone(),
            id.clone(),
            token.clone(),
        );
        let mut opts = RunOptions::new()
            .context(context)
            .cancel(token.clone())
            .on_trace_start(move |t: TraceInfo| {
                let trace_id = t.trace_id.to_string();
                state.active.lock().insert(trace_id.clone(), token);
                *trace.lock() = Some(trace_id.clone());
                out.notify(
                    "runActionState",
                    json!({"requestId": id, "state": {"traceId": trace_id}}),
                );
            });
        if !labels.is_empty() {
            opts = opts.telemetry_labels(labels);
        }
        opts
    };
    let source = match (as_bidi(&action), input_stream) {
        (Some(bidi), Some(mut chunks)) => {
            // The input comes from `sendInputStreamChunk` until
            // `endInputStream` (or the end of the connection) closes it.
            let mut run = bidi.start_json(init.unwrap_or(Value::Null), opts);
            if let Some(sender) = run.sender() {
                // An input the schema refuses reaches the body in its place,
                // which decides the outcome (as for v1).
                if !input.is_null() {
                    let _ = sender.send(input);
                }
                tokio::spawn(async move {
                    while let Some(chunk) = chunks.recv().await {
                        let _ = sender.send(chunk);
                    }
                });
            }
            run.close();
            if streaming {
                Source::Bidi(run)
            } else {
                Source::Once(Box::pin(run.output()))
            }
        }
        (Some(bidi), None) => crate::bidi::source(bidi.as_ref(), init, input, opts, streaming),
        (None, _) if streaming => Source::Stream(stream_json(action, input, opts)),
        (None, _) => Source::Once(Box::pin(async move {
            action.run_json(input, opts).await.map(|r| r.output)
        })),
    };
    let mut events = Events::new(source);
    while let Some(event) = events.next().await {
        match event {
            Event::Chunk(chunk) => {
                out.notify("streamChunk", json!({"requestId": id, "chunk": chunk}))
            }
            Event::Done(result) => {
                if let Some(t) = &state.telemetry {
                    t.flush(FLUSH_TIMEOUT).await;
                }
                let trace_id = trace.lock().clone();
                match result {
                    Ok(output) => {
                        let mut answer = Map::new();
                        answer.insert("result".into(), output);
                        if let Some(t) = &trace_id {
                            answer.insert("telemetry".into(), json!({ "traceId": t }));
                        }
                        out.result(&id, Value::Object(answer));
                    }
                    Err(e) => send_failure(&out, &id, &e, trace_id),
                }
                break;
            }
        }
    }
    if let Some(t) = trace.lock().take() {
        state.active.lock().remove(&t);
    }
}

/// A failed run: JSON-RPC server error whose `data` is Genkit's error
/// (`{code: <gRPC status number>, message, details: {stack, traceId}}`),
/// which the CLI hands on to the Dev UI.
fn send_failure(out: &Outbox, id: &Value, e: &Error, trace_id: Option<String>) {
    let mut details = Map::new();
    details.insert("stack".into(), Value::from(e.stack()));
    if let Some(t) = e.trace_id().map(str::to_owned).or(trace_id) {
        details.insert("traceId".into(), Value::from(t));
    }
    let message = e.message();
    let data = json!({"code": e.status().code(), "message": message, "details": details});
    out.error(id, SERVER_ERROR, message, Some(data));
}
