//! One round of `bench/local-model/run.sh`: load time, prompt and decode
//! speed, peak RSS and the cost of constrained decoding per token for a GGUF
//! model in genkit-local-model, printed as one JSON line.
//!
//! ```sh
//! cargo run --release -p genkit-local-model --example decode_bench -- \
//!     <model.gguf> [--max-tokens 48] [--prompt-ids-out ids.json]
//! ```
//!
//! The prompt is a chat-templated request to summarise a paragraph (about
//! 200 tokens); `--prompt-ids-out` writes its ids so llama.cpp runs on the
//! very same tokens.

use genkit_core::schema::SchemaValidator;
use genkit_local_model::{DecodeOptions, LocalModel, model_action};
use genkit_model::types::{GenerateRequest, Message, OutputConfig};
use serde_json::{Value, json};
use std::ops::ControlFlow;
use std::time::Instant;

/// The text to summarise: long enough that prompt processing is measured
/// over a batch, not a handful of tokens.
const PARAGRAPH: &str = "The lighthouse keeper climbed the spiral stairs every evening at \
dusk, carrying a lamp, a notebook and a flask of tea. For thirty years he had recorded the \
weather, the ships that passed and the birds that rested on the gallery rail. The harbour \
town below had changed: the fishing fleet had shrunk, the cannery had become a museum, and \
tourists now arrived on ferries in summer. When the coast guard announced that the light \
would be automated, the town held a meeting. Some wanted the keeper's cottage turned into a \
café; others wanted it kept as it was, with his notebooks on display. In the end the keeper \
himself decided: he gave the notebooks to the school, so that children could read about the \
storms of the past and learn to watch the sky.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .ok_or("usage: decode_bench <model.gguf> [--max-tokens N] [--prompt-ids-out FILE]")?;
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let max_tokens: usize = flag("--max-tokens").map_or(Ok(48), |v| v.parse())?;

    let rss_before = rss_kib("VmRSS:");
    let started = Instant::now();
    let model = std::sync::Arc::new(LocalModel::load(path)?);
    let load_seconds = started.elapsed().as_secs_f64();

    let prompt = model.render_prompt(&[Message::user(format!(
        "Summarise this story in a few sentences.\n\n{PARAGRAPH}"
    ))])?;
    let ids = model.tokenize(&prompt)?;
    if let Some(out) = flag("--prompt-ids-out") {
        std::fs::write(out, serde_json::to_string(&ids)?)?;
    }

    // Prompt processing: one forward pass over the whole prompt, from an
    // empty cache (the median of 3).
    let mut prompt_times = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        model.next_logits(&ids)?;
        prompt_times.push(started.elapsed().as_secs_f64());
    }
    let prompt_seconds = median(&mut prompt_times);

    // Decoding: greedy; the time per token is measured between the first
    // token (which includes the prompt) and the last.
    let mut stamps = Vec::new();
    let decoded = model.decode(&ids, &DecodeOptions::greedy(max_tokens), |_| {
        stamps.push(Instant::now());
        ControlFlow::Continue(())
    })?;
    let decode_tokens = stamps.len().saturating_sub(1);
    let decode_seconds = match (stamps.first(), stamps.last()) {
        (Some(first), Some(last)) if decode_tokens > 0 => (*last - *first).as_secs_f64(),
        _ => return Err("the model answered fewer than 2 tokens".into()),
    };

    // Constrained decoding: a JSON object for a schema, through the model
    // action (as generate sends it); the mask's own cost is counted by the
    // model.
    let schema = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "characters": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3},
            "mood": {"enum": ["calm", "sad", "hopeful", "tense"]},
            "summary": {"type": "string", "maxLength": 120}
        },
        "required": ["title", "characters", "mood", "summary"],
        "additionalProperties": false
    });
    let request = GenerateRequest::new(vec![Message::user(format!(
        "Describe this story as JSON.\n\n{PARAGRAPH}"
    ))])
    .with_config(json!({"temperature": 0, "maxOutputTokens": 48}))
    .with_output(OutputConfig {
        format: Some("json".into()),
        schema: Some(schema.clone()),
        constrained: Some(true),
        content_type: None,
    });
    let action = model_action("gguf/bench", model.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let response = runtime.block_on(action.action().run(request))?;
    let constrained_seconds = started.elapsed().as_secs_f64();
    let text = response.text();
    let valid = serde_json::from_str::<Value>(&text)
        .ok()
        .is_some_and(|v| SchemaValidator::compile(&schema).is_ok_and(|s| s.validate(&v).is_ok()));
    let cost = model.constraint_cost();

    let line = json!({
        "impl": "genkit-local-model",
        "loadSeconds": load_seconds,
        "promptTokens": ids.len(),
        "promptSeconds": prompt_seconds,
        "promptTokensPerSecond": ids.len() as f64 / prompt_seconds,
        "decodeTokens": decode_tokens,
        "decodeFinish": format!("{:?}", decoded.finish_reason),
        "decodeMsPerToken": decode_seconds * 1e3 / decode_tokens as f64,
        "decodeTokensPerSecond": decode_tokens as f64 / decode_seconds,
        "rssMiB": rss_kib("VmRSS:").map(|k| k as f64 / 1024.0),
        "peakRssMiB": rss_kib("VmHWM:").map(|k| k as f64 / 1024.0),
        "rssBeforeLoadMiB": rss_before.map(|k| k as f64 / 1024.0),
        "constrainedTokens": cost.tokens,
        "constraintMsPerToken": cost.per_token().as_secs_f64() * 1e3,
        "constraintSetupMs": cost.setup.as_secs_f64() * 1e3,
        "constrainedSeconds": constrained_seconds,
        "constrainedValid": valid,
        "answer": model.detokenize(&decoded.ids)?,
        "constrainedAnswer": text,
    });
    println!("{line}");
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A `/proc/self/status` field in KiB (Linux only).
fn rss_kib(field: &str) -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
