//! Dev tooling: what `genkit start -- <your app>` needs from the app.
//!
//! With `GENKIT_ENV=dev`: trace export to the CLI's telemetry server, the
//! Reflection API on 127.0.0.1 (port 3100..3199, or `GENKIT_REFLECTION_PORT`),
//! and the runtime file under the project root, removed on exit, including
//! Ctrl-C and SIGTERM. Without it, nothing happens.
//!
//! Traces are not kept in the app: as with Genkit JS, the CLI and Dev UI read
//! them from the telemetry server the CLI runs.

use crate::error::ServerError;
use crate::reflection::{self, ReflectionState};
use crate::runtime_file::{RuntimeFile, RuntimeInfo, epoch_millis, find_project_root, iso8601_utc};
use crate::serving::{self, ServeOptions};
use crate::shutdown;
use genkit_core::Registry;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Options of [`start_dev_tooling_with`].
#[derive(Debug, Clone)]
pub struct DevToolingOptions {
    /// Reflection API port; default `GENKIT_REFLECTION_PORT`, else the first
    /// free port of 3100..=3199.
    pub port: Option<u16>,
    /// Where to look for the project root; default the working directory.
    pub project_dir: Option<PathBuf>,
    /// A display name for the tools.
    pub name: Option<String>,
    /// On SIGINT/SIGTERM, after removing the runtime file, end the process
    /// unless a [`FlowServer`](crate::FlowServer) is shutting down gracefully
    /// (default `true`). Set `false` if the app handles signals itself.
    pub exit_on_signal: bool,
    /// Start even if `GENKIT_ENV` is not `dev` (for tests and embedding).
    pub force: bool,
    /// Timeouts, concurrency limit and shutdown drain deadline of the
    /// Reflection API's server ([`ServeOptions::default`]).
    pub serve: ServeOptions,
}

impl Default for DevToolingOptions {
    fn default() -> Self {
        Self {
            port: None,
            project_dir: None,
            name: None,
            exit_on_signal: true,
            force: false,
            serve: ServeOptions::default(),
        }
    }
}

/// Whether `GENKIT_ENV=dev`.
pub fn is_dev_env() -> bool {
    std::env::var("GENKIT_ENV").is_ok_and(|v| v == "dev")
}

/// Starts the dev tooling with default options; `Ok(None)` unless
/// `GENKIT_ENV=dev`. Keep the returned handle alive while the app runs.
pub async fn start_dev_tooling(registry: &Registry) -> Result<Option<DevTooling>, ServerError> {
    start_dev_tooling_with(registry, DevToolingOptions::default()).await
}

/// Starts the dev tooling; `Ok(None)` unless `GENKIT_ENV=dev` (or `options.force`).
pub async fn start_dev_tooling_with(
    registry: &Registry,
    options: DevToolingOptions,
) -> Result<Option<DevTooling>, ServerError> {
    if !options.force && !is_dev_env() {
        return Ok(None);
    }
    let telemetry = crate::telemetry::init_from_env()?;
    let port = match options.port {
        Some(p) => Some(p),
        None => match std::env::var("GENKIT_REFLECTION_PORT") {
            Ok(s) => Some(s.trim().parse::<u16>().map_err(|_| {
                ServerError::Config(format!("GENKIT_REFLECTION_PORT is not a port: `{s}`"))
            })?),
            Err(_) => None,
        },
    };
    let listener = reflection::bind(port).await?;
    let port = listener
        .local_addr()
        .map_err(|source| ServerError::Bind {
            what: "the reflection server".into(),
            source,
        })?
        .port();
    let pid = std::process::id();
    let runtime_id = std::env::var("GENKIT_RUNTIME_ID")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{pid}-{port}"));
    let state = Arc::new(ReflectionState::new(
        registry,
        runtime_id.clone(),
        Some(telemetry),
    ));
    let router = reflection::router(state.clone());
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let serve_options = options.serve.clone();
    let server = tokio::spawn(async move {
        let stop = async move { stopped.cancelled().await };
        let r = serving::serve(listener, router, &serve_options, stop, "reflection server").await;
        if let Err(e) = r {
            ::tracing::error!("reflection server failed: {e}");
        }
    });
    let url = format!("http://localhost:{port}");
    ::tracing::info!("Genkit reflection server running on {url} (runtime {runtime_id})");

    // Initialise plugins before announcing the runtime, as Genkit JS does.
    if let Err(e) = registry.list_actions().await {
        stop.cancel();
        return Err(e.into());
    }
    let project_dir = match options
        .project_dir
        .map(Ok)
        .unwrap_or_else(std::env::current_dir)
    {
        Ok(d) => d,
        Err(e) => {
            stop.cancel();
            return Err(ServerError::Config(format!("no working directory: {e}")));
        }
    };
    let root = find_project_root(&project_dir);
    let now = SystemTime::now();
    let info = RuntimeInfo {
        id: runtime_id.clone(),
        pid,
        name: options.name,
        reflection_server_url: url.clone(),
        timestamp: iso8601_utc(now),
        genkit_version: genkit_core::GENKIT_VERSION.to_owned(),
        reflection_api_spec_version: 1,
    };
    let file = match RuntimeFile::write(&root, &info, epoch_millis(now)) {
        Ok(f) => f,
        Err(e) => {
            stop.cancel();
            return Err(e);
        }
    };
    let file = Arc::new(Mutex::new(file));
    shutdown::install();
    let on_signal = {
        let file = file.clone();
        let stop = stop.clone();
        let exit = options.exit_on_signal;
        tokio::spawn(async move {
            let sig = shutdown::received().await;
            file.lock().remove();
            stop.cancel();
            if exit && !shutdown::has_participants() {
                std::process::exit(sig.exit_code());
            }
        })
    };
    Ok(Some(DevTooling {
        url,
        runtime_id,
        port,
        state,
        file,
        stop,
        server: Some(server),
        on_signal,
    }))
}

/// The running dev tooling. Dropping it (or [`shutdown`](Self::shutdown))
/// removes the runtime file and stops the Reflection API.
pub struct DevTooling {
    url: String,
    runtime_id: String,
    port: u16,
    state: Arc<ReflectionState>,
    file: Arc<Mutex<RuntimeFile>>,
    stop: CancellationToken,
    server: Option<JoinHandle<()>>,
    on_signal: JoinHandle<()>,
}

impl std::fmt::Debug for DevTooling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DevTooling")
            .field("url", &self.url)
            .field("runtime_id", &self.runtime_id)
            .finish()
    }
}

impl DevTooling {
    /// The Reflection API's URL (`http://localhost:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The Reflection API's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The runtime id (`<pid>-<port>`).
    pub fn runtime_id(&self) -> &str {
        &self.runtime_id
    }

    /// The runtime file, until removed.
    pub fn runtime_file(&self) -> Option<PathBuf> {
        self.file.lock().path().map(PathBuf::from)
    }

    /// The Reflection API's state (runs in flight etc.).
    pub fn reflection(&self) -> &Arc<ReflectionState> {
        &self.state
    }

    /// Removes the runtime file, stops the Reflection API and waits for its
    /// requests in flight.
    pub async fn shutdown(mut self) {
        self.file.lock().remove();
        self.stop.cancel();
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

impl Drop for DevTooling {
    fn drop(&mut self) {
        self.file.lock().remove();
        self.stop.cancel();
        self.on_signal.abort();
    }
}
