//! Embedding throughput of the local embedder, for `bench/embedder/run.sh`:
//! embeds a JSON array of texts (repeated) in batches, several rounds, and
//! prints one JSON line per round.
//!
//! `cargo run --release -p genkit-local-embedder --example throughput -- \
//!     TEXTS.json [--repeat N] [--rounds R] [--batch-size B] [--model-dir DIR]`

use genkit_local_embedder::{LocalEmbedder, SentenceEmbedder};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let (mut repeat, mut rounds, mut batch_size, mut dir) = (1usize, 3usize, 32usize, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--repeat" => repeat = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--batch-size" => batch_size = value()?.parse()?,
            "--model-dir" => dir = Some(value()?.into()),
            _ => file = Some(arg),
        }
    }
    let file = file.ok_or(
        "usage: throughput TEXTS.json [--repeat N] [--rounds R] [--batch-size B] [--model-dir DIR]",
    )?;
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(file)?)?;
    let texts: Vec<&str> = std::iter::repeat_n(&texts, repeat)
        .flatten()
        .map(String::as_str)
        .collect();
    let dir = match dir {
        Some(d) => d,
        None => LocalEmbedder::new()
            .resolved_model_dir()
            .ok_or("no model directory: pass --model-dir")?,
    };
    let started = Instant::now();
    let model = SentenceEmbedder::load(&dir)?.with_batch_size(batch_size);
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    // Warm-up: first-touch allocations and thread pools.
    model.embed(&texts[..texts.len().min(64)])?;
    for round in 0..rounds {
        let started = Instant::now();
        let vectors = model.embed(&texts)?;
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(vectors.len(), texts.len());
        println!(
            "{{\"impl\":\"genkit-local-embedder (candle)\",\"round\":{round},\"texts\":{},\"seconds\":{secs:.4},\"textsPerSecond\":{:.2},\"loadMs\":{load_ms:.1}}}",
            texts.len(),
            texts.len() as f64 / secs
        );
    }
    Ok(())
}
