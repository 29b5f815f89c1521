//! Stateful parsers of streamed `array` and `jsonl` output: each keeps its
//! place in the message text, so every chunk costs time in proportion to
//! its own text (plus the items it completes), not to the text so far.
//! They give the same items as [`extract_items`](crate::extract::extract_items)
//! and [`extract_jsonl_items`](crate::extract::extract_jsonl_items) called
//! with the previous text's cursor, as `parse_chunk` does.

use serde_json::Value;

use super::IncrementalParser;
use crate::extract::{ElementEnd, ElementScan, parse_lenient_json, skip_separators};

/// The `array` format's items, chunk by chunk.
#[derive(Debug, Default)]
pub(crate) struct ArrayItems {
    /// Where the next item may start; `None` before the array's `[`.
    cursor: Option<usize>,
    /// The text before this offset holds no `[`.
    searched: usize,
    /// The scan of the element that was incomplete at the last chunk.
    scan: Option<ElementScan>,
}

impl IncrementalParser for ArrayItems {
    fn push(&mut self, text: &str) -> Option<Value> {
        let mut items = Vec::new();
        let mut pos = match self.cursor {
            Some(cursor) => cursor,
            None => match text.get(self.searched..).and_then(|t| t.find('[')) {
                Some(i) => {
                    let start = self.searched + i + 1;
                    self.cursor = Some(start);
                    start
                }
                None => {
                    self.searched = text.len();
                    return Some(Value::Array(items));
                }
            },
        };
        loop {
            pos = skip_separators(text, pos);
            match text.as_bytes().get(pos) {
                None | Some(b']') => break,
                _ => {}
            }
            let mut scan = match self.scan.take() {
                Some(scan) if scan.start == pos => scan,
                _ => ElementScan::new(pos),
            };
            match scan.resume(text) {
                ElementEnd::Incomplete => {
                    self.scan = Some(scan);
                    break;
                }
                ElementEnd::Garbage(len) => pos += len,
                ElementEnd::Complete(end) => {
                    if let Ok(v) = parse_lenient_json(&text[pos..end]) {
                        items.push(v);
                    }
                    pos = end;
                    self.cursor = Some(end);
                }
            }
        }
        Some(Value::Array(items))
    }
}

/// The `jsonl` format's objects, chunk by chunk.
#[derive(Debug, Default)]
pub(crate) struct JsonlItems {
    /// Where the current line starts.
    cursor: usize,
    /// Brackets of the current line scanned so far, to try parsing an
    /// unterminated line only when its brackets balance.
    line: LineDepth,
}

/// Bracket depth of a line outside strings, scanned incrementally.
#[derive(Debug, Default)]
struct LineDepth {
    scanned: usize,
    depth: usize,
    quote: u8,
    escape: bool,
}

impl LineDepth {
    /// Scans up to `end`; `true` when the line ends outside any bracket.
    fn scan(&mut self, text: &[u8], end: usize) -> bool {
        for &b in &text[self.scanned.min(end)..end] {
            if self.quote != 0 {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == self.quote {
                    self.quote = 0;
                }
                continue;
            }
            match b {
                b'"' | b'\'' => self.quote = b,
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        self.scanned = end;
        self.depth == 0 && self.quote == 0
    }
}

impl IncrementalParser for JsonlItems {
    fn push(&mut self, text: &str) -> Option<Value> {
        let mut items = Vec::new();
        let bytes = text.as_bytes();
        loop {
            let from = self.line.scanned.max(self.cursor);
            match bytes[from..].iter().position(|&b| b == b'\n') {
                Some(nl) => {
                    let end = from + nl;
                    let line = text[self.cursor..end].trim();
                    if line.starts_with('{')
                        && let Ok(v) = parse_lenient_json(line)
                    {
                        items.push(v);
                    }
                    self.cursor = end + 1;
                    self.line = LineDepth {
                        scanned: self.cursor,
                        ..LineDepth::default()
                    };
                }
                None => {
                    // An unterminated line counts once it parses as a
                    // whole object, which needs its brackets balanced (a
                    // bracket inside a comment only delays it to its
                    // newline).
                    let balanced = self.line.scan(bytes, bytes.len());
                    let line = text[self.cursor..].trim();
                    if balanced
                        && line.starts_with('{')
                        && let Ok(v) = parse_lenient_json(line)
                    {
                        items.push(v);
                        self.cursor = text.len();
                        self.line = LineDepth {
                            scanned: self.cursor,
                            ..LineDepth::default()
                        };
                    }
                    break;
                }
            }
        }
        Some(Value::Array(items))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::{extract_items, extract_jsonl_items};

    /// Feeds `text` in pieces of `size` bytes (on char boundaries) to the
    /// incremental parser and to the cursor-based functions: same items.
    fn same_items(
        text: &str,
        size: usize,
        mut parser: impl IncrementalParser,
        whole: fn(&str, usize) -> crate::extract::ExtractedItems,
    ) {
        let mut ends: Vec<usize> = (size..text.len()).step_by(size).collect();
        ends.push(text.len());
        let mut prev = String::new();
        for end in ends {
            let mut end = end;
            while !text.is_char_boundary(end) {
                end += 1;
            }
            let now = &text[..end.min(text.len())];
            if now.len() == prev.len() {
                continue;
            }
            let cursor = if prev.is_empty() {
                0
            } else {
                whole(&prev, 0).cursor
            };
            let want = Value::Array(whole(now, cursor).items);
            assert_eq!(parser.push(now), Some(want), "{text:?} at {end}");
            prev = now.to_owned();
        }
    }

    #[test]
    fn array_items_match_the_cursor_based_reading() {
        let texts = [
            r#"Sure: [{"a": 1}, "two", 3, [4], {"b": "}"}, 5, 'x\'y', true ]"#,
            "```json\n[ {\"a\": [1, {\"b\": \"]\"}]}, /* c */ 2 , // d\n 3.5e2, null]\n```",
            "no array here, then [1,2,3] and [4]",
            "[ } x, {\"é\": \"ü\"}, tru, false]",
        ];
        for text in texts {
            for size in [1, 2, 3, 7, 1000] {
                same_items(text, size, ArrayItems::default(), extract_items);
            }
        }
    }

    #[test]
    fn jsonl_items_match_the_cursor_based_reading() {
        let texts = [
            "{\"a\": 1}\nnot json\n{\"b\": {\"c\": \"}\"}}\r\n\n{\"d\": [1, 2]}",
            "  {\"a\": 'x'}  \n{bad}\n{\"b\": 2} trailing\n{\"é\": \"ü\"}",
        ];
        for text in texts {
            for size in [1, 2, 5, 1000] {
                same_items(text, size, JsonlItems::default(), extract_jsonl_items);
            }
        }
    }

    #[test]
    fn a_long_element_is_scanned_once() {
        let mut items = ArrayItems::default();
        let mut text = String::from("[{\"s\": \"");
        for _ in 0..1000 {
            text.push_str("0123456789");
            assert_eq!(items.push(&text), Some(Value::Array(vec![])));
        }
        let scan = items.scan.expect("an element in progress");
        assert_eq!(scan, {
            let mut fresh = ElementScan::new(1);
            fresh.resume(&text);
            fresh
        });
        text.push_str("\"}]");
        assert_eq!(
            items.push(&text).map(|v| v[0]["s"].as_str().map(str::len)),
            Some(Some(10_000))
        );
    }
}
