//! The shared client and stream readers against the scripted test server.

use genkit_model::types::GenerateResponseChunk;
use genkit_provider::error::HttpError;
use genkit_provider::http::{HttpClientBuilder, USER_AGENT};
use genkit_provider::test_server::{End, Reply, TestServer, sse_data};
use genkit_provider::{ApiKey, BodyError, Deadline, Frame, HttpClient, StreamFold, fold_stream};
use serde_json::{Value, json};
use std::time::Duration;

fn client(server: &TestServer, deadline: Deadline) -> HttpClient {
    let http = HttpClientBuilder::new()
        .user_agent(USER_AGENT)
        .build()
        .expect("client");
    let headers = genkit_provider::plugin::header_map(&[("x-extra".into(), "extra".into())])
        .expect("headers");
    HttpClient::new(http, &format!("{}/v1/", server.url), deadline).with_headers(headers)
}

fn per_wait(ms: u64) -> Deadline {
    Deadline::PerWait(Duration::from_millis(ms))
}

/// Fails the test instead of hanging.
async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("the call hung")
}

/// Collects the data of each frame; done after a frame `[DONE]`; complete
/// only when done.
#[derive(Default)]
struct Collect {
    data: Vec<String>,
    events: Vec<String>,
    done: bool,
}

impl StreamFold for Collect {
    type Output = Vec<String>;
    type Error = String;

