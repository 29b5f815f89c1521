//! Durable streaming on the flow server, as Genkit JS's Express handler does
//! it with a `streamManager`: a streaming request gets a stream id in the
//! `x-genkit-stream-id` response header, its run's events are written to the
//! [`StreamManager`] as they happen, and the run goes on if the client
//! leaves. A request carrying `x-genkit-stream-id` (Genkit's `streamFlow({
//! streamId })`) starts nothing: it reads that stream from the start, then
//! live, from whichever replica it reaches. Unknown streams, and streams of
//! another caller, are answered `204 No Content`, as in Genkit JS.
//!
//! One addition of ours: `x-genkit-stream-offset: N` on a resuming request
//! skips the first `N` chunks (those the client already has), so a client
//! gets every chunk exactly once. Genkit JS's client does not send it, and
//! gets the whole stream again.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode as HttpStatus};
use axum::response::Response;
use futures::{Stream, StreamExt};
use genkit_core::canonical::canonical_json;
use genkit_core::streaming::{StreamEvent, StreamManager, subscribe};
use genkit_core::{ActionContext, Error, StatusCode};
use sha2::{Digest, Sha256};

use crate::run::Event;
use crate::sse;

/// The header carrying a durable stream's id (response of the first
/// request; request of a resuming one).
pub const STREAM_ID: HeaderName = HeaderName::from_static("x-genkit-stream-id");
/// The header of a resuming request saying how many chunks the client
/// already has.
pub const STREAM_OFFSET: HeaderName = HeaderName::from_static("x-genkit-stream-offset");

/// A flow server's durable streaming.
#[derive(Clone)]
pub(crate) struct Durable {
    pub(crate) manager: Arc<dyn StreamManager>,
    pub(crate) follow_timeout: Duration,
}

/// The owner recorded for a stream: a digest of the caller's `auth` (set by
/// the context provider) as canonical JSON, so a resuming caller must
/// present the same claims, in whatever key order; empty for anonymous
/// callers.
pub(crate) fn owner_of(context: &ActionContext) -> String {
    match context.auth() {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(auth) => {
            let digest = Sha256::digest(canonical_json(auth).as_bytes());
            digest.iter().map(|b| format!("{b:02x}")).collect()
        }
    }
}

/// The stream id a request names, if it names one.
pub(crate) fn requested_stream(headers: &HeaderMap) -> Option<Result<String, Error>> {
    let value = headers.get(&STREAM_ID)?;
    let valid = value
        .to_str()
        .ok()
        .filter(|s| !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_graphic()));
    Some(valid.map(str::to_owned).ok_or_else(|| {
        Error::user_facing(
            StatusCode::InvalidArgument,
            "`x-genkit-stream-id` must be 1 to 128 visible ASCII characters",
        )
    }))
}

/// How many chunks a resuming client already has (`x-genkit-stream-offset`).
pub(crate) fn requested_offset(headers: &HeaderMap) -> Result<u64, Error> {
    let Some(value) = headers.get(&STREAM_OFFSET) else {
        return Ok(0);
    };
    value
        .to_str()
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .ok_or_else(|| {
            Error::user_facing(
                StatusCode::InvalidArgument,
                "`x-genkit-stream-offset` must be a whole number of chunks",
            )
        })
}

/// Opens stream `stream_id` for a run's events, owned by `owner`.
pub(crate) async fn open(durable: &Durable, stream_id: &str, owner: &str) -> Result<(), Error> {
    durable.manager.open(stream_id, owner).await
}

/// `events`, recording into the opened stream `stream_id`: each event goes
/// on unchanged, and a copy to a writer task that appends whatever has
/// queued up in one write, in order, so a slow store never slows the run or
/// its client. A failed write is logged and ends the recording (followers
/// then time out); the run and its client go on.
pub(crate) fn record<S>(
    durable: &Durable,
    stream_id: &str,
    events: S,
) -> impl Stream<Item = Event> + Send + Unpin + 'static
where
    S: Stream<Item = Event> + Send + Unpin + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<StreamEvent>();
    let manager = durable.manager.clone();
    let id = stream_id.to_owned();
    tokio::spawn(async move {
        let mut at = 0u64;
        let mut batch = Vec::new();
        while rx.recv_many(&mut batch, 256).await > 0 {
            if let Err(e) = manager.append(&id, at, &batch).await {
                ::tracing::error!(stream = %id, "durable stream: a write failed, recording stops: {e}");
                return;
            }
            at += batch.len() as u64;
            if batch.last().is_some_and(StreamEvent::is_last) {
                return;
            }
            batch.clear();
        }
    });
    events.map(move |event| {
        let copy = match &event {
            Event::Chunk(c) => StreamEvent::Chunk { chunk: c.clone() },
            Event::Done(Ok(out)) => StreamEvent::Done {
                output: out.clone(),
            },
            Event::Done(Err(e)) => StreamEvent::Error {
                err: e.to_public_json(),
            },
        };
        // The writer task lives until the last event.
        let _ = tx.send(copy);
        event
    })
}

