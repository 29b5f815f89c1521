//! A scripted HTTP server on 127.0.0.1 for wire tests (feature
//! `test-server`): it records every request (method, path, query, headers,
//! JSON body) and answers each with the next scripted [`Reply`] — JSON with
//! a status and headers, a raw body, an SSE or NDJSON stream that ends,
//! breaks off or hangs, headers followed by a body that never comes, or no
//! answer at all — and notices when the client goes away.
//!
//! ```no_run
//! # async fn run() {
//! use genkit_provider::test_server::{Reply, TestServer};
//! let server = TestServer::start([Reply::json(serde_json::json!({"ok": true}))]).await;
//! // ... point the plugin at `server.url`, call it ...
//! let request = server.single_request();
//! assert_eq!(request.path, "/v1/chat/completions");
//! # }
//! ```

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::Notify;

/// Largest request body recorded.
const MAX_REQUEST_BODY: usize = 64 * 1024 * 1024;

/// Pause before each frame of a stream, so frames arrive as separate reads.
const FRAME_PAUSE: Duration = Duration::from_millis(2);

/// Pause before an aborted stream breaks, so the frames before it arrive.
const ABORT_PAUSE: Duration = Duration::from_millis(20);

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    /// The request headers.
    pub headers: HeaderMap,
    /// The body as JSON; a body that is not JSON as a string; no body as
    /// `null`.
    pub body: Value,
}

impl Recorded {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// How a streamed reply ends after its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The body ends normally.
    Close,
    /// The connection breaks: the body fails mid-way.
    Abort,
    /// The body never ends; the server counts a disconnect when the client
    /// goes away.
    Hang,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json {
        /// The HTTP status.
        status: u16,
        /// The body.
        body: Value,
        /// Extra response headers.
        headers: Vec<(&'static str, String)>,
    },
    /// Any body with a status and a content type.
    Raw {
        /// The HTTP status.
        status: u16,
        /// The `content-type`.
        content_type: &'static str,
        /// The body.
        body: String,
    },
    /// Status 200 and a body written frame by frame, each frame as given.
    Stream {
        /// The `content-type` (`text/event-stream`, `application/x-ndjson`).
        content_type: &'static str,
        /// The raw frames.
        frames: Vec<String>,
        /// The pause before each frame.
        pause: Duration,
        /// How the body ends.
        end: End,
    },
    /// Status 200 and JSON headers, then a body that never comes (a
    /// disconnect is counted when the client goes away).
    Stall,
    /// No answer at all, not even headers (a disconnect is counted when the
    /// client goes away).
    Hang,
}

impl Reply {
    /// 200 with a JSON body.
    pub fn json(body: Value) -> Self {
        Self::status(200, body)
    }

    /// A JSON body with another status (an error answer).
    pub fn status(status: u16, body: Value) -> Self {
        Reply::Json {
            status,
            body,
            headers: Vec::new(),
        }
    }

    /// Adds a response header to a JSON reply (other replies are unchanged).
    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        if let Reply::Json { headers, .. } = &mut self {
            headers.push((name, value.into()));
        }
        self
    }

    /// Any body with a status and a content type.
    pub fn raw(status: u16, content_type: &'static str, body: impl Into<String>) -> Self {
        Reply::Raw {
            status,
            content_type,
            body: body.into(),
        }
    }

    /// `text/event-stream` with these raw frames (e.g. from [`sse_data`]),
    /// then the body ends.
    pub fn sse(frames: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Reply::Stream {
            content_type: "text/event-stream",
            frames: frames.into_iter().map(Into::into).collect(),
            pause: FRAME_PAUSE,
            end: End::Close,
        }
    }

    /// `text/event-stream` with one `data:` event per value.
    pub fn sse_data(events: impl IntoIterator<Item = Value>) -> Self {
        Self::sse(events.into_iter().map(|e| sse_data(&e.to_string())))
    }

    /// `application/x-ndjson` with these raw frames.
    pub fn ndjson_frames(frames: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Reply::Stream {
            content_type: "application/x-ndjson",
            frames: frames.into_iter().map(Into::into).collect(),
            pause: FRAME_PAUSE,
            end: End::Close,
        }
    }

