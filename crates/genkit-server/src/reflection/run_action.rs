//! `POST /api/runAction[?stream=true]` with body `{key, input, init?, context?, telemetryLabels?}`.
//!
//! A bidirectional action (an agent) runs with `init` as its init payload
//! and `input` as its only input, then its input side closes, as in Genkit JS.
//!
//! As soon as the action's root span opens, the response starts: 200 with
//! `X-Genkit-Trace-Id`, `X-Genkit-Span-Id`, `X-Genkit-Version`, chunked. With
//! `?stream=true` each chunk follows as one JSON value and `\n`. The body ends
//! with `{"result": ..., "telemetry": {"traceId": ...}}`, or
//! `{"error": {"code", "message", "details": {"stack", "traceId"}}}`, and no
//! trailing newline (the CLI parses the rest of the buffer as one JSON value).
//! Errors are answered with status 200 too: the headers are usually gone
//! before the error happens. An unknown key is 404.
//!
//! Before the final value, the exporters are flushed (as Genkit JS's
//! `flushTracing()`), so the CLI finds the trace once it has the answer.

use super::ReflectionState;
use crate::response::{concat, insert_trace_headers};
use crate::run::{self, Event};
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode as HttpStatus};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use genkit_core::tracing::TraceInfo;
use genkit_core::{ActionContext, CancellationToken, Error, RunOptions};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// How long the final answer waits for the trace to reach the telemetry server.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// Removes a run from the cancellable runs when its response ends.
struct Active {
    state: Arc<ReflectionState>,
    trace_id: Arc<parking_lot::Mutex<Option<String>>>,
}

impl Drop for Active {
    fn drop(&mut self) {
        if let Some(id) = self.trace_id.lock().take() {
            self.state.active.lock().remove(&id);
        }
    }
}

pub(super) async fn run_action(
    State(st): State<Arc<ReflectionState>>,
    Query(q): Query<HashMap<String, String>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return (e.status(), e.body_text()).into_response(),
    };
    let mut req: Map<String, Value> = match serde_json::from_slice(&body) {
        Ok(Value::Object(m)) => m,
        _ => {
            return (
                HttpStatus::BAD_REQUEST,
                "the body must be a JSON object {key, input, context?, telemetryLabels?}",
            )
                .into_response();
        }
    };
    let Some(key) = req.get("key").and_then(Value::as_str).map(str::to_owned) else {
        return (HttpStatus::BAD_REQUEST, "`key` is required").into_response();
    };
    let streaming = q.get("stream").is_some_and(|v| v == "true");
    let action = match st.registry.lookup_action(&key).await {
        Ok(Some(a)) => a,
        Ok(None) => {
            return (HttpStatus::NOT_FOUND, format!("action {key} not found")).into_response();
        }
        Err(e) => return final_response(streaming, None, error_body(&e, None)),
    };
    let input = req.remove("input").unwrap_or(Value::Null);
    let init = req.remove("init");
    let context = ActionContext::from_value(req.remove("context").unwrap_or(Value::Null));
    let labels: BTreeMap<String, String> = match req.remove("telemetryLabels") {
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
    let active = Active {
        state: st.clone(),
        trace_id: Arc::default(),
    };
    let registered = active.trace_id.clone();
    let registry_state = st.clone();
    let run_token = token.clone();
    let mut opts = RunOptions::new()
        .context(context)
        .cancel(token)
        .on_trace_start(move |t: TraceInfo| {
            let id = t.trace_id.to_string();
            registry_state.active.lock().insert(id.clone(), run_token);
            *registered.lock() = Some(id);
        });
    if !labels.is_empty() {
        opts = opts.telemetry_labels(labels);
    }
    let started = run::start(action, init, input, opts, streaming).await;
    let trace = started.trace;
    let telemetry = st.telemetry.clone();
    let body = started.events.then(move |ev| {
        // Keep the run cancellable until its response ends.
        let _active = &active;
        let telemetry = telemetry.clone();
        async move {
            let bytes = match ev {
                Event::Chunk(c) => {
                    let mut b = serde_json::to_vec(&c).unwrap_or_else(|_| b"null".to_vec());
                    b.push(b'\n');
                    b
                }
                Event::Done(result) => {
                    if let Some(t) = &telemetry {
                        t.flush(FLUSH_TIMEOUT).await;
                    }
                    final_body(result, trace)
                }
            };
            Bytes::from(bytes)
        }
    });
    // Frames that are ready together go out in one write.
    let body = body
        .ready_chunks(64)
        .map(|batch| Ok::<_, std::convert::Infallible>(concat(batch)));
    let mut r = Response::new(Body::from_stream(body));
    decorate(&mut r, streaming, trace);
    r
}

fn decorate(r: &mut Response, streaming: bool, trace: Option<TraceInfo>) {
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(if streaming {
            "text/plain"
        } else {
            "application/json"
        }),
    );
    if let Some(t) = trace {
        insert_trace_headers(h, t);
    }
}

fn final_response(streaming: bool, trace: Option<TraceInfo>, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    decorate(&mut r, streaming, trace);
    r
}

fn final_body(result: Result<Value, Error>, trace: Option<TraceInfo>) -> Vec<u8> {
    let trace_id = trace.map(|t| t.trace_id.to_string());
    match result {
        Ok(output) => {
            let mut m = Map::new();
            m.insert("result".into(), output);
            if let Some(id) = trace_id {
                m.insert("telemetry".into(), json!({ "traceId": id }));
            }
            serde_json::to_vec(&Value::Object(m)).unwrap_or_default()
        }
        Err(e) => error_body(&e, trace_id),
    }
}

/// `{"error": {"code": <gRPC number>, "message", "details": {"stack", "traceId"}}}`.
fn error_body(e: &Error, trace_id: Option<String>) -> Vec<u8> {
    let mut details = Map::new();
    details.insert("stack".into(), Value::from(e.stack()));
    if let Some(id) = e.trace_id().map(str::to_owned).or(trace_id) {
        details.insert("traceId".into(), Value::from(id));
    }
    let body = json!({
        "error": {
            "code": e.status().code(),
            "message": e.message(),
            "details": details,
        }
    });
    serde_json::to_vec(&body).unwrap_or_default()
}
