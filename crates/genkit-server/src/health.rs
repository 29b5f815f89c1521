//! Health and readiness endpoints for a server behind a load balancer or
//! an orchestrator ([`FlowServer::health`](crate::FlowServer::health)):
//!
//! - `GET /healthz` answers 200 `{"status":"ok"}` while the process serves
//!   at all (a liveness probe: restart the process when it fails);
//! - `GET /readyz` answers 200 `{"status":"ready"}` when every readiness
//!   check passes (the session store is reachable, say), else 503 with the
//!   failing check's message; and 503 `{"status":"draining"}` from the
//!   shutdown signal on, so the balancer stops sending new requests before
//!   the server stops accepting them.
//!
//! Both are served outside the [request guard](crate::guard) (probes send
//! no JSON body and may name the pod's address as `Host`), need no
//! credentials, and tell nothing but up, ready or not.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode as HttpStatus;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

/// The path of the liveness endpoint.
pub const HEALTHZ: &str = "/healthz";
/// The path of the readiness endpoint.
pub const READYZ: &str = "/readyz";
/// Default [`Health::drain_delay`]: 5 s.
pub const DEFAULT_DRAIN_DELAY: Duration = Duration::from_secs(5);
/// Default [`Health::check_timeout`]: 2 s.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// A readiness check: `Ok(())` when ready, else why not.
pub type ReadinessCheck =
    Arc<dyn Fn() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync>;

/// The health and readiness endpoints and their state; clones share it.
#[derive(Clone)]
pub struct Health {
    draining: Arc<AtomicBool>,
    checks: Vec<(String, ReadinessCheck)>,
    drain_delay: Duration,
    check_timeout: Duration,
}

impl Default for Health {
    fn default() -> Self {
        Self::new()
    }
}

impl Health {
    /// Endpoints with no readiness check (ready while not draining), a
    /// [drain delay](Self::drain_delay) of [`DEFAULT_DRAIN_DELAY`].
    pub fn new() -> Self {
        Self {
            draining: Arc::new(AtomicBool::new(false)),
            checks: Vec::new(),
            drain_delay: DEFAULT_DRAIN_DELAY,
            check_timeout: DEFAULT_CHECK_TIMEOUT,
        }
    }

    /// Adds a readiness check named `name` (shown in a 503's message),
    /// run on every `GET /readyz`; one that takes longer than the
    /// [check timeout](Self::check_timeout) fails.
    pub fn readiness_check<F, Fut>(mut self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        let check: ReadinessCheck = Arc::new(move || Box::pin(check()));
        self.checks.push((name.into(), check));
        self
    }

    /// How long, from the shutdown signal, the server keeps accepting
    /// requests while `/readyz` answers 503 (so a balancer probing it takes
    /// the server out first) before it stops accepting and drains. Should
    /// exceed the balancer's probe interval times its failure threshold.
    pub fn drain_delay(mut self, delay: Duration) -> Self {
        self.drain_delay = delay;
        self
    }

    /// How long one readiness check may take: [`DEFAULT_CHECK_TIMEOUT`].
    pub fn check_timeout(mut self, timeout: Duration) -> Self {
        self.check_timeout = timeout;
        self
    }

    /// Marks the server draining: `/readyz` answers 503 from now on.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the server is draining.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// The configured drain delay.
    pub fn delay(&self) -> Duration {
        self.drain_delay
    }

    /// `signal`, then draining for the drain delay: what the server waits
    /// for before it stops accepting.
    pub(crate) fn drain_after(
        &self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let health = self.clone();
        async move {
            signal.await;
            health.set_draining();
            ::tracing::info!(
                "shutdown signal: /readyz answers 503; still serving for {:?} before draining",
                health.drain_delay
            );
            tokio::time::sleep(health.drain_delay).await;
        }
    }

    /// The readiness answer now.
    pub async fn readiness(&self) -> Result<(), String> {
        if self.is_draining() {
            return Err("draining".into());
        }
        for (name, check) in &self.checks {
            match tokio::time::timeout(self.check_timeout, check()).await {
                Ok(Ok(())) => {}
                Ok(Err(why)) => return Err(format!("{name}: {why}")),
                Err(_) => {
                    return Err(format!("{name}: no answer within {:?}", self.check_timeout));
                }
            }
        }
        Ok(())
    }

    /// The two routes.
    pub fn router(&self) -> Router {
        let health = self.clone();
        Router::new()
            .route(
                HEALTHZ,
                get(|| async { axum::Json(json!({"status": "ok"})) }),
            )
            .route(
                READYZ,
                get(move || {
                    let health = health.clone();
                    async move { readyz(&health).await }
                }),
            )
    }
}

async fn readyz(health: &Health) -> Response {
    match health.readiness().await {
        Ok(()) => axum::Json(json!({"status": "ready"})).into_response(),
        Err(why) if health.is_draining() => (
            HttpStatus::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "draining", "message": why})),
        )
            .into_response(),
        Err(why) => (
            HttpStatus::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "unavailable", "message": why})),
        )
            .into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    async fn status(router: &Router, path: &str) -> u16 {
        let request = Request::get(path).body(Body::empty()).expect("request");
        let response = router.clone().oneshot(request).await.expect("infallible");
        response.status().as_u16()
    }

    #[tokio::test]
    async fn readiness_follows_checks_and_draining() {
        let up = Arc::new(AtomicBool::new(true));
        let flag = up.clone();
        let health = Health::new().readiness_check("store", move || {
            let ok = flag.load(Ordering::SeqCst);
            async move { if ok { Ok(()) } else { Err("down".into()) } }
        });
        let router = health.router();
        assert_eq!(status(&router, HEALTHZ).await, 200);
        assert_eq!(status(&router, READYZ).await, 200);
        up.store(false, Ordering::SeqCst);
        assert_eq!(status(&router, READYZ).await, 503);
        assert_eq!(status(&router, HEALTHZ).await, 200);
        up.store(true, Ordering::SeqCst);
        health.set_draining();
        assert_eq!(status(&router, READYZ).await, 503);
        assert_eq!(status(&router, HEALTHZ).await, 200);
    }

    #[tokio::test]
    async fn a_slow_check_fails() {
        let health = Health::new()
            .check_timeout(Duration::from_millis(20))
            .readiness_check("slow", || async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                Ok(())
            });
        assert!(health.readiness().await.is_err());
    }
}
