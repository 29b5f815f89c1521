//! Tracing: one span per action run, nested by async context, with Genkit's
//! `genkit:*` attributes, assembled into [`TraceData`].
//!
//! Spans always carry trace and span ids. Attributes, timing and JSON
//! encoding of inputs and outputs happen only while a [`SpanProcessor`] is
//! installed ([`add_span_processor`]), so tracing costs close to nothing
//! without an exporter.

mod data;
mod ids;
mod json;
mod processor;
mod record;
mod span;
mod store;

pub use data::{
    Annotation, BoolValue, InstrumentationLibrary, SpanData, SpanStatus, TimeEvent, TimeEvents,
    TraceData,
};
pub use ids::{SpanId, TraceId};
pub use json::approx_value_bytes;
pub use json::{
    DEFAULT_MAX_ATTRIBUTE_BYTES, SharedPiece, SpanJson, max_attribute_bytes,
    set_max_attribute_bytes,
};
pub use processor::{SpanProcessor, add_span_processor, is_recording, remove_span_processor};
pub use record::{RecordedSpan, SpanFailure, TraceJson};
pub(crate) use span::Frame;
pub use span::{
    Span, SpanOptions, SpanType, TraceInfo, current_cancellation, current_context,
    current_extensions, current_registry, current_trace, in_span, propagate, run,
    with_cancellation_scope, with_extension,
};
pub use store::InMemoryTraceStore;
