//! A scripted HTTP server on 127.0.0.1 for wire tests: it records every
//! request (method, path, headers, JSON body) and answers each with the next
//! scripted reply.

#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// How a streamed reply ends.
#[derive(Debug, Clone)]
pub enum StreamEnd {
    /// The body ends normally after the frames.
    Close,
    /// The connection breaks (the body errors) after the frames.
    Abort,
    /// The body stays open forever; `dropped` turns true when the client
    /// goes away and the server drops the body.
    Hang(Arc<AtomicBool>),
}

/// A scripted reply.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A JSON body with a status and extra headers.
    Json(u16, Value, Vec<(&'static str, String)>),
    /// A raw body with a status and content type.
    Raw(u16, &'static str, String),
    /// `application/x-ndjson`: each string is written as one raw frame.
    Ndjson(Vec<String>, StreamEnd),
    /// Never answers.
    Hang,
}

impl Reply {
    /// 200 with a JSON body.
    pub fn ok(body: Value) -> Self {
        Reply::Json(200, body, Vec::new())
    }

    /// An NDJSON reply: one JSON value per line.
    pub fn ndjson(lines: Vec<Value>) -> Self {
        Reply::Ndjson(
            lines.iter().map(|l| format!("{l}\n")).collect(),
            StreamEnd::Close,
        )
    }
}

struct State {
    requests: Mutex<Vec<Recorded>>,
    replies: Mutex<VecDeque<Reply>>,
}

/// The running server.
pub struct MockServer {
    /// `http://127.0.0.1:<port>`
    pub url: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl MockServer {
    /// Starts a server on an ephemeral port answering with `replies` in order
    /// (then 500 "no scripted reply").
    pub async fn start(replies: Vec<Reply>) -> MockServer {
        let state = Arc::new(State {
            requests: Mutex::new(Vec::new()),
            replies: Mutex::new(replies.into()),
        });
        let s = state.clone();
        let app = Router::new().fallback(move |req: Request| {
            let s = s.clone();
            async move { handle(s, req).await }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        MockServer { url, state, task }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().expect("lock").clone()
    }

    /// The only request; panics if there is not exactly one.
    pub fn single_request(&self) -> Recorded {
        let r = self.requests();
        assert_eq!(r.len(), 1, "expected one request, got {r:#?}");
        r.into_iter().next().expect("one request")
    }
}

async fn handle(state: Arc<State>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    state.requests.lock().expect("lock").push(Recorded {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body,
    });
    let reply = state.replies.lock().expect("lock").pop_front();
    let Some(reply) = reply else {
        return respond(500, "text/plain", Body::from("no scripted reply"));
    };
    match reply {
        Reply::Json(status, body, headers) => {
            let mut r = respond(status, "application/json", Body::from(body.to_string()));
            for (k, v) in headers {
                r.headers_mut().insert(k, v.parse().expect("header value"));
            }
            r
        }
        Reply::Raw(status, ct, body) => respond(status, ct, Body::from(body)),
        Reply::Hang => {
            std::future::pending::<()>().await;
            unreachable!()
        }
        Reply::Ndjson(frames, end) => {
            let frames = futures::stream::iter(
                frames
                    .into_iter()
                    .map(|f| Ok::<Bytes, std::io::Error>(Bytes::from(f))),
            );
            // A small pause between frames so they arrive as separate reads.
            let frames = frames.then(|f| async move {
                tokio::time::sleep(Duration::from_millis(2)).await;
                f
            });
            let body = match end {
                StreamEnd::Close => Body::from_stream(frames),
                StreamEnd::Abort => Body::from_stream(frames.chain(futures::stream::once(async {
                    Err(std::io::Error::other("connection reset by test"))
                }))),
                StreamEnd::Hang(flag) => {
                    let guard = DropFlag(flag);
                    let pending = futures::stream::once(async move {
                        let _guard = guard;
                        std::future::pending::<()>().await;
                        Ok(Bytes::new())
                    });
                    Body::from_stream(frames.chain(pending))
                }
            };
            respond(200, "application/x-ndjson", body)
        }
    }
}

fn respond(status: u16, content_type: &'static str, body: Body) -> Response {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).expect("status");
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        content_type.parse().expect("content type"),
    );
    r
}
