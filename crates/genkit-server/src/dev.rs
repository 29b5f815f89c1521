//! Dev tooling: what `genkit start -- <your app>` needs from the app.
//!
//! With `GENKIT_ENV=dev`: trace export to the CLI's telemetry server, the
//! Reflection API on 127.0.0.1 (port 3100..3199, or `GENKIT_REFLECTION_PORT`),
//! and the runtime file under the project root, removed on exit, including
//! Ctrl-C and SIGTERM. Without it, nothing happens.
//!
//! With `GENKIT_REFLECTION_V2_SERVER` set (by `genkit start
//! --experimental-reflection-v2`), the runtime instead connects to the CLI's
//! WebSocket server and serves the Reflection API v2 over it
//! ([`reflection::v2`]); no HTTP port and no runtime file then.
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
    /// The Reflection API v2 server to connect to (a `ws://` URL); default
    /// `GENKIT_REFLECTION_V2_SERVER`. Unset: the v1 HTTP server.
    pub reflection_v2_server: Option<String>,
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
            reflection_v2_server: None,
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
    let v2_server = options.reflection_v2_server.clone().or_else(|| {
        std::env::var(reflection::v2::SERVER_ENV)
            .ok()
            .filter(|s| !s.trim().is_empty())
    });
    if let Some(url) = v2_server {
        return start_v2(registry, options, telemetry, url).await.map(Some);
    }
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
    let on_signal = on_signal(&file, &stop, options.exit_on_signal);
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

/// The dev tooling as a client of the CLI's Reflection API v2 server at `url`.
async fn start_v2(
    registry: &Registry,
    options: DevToolingOptions,
    telemetry: Arc<crate::telemetry::Telemetry>,
    url: String,
) -> Result<DevTooling, ServerError> {
    let runtime_id = std::env::var("GENKIT_RUNTIME_ID")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| std::process::id().to_string());
    // Initialise plugins before registering, as for v1.
    registry.list_actions().await?;
    let state = Arc::new(ReflectionState::new(
        registry,
        runtime_id.clone(),
        Some(telemetry),
    ));
    let stop = CancellationToken::new();
    let client = tokio::spawn(reflection::v2::run_client(
        state.clone(),
        url.clone(),
        reflection::v2::Registration { name: options.name },
        stop.clone(),
    ));
    ::tracing::info!("Genkit runtime {runtime_id} connecting to the reflection server {url}");
    let file = Arc::new(Mutex::new(RuntimeFile::none()));
    let on_signal = on_signal(&file, &stop, options.exit_on_signal);
    Ok(DevTooling {
        url,
        runtime_id,
        port: 0,
        state,
        file,
        stop,
        server: Some(client),
        on_signal,
    })
}

/// On SIGINT/SIGTERM: remove the runtime file, stop the Reflection API and,
/// with `exit`, end the process unless a flow server drains.
fn on_signal(
    file: &Arc<Mutex<RuntimeFile>>,
    stop: &CancellationToken,
    exit: bool,
) -> JoinHandle<()> {
    shutdown::install();
    let file = file.clone();
    let stop = stop.clone();
    tokio::spawn(async move {
        let sig = shutdown::received().await;
        file.lock().remove();
        stop.cancel();
        if exit && !shutdown::has_participants() {
            std::process::exit(sig.exit_code());
        }
    })
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
    /// The Reflection API's URL (`http://localhost:<port>`), or with the
    /// Reflection API v2, the CLI's server (`ws://...`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The Reflection API's port (0 with the Reflection API v2: the runtime
    /// serves no port).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The runtime id (`<pid>-<port>`; `<pid>` with the Reflection API v2).
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
