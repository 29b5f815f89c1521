//! URI templates (RFC 6570) for resources, reduced to what resource URIs
//! use: literal text with simple `{var}` and reserved `{+var}` expressions.
//! A template is matched against a URI (the reverse of expansion) to find
//! the resource serving it and the values of its variables.

use genkit_core::{Error, Result};
use std::collections::BTreeMap;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `{name}` (`reserved: false`) or `{+name}` (`reserved: true`).
    Variable {
        name: String,
        reserved: bool,
    },
}

/// A URI template such as `users://{id}/profile` or `files:///{+path}`.
///
/// `{var}` stands for a non-empty value without `/`, `?` or `#` (one path
/// segment); `{+var}` for any non-empty value, slashes included. Matched
/// values are percent-decoded. Other RFC 6570 operators (`{#x}`, `{/x}`,
/// `{?x}`, ...), value modifiers (`{x*}`, `{x:3}`) and lists (`{x,y}`) are
/// refused when the template is parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    source: String,
    segments: Vec<Segment>,
}

impl UriTemplate {
    /// Parses `template`; an unclosed brace, an empty or invalid variable
    /// name, or an unsupported operator is `INVALID_ARGUMENT`.
    pub fn parse(template: &str) -> Result<Self> {
        let invalid =
            |why: &str| Error::invalid_argument(format!("URI template `{template}`: {why}"));
        let mut segments = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(i) if rest.as_bytes()[i] == b'}' => {
                    return Err(invalid("`}` without `{`"));
                }
                Some(i) => {
                    if i > 0 {
                        segments.push(Segment::Literal(rest[..i].to_owned()));
                    }
                    let after = &rest[i + 1..];
                    let end = after.find('}').ok_or_else(|| invalid("unclosed `{`"))?;
                    let expr = &after[..end];
                    let (name, reserved) = match expr.strip_prefix('+') {
                        Some(name) => (name, true),
                        None => (expr, false),
                    };
                    if let Some(op) = name.chars().next().filter(|c| "#./;?&=,!@|".contains(*c)) {
                        return Err(invalid(&format!("the operator `{op}` is not supported")));
                    }
                    if name.is_empty() || !name.chars().all(is_varchar) {
                        return Err(invalid(&format!(
                            "`{{{expr}}}` is not a simple variable (letters, digits, `_` and `.` only)"
                        )));
                    }
                    if segments
                        .iter()
                        .any(|s| matches!(s, Segment::Variable { name: n, .. } if n == name))
                    {
                        return Err(invalid(&format!("the variable `{name}` appears twice")));
                    }
                    segments.push(Segment::Variable {
                        name: name.to_owned(),
                        reserved,
                    });
                    rest = &after[end + 1..];
                }
                None => {
                    segments.push(Segment::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Ok(Self {
            source: template.to_owned(),
            segments,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// The variable names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Variable { name, .. } => Some(name.as_str()),
            Segment::Literal(_) => None,
        })
    }

    /// The variables' values if `uri` is an expansion of this template
    /// (`None` if it is not).
    pub fn match_uri(&self, uri: &str) -> Option<BTreeMap<String, String>> {
        let mut raw = Vec::new();
        if !match_from(&self.segments, uri, &mut raw) {
            return None;
        }
        raw.into_iter()
            .map(|(name, value)| Some((name.to_owned(), percent_decode(value)?)))
            .collect()
    }

    /// Whether `uri` is an expansion of this template.
    pub fn matches(&self, uri: &str) -> bool {
        self.match_uri(uri).is_some()
    }
}

impl std::fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.source)
    }
}

/// RFC 6570's `varchar` (letters, digits, `_`), plus `.` between them and
/// `%` for pct-encoded names.
fn is_varchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%'
}

