//! Running an action for an HTTP response: start it, learn its trace ids as
//! soon as its root span opens (so they can go in the response headers), then
//! drive the rest of the run from the response body.
//!
//! Nothing is spawned: the run makes progress while the body is polled, so a
//! client that disconnects drops (and so cancels) the run, and graceful
//! shutdown waits for it like for any other response body.
//! (The flow server makes an exception for bidirectional actions, which
//! outlive their client as in Genkit JS; see `crate::bidi`.)

use futures::future::{BoxFuture, poll_fn};
use futures::{Stream, StreamExt};
use genkit_core::action::{BidiStream, as_bidi, stream_json};
use genkit_core::tracing::TraceInfo;
use genkit_core::{ActionStream, DynAction, Error, RunOptions};
use parking_lot::Mutex;
use serde_json::Value;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

/// What a run produces, in order: chunks, then one final outcome.
pub enum Event {
    /// A stream chunk.
    Chunk(Value),
    /// The output or the error; always last.
    Done(Result<Value, Error>),
}

/// A started run.
pub struct Started {
    /// The root span's ids; `None` if the run failed before its span opened
    /// (e.g. input that does not match the schema).
    pub trace: Option<TraceInfo>,
    /// The run's events.
    pub events: Events,
}

pub(crate) enum Source {
    Stream(ActionStream<Value, Value>),
    Bidi(BidiStream<Value, Value, Value>),
    Once(BoxFuture<'static, Result<Value, Error>>),
}

/// The events of a started run (a [`Stream`] ending after [`Event::Done`]).
pub struct Events {
    source: Option<Source>,
    ready: Option<Event>,
}

/// Starts `action`: polls it once, which opens its span, then returns. With
/// `streaming`, chunks are collected (the body sees `is_streaming()`). A
/// bidirectional action gets `init` and `input` as its only input (see
/// [`crate::bidi`]); other actions ignore `init`.
pub async fn start(
    action: DynAction,
    init: Option<Value>,
    input: Value,
    mut opts: RunOptions<Value>,
    streaming: bool,
) -> Started {
    let cell: Arc<Mutex<Option<TraceInfo>>> = Arc::default();
    let seen = cell.clone();
    let user_hook = opts.on_trace_start.take();
    opts.on_trace_start = Some(Box::new(move |t| {
        *seen.lock() = Some(t);
        if let Some(f) = user_hook {
            f(t);
        }
    }));
    let mut events = Events {
        source: Some(if let Some(bidi) = as_bidi(&action) {
            crate::bidi::source(bidi.as_ref(), init, input, opts, streaming)
        } else if streaming {
            Source::Stream(stream_json(action, input, opts))
        } else {
            Source::Once(Box::pin(async move {
                action.run_json(input, opts).await.map(|r| r.output)
            }))
        }),
        ready: None,
    };
    events.ready = poll_fn(|cx| match events.poll_event(cx) {
        Poll::Ready(ev) => Poll::Ready(ev),
        Poll::Pending => Poll::Ready(None),
    })
    .await;
    let trace = *cell.lock();
    Started { trace, events }
}

impl Events {
    /// The events of `source`, not yet polled (the Reflection API v2 learns
    /// the trace ids from its own `on_trace_start` hook instead).
    pub(crate) fn new(source: Source) -> Self {
        Self {
            source: Some(source),
            ready: None,
        }
    }

    /// The next event. A panic of the action while it is polled ends the run
    /// with an internal error (the client gets Genkit's `Internal Error`
    /// body or frame); the panic message goes to the log.
    fn poll_event(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<Event>> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| self.poll_source(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                let message = crate::serving::panic_message(panic.as_ref()).to_owned();
                // The source is broken; drop it (guarding against its drop
                // panicking as well) and never poll it again.
                let source = self.source.take();
                let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(source)));
                ::tracing::error!("an action panicked: {message}");
                Poll::Ready(Some(Event::Done(Err(Error::internal(format!(
                    "the action panicked: {message}"
                ))))))
            }
        }
    }

    fn poll_source(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Option<Event>> {
        if let Some(ev) = self.ready.take() {
            return Poll::Ready(Some(ev));
        }
        let Some(source) = self.source.as_mut() else {
            return Poll::Ready(None);
        };
        match source {
            Source::Bidi(s) => match s.poll_next_unpin(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Event::Chunk(chunk))),
                Poll::Ready(Some(Err(e))) => {
                    self.source = None;
                    Poll::Ready(Some(Event::Done(Err(e))))
                }
                Poll::Ready(None) => {
                    let Some(Source::Bidi(s)) = self.source.take() else {
                        return Poll::Ready(None);
                    };
                    self.source = Some(Source::Once(Box::pin(s.output())));
                    self.poll_source(cx)
                }
            },
            Source::Stream(s) => match s.poll_next_unpin(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Some(Ok(chunk))) => Poll::Ready(Some(Event::Chunk(chunk))),
                Poll::Ready(Some(Err(e))) => {
                    self.source = None;
                    Poll::Ready(Some(Event::Done(Err(e))))
                }
                Poll::Ready(None) => {
                    // The run finished; its output is ready without waiting.
                    let Some(Source::Stream(s)) = self.source.take() else {
                        return Poll::Ready(None);
                    };
                    let mut out = std::pin::pin!(s.output());
                    match out.as_mut().poll(cx) {
                        Poll::Ready(r) => Poll::Ready(Some(Event::Done(r))),
                        // Unreachable for a finished stream; report it rather than hang.
                        Poll::Pending => Poll::Ready(Some(Event::Done(Err(Error::internal(
                            "stream finished without an output",
                        ))))),
                    }
                }
            },
            Source::Once(f) => match f.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(r) => {
                    self.source = None;
                    Poll::Ready(Some(Event::Done(r)))
                }
            },
        }
    }
}

impl Stream for Events {
    type Item = Event;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Event>> {
        self.get_mut().poll_event(cx)
    }
}
