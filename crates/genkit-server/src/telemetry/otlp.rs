//! OTLP export to any OpenTelemetry collector (cargo feature `otlp`).
//!
//! Why a feature rather than always on: the OpenTelemetry SDK, the OTLP
//! exporter and its protobuf types add a few dozen crates and noticeable
//! compile time that most users of the flow server never need; a separate
//! crate would only add a second entry point for the same environment-driven
//! setup. With the feature off, nothing of it is compiled.
//!
//! Configuration follows the OpenTelemetry SDK environment variables:
//!
//! | variable | |
//! |---|---|
//! | `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT` | enables export (the latter gets `/v1/traces` appended) |
//! | `OTEL_TRACES_EXPORTER` | `otlp` enables export to the default `http://localhost:4318`; `none` disables it |
//! | `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, `OTEL_EXPORTER_OTLP_PROTOCOL` | `http/protobuf` (default) or `http/json`; `grpc` is not supported |
//! | `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, `..._TIMEOUT` | read by the exporter |
//! | `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES` | the resource |
//! | `OTEL_BSP_MAX_QUEUE_SIZE`, `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` | the batch queue (2048, 512) |
//!
//! Spans keep their Genkit ids, names and `genkit:*` attributes, under the
//! instrumentation scope `genkit-tracer` `v1`.

use super::batch::{BatchConfig, BatchProcessor, ExportError, SpanSink};
use crate::error::ServerError;
use futures::future::BoxFuture;
use genkit_core::tracing::{RecordedSpan, add_span_processor};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value as OtelValue};
use opentelemetry_otlp::WithExportConfig;

/// The OTLP wire protocol (`HttpBinary` or `HttpJson`; `Grpc` is not built in).
pub use opentelemetry_otlp::Protocol;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter as _, SpanLinks};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// OTLP settings, usually from the environment ([`OtlpConfig::from_env`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    /// The traces endpoint; `None` lets the exporter read the environment
    /// (or use `http://localhost:4318/v1/traces`).
    pub endpoint: Option<String>,
    /// The wire protocol.
    pub protocol: Protocol,
    /// Batching.
    pub batch: BatchConfig,
}

impl OtlpConfig {
    /// The configuration the process environment asks for; `Ok(None)` when
    /// OTLP export is not requested.
    pub fn from_env() -> Result<Option<Self>, ServerError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `get`.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ServerError> {
        let var = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let exporter = var("OTEL_TRACES_EXPORTER").map(|v| v.to_ascii_lowercase());
        if exporter.as_deref() == Some("none") {
            return Ok(None);
        }
        let has_endpoint = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        if !has_endpoint && exporter.as_deref() != Some("otlp") {
            return Ok(None);
        }
        let protocol = match var("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"))
            .as_deref()
        {
            None | Some("http/protobuf") => Protocol::HttpBinary,
            Some("http/json") => Protocol::HttpJson,
            Some(other) => {
                return Err(ServerError::Config(format!(
                    "OTLP protocol `{other}` is not supported (use http/protobuf or http/json)"
                )));
            }
        };
        let number = |k: &str, default: usize| -> Result<usize, ServerError> {
            match var(k) {
                None => Ok(default),
                Some(v) => v.parse::<usize>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    ServerError::Config(format!("{k} is not a positive number: `{v}`"))
                }),
            }
        };
        let defaults = BatchConfig::default();
        Ok(Some(Self {
            endpoint: None,
            protocol,
            batch: BatchConfig {
                queue_capacity: number("OTEL_BSP_MAX_QUEUE_SIZE", defaults.queue_capacity)?,
                max_batch: number("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaults.max_batch)?,
                realtime: false,
                ..defaults
            },
        }))
    }
}

/// Sends batches with the OTLP/HTTP exporter.
pub struct OtlpSink {
    exporter: opentelemetry_otlp::SpanExporter,
}

impl OtlpSink {
    /// A sink for `config` (endpoint, headers and timeout not set in it come
    /// from the `OTEL_*` environment), with the resource from the environment.
    pub fn new(config: &OtlpConfig) -> Result<Self, ServerError> {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(config.protocol);
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        let mut exporter = builder.build().map_err(|e| ServerError::Exporter {
            what: "OTLP",
            source: Box::new(e),
        })?;
        exporter.set_resource(&Resource::builder().build());
        Ok(Self { exporter })
    }
}

