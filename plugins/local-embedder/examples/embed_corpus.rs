//! Embeds a corpus of texts into a file of vectors, for the vector
//! benchmarks' real-embedding runs (`bench/vectors/run.sh`,
//! `bench/vectors/real_embeddings.sh`): reads a JSON array of texts and
//! writes every text's all-MiniLM-L6-v2 vector, in order, as little-endian
//! `f32`s (384 per text, no header), in batches, so a long run can be
//! watched (`--progress`) and its output is written as it goes rather than
//! held whole.
//!
//! The output is resumable and can grow: when OUT already holds vectors,
//! embedding continues after the last whole one (a torn last vector is cut
//! off), so an interrupted run loses at most one chunk, and a run with
//! `--count 10100` followed by one without it embeds each text once. The
//! vectors of a prefix of the texts are a prefix of the file.
//!
//! `cargo run --release -p genkit-local-embedder --example embed_corpus -- \
//!     TEXTS.json OUT.f32 [--count N] [--batch-size B] [--model-dir DIR] [--progress N]`

use genkit_local_embedder::{LocalEmbedder, SentenceEmbedder};
use std::io::{Seek, SeekFrom, Write};

const USAGE: &str = "usage: embed_corpus TEXTS.json OUT.f32 [--count N] [--batch-size B] [--model-dir DIR] [--progress N]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut paths = Vec::new();
    let (mut batch_size, mut dir, mut progress, mut count) = (32usize, None, 1000usize, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--batch-size" => batch_size = value()?.parse()?,
            "--count" => count = Some(value()?.parse::<usize>()?),
            "--model-dir" => dir = Some(value()?.into()),
            "--progress" => progress = value()?.parse()?,
            _ => paths.push(arg),
        }
    }
    let [texts_path, out_path] = paths.as_slice() else {
        return Err(USAGE.into());
    };
    if batch_size == 0 {
        return Err("--batch-size must be positive".into());
    }
    let texts: Vec<String> = serde_json::from_str(&std::fs::read_to_string(texts_path)?)?;
    let count = count.unwrap_or(texts.len());
    if count > texts.len() {
        return Err(format!(
            "--count {count}, but {texts_path} has {} texts",
            texts.len()
        )
        .into());
    }
    let dir = match dir {
        Some(d) => d,
        None => LocalEmbedder::new()
            .resolved_model_dir()
            .ok_or("no model directory: pass --model-dir")?,
    };
    let model = SentenceEmbedder::load(&dir)?.with_batch_size(batch_size);
    let vector_bytes = (model.dimensions() * 4) as u64;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(out_path)?;
    // Keep the whole vectors already there; a torn last one (a run killed
    // mid-write) is cut off and embedded again.
    let kept = (file.metadata()?.len() / vector_bytes) as usize;
    let kept = kept.min(count);
    file.set_len(kept as u64 * vector_bytes)?;
    file.seek(SeekFrom::End(0))?;
    if kept > 0 {
        eprintln!("{kept} vectors already in {out_path}: continuing after them");
    }
    let mut out = std::io::BufWriter::new(file);
    let started = std::time::Instant::now();
    let mut done = kept;
    // Chunks of whole batches: the model batches within each call anyway.
    for chunk in texts[kept..count].chunks(batch_size * 8) {
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
        // Whole chunks reach the file, so a killed run resumes close by.
        out.flush()?;
        let before = done;
        done += chunk.len();
        if progress > 0 && before / progress != done / progress {
            eprintln!(
                "{done} / {count} texts, {:.0} s",
                started.elapsed().as_secs_f64()
            );
        }
    }
    out.flush()?;
    println!(
        "{{\"texts\":{count},\"embedded\":{},\"dimensions\":{},\"seconds\":{:.1}}}",
        count - kept,
        model.dimensions(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
