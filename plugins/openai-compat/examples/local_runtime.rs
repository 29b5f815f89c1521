//! A Genkit runtime serving the OpenAI-compatible plugin pointed at a local
//! server, for Genkit's tools (`genkit dev:test-model`, `genkit start`, the
//! Dev UI) through the Reflection API.
//!
//! ```sh
//! eval "$(tests-support/local-model/start-server.sh 18182)"
//! cargo build -p genkit-openai --example local_runtime
//! genkit dev:test-model --from-file suite.yaml -- target/debug/examples/local_runtime
//! ```
//!
//! Environment: `LOCAL_MODEL_BASE_URL` (required, e.g.
//! `http://127.0.0.1:18080/v1`), `LOCAL_MODEL_NAME` (default `smollm2`),
//! `LOCAL_MODEL_EMBED_NAME` (default `smollm2-embed`). Registers
//! `/model/local/<name>`, `/embedder/local/<embed name>` and `/util/generate`.
//! Runs until SIGINT/SIGTERM; needs `GENKIT_ENV=dev`, which the `genkit`
//! CLI sets for the commands it starts.

use genkit_core::Registry;
use genkit_generate::define_generate_action;
use genkit_model::types::ConstrainedSupport;
use genkit_openai::{EmbedderSpec, ModelSpec, OpenAiCompatible, StructuredOutputStyle};
use std::sync::Arc;
use std::time::Duration;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base_url = std::env::var("LOCAL_MODEL_BASE_URL").map_err(
        |_| "LOCAL_MODEL_BASE_URL is not set (see tests-support/local-model/start-server.sh)",
    )?;
    let model = env_or("LOCAL_MODEL_NAME", "smollm2");
    let embedder = env_or("LOCAL_MODEL_EMBED_NAME", "smollm2-embed");

    let plugin = OpenAiCompatible::builder()
        .name("local")
        .base_url(base_url)
        .models([ModelSpec::new(model)
            .label("SmolLM2 135M Instruct (local llama.cpp)")
            .media(false)
            .constrained(ConstrainedSupport::All)])
        .embedders([EmbedderSpec::new(embedder)])
        // `json_object` + `schema`: the form llama.cpp's server and
        // llama-cpp-python's both take (the latter rejects `json_schema`).
        .structured_output(StructuredOutputStyle::JsonObjectWithSchema)
        .timeout(Duration::from_secs(300))
        .build()?;
    let registry = Registry::new();
    registry.register_plugin(Arc::new(plugin))?;
    define_generate_action(&registry)?;

    let Some(dev) = genkit_server::start_dev_tooling(&registry).await? else {
        return Err("GENKIT_ENV=dev is not set: run this under the genkit CLI \
                    (genkit start -- <this binary>, or genkit dev:test-model ... -- <this binary>)"
            .into());
    };
    eprintln!("local_runtime: Reflection API at {}", dev.url());
    // The dev tooling ends the process on SIGINT/SIGTERM, removing its runtime file.
    std::future::pending::<()>().await;
    Ok(())
}
