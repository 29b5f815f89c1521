//! Background batching shared by every exporter: a [`SpanProcessor`] that
//! puts finished (and, in realtime mode, started) spans on a bounded queue and
//! returns at once; a worker task drains the queue in batches and hands them
//! to a [`SpanSink`]. The queue is bounded in spans and in bytes (the JSON
//! text spans hold, each input and output already cut at
//! [`max_attribute_bytes`](genkit_core::tracing::max_attribute_bytes)), so an
//! unreachable receiver costs a fixed amount of memory. A full queue drops
//! the span, counts it ([`ExportStats::dropped`]) and warns: exporting never
//! blocks, slows down or fails the request that produced the span.

use futures::future::BoxFuture;
use genkit_core::tracing::{RecordedSpan, SpanProcessor};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, oneshot};

/// Where batches go (the Genkit telemetry server, an OTLP collector).
pub trait SpanSink: Send + Sync + 'static {
    /// A short name for logs.
    fn name(&self) -> &'static str;

    /// Sends one batch (spans in the order they were recorded; a span may
    /// appear twice in realtime mode: started, then ended).
    fn export(&self, spans: Vec<Arc<RecordedSpan>>) -> BoxFuture<'_, Result<(), ExportError>>;
}

/// Why a batch was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// The request failed (connection, timeout, ...); the source says how.
    #[error("sending spans failed: {0}")]
    Transport(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The receiver answered with an error status.
    #[error("the receiver answered HTTP {0}")]
    Status(u16),
}

/// How a [`BatchProcessor`] queues and batches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchConfig {
    /// Spans kept waiting at most; more are dropped (and counted).
    pub queue_capacity: usize,
    /// Bytes of span data (see [`RecordedSpan::approx_bytes`]) kept waiting
    /// or being sent at most; more are dropped (and counted).
    pub queue_bytes: usize,
    /// Spans sent in one batch at most.
    pub max_batch: usize,
    /// Also export spans when they start (`endTime: 0`), as Genkit's
    /// realtime telemetry does for the Dev UI.
    pub realtime: bool,
}

impl Default for BatchConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 2048,
            queue_bytes: 64 * 1024 * 1024,
            max_batch: 512,
            realtime: false,
        }
    }
}

enum Msg {
    /// A span and the bytes it was counted as.
    Span(Arc<RecordedSpan>, usize),
    Flush(oneshot::Sender<()>),
}

/// How long the worker waits after being woken before it takes the queue:
/// the spans of a burst (one request makes several) go in one batch, and the
/// request path wakes the worker once per burst instead of once per span
/// (a cross-thread wake-up costs more than recording a span).
const LINGER: Duration = Duration::from_millis(2);

/// The queue shared by the processor (the request path) and the worker.
struct Queue {
    items: Mutex<QueueState>,
    /// Wakes the worker; a wake-up sent while it is busy is kept.
    wake: Notify,
}

#[derive(Default)]
struct QueueState {
    msgs: VecDeque<Msg>,
    /// Spans among `msgs`.
    spans: usize,
    /// The processor is gone: the worker exports what is left and stops.
    closed: bool,
}

#[derive(Debug, Default)]
struct Counters {
    queued: AtomicU64,
    dropped: AtomicU64,
    exported: AtomicU64,
    failed: AtomicU64,
    /// Bytes of the spans queued or being sent.
    pending_bytes: AtomicUsize,
}

/// Export statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExportStats {
    /// Spans accepted into the queue.
    pub queued: u64,
    /// Spans dropped because the queue was full (in spans or in bytes).
    pub dropped: u64,
    /// Spans in batches the sink accepted.
    pub exported: u64,
    /// Spans in batches the sink failed to deliver.
    pub failed: u64,
    /// Bytes of span data queued or being sent right now.
    pub pending_bytes: usize,
}

/// A span processor exporting through a background worker.
pub struct BatchProcessor {
    queue: Arc<Queue>,
    counters: Arc<Counters>,
    realtime: bool,
    queue_capacity: usize,
    queue_bytes: usize,
}

impl Drop for BatchProcessor {
    fn drop(&mut self) {
        self.queue.items.lock().closed = true;
        self.queue.wake.notify_one();
    }
}

impl std::fmt::Debug for BatchProcessor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchProcessor")
            .field("realtime", &self.realtime)
            .field("stats", &self.stats())
            .finish()
    }
}

impl BatchProcessor {
    /// Starts the worker on the current tokio runtime. Fails outside one.
    pub fn spawn(
        sink: Arc<dyn SpanSink>,
        config: BatchConfig,
    ) -> Result<Arc<Self>, crate::ServerError> {
        let handle = tokio::runtime::Handle::try_current().map_err(|_| {
            crate::ServerError::Config("trace export must be started inside a tokio runtime".into())
        })?;
        let queue = Arc::new(Queue {
            items: Mutex::new(QueueState::default()),
            wake: Notify::new(),
        });
        let counters = Arc::new(Counters::default());
        handle.spawn(worker(
            queue.clone(),
            sink,
            config.max_batch.max(1),
            counters.clone(),
        ));
        Ok(Arc::new(Self {
            queue,
            counters,
            realtime: config.realtime,
            queue_capacity: config.queue_capacity.max(1),
            queue_bytes: config.queue_bytes.max(1),
        }))
    }

