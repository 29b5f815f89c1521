//! The Ollama /api/chat (NDJSON) answer reader: fuzzed bytes as a
//! streamed body (framed and folded as the plugin reads it) and as a whole
//! body. Nothing panics, chunks are the model's, output stays linear in the
//! input, and chunks and responses survive Genkit's JSON wire format (see
//! `genkit_fuzz::run_provider`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    genkit_fuzz::run_provider::<genkit_ollama::OllamaProvider>(data);
});
