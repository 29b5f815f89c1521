//! Benchmark ceiling: the same two endpoints as `bench_flow_server`, written
//! directly with axum (no registry, action, validation, context or span):
//! `POST /echo` and `POST /stream` speaking the same wire format, on
//! 127.0.0.1:`$PORT` (default 3401). See `bench/server/`.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

async fn echo(body: Bytes) -> Response {
    let Ok(mut req) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let data = req.get_mut("data").map(Value::take).unwrap_or(Value::Null);
    let out = serde_json::to_vec(&json!({ "result": data })).unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

async fn stream(body: Bytes) -> Response {
    let Some(n) = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v["data"].as_u64())
    else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let frames = (0..n)
        .map(|i| format!("data: {}\n\n", json!({ "message": { "i": i } })))
        .chain(std::iter::once(format!(
            "data: {}\n\n",
            json!({ "result": "done" })
        )))
        .map(|f| Ok::<_, std::convert::Infallible>(Bytes::from(f)));
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(futures::stream::iter(frames)),
    )
        .into_response()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3401);
    let app = Router::new()
        .route("/echo", post(echo))
        .route("/stream", post(stream));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    axum::serve(listener, app)
        .with_graceful_shutdown(genkit_server::shutdown::signal())
        .await?;
    Ok(())
}
