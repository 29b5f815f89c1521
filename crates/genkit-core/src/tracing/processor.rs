//! Where spans go: the process-wide list of span processors (exporters, the
//! in-memory trace store). With none installed, spans keep only their ids and
//! nothing is timed, copied or serialized.

use super::record::RecordedSpan;
use parking_lot::RwLock;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Receives spans as they start and end. Implementations must be quick and
/// must not block: exporters queue the span (an `Arc`, cheap to keep) and
/// serialize and send it in the background.
pub trait SpanProcessor: Send + Sync + 'static {
    /// Called when a span starts (`end_time` is `None`), only if
    /// [`wants_start_events`](Self::wants_start_events) is true.
    fn on_start(&self, _span: &Arc<RecordedSpan>) {}

    /// Called once when a span ends.
    fn on_end(&self, span: &Arc<RecordedSpan>);

    /// Whether to call [`on_start`](Self::on_start) (realtime telemetry).
    fn wants_start_events(&self) -> bool {
        false
    }
}

static PROCESSORS: RwLock<Vec<Arc<dyn SpanProcessor>>> = RwLock::new(Vec::new());
static RECORDING: AtomicBool = AtomicBool::new(false);
static WANTS_START: AtomicBool = AtomicBool::new(false);

/// Installs a processor for every span of the process from now on.
pub fn add_span_processor(processor: Arc<dyn SpanProcessor>) {
    let mut list = PROCESSORS.write();
    list.push(processor);
    refresh_flags(&list);
}

/// Removes a processor installed with [`add_span_processor`] (by identity).
pub fn remove_span_processor(processor: &Arc<dyn SpanProcessor>) {
    let mut list = PROCESSORS.write();
    list.retain(|p| !Arc::ptr_eq(p, processor));
    refresh_flags(&list);
}

fn refresh_flags(list: &[Arc<dyn SpanProcessor>]) {
    RECORDING.store(!list.is_empty(), Ordering::Release);
    WANTS_START.store(
        list.iter().any(|p| p.wants_start_events()),
        Ordering::Release,
    );
}

/// Whether any processor is installed, i.e. whether spans record attributes.
#[inline]
pub fn is_recording() -> bool {
    RECORDING.load(Ordering::Acquire)
}

pub(crate) fn emit_start(span: impl FnOnce() -> RecordedSpan) {
    if !WANTS_START.load(Ordering::Acquire) {
        return;
    }
    let data = Arc::new(span());
    for p in PROCESSORS.read().iter() {
        if p.wants_start_events() {
            p.on_start(&data);
        }
    }
}

pub(crate) fn emit_end(span: Arc<RecordedSpan>) {
    for p in PROCESSORS.read().iter() {
        p.on_end(&span);
    }
}
