//! Embeds a corpus of texts into a file of vectors, for the vector
//! benchmarks' real-embedding runs (`bench/vectors/real_embeddings.sh`):
//! reads a JSON array of texts and writes every text's all-MiniLM-L6-v2
//! vector, in order, as little-endian `f32`s (384 per text, no header), in
//! batches, so a long run can be watched (`--progress`) and its output is
//! written as it goes rather than held whole.
//!
//! `cargo run --release -p genkit-local-embedder --example embed_corpus -- \
//!     TEXTS.json OUT.f32 [--batch-size B] [--model-dir DIR] [--progress N]`

use genkit_local_embedder::{LocalEmbedder, SentenceEmbedder};
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut paths = Vec::new();
    let (mut batch_size, mut dir, mut progress) = (32usize, None, 1000usize);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--batch-size" => batch_size = value()?.parse()?,
            "--model-dir" => dir = Some(value()?.into()),
            "--progress" => progress = value()?.parse()?,
            _ => paths.push(arg),
        }
    }
    let [texts_path, out_path] = paths.as_slice() else {
        return Err("usage: embed_corpus TEXTS.json OUT.f32 [--batch-size B] [--model-dir DIR] [--progress N]".into());
    };
    if batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(texts_path)?)?;
    let dir = match dir {
        Some(d) => d,
        None => LocalEmbedder::new()
            .resolved_model_dir()
            .ok_or("no model directory: pass --model-dir")?,
    };
    let model = SentenceEmbedder::load(&dir)?.with_batch_size(batch_size);
    let mut out = std::io::BufWriter::new(std::fs::File::create(out_path)?);
    let started = std::time::Instant::now();
    let mut done = 0usize;
    // Chunks of whole batches: the model batches within each call anyway.
    for chunk in texts.chunks(batch_size * 8) {
        for vector in model.embed(chunk)? {
            if vector.len() != model.dimensions() {
                return Err(format!(
                    "a vector of {} values, expected {}",
                    vector.len(),
                    model.dimensions()
                )
                .into());
            }
            for x in vector {
                out.write_all(&x.to_le_bytes())?;
            }
        }
        let before = done;
        done += chunk.len();
        if progress > 0 && before / progress != done / progress {
            eprintln!(
                "{done} / {} texts, {:.0} s",
                texts.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    out.flush()?;
    println!(
        "{{\"texts\":{},\"dimensions\":{},\"seconds\":{:.1}}}",
        texts.len(),
        model.dimensions(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