/// Matches `segments` against all of `input`, collecting variable values.
/// A variable takes the shortest value that lets the rest match
/// (backtracking), so `{a}.{b}` splits `x.y.z` as `x` and `y.z`.
fn match_from<'t, 'u>(
    segments: &'t [Segment],
    input: &'u str,
    out: &mut Vec<(&'t str, &'u str)>,
) -> bool {
    let Some((first, rest)) = segments.split_first() else {
        return input.is_empty();
    };
    match first {
        Segment::Literal(lit) => input
            .strip_prefix(lit.as_str())
            .is_some_and(|after| match_from(rest, after, out)),
        Segment::Variable { name, reserved } => {
            let allowed = |c: char| *reserved || !matches!(c, '/' | '?' | '#');
            let longest = input.find(|c| !allowed(c)).unwrap_or(input.len());
            let ends = input[..longest]
                .char_indices()
                .map(|(i, _)| i)
                .skip(1)
                .chain(std::iter::once(longest))
                .filter(|&end| end > 0);
            for end in ends {
                out.push((name.as_str(), &input[..end]));
                if match_from(rest, &input[end..], out) {
                    return true;
                }
                out.pop();
            }
            false
        }
    }
}

/// Decodes `%XX` escapes; `None` if an escape is malformed or the result is
/// not UTF-8.
fn percent_decode(value: &str) -> Option<String> {
    if !value.contains('%') {
        return Some(value.to_owned());
    }
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(t: &str, uri: &str) -> Option<Vec<(String, String)>> {
        UriTemplate::parse(t)
            .unwrap()
            .match_uri(uri)
            .map(|m| m.into_iter().collect())
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    #[test]
    fn simple_variables_match_one_segment() {
        assert_eq!(
            vars("users://{id}/profile", "users://42/profile"),
            Some(vec![pair("id", "42")])
        );
        assert_eq!(vars("users://{id}/profile", "users://4/2/profile"), None);
        assert_eq!(vars("users://{id}/profile", "users:///profile"), None);
        assert_eq!(vars("users://{id}", "users://42?x=1"), None);
        assert_eq!(vars("users://{id}", "other://42"), None);
        assert_eq!(
            vars("files://{dir}/{name}.{ext}", "files://a/b.c.txt"),
            Some(vec![
                pair("dir", "a"),
                pair("ext", "c.txt"),
                pair("name", "b")
            ])
        );
    }

    #[test]
    fn reserved_variables_span_slashes_and_values_are_decoded() {
        assert_eq!(
            vars("file:///{+path}", "file:///a/b%20c.txt"),
            Some(vec![pair("path", "a/b c.txt")])
        );
        assert_eq!(
            vars("docs://{+path}/meta", "docs://x/y/meta"),
            Some(vec![pair("path", "x/y")])
        );
        assert_eq!(vars("u://{id}", "u://%zz"), None);
        assert_eq!(
            vars("u://{id}", "u://caf%C3%A9"),
            Some(vec![pair("id", "café")])
        );
    }

    #[test]
    fn templates_without_variables_match_exactly() {
        let t = UriTemplate::parse("test://readme").unwrap();
        assert!(t.matches("test://readme"));
        assert!(!t.matches("test://readme2"));
        assert_eq!(t.variables().count(), 0);
        assert_eq!(t.to_string(), "test://readme");
    }

    #[test]
    fn unsupported_templates_are_refused() {
        for bad in [
            "u://{",
            "u://}",
            "u://{}",
            "u://{#x}",
            "u://{/x}",
            "u://{?x}",
            "u://{x*}",
            "u://{x:3}",
            "u://{x,y}",
            "u://{x}/{x}",
        ] {
            let err = UriTemplate::parse(bad).unwrap_err();
            assert_eq!(
                err.status(),
                genkit_core::StatusCode::InvalidArgument,
                "{bad}"
            );
        }
        let t = UriTemplate::parse("u://{a}/{+b}").unwrap();
        assert_eq!(t.variables().collect::<Vec<_>>(), ["a", "b"]);
    }
}
