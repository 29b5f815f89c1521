//! Decoding and parsing streamed output, each linear in its size: an NDJSON
//! line of 16 MiB in 1 KiB pieces, 1 MiB of SSE events, and 1 MiB of
//! `array` and `jsonl` output fed to their stream parsers in 10-byte
//! chunks. No JS peer: these are Rust-side limits (issue 15).

use criterion::{Criterion, criterion_group, criterion_main};
use genkit::formats::{Formats, StreamParsing};
use genkit_provider::{NdjsonDecoder, SseDecoder};
use std::hint::black_box;

fn ndjson_long_line() -> usize {
    let mut decoder = NdjsonDecoder::new(32 * 1024 * 1024);
    let piece = [b'7'; 1024];
    for _ in 0..16 * 1024 {
        decoder.push(&piece);
        let _ = decoder.next_frame();
    }
    decoder.push(b"\n");
    decoder
        .next_frame()
        .and_then(Result::ok)
        .map_or(0, |f| f.data.len())
}

fn sse_events(body: &[u8]) -> usize {
    let mut decoder = SseDecoder::new(1024 * 1024);
    let mut frames = 0;
    for piece in body.chunks(1024) {
        decoder.push(piece);
        while let Some(Ok(_)) = decoder.next_frame() {
            frames += 1;
        }
    }
    frames
}

fn parse_in_chunks(format: &str, text: &str) -> usize {
    let handler = Formats::default()
        .get(format)
        .and_then(|f| f.handler(None).ok())
        .map(|h| h.stream_parsing());
    let Some(StreamParsing::Incremental(mut parser)) = handler else {
        return 0;
    };
    let mut so_far = String::with_capacity(text.len());
    let mut items = 0;
    for piece in text.as_bytes().chunks(10) {
        so_far.push_str(std::str::from_utf8(piece).unwrap_or_default());
        items += parser
            .push(&so_far)
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0);
    }
    items
}

fn bench(c: &mut Criterion) {
    let mut sse = String::new();
    while sse.len() < 1024 * 1024 {
        sse.push_str("event: delta\ndata: {\"text\": \"some streamed words\"}\n\n");
    }
    let mut array = String::from("[");
    let mut lines = String::new();
    for n in 0.. {
        if array.len() >= 1024 * 1024 {
            break;
        }
        let item = format!("{{\"n\": {n}, \"name\": \"item {n}\"}}");
        array.push_str(&item);
        array.push_str(",\n");
        lines.push_str(&item);
        lines.push('\n');
    }
    array.push_str("{}]");

    let mut group = c.benchmark_group("streaming");
    group.sample_size(10);
    group.bench_function("ndjson_16mib_line_1kib_pieces", |b| {
        b.iter(|| black_box(ndjson_long_line()))
    });
    group.bench_function("sse_1mib_events", |b| {
        b.iter(|| black_box(sse_events(sse.as_bytes())))
    });
    group.bench_function("array_1mib_10b_chunks", |b| {
        b.iter(|| black_box(parse_in_chunks("array", &array)))
    });
    group.bench_function("jsonl_1mib_10b_chunks", |b| {
        b.iter(|| black_box(parse_in_chunks("jsonl", &lines)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