impl SpanSink for OtlpSink {
    fn name(&self) -> &'static str {
        "OTLP"
    }

    fn export(&self, spans: Vec<Arc<RecordedSpan>>) -> BoxFuture<'_, Result<(), ExportError>> {
        let batch: Vec<SpanData> = spans.iter().filter_map(|s| to_otel(s)).collect();
        Box::pin(async move {
            self.exporter
                .export(batch)
                .await
                .map_err(|e| ExportError::Transport(Box::new(e)))
        })
    }
}

/// Installs an OTLP exporter for every span of the process.
pub fn install(config: &OtlpConfig) -> Result<Arc<BatchProcessor>, ServerError> {
    let processor = BatchProcessor::spawn(Arc::new(OtlpSink::new(config)?), config.batch.clone())?;
    add_span_processor(processor.clone());
    Ok(processor)
}

/// Installs the exporter the environment asks for, if any.
pub fn install_from_env() -> Result<Option<Arc<BatchProcessor>>, ServerError> {
    OtlpConfig::from_env()?.map(|c| install(&c)).transpose()
}

fn time(ms: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs_f64((ms.max(0.0)) / 1000.0)
}

fn attr(key: String, v: Value) -> KeyValue {
    let value = match v {
        Value::Bool(b) => OtelValue::Bool(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => OtelValue::I64(i),
            None => OtelValue::F64(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => OtelValue::String(s.into()),
        other => OtelValue::String(other.to_string().into()),
    };
    KeyValue::new(key, value)
}

/// A recorded span as OpenTelemetry span data (`None` for a started span).
pub fn to_otel(span: &RecordedSpan) -> Option<SpanData> {
    let end = span.end_time?;
    let wire = span.to_span_data();
    let trace_id = TraceId::from_hex(&wire.trace_id).ok()?;
    let span_id = SpanId::from_hex(&wire.span_id).ok()?;
    let parent = wire
        .parent_span_id
        .as_deref()
        .and_then(|p| SpanId::from_hex(p).ok())
        .unwrap_or(SpanId::INVALID);
    let events = span
        .failure
        .as_ref()
        .map(|f| {
            vec![opentelemetry::trace::Event::new(
                "exception",
                time(f.time),
                vec![
                    KeyValue::new("exception.type", f.status),
                    KeyValue::new("exception.message", f.message.clone()),
                    KeyValue::new("exception.stacktrace", f.stack.clone()),
                ],
                0,
            )]
        })
        .unwrap_or_default();
    let status = match &span.failure {
        Some(f) => Status::error(f.message.clone()),
        None => Status::Ok,
    };
    Some(SpanData {
        span_context: SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: parent,
        parent_span_is_remote: false,
        span_kind: SpanKind::Internal,
        name: Cow::Owned(span.name.to_string()),
        start_time: time(span.start_time),
        end_time: time(end),
        attributes: wire
            .attributes
            .into_iter()
            .map(|(k, v)| attr(k, v))
            .collect(),
        dropped_attributes_count: 0,
        events: {
            let mut e = SpanEvents::default();
            e.events = events;
            e
        },
        links: SpanLinks::default(),
        status,
        instrumentation_scope: InstrumentationScope::builder("genkit-tracer")
            .with_version("v1")
            .build(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn env_configuration() {
        assert_eq!(OtlpConfig::from_lookup(lookup(&[])).unwrap(), None);
        let c =
            OtlpConfig::from_lookup(lookup(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")]))
                .unwrap()
                .unwrap();
        assert_eq!(c.protocol, Protocol::HttpBinary);
        assert_eq!(
            (c.batch.queue_capacity, c.batch.max_batch, c.batch.realtime),
            (2048, 512, false)
        );
        let c = OtlpConfig::from_lookup(lookup(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "10"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "5"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (c.protocol, c.batch.queue_capacity, c.batch.max_batch),
            (Protocol::HttpJson, 10, 5)
        );
        assert_eq!(
            OtlpConfig::from_lookup(lookup(&[
                ("OTEL_TRACES_EXPORTER", "none"),
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "x")
            ]))
            .unwrap(),
            None
        );
        assert!(
            OtlpConfig::from_lookup(lookup(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "x"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
            ]))
            .is_err()
        );
        assert!(
            OtlpConfig::from_lookup(lookup(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "x"),
                ("OTEL_BSP_MAX_QUEUE_SIZE", "lots")
            ]))
            .is_err()
        );
    }
}
