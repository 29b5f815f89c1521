//! Frames of the flow-streaming protocol (Genkit's `streamFlow`): each chunk
//! is `data: {"message": <chunk>}\n\n`, the end is `data: {"result": <output>}\n\n`
//! or `error: {"error": {"status": ..., "message": ...}}\n\n`. The client strips
//! the first six characters of a frame and parses the rest as JSON.

use bytes::Bytes;
use genkit_core::Error;
use serde::Serialize;
use serde_json::Value;

#[derive(Serialize)]
struct Message<'a> {
    message: &'a Value,
}

#[derive(Serialize)]
struct Output<'a> {
    result: &'a Value,
}

#[derive(Serialize)]
struct Failure {
    error: Value,
}

/// The frame carrying one stream chunk.
pub fn message_frame(chunk: &Value) -> Bytes {
    frame("data: ", &Message { message: chunk })
}

/// The final frame carrying the output.
pub fn result_frame(output: &Value) -> Bytes {
    frame("data: ", &Output { result: output })
}

/// The final frame of a failed run: the error's public form only
/// ([`Error::to_public_json`]), never internal details.
pub fn error_frame(error: &Error) -> Bytes {
    frame(
        "error: ",
        &Failure {
            error: error.to_public_json(),
        },
    )
}

/// The final frame of a failed run from an error already in its public
/// form (as a durable stream keeps it).
pub fn error_value_frame(error: Value) -> Bytes {
    frame("error: ", &Failure { error })
}

fn frame<T: Serialize>(prefix: &str, body: &T) -> Bytes {
    let mut buf = Vec::with_capacity(64);
    buf.extend_from_slice(prefix.as_bytes());
    // Serializing a JSON value into a Vec cannot fail.
    if serde_json::to_writer(&mut buf, body).is_err() {
        buf.truncate(prefix.len());
        buf.extend_from_slice(br#"{"error":{"status":"INTERNAL","message":"Internal Error"}}"#);
    }
    buf.extend_from_slice(b"\n\n");
    Bytes::from(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use serde_json::json;

    #[test]
    fn frames_are_exact() {
        assert_eq!(
            &message_frame(&json!({"count": 1}))[..],
            b"data: {\"message\":{\"count\":1}}\n\n"
        );
        assert_eq!(
            &result_frame(&json!("done"))[..],
            b"data: {\"result\":\"done\"}\n\n"
        );
        let e = Error::user_facing(StatusCode::PermissionDenied, "no");
        assert_eq!(
            &error_frame(&e)[..],
            b"error: {\"error\":{\"status\":\"PERMISSION_DENIED\",\"message\":\"no\"}}\n\n"
        );
        let internal = Error::internal("db password leaked");
        let f = String::from_utf8(error_frame(&internal).to_vec()).unwrap();
        assert_eq!(
            f,
            "error: {\"error\":{\"status\":\"INTERNAL\",\"message\":\"Internal Error\"}}\n\n"
        );
    }
}
