//! Streamed output is parsed in time linear in its size: 1 MiB of output in
//! 10-byte chunks, for each built-in structured format, first through the
//! formats' stream parsers alone (time and peak memory), then through a
//! whole `generate_stream` (time).
//!
//! One test in this binary on purpose: it reads the process's peak resident
//! memory (`VmHWM` in `/proc/self/status`, reset through `clear_refs`), and
//! no other test may run beside it.

use futures::StreamExt;
use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate_stream};
use genkit_model::formats::{Formats, StreamParsing};
use genkit_model::testing::ProgrammableModel;
use genkit_model::types::{
    FinishReason, GenerateResponse, GenerateResponseChunk, Message, Part, Role,
};
use serde_json::Value;
use std::time::{Duration, Instant};

const MIB: usize = 1024 * 1024;

/// The limit for work that takes well under a second: 5 s (5x) because
/// CI is a loaded 2-core machine and these are debug builds.
const LIMIT: Duration = Duration::from_secs(5);

fn status_bytes(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .expect("field present")
        * 1024
}

/// About 1 MiB of `array` output: many small objects.
fn many_objects() -> String {
    let mut text = String::from("[");
    let mut n = 0;
    while text.len() < MIB {
        text.push_str(&format!("{{\"n\": {n}, \"name\": \"item {n}\"}},\n"));
        n += 1;
    }
    text.push_str("{\"n\": -1}]");
    text
}

/// About 1 MiB of output in one value: an object with one long string.
fn one_big_object() -> String {
    format!("[{{\"s\": \"{}\"}}]", "0123456789".repeat(MIB / 10))
}

/// About 1 MiB of `jsonl` output.
fn many_lines() -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < MIB {
        text.push_str(&format!("{{\"n\": {n}, \"name\": \"item {n}\"}}\n"));
        n += 1;
    }
    text
}

/// 10-byte pieces, on char boundaries.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let mut end = (start + 10).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let piece = &text[start..end];
        start = end;
        Some(piece)
    })
}

/// Feeds `text` in 10-byte pieces to `format`'s stream parser, as
/// `generate_stream` does, reading every chunk's output. Returns the items
/// seen (for array formats), the time taken, and the peak memory above the
/// memory before, minus the text itself.
fn parse(format: &str, text: &str) -> (usize, Duration, usize) {
    let handler = Formats::default()
        .get(format)
        .expect("built-in")
        .handler(None)
        .expect("handler");
    let baseline = status_bytes("VmRSS:");
    let start = Instant::now();
    let mut so_far = String::with_capacity(text.len());
    let mut items = 0;
    match handler.stream_parsing() {
        StreamParsing::Incremental(mut parser) => {
            for piece in pieces(text) {
                so_far.push_str(piece);
                if let Some(Value::Array(new)) = parser.push(&so_far) {
                    items += new.len();
                }
            }
        }
        StreamParsing::Text(parse) => {
            // The output of a chunk is parsed only when it is read: here
            // the last one's, as a caller showing the final value does.
            for piece in pieces(text) {
                so_far.push_str(piece);
            }
            items = parse(&so_far).map_or(0, |v| v.as_array().map_or(1, Vec::len));
        }
        StreamParsing::Chunks => panic!("{format} parses chunk by chunk"),
    }
    let elapsed = start.elapsed();
    let growth = status_bytes("VmHWM:")
        .saturating_sub(baseline)
        .saturating_sub(so_far.capacity());
    (items, elapsed, growth)
}

