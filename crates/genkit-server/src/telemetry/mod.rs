//! Trace export, configured from the environment.
//!
//! - **Genkit telemetry server** (what `genkit start` runs and the Dev UI
//!   reads): enabled when `GENKIT_TELEMETRY_SERVER` is set, and always in dev
//!   mode (`GENKIT_ENV=dev`), where the CLI may announce the URL later through
//!   the Reflection API's `/api/notify`. With `GENKIT_ENABLE_REALTIME_TELEMETRY=true`
//!   in dev mode spans are also posted when they start.
//! - **OTLP** (cargo feature `otlp`): enabled by the standard
//!   `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//!   variables (see the `otlp` module).
//!
//! Both run behind a [`BatchProcessor`]: bounded queue, background worker,
//! drop-and-count when full. Nothing is installed (and spans record nothing)
//! when no exporter is configured.

pub mod batch;
pub mod genkit_exporter;
#[cfg(feature = "otlp")]
pub mod otlp;

pub use batch::{BatchConfig, BatchProcessor, ExportError, ExportStats, SpanSink};
pub use genkit_exporter::{TelemetryServerUrl, TraceServerSink, trace_bodies};

use crate::error::ServerError;
use genkit_core::tracing::add_span_processor;
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

/// How long one POST to the telemetry server may take.
const TELEMETRY_SERVER_TIMEOUT: Duration = Duration::from_secs(5);

/// The exporters installed in this process.
#[derive(Debug, Default)]
pub struct Telemetry {
    genkit: Option<GenkitExport>,
    #[cfg(feature = "otlp")]
    otlp: Option<Arc<BatchProcessor>>,
}

#[derive(Debug)]
struct GenkitExport {
    url: TelemetryServerUrl,
    processor: Arc<BatchProcessor>,
    /// `GENKIT_TELEMETRY_SERVER` was set: `/api/notify` must not change it.
    pinned: bool,
}

impl Telemetry {
    /// The telemetry server URL holder, if that exporter is installed.
    pub fn telemetry_server(&self) -> Option<&TelemetryServerUrl> {
        self.genkit.as_ref().map(|g| &g.url)
    }

    /// Takes the URL announced by the CLI (`/api/notify`), unless
    /// `GENKIT_TELEMETRY_SERVER` fixed it. Returns whether it was taken.
    pub fn notify_telemetry_server(&self, url: &str) -> bool {
        match &self.genkit {
            Some(g) if !g.pinned => {
                g.url.set(url);
                true
            }
            _ => false,
        }
    }

    /// Export statistics of the telemetry-server exporter.
    pub fn telemetry_server_stats(&self) -> Option<ExportStats> {
        self.genkit.as_ref().map(|g| g.processor.stats())
    }

    /// Waits (each exporter at most `timeout`) until the spans ended so far
    /// are sent, like Genkit's `flushTracing()` before the Reflection API
    /// answers.
    pub async fn flush(&self, timeout: Duration) {
        if let Some(g) = &self.genkit {
            g.processor.flush(timeout).await;
        }
        #[cfg(feature = "otlp")]
        if let Some(p) = &self.otlp {
            p.flush(timeout).await;
        }
    }
}

static INSTALLED: Mutex<Option<Arc<Telemetry>>> = Mutex::new(None);

/// The exporters [`init_from_env`] installed, if it was called (servers
/// flush them on shutdown).
pub fn installed() -> Option<Arc<Telemetry>> {
    INSTALLED.lock().clone()
}

/// Installs the exporters the environment asks for, once per process (later
/// calls return the same handle). Call it inside a tokio runtime.
pub fn init_from_env() -> Result<Arc<Telemetry>, ServerError> {
    let mut installed = INSTALLED.lock();
    if let Some(t) = &*installed {
        return Ok(t.clone());
    }
    let env_url = std::env::var("GENKIT_TELEMETRY_SERVER")
        .ok()
        .filter(|s| !s.trim().is_empty());
    let dev = crate::is_dev_env();
    let realtime = dev && env_flag("GENKIT_ENABLE_REALTIME_TELEMETRY");
    let mut telemetry = Telemetry::default();
    if dev || env_url.is_some() {
        let pinned = env_url.is_some();
        let url = TelemetryServerUrl::new(env_url);
        let sink = Arc::new(TraceServerSink::new(url.clone(), TELEMETRY_SERVER_TIMEOUT));
        let processor = BatchProcessor::spawn(
            sink,
            BatchConfig {
                realtime,
                ..BatchConfig::default()
            },
        )?;
        add_span_processor(processor.clone());
        telemetry.genkit = Some(GenkitExport {
            url,
            processor,
            pinned,
        });
    }
    #[cfg(feature = "otlp")]
    {
        telemetry.otlp = otlp::install_from_env()?;
    }
    let telemetry = Arc::new(telemetry);
    *installed = Some(telemetry.clone());
    Ok(telemetry)
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}
