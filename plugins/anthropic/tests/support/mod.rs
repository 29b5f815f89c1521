//! A scripted HTTP server on 127.0.0.1 that records every request and
//! answers from a queue of replies (JSON, SSE streams that end, break or
//! hang), for checking exactly what the plugin sends.

#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// How a streamed body ends after its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The body ends normally.
    Close,
    /// The connection breaks (the body fails mid-way).
    Abort,
    /// The body never ends; the server notes when the client goes away.
    Hang,
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json {
        status: u16,
        body: Value,
        headers: Vec<(&'static str, String)>,
    },
    /// `text/event-stream` with these `data:` payloads, then `end`.
    Sse { events: Vec<String>, end: End },
    /// Headers, then a body that never comes.
    Stall,
}

impl Reply {
    pub fn json(body: Value) -> Self {
        Reply::Json {
            status: 200,
            body,
            headers: Vec::new(),
        }
    }

    pub fn error(status: u16, body: Value) -> Self {
        Reply::Json {
            status,
            body,
            headers: Vec::new(),
        }
    }

    pub fn sse(events: impl IntoIterator<Item = Value>) -> Self {
        Reply::Sse {
            events: events.into_iter().map(|e| e.to_string()).collect(),
            end: End::Close,
        }
    }

    pub fn sse_ending(events: impl IntoIterator<Item = Value>, end: End) -> Self {
        Reply::Sse {
            events: events.into_iter().map(|e| e.to_string()).collect(),
            end,
        }
    }
}

#[derive(Default)]
struct Shared {
    requests: Mutex<Vec<Recorded>>,
    replies: Mutex<VecDeque<Reply>>,
    disconnected: Notify,
    disconnects: Mutex<usize>,
}

/// The running server.
#[derive(Clone)]
pub struct MockServer {
    pub url: String,
    shared: Arc<Shared>,
}

impl MockServer {
    /// Starts a server answering with `replies`, in order.
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let shared = Arc::new(Shared::default());
        shared.replies.lock().extend(replies);
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockServer {
            url: format!("http://{addr}"),
            shared,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().clone()
    }

    /// The only request; fails the test if there were more or none.
    pub fn single_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(
            requests.len(),
            1,
            "expected exactly one request: {requests:#?}"
        );
        requests.into_iter().next().expect("one request")
    }

    /// Waits (up to 5 s) until a hanging body has been dropped because the
    /// client went away.
    pub async fn wait_for_disconnect(&self) {
        let wait = async {
            loop {
                let notified = self.shared.disconnected.notified();
                if *self.shared.disconnects.lock() > 0 {
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
    let bytes = axum::body::to_bytes(body, 16 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    };
    shared.requests.lock().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts.headers,
        body,
    });
    let reply = shared.replies.lock().pop_front();
    match reply {
        None => respond(500, Body::from("no scripted reply left"), "text/plain"),
        Some(Reply::Json {
            status,
            body,
            headers,
        }) => {
            let mut response = respond(status, Body::from(body.to_string()), "application/json");
            for (name, value) in headers {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    response.headers_mut().insert(name, v);
                }
            }
            response
        }
        Some(Reply::Sse { events, end }) => {
            let frames: Vec<Result<Bytes, std::io::Error>> = events
                .into_iter()
                .map(|e| Ok(Bytes::from(sse_frame(&e))))
                .collect();
            let head = futures::stream::iter(frames);
            let body = match end {
                End::Close => Body::from_stream(head),
                End::Abort => Body::from_stream(head.chain(futures::stream::once(async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Err(std::io::Error::other(
                        "connection dropped by the test server",
                    ))
                }))),
                End::Hang => Body::from_stream(head.chain(hang(shared.clone()))),
            };
            respond(200, body, "text/event-stream")
        }
        Some(Reply::Stall) => respond(
            200,
            Body::from_stream(hang(shared.clone())),
            "application/json",
        ),
    }
}

/// One event as the Messages API frames it: `event: <type>` (the payload's
/// `type`) then `data: <json>`.
fn sse_frame(data: &str) -> String {
    let kind = serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
    match kind {
        Some(kind) => format!("event: {kind}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A body stream that never yields; dropping it (the client went away)
/// counts a disconnect.
fn hang(shared: Arc<Shared>) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    let guard = DropSignal(shared);
    futures::stream::unfold(guard, |guard| async move {
        futures::future::pending::<()>().await;
        Some((Ok(Bytes::new()), guard))
    })
}

struct DropSignal(Arc<Shared>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        *self.0.disconnects.lock() += 1;
        self.0.disconnected.notify_waiters();
    }
}

fn respond(status: u16, body: Body, content_type: &'static str) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
        .headers_mut()
        .insert("content-type", HeaderValue::from_static(content_type));
    response
}
