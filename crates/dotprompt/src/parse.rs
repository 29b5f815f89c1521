//! Splitting a prompt source into YAML frontmatter and template body.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Number, Value};

use crate::error::{Error, Location, Result};
use crate::types::{JsonMap, ParsedPrompt, PromptMetadata};

/// Frontmatter keys that map onto [`PromptMetadata`] fields. Other keys are
/// kept only in `raw`, or in `ext` when they contain a dot.
const RESERVED_KEYS: &[&str] = &[
    "config",
    "description",
    "ext",
    "input",
    "model",
    "name",
    "output",
    "raw",
    "toolDefs",
    "tools",
    "variant",
    "version",
];

/// A parsed prompt plus where its template body starts in the source.
#[derive(Debug, Clone)]
pub(crate) struct Document {
    pub(crate) prompt: ParsedPrompt,
    /// Number of lines in the source before the first line of the body.
    pub(crate) body_line_offset: usize,
}

/// Parses a prompt source into metadata and template.
///
/// The source may start with blank lines and `#` comment lines (e.g. a
/// license header), then YAML frontmatter between two `---` lines. Without
/// frontmatter the whole source is the template.
pub fn parse_document(source: &str) -> Result<ParsedPrompt> {
    parse_with_offsets(source).map(|doc| doc.prompt)
}

pub(crate) fn parse_with_offsets(source: &str) -> Result<Document> {
    let Some(split) = split_frontmatter(source) else {
        return Ok(Document {
            prompt: ParsedPrompt {
                meta: base_metadata(),
                template: source.to_owned(),
            },
            body_line_offset: 0,
        });
    };

    let raw = parse_yaml(split.frontmatter, split.frontmatter_line)?;
    let mut pruned = JsonMap::new();
    let mut ext: BTreeMap<String, JsonMap> = BTreeMap::new();
    for (key, value) in &raw {
        if RESERVED_KEYS.contains(&key.as_str()) {
            pruned.insert(key.clone(), value.clone());
        } else if let Some(dot) = key.rfind('.') {
            ext.entry(key[..dot].to_owned())
                .or_default()
                .insert(key[dot + 1..].to_owned(), value.clone());
        }
    }

    let mut meta: PromptMetadata =
        serde_json::from_value(Value::Object(pruned)).map_err(|e| Error::Frontmatter {
            message: e.to_string(),
            location: Location {
                prompt: raw.get("name").and_then(Value::as_str).map(str::to_owned),
                line: Some(split.frontmatter_line),
                ..Location::default()
            },
        })?;
    meta.raw = Some(Arc::new(raw));
    meta.ext = Some(ext);
    meta.metadata = Some(JsonMap::new());
    if meta.config.is_none() {
        meta.config = Some(JsonMap::new());
    }

    let trimmed_start = split.body.trim_start();
    let skipped = &split.body[..split.body.len() - trimmed_start.len()];
    Ok(Document {
        prompt: ParsedPrompt {
            meta,
            template: trimmed_start.trim_end().to_owned(),
        },
        body_line_offset: split.body_line + count_lines(skipped),
    })
}

/// Metadata every parsed prompt starts from.
fn base_metadata() -> PromptMetadata {
    PromptMetadata {
        config: Some(JsonMap::new()),
        ext: Some(BTreeMap::new()),
        metadata: Some(JsonMap::new()),
        ..PromptMetadata::default()
    }
}

struct Split<'a> {
    frontmatter: &'a str,
    /// 1-based line of the first frontmatter line.
    frontmatter_line: usize,
    body: &'a str,
    /// Lines before the body.
    body_line: usize,
}

