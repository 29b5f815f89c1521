//! How the servers of this crate (the [flow server](crate::FlowServer) and the
//! [Reflection API](crate::reflection)) hold up against slow, greedy or
//! buggy peers and shut down: [`ServeOptions`].
//!
//! Each connection is served by hyper's HTTP/1 server with a header-read
//! timer; each request passes, outermost first, a concurrency limit that
//! answers 503 when full, a panic catcher answering Genkit's 500 body, and a
//! timeout answering 504, all three in one [`Hardening`] layer. On the
//! shutdown signal the server stops accepting,
//! lets the requests in flight finish until the drain deadline, closes what
//! is still open, then flushes the trace exporters.

use crate::error::ServerError;
use crate::response::error_response;
use axum::Router;
use axum::body::{Body, HttpBody};
use axum::http::{self as http, HeaderValue, header::RETRY_AFTER};
use axum::response::Response;
use genkit_core::{Error, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

/// Default [`ServeOptions::header_read_timeout`]: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default [`ServeOptions::request_timeout`]: 5 min (model calls can be slow).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// Default [`ServeOptions::concurrency_limit`]: 1024 requests in flight.
pub const DEFAULT_CONCURRENCY_LIMIT: usize = 1024;
/// Default [`ServeOptions::event_buffer`]: 64 events.
pub const DEFAULT_EVENT_BUFFER: usize = 64;
/// Default [`ServeOptions::drain_timeout`]: 10 s (well inside the 30 s a
/// container orchestrator usually grants between SIGTERM and SIGKILL).
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long shutdown waits, after the drain, for the trace exporters to send
/// what is queued.
pub const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// Timeouts, limits and shutdown behaviour of a server of this crate.
///
/// The defaults suit production: every limit is on.
///
/// ```
/// use genkit_server::ServeOptions;
/// use std::time::Duration;
/// let options = ServeOptions::new()
///     .request_timeout(Duration::from_secs(60))
///     .concurrency_limit(256)
///     .drain_timeout(Duration::from_secs(20));
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
pub struct ServeOptions {
    header_read_timeout: Option<Duration>,
    request_timeout: Option<Duration>,
    concurrency_limit: Option<usize>,
    event_buffer: usize,
    drain_timeout: Duration,
    keep_alive: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: Some(DEFAULT_HEADER_READ_TIMEOUT),
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            concurrency_limit: Some(DEFAULT_CONCURRENCY_LIMIT),
            event_buffer: DEFAULT_EVENT_BUFFER,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            keep_alive: true,
        }
    }
}