/// The response to a resuming request: stream `stream_id` from chunk
/// `offset`, then live, as the flow-streaming protocol's frames.
pub(crate) async fn resume(
    durable: &Durable,
    stream_id: String,
    owner: String,
    offset: u64,
) -> Response {
    // Read from the start and skip the chunks the client has, so a client
    // that claims more than there are still gets the stream's end.
    let mut skip = offset;
    let mut events = Box::pin(
        subscribe(
            durable.manager.clone(),
            stream_id.clone(),
            owner,
            0,
            durable.follow_timeout,
        )
        .filter(move |event| {
            let keep = match event {
                Ok(StreamEvent::Chunk { .. }) if skip > 0 => {
                    skip -= 1;
                    false
                }
                _ => true,
            };
            std::future::ready(keep)
        }),
    );
    // Unknown (or someone else's) streams get no body, as in Genkit JS.
    let first = match events.next().await {
        None => return no_content(),
        Some(Err(e)) if e.status() == StatusCode::NotFound => return no_content(),
        Some(first) => first,
    };
    let frames = futures::stream::once(async move { first })
        .chain(events)
        .map(move |event| match event {
            Ok(StreamEvent::Chunk { chunk }) => sse::message_frame(&chunk),
            Ok(StreamEvent::Done { output }) => sse::result_frame(&output),
            Ok(StreamEvent::Error { err }) => sse::error_value_frame(public_error(err)),
            Err(e) => {
                ::tracing::warn!(stream = %stream_id, "durable stream: following failed: {e}");
                sse::error_frame(&e)
            }
        });
    let body = frames
        .ready_chunks(64)
        .map(|batch| Ok::<_, std::convert::Infallible>(crate::response::concat(batch)));
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// A stored error as a client may see it: what this server stores is
/// already public (`{status, message[, details]}`); anything else (Genkit JS
/// stores `{message, stack, ...}` of its error) is `Internal Error`, as JS's
/// own server answers it.
fn public_error(err: serde_json::Value) -> serde_json::Value {
    let public = err.as_object().is_some_and(|m| {
        m.get("status").is_some_and(serde_json::Value::is_string)
            && m.get("message").is_some_and(serde_json::Value::is_string)
            && m.keys()
                .all(|k| matches!(k.as_str(), "status" | "message" | "details"))
    });
    if public {
        err
    } else {
        serde_json::json!({"status": "INTERNAL", "message": "Internal Error"})
    }
}

fn no_content() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = HttpStatus::NO_CONTENT;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_follow_auth() {
        let anon = ActionContext::new();
        assert_eq!(owner_of(&anon), "");
        let alice = ActionContext::new().with_auth(serde_json::json!({"uid": "alice"}));
        let bob = ActionContext::new().with_auth(serde_json::json!({"uid": "bob"}));
        assert_eq!(owner_of(&alice).len(), 64);
        assert_ne!(owner_of(&alice), owner_of(&bob));
        assert_eq!(owner_of(&alice), owner_of(&alice.clone()));
        // The same claims in another key order are the same owner.
        let ab = ActionContext::new().with_auth(serde_json::json!({"uid": "a", "org": "o"}));
        let ba = ActionContext::new().with_auth(serde_json::json!({"org": "o", "uid": "a"}));
        assert_eq!(owner_of(&ab), owner_of(&ba));
    }

    #[test]
    fn stored_errors_are_shown_only_in_public_form() {
        let ours = serde_json::json!({"status": "NOT_FOUND", "message": "no such city"});
        assert_eq!(public_error(ours.clone()), ours);
        let js = serde_json::json!({"message": "db at 10.0.0.3 refused", "stack": "Error: ..."});
        assert_eq!(
            public_error(js),
            serde_json::json!({"status": "INTERNAL", "message": "Internal Error"})
        );
        assert_eq!(
            public_error(serde_json::json!("boom"))["status"],
            "INTERNAL"
        );
    }

    #[test]
    fn headers_are_checked() {
        let mut h = HeaderMap::new();
        assert!(requested_stream(&h).is_none());
        assert_eq!(requested_offset(&h).unwrap(), 0);
        h.insert(STREAM_ID, HeaderValue::from_static("abc"));
        assert_eq!(requested_stream(&h).unwrap().unwrap(), "abc");
        h.insert(STREAM_ID, HeaderValue::from_static(""));
        assert!(requested_stream(&h).unwrap().is_err());
        h.insert(STREAM_OFFSET, HeaderValue::from_static("12"));
        assert_eq!(requested_offset(&h).unwrap(), 12);
        h.insert(STREAM_OFFSET, HeaderValue::from_static("-1"));
        let e = requested_offset(&h).unwrap_err();
        assert_eq!(e.status(), StatusCode::InvalidArgument);
    }
}
