//! JSON extraction: Genkit JS's cases, streaming consistency, and never panicking.

use genkit_model::extract::*;
use serde_json::{Value, json};

#[test]
fn js_extract_items_cases() {
    let cases: Vec<(&str, Vec<(&str, Value)>)> = vec![
        (
            "simple array in chunks",
            vec![
                ("[", json!([])),
                ("{\"a\": 1},", json!([{"a": 1}])),
                ("{\"b\": 2}", json!([{"b": 2}])),
                ("]", json!([])),
            ],
        ),
        (
            "nested objects",
            vec![
                ("[{\"outer\": {", json!([])),
                (
                    "\"inner\": \"value\"}},",
                    json!([{"outer": {"inner": "value"}}]),
                ),
                ("{\"next\": true}]", json!([{"next": true}])),
            ],
        ),
        (
            "escaped characters",
            vec![
                ("[{\"text\": \"line1\\n", json!([])),
                ("line2\"},", json!([{"text": "line1\nline2"}])),
                (
                    "{\"text\": \"tab\\there\"}]",
                    json!([{"text": "tab\there"}]),
                ),
            ],
        ),
        (
            "content before first array",
            vec![
                ("Here is an array:\n```json\n\n[", json!([])),
                ("{\"a\": 1},", json!([{"a": 1}])),
                (
                    "{\"b\": 2}]\n```\nDid you like my array?",
                    json!([{"b": 2}]),
                ),
            ],
        ),
        (
            "whitespace",
            vec![
                ("[\n  ", json!([])),
                ("{\"a\": 1},\n  ", json!([{"a": 1}])),
                ("{\"b\": 2}\n]", json!([{"b": 2}])),
            ],
        ),
    ];
    for (name, steps) in cases {
        let mut text = String::new();
        let mut cursor = 0;
        for (chunk, want) in steps {
            text.push_str(chunk);
            let result = extract_items(&text, cursor);
            assert_eq!(Value::Array(result.items), want, "{name}: after {chunk:?}");
            cursor = result.cursor;
        }
    }
}

#[test]
fn js_extract_json_cases() {
    assert_eq!(extract_json("prefix{\"a\":1}suffix"), Some(json!({"a": 1})));
    assert_eq!(extract_json("prefix[1,2,3]suffix"), Some(json!([1, 2, 3])));
    assert_eq!(
        extract_json("text{\"a\":{\"b\":[1,2]}}more"),
        Some(json!({"a": {"b": [1, 2]}}))
    );
    assert_eq!(
        extract_json("{\"text\": \"not {a} json\"}"),
        Some(json!({"text": "not {a} json"}))
    );
    assert_eq!(extract_json("not json at all"), None);
    assert_eq!(try_extract_json("not json at all"), Ok(None));
    // Non-breaking spaces and JSON5 inside prose.
    assert_eq!(
        extract_json("x\u{a0}{\u{a0}a:\u{a0}'b',}"),
        Some(json!({"a": "b"}))
    );
}

#[test]
fn js_parse_partial_json_cases() {
    assert_eq!(
        parse_partial_json("{\"a\":1,\"b\":2}"),
        Some(json!({"a": 1, "b": 2}))
    );
    assert_eq!(parse_partial_json("{\"a\":1,\"b\":"), Some(json!({"a": 1})));
    assert_eq!(parse_partial_json("[1,2,3,"), Some(json!([1, 2, 3])));
    assert_eq!(
        parse_partial_json("{\"a\":{\"b\":1,\"c\":]}}"),
        Some(json!({"a": {"b": 1}}))
    );
    // partial-json's own examples.
    assert_eq!(parse_partial_json("\""), Some(json!("")));
    assert_eq!(parse_partial_json("[\""), Some(json!([""])));
    assert_eq!(parse_partial_json("{\"\": \""), Some(json!({"": ""})));
    assert_eq!(parse_partial_json("n"), Some(Value::Null));
    assert_eq!(parse_partial_json("t"), Some(json!(true)));
    assert_eq!(parse_partial_json("f"), Some(json!(false)));
    assert_eq!(parse_partial_json("-1.25e+"), Some(json!(-1.25)));
    assert_eq!(parse_partial_json("-1.25e"), Some(json!(-1.25)));
    assert_eq!(parse_partial_json("-I"), Some(Value::Null));
}

const DOCS: &[&str] = &[
    r#"{"name": "Ada", "age": 36, "langs": ["en", "fr"], "nested": {"ok": true, "none": null, "pi": 3.14159, "neg": -2e-3}}"#,
    r#"[{"id": 1, "text": "line\nbreak \"quoted\" \\ slash \u00e9 😀"}, {"id": 2, "tags": []}, "str", 42, false, [1, [2, [3]]]]"#,
    r#"{"emoji": "😀🎉", "escapes": "\ud83d\ude00\t\b\f\r", "empty": {}, "arr": [[], {}]}"#,
];

/// Char-boundary prefixes of `s`.
fn prefixes(s: &str) -> impl Iterator<Item = &str> {
    (0..=s.len())
        .filter(|&i| s.is_char_boundary(i))
        .map(move |i| &s[..i])
}

