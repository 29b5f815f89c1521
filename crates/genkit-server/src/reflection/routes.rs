//! The Reflection API's small endpoints.

use super::ReflectionState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode as HttpStatus;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The Reflection API version this runtime speaks.
pub const REFLECTION_API_SPEC_VERSION: u64 = 1;

type St = State<Arc<ReflectionState>>;

fn body_json(body: &[u8]) -> Value {
    serde_json::from_slice(body).unwrap_or(Value::Null)
}

pub(super) async fn health(State(st): St, Query(q): Query<HashMap<String, String>>) -> Response {
    if q.get("id").is_some_and(|id| *id != st.runtime_id) {
        return (HttpStatus::SERVICE_UNAVAILABLE, "Invalid runtime ID").into_response();
    }
    // Like Genkit JS, make sure every plugin is initialised.
    if let Err(e) = st.registry.list_actions().await {
        ::tracing::error!("initialising plugins failed: {e}");
        return (HttpStatus::INTERNAL_SERVER_ERROR, e.to_string()).into_response();
    }
    (HttpStatus::OK, "OK").into_response()
}

pub(super) async fn actions(State(st): St) -> Json<Value> {
    let mut out = Map::new();
    for (key, desc) in st.registry.list_resolvable_actions().await {
        out.insert(key, desc.to_descriptor());
    }
    Json(Value::Object(out))
}

pub(super) async fn values(State(st): St, Query(q): Query<HashMap<String, String>>) -> Response {
    let Some(kind) = q.get("type").filter(|t| !t.is_empty()) else {
        return (
            HttpStatus::BAD_REQUEST,
            "Query parameter \"type\" is required.",
        )
            .into_response();
    };
    if kind != "defaultModel" && kind != "middleware" {
        return (
            HttpStatus::BAD_REQUEST,
            format!(
                "'type' {kind} is not supported. Only 'defaultModel' and 'middleware' are supported"
            ),
        )
            .into_response();
    }
    let values: Map<String, Value> = st.registry.list_values(kind).into_iter().collect();
    Json(Value::Object(values)).into_response()
}

pub(super) async fn envs(State(st): St) -> Json<Vec<String>> {
    Json(st.envs.clone())
}

pub(super) async fn notify(State(st): St, body: Bytes) -> Response {
    let body = body_json(&body);
    if let (Some(url), Some(t)) = (
        body.get("telemetryServerUrl").and_then(Value::as_str),
        &st.telemetry,
    ) && t.notify_telemetry_server(url)
    {
        ::tracing::debug!("connected to the telemetry server at {url}");
    }
    match body.get("reflectionApiSpecVersion").and_then(Value::as_u64) {
        Some(REFLECTION_API_SPEC_VERSION) => {}
        Some(v) if v > REFLECTION_API_SPEC_VERSION => ::tracing::warn!(
            "the Genkit CLI is newer than this runtime (Reflection API {v}, this runtime speaks {REFLECTION_API_SPEC_VERSION}); some features may not work"
        ),
        _ => ::tracing::warn!("the Genkit CLI may be outdated: please update `genkit-cli`"),
    }
    (HttpStatus::OK, "OK").into_response()
}

pub(super) async fn cancel_action(State(st): St, body: Bytes) -> Response {
    let body = body_json(&body);
    let Some(trace_id) = body
        .get("traceId")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    else {
        return (
            HttpStatus::BAD_REQUEST,
            Json(json!({"error": "traceId is required"})),
        )
            .into_response();
    };
    let token = st.active.lock().remove(trace_id);
    match token {
        Some(t) => {
            t.cancel();
            (HttpStatus::OK, Json(json!({"message": "Action cancelled"}))).into_response()
        }
        None => (
            HttpStatus::NOT_FOUND,
            Json(json!({"message": "Action not found or already completed"})),
        )
            .into_response(),
    }
}
