//! What a user sees when a call fails: the flow server's answer, and the log
//! line that carries an internal error's details (the answer hides them).

mod common;

use common::{client, start};
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_core::{Error, Registry};
use genkit_server::FlowServer;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Everything the global `tracing` subscriber of this test binary printed.
fn log() -> &'static Arc<Mutex<Vec<u8>>> {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOG.get_or_init(|| {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let sink = buffer.clone();
        // What `tracing_subscriber::fmt::init()` installs, writing to memory.
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .init();
        buffer
    })
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn log_text() -> String {
    String::from_utf8_lossy(&log().lock().unwrap()).into_owned()
}

#[derive(Deserialize, Serialize, schemars::JsonSchema)]
struct City {
    city: String,
}

fn registry() -> Registry {
    let r = Registry::new();
    define_flow(&r, "lookup", |_: Value, _| async move {
        Err::<Value, _>(Error::internal("weather backend failed").with_source(
            std::io::Error::other("connect to 10.0.0.7:5432: connection refused"),
        ))
    })
    .unwrap();
    define_streaming_flow(&r, "lookupStream", |_: Value, ctx| async move {
        ctx.send_chunk(1);
        Err::<Value, _>(Error::internal("stream backend failed: disk full"))
    })
    .unwrap();
    define_flow(&r, "weather", |input: City, _| async move {
        Ok(format!("sunny in {}", input.city))
    })
    .unwrap();
    r
}

async fn post(url: String, body: &str) -> (u16, String) {
    let r = client()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn internal_errors_are_hidden_from_the_caller_and_logged_with_details() {
    log();
    let s = start(FlowServer::new(&registry())).await;

    let answer = post(s.url("/lookup"), r#"{"data": null}"#).await;
    assert_eq!(
        answer,
        (
            500,
            r#"{"status":"INTERNAL","message":"Internal Error"}"#.into()
        )
    );
    let logged = log_text();
    let line = logged
        .lines()
        .find(|l| l.contains("weather backend failed"))
        .unwrap_or_else(|| panic!("no log line with the error:\n{logged}"));
    assert!(line.contains("ERROR"), "{line}");
    assert!(
        line.ends_with(
            "flow `lookup` failed (the caller got `500 Internal Error`): INTERNAL: weather \
             backend failed"
        ),
        "{line}"
    );
    assert!(
        logged.contains("caused by: connect to 10.0.0.7:5432: connection refused"),
        "the cause is logged too:\n{logged}"
    );

    // Streamed: the error frame hides the details, the log has them.
    let r = client()
        .post(s.url("/lookupStream?stream=true"))
        .json(&json!({"data": null}))
        .send()
        .await
        .unwrap();
    let body = r.text().await.unwrap();
    assert!(body.contains("Internal Error"), "{body}");
    assert!(!body.contains("disk full"), "{body}");
    let logged = log_text();
    assert!(
        logged.lines().any(|l| l.contains("ERROR")
            && l.contains("flow `lookupStream` failed")
            && l.contains("stream backend failed: disk full")),
        "{logged}"
    );
}

#[tokio::test]
async fn a_body_without_the_data_wrapper_says_so() {
    let s = start(FlowServer::new(&registry())).await;
    assert_eq!(
        post(s.url("/weather"), r#"{"city": "Paris"}"#).await,
        (
            400,
            json!({
                "status": "INVALID_ARGUMENT",
                "message": "the request body has no `data` field (it has `city`): send the flow's \
                            input wrapped as {\"data\": <input>}"
            })
            .to_string()
        )
    );
    // Wrapped, it runs.
    assert_eq!(
        post(s.url("/weather"), r#"{"data": {"city": "Paris"}}"#).await,
        (200, r#"{"result":"sunny in Paris"}"#.into())
    );
    // A flow that takes no input still runs on a body without `data`, as in
    // Genkit JS (the fields are ignored).
    assert_eq!(post(s.url("/lookup"), r#"{"city": "Paris"}"#).await.0, 500);
}