impl ServeOptions {
    /// The defaults (see each setter).
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a client has to send a request's headers, from the moment
    /// the connection opens or, on a kept-alive connection, from the end of
    /// the previous response: so this is also the **idle keep-alive
    /// timeout** (hyper runs one timer for both). A connection that runs out
    /// of time is closed without an answer. Default
    /// [`DEFAULT_HEADER_READ_TIMEOUT`]; `None` waits forever (not advised:
    /// a client trickling headers then holds its connection for good).
    pub fn header_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.header_read_timeout = timeout.into();
        self
    }

    /// How long a request may take until its response starts: reading the
    /// body, context providers and, for a non-streaming flow, the whole run.
    /// Past it the run is cancelled and the client gets 504 with Genkit's
    /// error body (`{"status":"DEADLINE_EXCEEDED",...}`).
    ///
    /// Streaming responses (SSE, the Reflection API's chunked answers) start
    /// as soon as the run does, so this does not cut them: a stream lasts
    /// until its run ends, its client leaves, or shutdown's
    /// [drain deadline](Self::drain_timeout) passes. Bound a streaming run
    /// inside the flow if it needs a time limit.
    ///
    /// An agent turn on the flow server goes on when its client leaves (as
    /// in Genkit JS, so that it records its snapshot), but not past this
    /// long after it started: then it is cancelled. So a turn whose
    /// non-streaming request timed out is cancelled with it. Default
    /// [`DEFAULT_REQUEST_TIMEOUT`]; `None` for no limit.
    pub fn request_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.request_timeout = timeout.into();
        self
    }

    /// Most requests and runs served at once; one more request is answered
    /// at once with 503 and Genkit's error body
    /// (`{"status":"UNAVAILABLE",...}`, with `Retry-After: 1`) instead of
    /// waiting. A streaming response counts until its body ends (or its
    /// client leaves), not only until its headers; an agent turn on the flow
    /// server counts until the turn ends, even when its client has left
    /// (see [`request_timeout`](Self::request_timeout)). Default
    /// [`DEFAULT_CONCURRENCY_LIMIT`]; `None` for no limit. The value 0 is
    /// taken as 1.
    pub fn concurrency_limit(mut self, limit: impl Into<Option<usize>>) -> Self {
        self.concurrency_limit = limit.into().map(|n| n.max(1));
        self
    }

    /// How many events (stream chunks) of an agent turn the flow server
    /// holds for a client that reads them slower than the turn makes them.
    /// When the buffer is full, the turn waits for the client
    /// (backpressure); once the client has left, the turn's events are
    /// dropped as they come. Default [`DEFAULT_EVENT_BUFFER`]; 0 is taken
    /// as 1.
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.event_buffer = events.max(1);
        self
    }

    /// The [event buffer](Self::event_buffer) of agent turns.
    pub(crate) fn event_buffer_len(&self) -> usize {
        self.event_buffer
    }

    /// The [request timeout](Self::request_timeout).
    pub(crate) fn request_deadline(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// On shutdown, how long the requests in flight (streams included) may
    /// go on after the server stops accepting connections. What is still
    /// open then is closed (its runs cancelled), and the trace exporters get
    /// up to [`SHUTDOWN_FLUSH_TIMEOUT`] more to send the queued spans.
    /// Default [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Whether connections are kept open between requests (HTTP/1.1
    /// keep-alive; default `true`). Idle ones close after the
    /// [header read timeout](Self::header_read_timeout).
    pub fn keep_alive(mut self, on: bool) -> Self {
        self.keep_alive = on;
        self
    }

    /// The router with the per-request layers of these options: the
    /// concurrency limit (outermost), the panic catcher and the request
    /// timeout, run by one [`Hardening`] layer. The servers of this crate
    /// apply them; use this when serving the router with your own server
    /// (or [`hardening`](Self::hardening) for a service other than a
    /// router, which spares the router's boxing of one more layer). Apply it to
    /// the whole router, after merging a [`FlowServer`](crate::FlowServer)'s:
    /// its agent turns then count against the limit until they end.
    pub fn apply(&self, router: Router) -> Router {
        router.layer(self.hardening())
    }

    /// The per-request layers of these options as one tower layer (see
    /// [`apply`](Self::apply)).
    pub fn hardening(&self) -> Hardening {
        Hardening {
            limits: Arc::new(Limits {
                permits: self.concurrency_limit.map(|n| Arc::new(Semaphore::new(n))),
                timeout: self.request_timeout,
            }),
        }
    }
}

/// The per-request limits of [`ServeOptions`] as one [`tower::Layer`]:
/// outermost first, the concurrency limit (503 with `Retry-After: 1` when
/// full, the place held until the response body ends), the panic catcher
/// (Genkit's 500 body) and the request timeout (504 until the response
/// starts).
///
/// One service and one hand-written future do all three, so a request that
/// stays within the limits pays for no boxing and no spawned task: a
/// semaphore `try_acquire`, a timer that is registered only if the handler
/// has to wait, and a `catch_unwind` around each poll.
#[derive(Clone)]
pub struct Hardening {
    limits: Arc<Limits>,
}

struct Limits {
    permits: Option<Arc<Semaphore>>,
    timeout: Option<Duration>,
}

impl<S> tower::Layer<S> for Hardening {
    type Service = Hardened<S>;

    fn layer(&self, inner: S) -> Hardened<S> {
        Hardened {
            inner,
            limits: self.limits.clone(),
        }
    }
}

/// A service behind [`Hardening`].
#[derive(Clone)]
pub struct Hardened<S> {
    inner: S,
    limits: Arc<Limits>,
}

impl<S, B> tower::Service<http::Request<B>> for Hardened<S>
where
    S: tower::Service<http::Request<B>, Response = Response, Error = Infallible>,
{
    type Response = http::Response<PermitBody>;
    type Error = Infallible;
    type Future = HardenedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let in_flight = match &self.limits.permits {
            None => None,
            Some(permits) => match permits.clone().try_acquire_owned() {
                Ok(permit) => {
                    let in_flight = InFlight {
                        _permit: Arc::new(permit),
                    };
                    request.extensions_mut().insert(in_flight.clone());
                    Some(in_flight)
                }
                Err(_) => return HardenedFuture::answered(over_the_limit(), None),
            },
        };
        // `call` may panic too (tower-http's panic catcher caught that).
        let inner = match std::panic::catch_unwind(AssertUnwindSafe(|| self.inner.call(request))) {
            Ok(future) => future,
            // The answer keeps the place until it is sent, as any answer.
            Err(panic) => return HardenedFuture::answered(answer_panic(panic), in_flight),
        };
        HardenedFuture {
            state: State::Running {
                inner,
                // Counted from here, as tower's timeout did: reading the
                // clock is cheap; the timer is made only if needed. A
                // deadline past what the clock can say is no deadline.
                deadline: self
                    .limits
                    .timeout
                    .and_then(|t| tokio::time::Instant::now().checked_add(t)),
                timer: None,
            },
            in_flight,
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of [`Hardened`].
    pub struct HardenedFuture<F> {
        #[pin]
        state: State<F>,
        in_flight: Option<InFlight>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            inner: F,
            deadline: Option<tokio::time::Instant>,
            // Made on the first `Pending` (a handler that answers at once
            // never registers a timer).
            #[pin]
            timer: Option<tokio::time::Sleep>,
        },
        Answered { response: Option<Response> },
    }
}

