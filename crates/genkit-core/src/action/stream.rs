//! Streaming results: a [`Stream`] of chunks plus the final output.

use crate::error::Result;
use futures::Stream;
use futures::future::BoxFuture;
use futures::task::AtomicWaker;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

/// The chunk buffer between the running body and the consumer. Usually the
/// body runs inside the consumer's poll, but chunks may also be sent from
/// other tasks, so a push wakes the consumer.
struct ChunkQueue<S> {
    items: Mutex<VecDeque<S>>,
    waker: AtomicWaker,
    /// Set while the consumer polls the run: a chunk pushed then needs no
    /// wakeup (the consumer looks at the queue right after), which saves a
    /// scheduler round trip per chunk.
    polling: AtomicBool,
}

impl<S> ChunkQueue<S> {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            items: Mutex::new(VecDeque::new()),
            waker: AtomicWaker::new(),
            polling: AtomicBool::new(false),
        })
    }

    fn push(&self, item: S) {
        self.items.lock().push_back(item);
        if !self.polling.load(Ordering::SeqCst) {
            self.waker.wake();
        }
    }

    /// Moves every queued chunk into `into` (which must be empty), handing
    /// the queue `into`'s buffer in exchange: one lock per burst of chunks
    /// rather than per chunk, and the buffers' capacity is reused.
    fn take_all(&self, into: &mut VecDeque<S>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut *self.items.lock(), into);
    }
}

/// The chunks of a streaming run, then its output.
///
/// Iterate it as a [`Stream`] (each item is a chunk; an error item ends the
/// stream if the run failed), then call [`output`](ActionStream::output).
/// The run makes progress only while the stream or `output()` is polled, in
/// the caller's task, so it inherits the caller's trace and context.
pub struct ActionStream<S, O> {
    queue: Arc<ChunkQueue<S>>,
    /// Chunks taken from the queue and not yet handed out.
    ready: VecDeque<S>,
    run: Option<BoxFuture<'static, Result<O>>>,
    result: Option<Result<O>>,
    errored: bool,
}

impl<S: Send + 'static, O: Send + 'static> ActionStream<S, O> {
    /// Builds a stream from a function that, given a chunk callback, returns
    /// the run's future.
    pub fn new<F>(start: F) -> Self
    where
        F: FnOnce(Arc<dyn Fn(S) + Send + Sync>) -> BoxFuture<'static, Result<O>>,
    {
        let queue = ChunkQueue::new();
        let q = queue.clone();
        let run = start(Arc::new(move |chunk| q.push(chunk)));
        Self {
            queue,
            ready: VecDeque::new(),
            run: Some(run),
            result: None,
            errored: false,
        }
    }

    /// A stream that failed before it started.
    pub fn failed(error: crate::error::Error) -> Self {
        Self {
            queue: ChunkQueue::new(),
            ready: VecDeque::new(),
            run: None,
            result: Some(Err(error)),
            errored: false,
        }
    }

    /// Runs to completion (dropping chunks not yet read) and returns the output.
    pub async fn output(mut self) -> Result<O> {
        if let Some(run) = self.run.take() {
            return run.await;
        }
        match self.result.take() {
            Some(r) => r,
            None => Err(crate::error::Error::internal("stream output already taken")),
        }
    }
}

impl<S: Send + 'static, O: Send + 'static> Stream for ActionStream<S, O> {
    type Item = Result<S>;

    // Inlined into the generate stream that wraps it: measured 28 instructions
    // a chunk when called out of line (bench/RESULTS.md, issue 28).
    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<S>>> {
        let this = self.get_mut();
        loop {
            if let Some(chunk) = this.next_chunk() {
                return Poll::Ready(Some(Ok(chunk)));
            }
            let Some(run) = this.run.as_mut() else {
                // Finished: report a failure once, then end.
                if !this.errored
                    && let Some(Err(e)) = &this.result
                {
                    this.errored = true;
                    return Poll::Ready(Some(Err(e.clone())));
                }
                return Poll::Ready(None);
            };
            this.queue.polling.store(true, Ordering::SeqCst);
            let polled = run.as_mut().poll(cx);
            this.queue.polling.store(false, Ordering::SeqCst);
            match polled {
                Poll::Ready(r) => {
                    this.run = None;
                    this.result = Some(r);
                }
                Poll::Pending => {
                    if let Some(chunk) = this.next_chunk() {
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                    // Chunks pushed from elsewhere wake us from now on; one
                    // pushed before the registration is seen by this check.
                    this.queue.waker.register(cx.waker());
                    if let Some(chunk) = this.next_chunk() {
                        return Poll::Ready(Some(Ok(chunk)));
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

impl<S, O> ActionStream<S, O> {
    fn next_chunk(&mut self) -> Option<S> {
        if self.ready.is_empty() {
            self.queue.take_all(&mut self.ready);
        }
        self.ready.pop_front()
    }
}

impl<S, O> Unpin for ActionStream<S, O> {}
