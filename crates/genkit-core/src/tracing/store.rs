//! An in-memory trace store: assembles spans into [`TraceData`] by trace id.
//! Used by tests and by the Reflection API in dev mode.

use super::data::{SpanData, TraceData};
use super::processor::SpanProcessor;
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};

/// Keeps the most recent traces (1,000 by default), oldest evicted first.
pub struct InMemoryTraceStore {
    inner: Mutex<StoreInner>,
    capacity: usize,
}

#[derive(Default)]
struct StoreInner {
    traces: HashMap<String, TraceData>,
    order: VecDeque<String>,
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

    /// The trace with this id, as assembled so far.
    pub fn get(&self, trace_id: &str) -> Option<TraceData> {
        self.inner.lock().traces.get(trace_id).cloned()
    }

    /// Trace ids, newest first.
    pub fn trace_ids(&self) -> Vec<String> {
        self.inner.lock().order.iter().rev().cloned().collect()
    }

    /// Adds a span to its trace.
    pub fn save_span(&self, span: SpanData) {
        let mut inner = self.inner.lock();
        if !inner.traces.contains_key(&span.trace_id) {
            inner.order.push_back(span.trace_id.clone());
            while inner.order.len() > self.capacity {
                if let Some(old) = inner.order.pop_front() {
                    inner.traces.remove(&old);
                }
            }
        }
        inner
            .traces
            .entry(span.trace_id.clone())
            .or_insert_with(|| TraceData {
                trace_id: span.trace_id.clone(),
                ..TraceData::default()
            })
            .insert_span(span);
    }
}

impl SpanProcessor for InMemoryTraceStore {
    fn on_end(&self, span: &SpanData) {
        self.save_span(span.clone());
    }
}