async fn stream(
    format: &str,
    text: &str,
    read_every_output: bool,
) -> (usize, Option<Value>, Duration) {
    let reg = Registry::new();
    let chunks = pieces(text)
        .map(|p| GenerateResponseChunk::new(vec![Part::text(p)]))
        .collect();
    let response = GenerateResponse::new(Message::new(Role::Model, text), FinishReason::Stop);
    ProgrammableModel::define(&reg, "m").respond_with_chunks(chunks, response);
    let start = Instant::now();
    let mut s = generate_stream(
        &reg,
        GenerateOptions::prompt("go")
            .model("m")
            .output_format(format),
    );
    let mut last = None;
    let mut items = 0;
    while let Some(chunk) = s.next().await {
        let chunk = chunk.expect("chunk");
        if read_every_output {
            items += chunk.output().and_then(Value::as_array).map_or(0, Vec::len);
        }
        last = Some(chunk);
    }
    let output = last.and_then(|c| c.output().cloned());
    let elapsed = start.elapsed();
    eprintln!("generate_stream {format}: {items} items read, {elapsed:?}");
    (items, output, elapsed)
}

fn text_of(kind: &str) -> String {
    match kind {
        "objects" => many_objects(),
        "big" => one_big_object(),
        _ => many_lines(),
    }
}

const CASES: [(&str, &str); 5] = [
    ("array", "objects"),
    ("array", "big"),
    ("jsonl", "lines"),
    ("json", "objects"),
    ("json", "big"),
];

/// Runs one case in a fresh process (this test binary, with `CASE` set), so
/// its peak memory is its own, and reads what it printed.
fn in_child(format: &str, kind: &str) -> (usize, Duration, usize) {
    let exe = std::env::current_exe().expect("test binary");
    // The test's name in this binary: its module path without the crate.
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::a_megabyte_of_streamed_output_parses_in_linear_time_and_memory");
    let out = std::process::Command::new(exe)
        .args([name.as_str(), "--exact", "--nocapture"])
        .env("STREAMING_LINEAR_CASE", format!("{format}:{kind}"))
        .output()
        .expect("child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{format}:{kind}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .expect("a result line");
    let numbers: Vec<usize> = line
        .split(' ')
        .map(|n| n.parse().expect("a number"))
        .collect();
    (
        numbers[0],
        Duration::from_micros(numbers[1] as u64),
        numbers[2],
    )
}

#[test]
fn a_megabyte_of_streamed_output_parses_in_linear_time_and_memory() {
    if let Ok(case) = std::env::var("STREAMING_LINEAR_CASE") {
        let (format, kind) = case.split_once(':').expect("format:kind");
        let text = text_of(kind);
        let (items, elapsed, growth) = parse(format, &text);
        println!("RESULT {items} {} {growth}", elapsed.as_micros());
        return;
    }
    for (format, kind) in CASES {
        let text = text_of(kind);
        let want = match kind {
            "big" => 1,
            "lines" => text.lines().count(),
            _ => text.matches("\"n\"").count(),
        };
        let (items, elapsed, growth) = in_child(format, kind);
        eprintln!(
            "{format} ({kind}): {} bytes in 10-byte chunks, {items} items, {elapsed:?}, peak \
             memory {growth} bytes above the process before and the text itself",
            text.len()
        );
        assert_eq!(items, want, "{format}");
        assert!(elapsed < LIMIT, "{format}: {elapsed:?}");
        // Items are dropped as they come, so what stays is the parser's
        // state. For `json` the final value is built once, and serde_json's
        // `Value` of 30k small objects is itself about 14x their text.
        let bound = if format == "json" && items > 1 {
            20 * MIB
        } else {
            3 * MIB
        };
        assert!(growth < bound, "{format}: peak memory grew {growth} bytes");
    }

    let objects = many_objects();
    let big = one_big_object();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let (items, _, elapsed) = stream("array", &objects, true).await;
        assert_eq!(items, objects.matches("\"n\"").count());
        // The whole generate pipeline (100k chunks through the action's
        // channel) takes longer than the parsing; quadratic parsing of
        // 1 MiB in 10-byte chunks would take minutes.
        assert!(elapsed < 6 * LIMIT, "array stream: {elapsed:?}");
        let (_, output, elapsed) = stream("json", &big, false).await;
        assert_eq!(
            output.and_then(|v| v[0]["s"].as_str().map(str::len)),
            Some(MIB / 10 * 10)
        );
        assert!(elapsed < 6 * LIMIT, "json stream: {elapsed:?}");
    });
}