impl<F> HardenedFuture<F> {
    fn answered(response: Response, in_flight: Option<InFlight>) -> Self {
        Self {
            state: State::Answered {
                response: Some(response),
            },
            in_flight,
        }
    }
}

impl<F> Future for HardenedFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<http::Response<PermitBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = match this.state.as_mut().project() {
            StateProj::Answered { response } => response
                .take()
                .unwrap_or_else(|| error_response(&Error::internal("response polled twice"))),
            StateProj::Running {
                inner,
                deadline,
                mut timer,
            } => match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
                Ok(Poll::Ready(Ok(response))) => response,
                Ok(Poll::Ready(Err(never))) => match never {},
                Err(panic) => answer_panic(panic),
                Ok(Poll::Pending) => {
                    let Some(deadline) = *deadline else {
                        return Poll::Pending;
                    };
                    if timer.is_none() {
                        timer.set(Some(tokio::time::sleep_until(deadline)));
                    }
                    match timer.as_pin_mut().map(|t| t.poll(cx)) {
                        Some(Poll::Ready(())) => error_response(&Error::user_facing(
                            StatusCode::DeadlineExceeded,
                            "the request took too long",
                        )),
                        _ => return Poll::Pending,
                    }
                }
            },
        };
        // Drops the handler's future (a timed-out run is cancelled).
        this.state.set(State::Answered { response: None });
        let (parts, body) = response.into_parts();
        // A body that is already over gives its place back at once.
        let in_flight = this.in_flight.take().filter(|_| !body.is_end_stream());
        Poll::Ready(Ok(http::Response::from_parts(
            parts,
            PermitBody {
                inner: body,
                _permit: in_flight,
            },
        )))
    }
}