    /// `application/x-ndjson` with one line per value.
    pub fn ndjson(lines: impl IntoIterator<Item = Value>) -> Self {
        Self::ndjson_frames(lines.into_iter().map(|l| format!("{l}\n")))
    }

    /// Makes a stream end as `end` (other replies are unchanged).
    pub fn ending(mut self, how: End) -> Self {
        if let Reply::Stream { end, .. } = &mut self {
            *end = how;
        }
        self
    }

    /// Pauses `pause` before each frame of a stream (a server trickling
    /// its answer).
    pub fn paced(mut self, pause: Duration) -> Self {
        if let Reply::Stream { pause: p, .. } = &mut self {
            *p = pause;
        }
        self
    }
}

/// One SSE event frame: `data: <payload>` and a blank line.
pub fn sse_data(payload: &str) -> String {
    format!("data: {payload}\n\n")
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    replies: Mutex<VecDeque<Reply>>,
    disconnects: Mutex<usize>,
    disconnected: Notify,
}

/// Locks `m`, also after a panicking test thread poisoned it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The running server; it stops when dropped.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Starts a server on an ephemeral port answering with `replies` in
    /// order, then with 500 `no scripted reply left`.
    ///
    /// # Panics
    ///
    /// When no port on 127.0.0.1 can be bound.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let shared = Arc::new(Shared::default());
        lock(&shared.replies).extend(replies);
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        TestServer {
            url: format!("http://{addr}"),
            shared,
            task,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// The only request.
    ///
    /// # Panics
    ///
    /// When there were none or several.
    pub fn single_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(
            requests.len(),
            1,
            "expected exactly one request: {requests:#?}"
        );
        requests.into_iter().next().expect("one request")
    }

    /// How many hanging answers were dropped because the client went away.
    pub fn disconnects(&self) -> usize {
        *lock(&self.shared.disconnects)
    }

    /// Waits (up to 5 s) until a hanging answer was dropped because the
    /// client went away.
    ///
    /// # Panics
    ///
    /// When that did not happen within 5 s.
    pub async fn wait_for_disconnect(&self) {
        let wait = async {
            loop {
                let notified = self.shared.disconnected.notified();
                if self.disconnects() > 0 {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("the client should have closed the connection");
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_REQUEST_BODY)
        .await
        .unwrap_or_default();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    lock(&shared.requests).push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body,
    });
    let reply = lock(&shared.replies).pop_front();
    match reply {
        None => respond(500, "text/plain", Body::from("no scripted reply left")),
        Some(Reply::Json {
            status,
            body,
            headers,
        }) => {
            let mut response = respond(status, "application/json", Body::from(body.to_string()));
            for (name, value) in headers {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, v);
                }
            }
            response
        }
        Some(Reply::Raw {
            status,
            content_type,
            body,
        }) => respond(status, content_type, Body::from(body)),
        Some(Reply::Stream {
            content_type,
            frames,
            pause,
            end,
        }) => {
            let frames = futures::stream::iter(frames).then(move |frame| async move {
                tokio::time::sleep(pause).await;
                Ok::<Bytes, std::io::Error>(Bytes::from(frame))
            });
            let body = match end {
                End::Close => Body::from_stream(frames),
                End::Abort => Body::from_stream(frames.chain(futures::stream::once(async {
                    tokio::time::sleep(ABORT_PAUSE).await;
                    Err(std::io::Error::other(
                        "connection dropped by the test server",
                    ))
                }))),
                End::Hang => Body::from_stream(frames.chain(hang(shared.clone()))),
            };
            respond(200, content_type, body)
        }
        Some(Reply::Stall) => respond(
            200,
            "application/json",
            Body::from_stream(hang(shared.clone())),
        ),
        Some(Reply::Hang) => {
            let _signal = DropSignal(shared.clone());
            std::future::pending::<Response>().await
        }
    }
}

/// A body stream that never yields; dropping it (the client went away)
/// counts a disconnect.
fn hang(shared: Arc<Shared>) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    futures::stream::unfold(DropSignal(shared), |signal| async move {
        std::future::pending::<()>().await;
        Some((Ok(Bytes::new()), signal))
    })
}

struct DropSignal(Arc<Shared>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        *lock(&self.0.disconnects) += 1;
        self.0.disconnected.notify_waiters();
    }
}

fn respond(status: u16, content_type: &'static str, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    response
}
