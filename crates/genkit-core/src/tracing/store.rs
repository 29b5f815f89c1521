//! An in-memory trace store: keeps finished spans by trace and assembles
//! them into [`TraceData`] on request. Used by tests and by the Reflection
//! API in dev mode.

use super::data::TraceData;
use super::ids::TraceId;
use super::processor::SpanProcessor;
use super::record::RecordedSpan;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Keeps the most recent traces (1,000 by default), oldest evicted first.
pub struct InMemoryTraceStore {
    inner: Mutex<StoreInner>,
    capacity: usize,
}

#[derive(Default)]
struct StoreInner {
    traces: HashMap<TraceId, Vec<Arc<RecordedSpan>>>,
    order: VecDeque<TraceId>,
}

impl Default for InMemoryTraceStore {
    fn default() -> Self {
        Self::with_capacity(1000)
    }
}

impl InMemoryTraceStore {
    /// A store keeping at most `capacity` traces.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(StoreInner::default()),
            capacity: capacity.max(1),
        }
    }

    /// The trace with this id (32 hex digits), as assembled so far.
    pub fn get(&self, trace_id: &str) -> Option<TraceData> {
        let id = TraceId::parse(trace_id)?;
        let spans = self.inner.lock().traces.get(&id)?.clone();
        let mut trace = TraceData {
            trace_id: id.to_string(),
            ..TraceData::default()
        };
        for span in spans {
            trace.insert_span(span.to_span_data());
        }
        Some(trace)
    }

    /// Trace ids, newest first.
    pub fn trace_ids(&self) -> Vec<String> {
        self.inner
            .lock()
            .order
            .iter()
            .rev()
            .map(ToString::to_string)
            .collect()
    }

    /// Adds a finished span to its trace.
    pub fn save_span(&self, span: Arc<RecordedSpan>) {
        let mut inner = self.inner.lock();
        let id = span.trace_id;
        match inner.traces.get_mut(&id) {
            Some(spans) => spans.push(span),
            None => {
                inner.traces.insert(id, vec![span]);
                inner.order.push_back(id);
                while inner.order.len() > self.capacity {
                    if let Some(old) = inner.order.pop_front() {
                        inner.traces.remove(&old);
                    }
                }
            }
        }
    }
}

impl SpanProcessor for InMemoryTraceStore {
    fn on_end(&self, span: &Arc<RecordedSpan>) {
        self.save_span(span.clone());
    }
}