/// The answer over the concurrency limit: 503 with Genkit's
/// `UNAVAILABLE` body and `Retry-After: 1`.
fn over_the_limit() -> Response {
    let mut r = error_response(&Error::user_facing(
        StatusCode::Unavailable,
        "the server is at its concurrency limit; retry later",
    ));
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// A panic while handling a request: Genkit's internal error, as for any
/// other unexpected failure; the panic message goes to the log only.
fn answer_panic(panic: Box<dyn std::any::Any + Send + 'static>) -> Response {
    ::tracing::error!(
        "a request handler panicked (the caller got `500 Internal Error`): {}",
        panic_message(panic.as_ref())
    );
    error_response(&Error::internal("request handler panicked"))
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = panic.downcast_ref::<&str>() {
        s
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

/// A request's place under the [concurrency
/// limit](ServeOptions::concurrency_limit), in the request's extensions: the
/// place is given back when the last clone is dropped. The response body
/// holds one; a run that outlives its client holds another (see
/// `crate::bidi`).
#[derive(Clone)]
pub(crate) struct InFlight {
    _permit: Arc<OwnedSemaphorePermit>,
}

#[cfg(test)]
impl InFlight {
    pub(crate) fn test(permit: OwnedSemaphorePermit) -> Self {
        Self {
            _permit: Arc::new(permit),
        }
    }
}

/// The response body of [`Hardened`]: the handler's, holding the request's
/// place under the concurrency limit (if it took one) until it is dropped.
pub struct PermitBody {
    inner: Body,
    _permit: Option<InFlight>,
}

impl HttpBody for PermitBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// Serves `service` (with the layers of `options`) on `listener` until
/// `signal` resolves, then shuts down as [`ServeOptions::drain_timeout`]
/// says. `what` names the server in logs.
pub(crate) async fn serve<S>(
    listener: TcpListener,
    service: S,
    options: &ServeOptions,
    signal: impl Future<Output = ()> + Send,
    what: &'static str,
) -> Result<(), ServerError>
where
    S: tower::Service<http::Request<Incoming>, Response = Response, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    // The layers wrap the service directly (not through `Router::layer`,
    // which would box the service and its future once more).
    let service = TowerToHyperService::new(tower::Layer::layer(&options.hardening(), service));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .keep_alive(options.keep_alive);
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut signal = std::pin::pin!(signal);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Stream frames go out as they are written.
                    let _ = stream.set_nodelay(true);
                    let conn = http.serve_connection(TokioIo::new(stream), service.clone());
                    let conn = graceful.watch(conn);
                    connections.spawn(async move {
                        if let Err(e) = conn.await {
                            ::tracing::debug!("{what}: connection closed: {e}");
                        }
                    });
                }
                Err(e) => {
                    // Out of file descriptors and the like: let some close.
                    ::tracing::warn!("{what}: accepting a connection failed: {e}");
                    if !is_connection_error(&e) {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            },
            // Forget finished connections as they end.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = &mut signal => break,
        }
    }
    drop(listener);
    let open = graceful.count();
    ::tracing::info!(
        "{what}: shutting down; {open} connection(s) open, draining for at most {:?}",
        options.drain_timeout
    );
    if tokio::time::timeout(options.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        ::tracing::warn!(
            "{what}: {} connection(s) still open at the drain deadline: closing them",
            connections.len()
        );
    }
    // Closing a connection drops its response, which cancels its run.
    connections.shutdown().await;
    if let Some(telemetry) = crate::telemetry::installed() {
        telemetry.flush(SHUTDOWN_FLUSH_TIMEOUT).await;
    }
    Ok(())
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use axum::extract::Request;
    use axum::routing::post;
    use tower::Service as _;

    /// Handlers that answer at once, panic, never answer, and stream
    /// without end.
    fn routes() -> Router {
        Router::new()
            .route("/ok", post(|| async { "ok" }))
            .route(
                "/panics",
                post(|| async {
                    if true {
                        panic!("handler bug");
                    }
                    "unreachable"
                }),
            )
            .route(
                "/slow",
                post(|| async {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                    "late"
                }),
            )
            .route(
                "/stream",
                post(|| async {
                    Body::from_stream(futures::stream::pending::<Result<Bytes, Infallible>>())
                }),
            )
    }

    async fn call(service: &mut Router, path: &str) -> Response {
        let request = http::Request::post(path)
            .body(Body::empty())
            .expect("a valid request");
        std::future::poll_fn(|cx| tower::Service::<Request<Body>>::poll_ready(service, cx))
            .await
            .expect("ready");
        service.call(request).await.expect("infallible")
    }

    async fn json_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("a body");
        serde_json::from_slice(&bytes).expect("JSON")
    }

    #[tokio::test]
    async fn a_panic_answers_genkits_500_and_the_service_goes_on() {
        let mut app = ServeOptions::new().apply(routes());
        for _ in 0..2 {
            let r = call(&mut app, "/panics").await;
            assert_eq!(r.status(), 500);
            assert_eq!(
                json_of(r).await,
                serde_json::json!({"status": "INTERNAL", "message": "Internal Error"})
            );
        }
        assert_eq!(call(&mut app, "/ok").await.status(), 200);
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_handler_times_out_with_504() {
        let mut app = ServeOptions::new()
            .request_timeout(Duration::from_secs(2))
            .apply(routes());
        let started = tokio::time::Instant::now();
        let r = call(&mut app, "/slow").await;
        assert_eq!(r.status(), 504);
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(json_of(r).await["status"], "DEADLINE_EXCEEDED");
        // Without a timeout nothing cuts it.
        let mut open = ServeOptions::new().request_timeout(None).apply(routes());
        let pending = tokio::time::timeout(Duration::from_secs(7200), call(&mut open, "/slow"));
        assert_eq!(pending.await.expect("answered").status(), 200);
    }

    #[tokio::test]
    async fn the_limit_answers_503_until_a_place_is_free() {
        let mut app = ServeOptions::new().concurrency_limit(1).apply(routes());
        // A streaming body holds the only place as long as it lives.
        let stream = call(&mut app, "/stream").await;
        assert_eq!(stream.status(), 200);
        let r = call(&mut app, "/ok").await;
        assert_eq!(r.status(), 503);
        assert_eq!(r.headers()[RETRY_AFTER], "1");
        assert_eq!(json_of(r).await["status"], "UNAVAILABLE");
        drop(stream);
        // A finished answer gives its place back with its body.
        for _ in 0..3 {
            let r = call(&mut app, "/ok").await;
            assert_eq!(r.status(), 200);
            drop(r);
        }
        // So does the answer to a panic.
        assert_eq!(call(&mut app, "/panics").await.status(), 500);
        assert_eq!(call(&mut app, "/ok").await.status(), 200);
    }
}
