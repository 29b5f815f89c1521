//! The SSE frame decoder, fed a body in fuzzer-chosen pieces under a
//! fuzzer-chosen cap, must yield exactly what a whole-buffer reading of the
//! event-stream format yields (frames, then at most one error), and no
//! frame over the cap.
#![no_main]

use genkit_fuzz::{check_frames, decode_sse, pieces, reference_sse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [cap, seed, body @ ..] = data else { return };
    // Small caps so the fuzzer reaches them; 255 is the production default.
    let max = match *cap {
        255 => genkit_provider::DEFAULT_MAX_FRAME,
        c => 1 + usize::from(c) * 2,
    };
    let pieces = pieces(body, *seed);
    let got = decode_sse(&pieces, max);
    check_frames(&got, max);
    // The byte-order mark is recognised only whole in the first piece.
    let bom = pieces
        .first()
        .is_some_and(|p| p.starts_with(b"\xEF\xBB\xBF"));
    assert_eq!(got, reference_sse(body, bom, max));
});