    fn push(
        &mut self,
        frame: Frame,
        emit: &mut dyn FnMut(GenerateResponseChunk),
    ) -> Result<(), String> {
        if frame.data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if frame.data == "\"bad\"" {
            return Err("bad frame".into());
        }
        emit(GenerateResponseChunk::new(vec![
            genkit_model::types::Part::text(frame.data.clone()),
        ]));
        self.events.push(frame.event);
        self.data.push(frame.data);
        Ok(())
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn finish(self) -> Result<Vec<String>, String> {
        if self.done {
            Ok(self.data)
        } else {
            Err(format!("cut off after {} frames", self.data.len()))
        }
    }
}

async fn fold(
    client: &HttpClient,
    response: reqwest::Response,
    sse: bool,
) -> (Vec<String>, Result<Vec<String>, String>) {
    let frames = if sse {
        client.sse(response)
    } else {
        client.ndjson(response, 64)
    };
    let mut chunks = Vec::new();
    let result = fold_stream(
        frames,
        Collect::default(),
        |e| format!("read error: {e}"),
        |c| chunks.push(c.text()),
    )
    .await;
    (chunks, result)
}

#[tokio::test]
async fn requests_carry_headers_and_json_bodies_are_read() {
    let server = TestServer::start([Reply::json(json!({"ok": true}))]).await;
    let c = client(&server, per_wait(5_000));
    let key = ApiKey::new("sk-secret");
    let request = c
        .post("/chat")
        .json(&json!({"q": 1}))
        .header("authorization", key.bearer_header_value().expect("key"));
    let response = bounded(c.send(request)).await.expect("send");
    let body = bounded(c.read_json(response)).await.expect("json");
    assert_eq!(body, json!({"ok": true}));
    let r = server.single_request();
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/v1/chat"));
    assert_eq!(r.query, None);
    assert_eq!(r.body, json!({"q": 1}));
    assert_eq!(r.header("x-extra"), Some("extra"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-secret"));
    assert_eq!(r.header("user-agent"), Some(USER_AGENT));
}

#[tokio::test]
async fn error_answers_keep_status_headers_and_body() {
    let server = TestServer::start([
        Reply::status(429, json!({"error": "slow down"})).header("retry-after", "3"),
        Reply::raw(502, "text/plain", "Bad Gateway"),
    ])
    .await;
    let c = client(&server, Deadline::None);
    let Err(HttpError::Status(r)) = bounded(c.send(c.get("models?x=1"))).await else {
        panic!("expected an error status");
    };
    assert_eq!(r.status, 429);
    assert_eq!(r.retry_after(), Some(Duration::from_secs(3)));
    assert_eq!(r.json(), Some(json!({"error": "slow down"})));
    let Err(HttpError::Status(r)) = bounded(c.send(c.post("x"))).await else {
        panic!("expected an error status");
    };
    assert_eq!((r.status, r.text().as_str()), (502, "Bad Gateway"));
    let requests = server.requests();
    assert_eq!(requests[0].method, "GET");
    assert_eq!(requests[0].query.as_deref(), Some("x=1"));
    assert_eq!(requests[0].body, Value::Null);
}

#[tokio::test]
async fn malformed_json_bodies_and_unreachable_servers() {
    let server = TestServer::start([Reply::raw(200, "application/json", "{\"a\": [")]).await;
    let c = client(&server, per_wait(5_000));
    let response = bounded(c.send(c.post("x"))).await.expect("send");
    let err = bounded(c.read_json(response)).await.unwrap_err();
    assert!(
        matches!(&err, HttpError::Malformed(m) if m.contains("not JSON") && m.contains("{\"a\": [")),
        "{err}"
    );

    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let http = HttpClientBuilder::new().build().expect("client");
    let down = HttpClient::new(http, &format!("http://127.0.0.1:{port}"), per_wait(5_000));
    let err = bounded(down.send(down.post("x"))).await.unwrap_err();
    assert!(
        matches!(&err, HttpError::Transport { url, .. } if url.ends_with("/x")),
        "{err}"
    );
}

#[tokio::test]
async fn per_wait_deadlines_cover_headers_bodies_and_idle_streams() {
    let server = TestServer::start([
        Reply::Hang,
        Reply::Stall,
        Reply::sse_data([json!(1)]).ending(End::Hang),
        Reply::ndjson([json!(1)]).ending(End::Hang),
    ])
    .await;
    let c = client(&server, per_wait(200));
    let err = bounded(c.send(c.post("a"))).await.unwrap_err();
    assert!(matches!(
        err,
        HttpError::Timeout {
            what: "waiting for response headers",
            ..
        }
    ));
    let response = bounded(c.send(c.post("b"))).await.expect("headers");
    let err = bounded(c.read_bytes(response)).await.unwrap_err();
    assert!(matches!(
        err,
        HttpError::Timeout {
            what: "reading the response body",
            ..
        }
    ));
    for sse in [true, false] {
        let response = bounded(c.send(c.post("c"))).await.expect("headers");
        let (chunks, result) = bounded(fold(&c, response, sse)).await;
        assert_eq!(chunks, ["1"]);
        let err = result.unwrap_err();
        let what = if sse { "event" } else { "line" };
        assert!(
            err.contains(&format!("waiting for the next stream {what}")),
            "{err}"
        );
    }
    drop(c);
    // Every hanging answer was dropped when the client gave up.
    bounded(async {
        while server.disconnects() < 4 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn total_deadlines_are_enforced_by_the_client() {
    let server =
        TestServer::start([Reply::Stall, Reply::sse_data([json!(1)]).ending(End::Hang)]).await;
    let c = client(&server, Deadline::Total(Duration::from_millis(300)));
    let response = bounded(c.send(c.post("a"))).await.expect("headers");
    let err = bounded(c.read_bytes(response)).await.unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Timeout {
                what: "waiting for the server",
                ..
            }
        ),
        "{err}"
    );
    let response = bounded(c.send(c.post("b"))).await.expect("headers");
    let (chunks, result) = bounded(fold(&c, response, true)).await;
    assert_eq!(chunks, ["1"]);
    assert!(result.unwrap_err().contains("timed out"));
}

#[tokio::test]
async fn sse_streams_end_break_off_or_stop_at_done() {
    let frames = [
        ": a comment\n\n".to_owned(),
        "event: delta\ndata: {\"a\":\n".to_owned(),
        "data: 1}\r\n\r\n".to_owned(),
        sse_data(""),
        sse_data("[DONE]"),
        sse_data("after"),
    ];
    let server = TestServer::start([
        Reply::sse(frames),
        Reply::sse_data([json!("x")]),
        Reply::sse_data([json!("x")]).ending(End::Abort),
        Reply::sse_data([json!("x"), json!("bad")]),
        Reply::sse(["data: \u{1}\n\n"]),
    ])
    .await;
    let c = client(&server, per_wait(5_000));
    let send = |path: &'static str| c.send(c.post(path));

    let (chunks, result) = bounded(fold(&c, bounded(send("a")).await.expect("a"), true)).await;
    assert_eq!(chunks, ["{\"a\":\n1}"]);
    assert_eq!(result.expect("done"), ["{\"a\":\n1}"]);

    let (_, result) = bounded(fold(&c, bounded(send("b")).await.expect("b"), true)).await;
    assert_eq!(result.unwrap_err(), "cut off after 1 frames");

    let (chunks, result) = bounded(fold(&c, bounded(send("c")).await.expect("c"), true)).await;
    assert_eq!(chunks, ["\"x\""]);
    assert!(result.unwrap_err().starts_with("read error: request to"));

    let (_, result) = bounded(fold(&c, bounded(send("d")).await.expect("d"), true)).await;
    assert_eq!(result.unwrap_err(), "bad frame");

    let (_, result) = bounded(fold(&c, bounded(send("e")).await.expect("e"), true)).await;
    assert_eq!(result.unwrap_err(), "cut off after 1 frames");
}

#[tokio::test]
async fn frames_keep_their_event_type() {
    let server = TestServer::start([Reply::sse([
        "event: ping\ndata: {}\n\n",
        "data: [DONE]\n\n",
    ])])
    .await;
    let c = client(&server, per_wait(5_000));
    let response = bounded(c.send(c.post("a"))).await.expect("send");
    let mut frames = c.sse(response);
    let first = bounded(frames.next()).await.expect("a frame").expect("ok");
    assert_eq!((first.event.as_str(), first.data.as_str()), ("ping", "{}"));
    let second = bounded(frames.next()).await.expect("a frame").expect("ok");
    assert_eq!(second.data, "[DONE]");
    assert!(bounded(frames.next()).await.is_none());
}

#[tokio::test]
async fn ndjson_lines_split_across_reads_and_limits() {
    let server = TestServer::start([
        Reply::ndjson_frames(["{\"a\"", ":1}\r\n\n{\"b\":2}\n[DO", "NE]"]),
        Reply::ndjson_frames(["{\"a\":1}\n".to_owned(), "x".repeat(100)]),
        Reply::ndjson([json!(1)]).ending(End::Abort),
    ])
    .await;
    let c = client(&server, per_wait(5_000));
    let send = |path: &'static str| c.send(c.post(path));

    let (chunks, result) = bounded(fold(&c, bounded(send("a")).await.expect("a"), false)).await;
    assert_eq!(chunks, ["{\"a\":1}", "{\"b\":2}"]);
    assert_eq!(result.expect("done at the last line"), chunks);

    let (_, result) = bounded(fold(&c, bounded(send("b")).await.expect("b"), false)).await;
    assert!(
        result.unwrap_err().contains("longer than 64 bytes"),
        "over-long lines fail"
    );

    let (chunks, result) = bounded(fold(&c, bounded(send("d")).await.expect("d"), false)).await;
    assert_eq!(chunks, ["1"]);
    assert!(result.unwrap_err().starts_with("read error: request to"));
}

#[tokio::test]
async fn a_server_without_replies_answers_500_and_unread_error_bodies_are_noted() {
    let server = TestServer::start([]).await;
    let c = client(&server, per_wait(5_000));
    let Err(HttpError::Status(r)) = bounded(c.send(c.post("x"))).await else {
        panic!("expected 500");
    };
    assert_eq!(
        (r.status, r.text().as_str()),
        (500, "no scripted reply left")
    );
    let unread = genkit_provider::ErrorResponse {
        status: 500,
        headers: Default::default(),
        body: Err(BodyError::Timeout),
    };
    assert!(unread.text().contains("not received in time"));
}