/// Finds `---` frontmatter, allowing blank and `#` comment lines before it.
fn split_frontmatter(source: &str) -> Option<Split<'_>> {
    let mut pos = 0;
    let mut line = 0;
    // Skip blank and comment lines before the opening delimiter.
    loop {
        let rest = &source[pos..];
        let eol = rest.find('\n')?;
        let content = &rest[..eol];
        let skippable = content.starts_with('#') || content.chars().all(|c| c == ' ' || c == '\t');
        if !skippable {
            break;
        }
        pos += eol + 1;
        line += 1;
    }

    let after_open = delimiter_line(&source[pos..])?;
    let fm_start = pos + after_open;
    line += 1;

    if let Some(len) = delimiter_line(&source[fm_start..]) {
        // Empty frontmatter.
        return Some(Split {
            frontmatter: "",
            frontmatter_line: line + 1,
            body: &source[fm_start + len..],
            body_line: line + 1,
        });
    }

    // The closing delimiter: the first line break followed by a `---` line.
    let mut search = fm_start;
    loop {
        let rest = &source[search..];
        let nl = rest.find(['\n', '\r'])?;
        let nl_len = newline_len(&rest[nl..]);
        let candidate = search + nl + nl_len;
        if let Some(len) = delimiter_line(&source[candidate..]) {
            let frontmatter = &source[fm_start..search + nl];
            return Some(Split {
                frontmatter,
                frontmatter_line: line + 1,
                body: &source[candidate + len..],
                body_line: line + count_lines(frontmatter) + 2,
            });
        }
        search += nl + nl_len;
    }
}

/// If `s` starts with a `---` line (trailing whitespace allowed), returns the
/// length of that line including its line break (or up to the end of `s`).
fn delimiter_line(s: &str) -> Option<usize> {
    let rest = s.strip_prefix("---")?;
    let trailing = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let after = &rest[trailing..];
    if after.is_empty() {
        return Some(s.len());
    }
    let nl = newline_len(after);
    (nl > 0).then_some(3 + trailing + nl)
}

fn newline_len(s: &str) -> usize {
    if s.starts_with("\r\n") {
        2
    } else if s.starts_with(['\n', '\r']) {
        1
    } else {
        0
    }
}

/// Counts line breaks (`\r\n`, `\n` or `\r`).
fn count_lines(s: &str) -> usize {
    s.matches('\n').count() + s.matches('\r').count() - s.matches("\r\n").count()
}

/// Parses frontmatter YAML into a JSON object.
fn parse_yaml(text: &str, first_line: usize) -> Result<JsonMap> {
    let yaml: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (Some(first_line + l.line() - 1), Some(l.column())))
            .unwrap_or((None, None));
        Error::Frontmatter {
            message: shift_lines(&e.to_string(), first_line - 1),
            location: Location {
                line,
                column,
                ..Location::default()
            },
        }
    })?;
    match yaml_to_json(yaml) {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(Error::Frontmatter {
            message: format!("frontmatter must be a YAML mapping, got {other}"),
            location: Location {
                line: Some(first_line),
                ..Location::default()
            },
        }),
    }
}

