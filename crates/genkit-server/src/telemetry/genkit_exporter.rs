//! Export to the Genkit telemetry server (the one `genkit start` runs and the
//! Dev UI reads): `POST {url}/api/traces` with one `TraceData` per trace in
//! the batch, as Genkit JS's `TraceServerExporter` does.

use super::batch::{ExportError, SpanSink};
use bytes::Bytes;
use futures::future::BoxFuture;
use genkit_core::tracing::{RecordedSpan, TraceData, TraceJson};
use parking_lot::RwLock;
use std::sync::Arc;
use std::time::Duration;

/// The telemetry server's base URL, shared with the Reflection API (whose
/// `/api/notify` sets it when `GENKIT_TELEMETRY_SERVER` is not set).
#[derive(Debug, Clone, Default)]
pub struct TelemetryServerUrl(Arc<RwLock<Option<String>>>);

impl TelemetryServerUrl {
    /// A URL holder, initially `url`.
    pub fn new(url: Option<String>) -> Self {
        Self(Arc::new(RwLock::new(url.map(normalize))))
    }

    /// The current URL.
    pub fn get(&self) -> Option<String> {
        self.0.read().clone()
    }

    /// Replaces the URL.
    pub fn set(&self, url: impl Into<String>) {
        *self.0.write() = Some(normalize(url.into()));
    }
}

fn normalize(url: String) -> String {
    url.trim_end_matches('/').to_owned()
}

/// Sends batches to the telemetry server. Without a URL the spans are
/// discarded (Genkit JS: "Telemetry server is not configured").
pub struct TraceServerSink {
    client: reqwest::Client,
    url: TelemetryServerUrl,
}

impl TraceServerSink {
    /// A sink posting to `url` (read at each export), each request limited to
    /// `timeout`.
    pub fn new(url: TelemetryServerUrl, timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Self { client, url }
    }
}

/// Groups spans by trace, in first-seen order; a later record of the same
/// span (its end after its start) replaces the earlier one.
pub fn group_traces(spans: &[Arc<RecordedSpan>]) -> Vec<TraceData> {
    TraceJson::group(spans.iter().map(|s| &**s))
        .iter()
        .map(TraceJson::to_trace_data)
        .collect()
}

/// The request bodies for a batch: one `TraceData` JSON per trace, in
/// first-seen order, as [`group_traces`] groups them. All are written into
/// one buffer (sized from the spans' sizes up front) straight from the
/// records ([`TraceJson::write_json`]), then split, so a batch costs one
/// allocation however many traces it holds.
pub fn trace_bodies(spans: &[Arc<RecordedSpan>]) -> Vec<Bytes> {
    let traces = TraceJson::group(spans.iter().map(|s| &**s));
    // The JSON text of inputs and outputs, plus the fixed fields of a span
    // (ids, times, names, path: about 600 bytes); escaping adds a little.
    let estimate = spans
        .iter()
        .map(|s| {
            let bytes = s.approx_bytes();
            bytes + bytes / 8 + 600
        })
        .sum::<usize>();
    let mut buf = Vec::with_capacity(estimate);
    let mut ends = Vec::with_capacity(traces.len());
    for trace in &traces {
        trace.write_json(&mut buf);
        ends.push(buf.len());
    }
    let mut all = Bytes::from(buf);
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let body = all.split_to(end - start);
            start = end;
            body
        })
        .collect()
}

impl SpanSink for TraceServerSink {
    fn name(&self) -> &'static str {
        "telemetry server"
    }

    fn export(&self, spans: Vec<Arc<RecordedSpan>>) -> BoxFuture<'_, Result<(), ExportError>> {
        Box::pin(async move {
            let Some(base) = self.url.get() else {
                ::tracing::debug!(
                    "telemetry server is not configured: {} span(s) not saved",
                    spans.len()
                );
                return Ok(());
            };
            let endpoint = format!("{base}/api/traces");
            // One request per trace, sent concurrently.
            let bodies = trace_bodies(&spans);
            let sends = bodies.into_iter().map(|body| {
                let endpoint = &endpoint;
                async move {
                    let r = self
                        .client
                        .post(endpoint)
                        .header("content-type", "application/json")
                        .header("accept", "application/json")
                        .body(body)
                        .send()
                        .await
                        .map_err(|e| ExportError::Transport(Box::new(e)))?;
                    if r.status().is_success() {
                        Ok(())
                    } else {
                        Err(ExportError::Status(r.status().as_u16()))
                    }
                }
            });
            let first_error = futures::future::join_all(sends)
                .await
                .into_iter()
                .find_map(Result::err);
            first_error.map_or(Ok(()), Err)
        })
    }
}
