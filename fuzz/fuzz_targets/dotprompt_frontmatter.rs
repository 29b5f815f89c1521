//! Dotprompt sources (frontmatter and template) of any text: parsing,
//! checking and resolving metadata (Picoschema conversion included) end in
//! a result or an error, never a panic. A parsed prompt's template is text
//! of the source, its metadata survives JSON, and metadata resolution of a
//! source that parses succeeds or fails without panicking.
#![no_main]

use dotprompt::{Dotprompt, ParsedPrompt, parse_document};
use futures::executor::block_on;
use genkit_fuzz::assert_round_trip;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let source = String::from_utf8_lossy(data);
    let Ok(parsed) = parse_document(&source) else {
        return;
    };
    assert!(
        source.contains(parsed.template.as_str()),
        "the template is not text of the source"
    );
    let text = serde_json::to_string(&parsed).expect("a parsed prompt serializes");
    let again: ParsedPrompt = serde_json::from_str(&text).expect("and reads back");
    assert_eq!(again, parsed, "{text}");
    assert_round_trip(&parsed.meta);
    // A new instance each time: compiled prompts are cached by source.
    let dp = Dotprompt::default();
    if let Ok(checked) = dp.check(&source) {
        assert_eq!(checked, parsed, "check and parse disagree");
    }
    if let Ok(meta) = block_on(dp.render_metadata(&source, None)) {
        assert_round_trip(&meta);
    }
});