    fn enqueue(&self, span: &Arc<RecordedSpan>) {
        let bytes = span.approx_bytes();
        let pending = &self.counters.pending_bytes;
        // Reserve the bytes first; give them back if the span is not queued.
        let before = pending.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) > self.queue_bytes {
            pending.fetch_sub(bytes, Ordering::Relaxed);
            return self.drop_span("bytes");
        }
        let was_empty = {
            let mut q = self.queue.items.lock();
            if q.spans >= self.queue_capacity {
                drop(q);
                pending.fetch_sub(bytes, Ordering::Relaxed);
                return self.drop_span("spans");
            }
            let was_empty = q.msgs.is_empty();
            q.msgs.push_back(Msg::Span(span.clone(), bytes));
            q.spans += 1;
            was_empty
        };
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        // Only the first span of a burst wakes the worker; it takes the
        // others with it.
        if was_empty {
            self.queue.wake.notify_one();
        }
    }

    fn drop_span(&self, full_of: &str) {
        let n = self.counters.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            ::tracing::warn!(
                "trace export queue is full ({full_of}): {n} span(s) dropped so far \
                 (is the receiver reachable?)"
            );
        }
    }

    /// Waits (at most `timeout`) until every span queued before this call has
    /// been handed to the sink. Returns whether that happened in time.
    pub async fn flush(&self, timeout: Duration) -> bool {
        let (ack, done) = oneshot::channel();
        self.queue.items.lock().msgs.push_back(Msg::Flush(ack));
        self.queue.wake.notify_one();
        tokio::time::timeout(timeout, done)
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Counters since start.
    pub fn stats(&self) -> ExportStats {
        let c = &self.counters;
        ExportStats {
            queued: c.queued.load(Ordering::Relaxed),
            dropped: c.dropped.load(Ordering::Relaxed),
            exported: c.exported.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
            pending_bytes: c.pending_bytes.load(Ordering::Relaxed),
        }
    }
}

impl SpanProcessor for BatchProcessor {
    fn on_start(&self, span: &Arc<RecordedSpan>) {
        if self.realtime {
            self.enqueue(span);
        }
    }

    fn on_end(&self, span: &Arc<RecordedSpan>) {
        self.enqueue(span);
    }

    fn wants_start_events(&self) -> bool {
        self.realtime
    }
}

/// Waits to be woken, lets the burst gather, then takes what is queued (up
/// to `max_batch`, or up to a flush), exports it, repeats. Spans that arrive
/// while a batch is being sent form the next batch.
async fn worker(
    queue: Arc<Queue>,
    sink: Arc<dyn SpanSink>,
    max_batch: usize,
    counters: Arc<Counters>,
) {
    let mut batch = Vec::with_capacity(max_batch);
    let mut batch_bytes = 0usize;
    let mut acks = Vec::new();
    loop {
        let (idle, closed, flush_waiting) = {
            let q = queue.items.lock();
            let flush = q.msgs.iter().any(|m| matches!(m, Msg::Flush(_)));
            (q.msgs.is_empty(), q.closed, flush)
        };
        if idle {
            if closed {
                return;
            }
            queue.wake.notified().await;
            continue;
        }
        if !flush_waiting && !closed {
            tokio::time::sleep(LINGER).await;
        }
        {
            let mut q = queue.items.lock();
            while let Some(msg) = q.msgs.pop_front() {
                match msg {
                    Msg::Span(s, bytes) => {
                        q.spans -= 1;
                        batch.push(s);
                        batch_bytes += bytes;
                    }
                    Msg::Flush(ack) => {
                        acks.push(ack);
                        break;
                    }
                }
                if batch.len() >= max_batch {
                    break;
                }
            }
        }
        if !batch.is_empty() {
            let spans = std::mem::replace(&mut batch, Vec::with_capacity(max_batch));
            let n = spans.len() as u64;
            let result = sink.export(spans).await;
            // The batch's memory is released once the sink is done with it.
            counters
                .pending_bytes
                .fetch_sub(std::mem::take(&mut batch_bytes), Ordering::Relaxed);
            match result {
                Ok(()) => {
                    counters.exported.fetch_add(n, Ordering::Relaxed);
                }
                Err(e) => {
                    let before = counters.failed.fetch_add(n, Ordering::Relaxed);
                    if before == 0 || (before + n).is_power_of_two() {
                        ::tracing::warn!("{} trace export failed: {e}", sink.name());
                    }
                }
            }
        }
        for ack in acks.drain(..) {
            let _ = ack.send(());
        }
    }
}
