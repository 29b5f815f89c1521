//! The Reflection API (v1) the `genkit` CLI and Dev UI use to list and run a
//! dev-mode app's actions. Served on 127.0.0.1 only (it is unauthenticated),
//! and only to local tools: the [request guard](crate::guard) refuses a
//! request whose `Host` is not loopback or whose `Origin` is neither its own
//! nor a loopback origin (403), and a `POST` that is not `application/json`
//! (415), before it reaches an endpoint. This keeps web pages and DNS
//! rebinding out; the official CLI (JSON to `http://localhost:<port>`, no
//! `Origin`) and the Dev UI (a loopback origin) get through.
//!
//! | endpoint | |
//! |---|---|
//! | `GET /api/__health?id=` | 200 `OK`, or 503 `Invalid runtime ID` |
//! | `GET /api/actions` | every resolvable action's descriptor, by key |
//! | `POST /api/runAction[?stream=true]` | see [`run_action`] |
//! | `POST /api/cancelAction` | cancels a run by trace id |
//! | `POST /api/notify` | the CLI announces its telemetry server |
//! | `GET /api/values?type=` | `defaultModel` / `middleware` values |
//! | `GET /api/envs` | configured environments (`["dev"]`) |
//!
//! With `GENKIT_REFLECTION_V2_SERVER` set, the runtime is a client of the
//! CLI's WebSocket server instead ([`v2`]).

mod routes;
pub mod run_action;
pub mod v2;

use crate::error::ServerError;
use crate::guard::{AllowedHosts, RequestGuard};
use crate::telemetry::Telemetry;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::HeaderValue;
use axum::routing::{get, post};
use genkit_core::{CancellationToken, Registry};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The ports tried in order when `GENKIT_REFLECTION_PORT` is not set.
pub const DEFAULT_PORTS: RangeInclusive<u16> = 3100..=3199;

/// Body limit of the Reflection API (Genkit JS: 30 MB).
pub const BODY_LIMIT: usize = 30 * 1024 * 1024;

/// What the Reflection API serves.
pub struct ReflectionState {
    registry: Registry,
    runtime_id: String,
    envs: Vec<String>,
    telemetry: Option<Arc<Telemetry>>,
    /// Runs in flight, by trace id, for `/api/cancelAction`.
    active: Mutex<HashMap<String, CancellationToken>>,
}

impl ReflectionState {
    /// State for `registry` under `runtime_id`, exporting through `telemetry`.
    pub fn new(
        registry: &Registry,
        runtime_id: impl Into<String>,
        telemetry: Option<Arc<Telemetry>>,
    ) -> Self {
        Self {
            registry: registry.clone(),
            runtime_id: runtime_id.into(),
            envs: vec!["dev".to_owned()],
            telemetry,
            active: Mutex::new(HashMap::new()),
        }
    }

    /// The runtime id the health check expects.
    pub fn runtime_id(&self) -> &str {
        &self.runtime_id
    }

    /// Number of runs in flight.
    pub fn active_runs(&self) -> usize {
        self.active.lock().len()
    }
}

/// The Reflection API router over `state`.
pub fn router(state: Arc<ReflectionState>) -> Router {
    let router = Router::new()
        .route("/api/__health", get(routes::health))
        .route("/api/actions", get(routes::actions))
        .route("/api/values", get(routes::values))
        .route("/api/envs", get(routes::envs))
        .route("/api/notify", post(routes::notify))
        .route("/api/cancelAction", post(routes::cancel_action))
        .route("/api/runAction", post(run_action::run_action))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::map_response(version_header))
        .with_state(state);
    local_tools_only().apply(router, "reflection API")
}

/// The Reflection API's guard: loopback `Host` names only, and besides the
/// API's own origin, loopback origins (the Dev UI) only.
fn local_tools_only() -> RequestGuard {
    RequestGuard::new()
        .allowed_hosts(AllowedHosts::Loopback)
        .allow_loopback_origins()
}

async fn version_header(mut r: axum::response::Response) -> axum::response::Response {
    r.headers_mut().insert(
        "x-genkit-version",
        HeaderValue::from_static(genkit_core::GENKIT_VERSION),
    );
    r
}

/// Binds the Reflection API's port on 127.0.0.1: `port` if given (e.g. from
/// `GENKIT_REFLECTION_PORT`), else the first free one of [`DEFAULT_PORTS`].
pub async fn bind(port: Option<u16>) -> Result<TcpListener, ServerError> {
    if let Some(p) = port {
        return TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, p)))
            .await
            .map_err(|source| ServerError::Bind {
                what: format!("the reflection port 127.0.0.1:{p}"),
                source,
            });
    }
    let mut last = None;
    for p in DEFAULT_PORTS {
        match TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, p))).await {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(ServerError::Bind {
        what: format!(
            "any reflection port in {}..={}",
            DEFAULT_PORTS.start(),
            DEFAULT_PORTS.end()
        ),
        source: last.unwrap_or_else(|| std::io::Error::other("no port tried")),
    })
}