#[test]
fn every_prefix_of_valid_json_parses() {
    for doc in DOCS {
        let full: Value = serde_json::from_str(doc).expect("valid doc");
        assert_eq!(parse_lenient_json(doc).as_ref(), Ok(&full));
        assert_eq!(parse_partial_json(doc).as_ref(), Some(&full));
        assert_eq!(extract_json(doc).as_ref(), Some(&full));
        for prefix in prefixes(doc).skip(1) {
            // Once the outer container has opened, a value always comes back, and it
            // is of the same type as the final value.
            let partial = parse_partial_json(prefix)
                .unwrap_or_else(|| panic!("no value for prefix {prefix:?}"));
            assert_eq!(partial.is_object(), full.is_object(), "{prefix:?}");
            assert_eq!(extract_json(prefix), Some(partial), "{prefix:?}");
        }
    }
}

#[test]
fn split_streams_match_whole_parse() {
    // Splitting the text anywhere and continuing from the cursor yields exactly the
    // items of the whole text: nothing partial, nothing twice.
    let array = format!("Here you go:\n```json\n{}\n```", DOCS[1]);
    let whole = extract_items(&array, 0).items;
    assert_eq!(whole.len(), 6);
    let jsonl = "{\"a\": 1}\n{\"b\": \"x\\ny\"}\n\nnot json\n  {\"c\": [1, 2]}  \n{\"d\": {}}";
    let whole_lines = extract_jsonl_items(jsonl, 0).items;
    assert_eq!(whole_lines.len(), 4);
    for (text, whole, extract) in [
        (
            array.as_str(),
            &whole,
            extract_items as fn(&str, usize) -> ExtractedItems,
        ),
        (jsonl, &whole_lines, extract_jsonl_items),
    ] {
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let first = extract(&text[..cut], 0);
            let second = extract(text, first.cursor);
            let mut items = first.items;
            items.extend(second.items);
            assert_eq!(&items, whole, "cut at {cut}");
        }
    }
}

/// Tiny deterministic PRNG (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "\\",
    ":",
    ",",
    "/",
    "*",
    "//",
    "/*",
    "*/",
    "0",
    "1",
    "9",
    ".",
    "e",
    "E",
    "+",
    "-",
    "x",
    "t",
    "r",
    "u",
    "true",
    "fals",
    "nul",
    "null",
    "NaN",
    "Infinity",
    "a",
    "key",
    " ",
    "\n",
    "\t",
    "\u{a0}",
    "é",
    "😀",
    "\\u",
    "\\uD83D",
    "\\uDE00",
    "\\x4",
    "```json\n",
    "```",
    "0x1F",
    "1e999",
    "\u{2028}",
    "\r\n",
    "\\\n",
];

fn random_text(rng: &mut Rng) -> String {
    let len = rng.below(40);
    (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect()
}

fn exercise(text: &str) {
    let _ = parse_lenient_json(text);
    let _ = parse_partial_json(text);
    let _ = extract_json(text);
    let _ = try_extract_json(text);
    let _ = parse_jsonl(text);
    for cursor in [0, 1, 2, 3, text.len() / 2, text.len(), text.len() + 5] {
        let items = extract_items(text, cursor);
        assert!(items.cursor <= text.len());
        let lines = extract_jsonl_items(text, cursor);
        assert!(lines.cursor <= text.len());
    }
}

#[test]
fn never_panics_on_random_input() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let text = random_text(&mut rng);
        exercise(&text);
        // Truncations at every char boundary.
        if text.len() < 60 {
            for prefix in prefixes(&text) {
                let _ = parse_partial_json(prefix);
                let _ = extract_json(prefix);
            }
        }
    }
    // Arbitrary bytes (lossily decoded).
    for _ in 0..5_000 {
        let bytes: Vec<u8> = (0..rng.below(64)).map(|_| rng.next() as u8).collect();
        exercise(&String::from_utf8_lossy(&bytes));
    }
}

#[test]
fn never_overflows_the_stack() {
    for text in [
        "[".repeat(200_000),
        "{\"a\":".repeat(100_000),
        format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        format!("x {}", "{\"a\": [".repeat(50_000)),
    ] {
        exercise(&text);
    }
    // Nesting within the limit still parses.
    let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
    assert!(parse_lenient_json(&ok).is_ok());
    let too_deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert!(matches!(
        parse_lenient_json(&too_deep),
        Err(ExtractError::Malformed { .. })
    ));
}

#[test]
fn numbers_and_literals() {
    assert_eq!(parse_lenient_json("1e999"), Ok(Value::Null));
    assert_eq!(parse_lenient_json("-Infinity"), Ok(Value::Null));
    assert_eq!(parse_lenient_json("NaN"), Ok(Value::Null));
    assert_eq!(parse_lenient_json("0x1F"), Ok(json!(31)));
    assert_eq!(parse_lenient_json("-0x10"), Ok(json!(-16)));
    assert_eq!(parse_lenient_json("5."), Ok(json!(5)));
    assert_eq!(parse_lenient_json("-.5"), Ok(json!(-0.5)));
    assert_eq!(parse_lenient_json("007"), Ok(json!(7)));
    assert_eq!(
        parse_lenient_json("18446744073709551615"),
        Ok(json!(18446744073709551615u64))
    );
    assert!(parse_lenient_json("1.2.3").is_err());
    assert!(parse_lenient_json("tru").is_err());
    assert!(matches!(
        parse_lenient_json("[1, 2"),
        Err(ExtractError::Incomplete { .. })
    ));
    assert_eq!(
        parse_lenient_json("\"\\x41\\u0042\\\nC\""),
        Ok(json!("ABC"))
    );
    assert_eq!(parse_lenient_json("\"\\uD83D\""), Ok(json!("\u{fffd}")));
}