/// Adds `offset` to every `line N` in a YAML error message, whose lines
/// count from the start of the frontmatter, so they count from the source's.
fn shift_lines(message: &str, offset: usize) -> String {
    const WORD: &str = "line ";
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(WORD) {
        let (before, after) = rest.split_at(at + WORD.len());
        out.push_str(before);
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        match after[..digits].parse::<usize>() {
            Ok(line) => out.push_str(&(line + offset).to_string()),
            Err(_) => out.push_str(&after[..digits]),
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Converts YAML to JSON; non-string keys are stringified, tags dropped and
/// non-finite floats become `null`.
fn yaml_to_json(yaml: serde_yaml::Value) -> Value {
    use serde_yaml::Value as Y;
    match yaml {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(Number::from_f64)
                    .map_or(Value::Null, Value::Number)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(items) => Value::Array(items.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (yaml_key(k), yaml_to_json(v)))
                .collect(),
        ),
        Y::Tagged(tagged) => yaml_to_json(tagged.value),
    }
}

fn yaml_key(key: serde_yaml::Value) -> String {
    match yaml_to_json(key) {
        Value::String(s) => s,
        Value::Null => "null".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_frontmatter_keeps_source_verbatim() {
        let doc = parse_document("  Hello {{name}}!\n").unwrap();
        assert_eq!(doc.template, "  Hello {{name}}!\n");
        assert_eq!(doc.meta.raw, None);
        assert_eq!(doc.meta.config, Some(JsonMap::new()));
        assert_eq!(doc.meta.ext, Some(BTreeMap::new()));
    }

    #[test]
    fn frontmatter_and_body() {
        let doc = parse_document("---\nmodel: m\nconfig:\n  temperature: 1\n---\n\nHi\n").unwrap();
        assert_eq!(doc.meta.model.as_deref(), Some("m"));
        assert_eq!(
            serde_json::to_value(&doc.meta.config).unwrap(),
            json!({"temperature": 1})
        );
        assert_eq!(doc.template, "Hi");
    }

    #[test]
    fn crlf_line_endings() {
        let doc = parse_document("---\r\nmodel: m\r\nname: n\r\n---\r\nHello\r\n").unwrap();
        assert_eq!(doc.meta.model.as_deref(), Some("m"));
        assert_eq!(doc.meta.name.as_deref(), Some("n"));
        assert_eq!(doc.template, "Hello");
    }

    #[test]
    fn comments_and_blank_lines_before_frontmatter() {
        let src =
            "# Copyright 2025\n# SPDX-License-Identifier: Apache-2.0\n\n---\nmodel: m\n---\nBody";
        let doc = parse_document(src).unwrap();
        assert_eq!(doc.meta.model.as_deref(), Some("m"));
        assert_eq!(doc.template, "Body");
    }

    #[test]
    fn closing_delimiter_at_end_of_input() {
        let doc = parse_document("---\nmodel: m\n---").unwrap();
        assert_eq!(doc.meta.model.as_deref(), Some("m"));
        assert_eq!(doc.template, "");
    }

    #[test]
    fn text_before_delimiter_means_no_frontmatter() {
        let src = "Hello\n---\nmodel: m\n---\n";
        let doc = parse_document(src).unwrap();
        assert_eq!(doc.template, src);
        assert_eq!(doc.meta.model, None);
    }

    #[test]
    fn namespaced_keys_go_to_ext_and_everything_to_raw() {
        let src = "---\nmodel: m\ncustom: 1\na.b: 2\na.c: 3\nx.y.z: 4\n---\n";
        let doc = parse_document(src).unwrap();
        assert_eq!(
            serde_json::to_value(&doc.meta.ext).unwrap(),
            json!({"a": {"b": 2, "c": 3}, "x.y": {"z": 4}})
        );
        let raw = Value::Object(JsonMap::clone(doc.meta.raw.as_deref().unwrap()));
        assert_eq!(
            raw,
            json!({"model": "m", "custom": 1, "a.b": 2, "a.c": 3, "x.y.z": 4})
        );
    }

    #[test]
    fn malformed_yaml_reports_source_line() {
        let src = "# header\n---\nmodel: m\nconfig: [1, 2\n---\nbody";
        let err = parse_document(src).unwrap_err();
        match err {
            Error::Frontmatter { location, message } => {
                let line = location.line.unwrap();
                assert!((4..=5).contains(&line), "line {line}");
                // The YAML parser's own positions count from the source too.
                assert!(message.contains("at line 4 column"), "{message}");
            }
            other => panic!("unexpected error {other}"),
        }
    }

    #[test]
    fn wrongly_typed_reserved_key_is_an_error() {
        let err = parse_document("---\nname: p\nconfig: 5\n---\nx").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("malformed frontmatter"), "{text}");
        assert!(text.contains("prompt `p`"), "{text}");
    }

    #[test]
    fn body_line_offset_counts_frontmatter() {
        let doc = parse_with_offsets("---\nmodel: m\n---\n\nHi").unwrap();
        assert_eq!(doc.body_line_offset, 4);
        assert_eq!(parse_with_offsets("Hi").unwrap().body_line_offset, 0);
    }
}
