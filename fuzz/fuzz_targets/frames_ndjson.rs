//! The NDJSON frame decoder, fed a body in fuzzer-chosen pieces under a
//! fuzzer-chosen cap, must yield exactly what splitting the whole body at
//! `\n` yields (non-blank lines, the last one unterminated or not, then at
//! most one error), and no frame over the cap.
#![no_main]

use genkit_fuzz::{check_frames, decode_ndjson, pieces, reference_ndjson};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [cap, seed, body @ ..] = data else { return };
    let max = match *cap {
        255 => genkit_provider::DEFAULT_MAX_FRAME,
        c => 1 + usize::from(c) * 2,
    };
    let got = decode_ndjson(&pieces(body, *seed), max);
    check_frames(&got, max);
    assert_eq!(got, reference_ndjson(body, max));
});
