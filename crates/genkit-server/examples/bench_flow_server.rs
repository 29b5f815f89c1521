//! Benchmark target: genkit-server's flow server (production mode) with
//! `POST /echo` (`"x"` -> `"x"`) and `POST /stream` (n -> n chunks `{"i": k}`,
//! then `"done"`), on 127.0.0.1:`$PORT` (default 3400). See `bench/server/`.
//! For the streaming load test (`bench/server/stream_load.sh`) also `POST
//! /ticks` (n -> n chunks `{"i": k}` spaced `$TICK_MS` ms apart, default 50,
//! then n), served with the default [`genkit_server::ServeOptions`].

use genkit_core::Registry;
use genkit_core::flow::{define_flow, define_streaming_flow};
use genkit_server::FlowServer;
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3400);
    let registry = Registry::new();
    define_flow(&registry, "echo", |s: String, _| async move { Ok(s) })?;
    define_streaming_flow(&registry, "stream", |n: u32, ctx| async move {
        for i in 0..n {
            ctx.send_chunk(json!({ "i": i }));
        }
        Ok("done".to_owned())
    })?;
    let tick = std::time::Duration::from_millis(
        std::env::var("TICK_MS")
            .ok()
            .and_then(|p| p.parse().ok())
            .unwrap_or(50),
    );
    define_streaming_flow(&registry, "ticks", move |n: u32, ctx| async move {
        for i in 0..n {
            tokio::time::sleep(tick).await;
            ctx.send_chunk(json!({ "i": i }));
        }
        Ok(n)
    })?;
    FlowServer::new(&registry)
        .serve(("127.0.0.1", port))
        .await?;
    Ok(())
}
