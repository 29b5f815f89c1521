//! Embedding throughput of the local embedder, for `bench/embedder/run.sh`:
//! embeds a JSON array of texts (repeated) in batches, several rounds, and
//! prints one JSON line per round: wall seconds and, because wall time on a
//! shared machine swings with other processes' load, also the CPU seconds
//! (user + system, all threads) the process spent in the round.
//!
//! `cargo run --release -p genkit-local-embedder --example throughput -- \
//!     TEXTS.json [--repeat N] [--rounds R] [--batch-size B] [--model-dir DIR] [--clk-tck HZ]`
//!
//! `--clk-tck` is the kernel's clock-tick rate (`getconf CLK_TCK`) that
//! `/proc/self/stat` counts CPU time in; it defaults to 100, its value on
//! Linux for every common architecture (reading it with `sysconf` would need
//! `unsafe` or a libc binding).

use genkit_local_embedder::{LocalEmbedder, SentenceEmbedder};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let (mut repeat, mut rounds, mut batch_size, mut dir) = (1usize, 3usize, 32usize, None);
    let mut clk_tck = 100u64;
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--repeat" => repeat = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--batch-size" => batch_size = value()?.parse()?,
            "--model-dir" => dir = Some(value()?.into()),
            "--clk-tck" => clk_tck = value()?.parse()?,
            _ => file = Some(arg),
        }
    }
    let file = file.ok_or(
        "usage: throughput TEXTS.json [--repeat N] [--rounds R] [--batch-size B] [--model-dir DIR] [--clk-tck HZ]",
    )?;
    if clk_tck == 0 {
        return Err("--clk-tck must be positive".into());
    }
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
    // candle's CPU kernels size their thread pool like rayon does
    // (RAYON_NUM_THREADS, else the available parallelism).
    let candle_threads = candle_core::utils::get_num_threads();
    for round in 0..rounds {
        let cpu_before = cpu_ticks()?;
        let started = Instant::now();
        let vectors = model.embed(&texts)?;
        let secs = started.elapsed().as_secs_f64();
        let cpu_secs = cpu_ticks()?.saturating_sub(cpu_before) as f64 / clk_tck as f64;
        assert_eq!(vectors.len(), texts.len());
        println!(
            "{{\"impl\":\"genkit-local-embedder (candle, {candle_threads} threads)\",\"round\":{round},\"texts\":{},\"seconds\":{secs:.4},\"textsPerSecond\":{:.2},\"cpuSeconds\":{cpu_secs:.2},\"textsPerCpuSecond\":{},\"threads\":{candle_threads},\"osThreads\":{},\"loadMs\":{load_ms:.1}}}",
            texts.len(),
            texts.len() as f64 / secs,
            // A round shorter than one tick has no meaningful CPU rate.
            if cpu_secs > 0.0 {
                format!("{:.2}", texts.len() as f64 / cpu_secs)
            } else {
                "null".to_owned()
            },
            os_threads().map_or("null".to_owned(), |n| n.to_string()),
        );
    }
    Ok(())
}

/// User plus system CPU time of this process (all threads), in clock ticks:
/// fields 14 and 15 (`utime`, `stime`) of `/proc/self/stat`.
fn cpu_ticks() -> Result<u64, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Field 2 (the command name) is parenthesised and may contain spaces, so
    // count from the last ')': what follows starts at field 3.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or("malformed /proc/self/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| -> Result<u64, Box<dyn std::error::Error>> {
        Ok(fields
            .get(n - 3)
            .ok_or("short /proc/self/stat")?
            .parse::<u64>()?)
    };
    Ok(field(14)? + field(15)?)
}

/// The process's OS thread count (`Threads:` in `/proc/self/status`), which
/// includes candle's worker threads once they have started.
fn os_threads() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}
