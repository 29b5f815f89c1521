//! Parsing Handlebars templates (with handlebars-rust's parser; its
//! renderer is not used) and inspecting their syntax tree.
//!
//! The parser reads `@`-paths as block variables (`@index`, `@key`,
//! `@first`, `@last`) and keeps no path after them (`@state.count`).
//! Dotprompt exposes arbitrary `@`-data, so after parsing, every other
//! `@name.path` reference is rewritten into a call of a hidden helper,
//! which the renderer plans as a lookup in the render's data
//! (`helpers::DataScope`).

use std::borrow::Cow;
use std::collections::HashMap;

use handlebars::template::{
    DecoratorTemplate, HelperTemplate, Parameter, Subexpression, Template, TemplateElement,
    TemplateMapping,
};
use handlebars::{Path, TemplateError, TemplateErrorReason};
use serde_json::Value;

use crate::helpers::DATA_HELPER;

/// Blocks nested deeper than this are refused when a template is compiled,
/// so that nothing that walks or renders it can run out of stack.
const MAX_NESTING: usize = 128;

/// How deeply blocks nest in `template` (stops counting past the limit).
fn nesting(template: &Template, depth: usize) -> usize {
    if depth > MAX_NESTING {
        return depth;
    }
    template
        .elements
        .iter()
        .flat_map(bodies)
        .map(|body| nesting(body, depth + 1))
        .fold(depth, usize::max)
}

/// The templates nested in `element`: a block's body and `{{else}}`, a
/// partial block's or decorator block's body.
fn bodies(element: &TemplateElement) -> impl Iterator<Item = &Template> {
    let (first, second) = match element {
        TemplateElement::HelperBlock(ht) => (ht.template.as_ref(), ht.inverse.as_ref()),
        TemplateElement::DecoratorBlock(dt) | TemplateElement::PartialBlock(dt) => {
            (dt.template.as_ref(), None)
        }
        _ => (None, None),
    };
    first.into_iter().chain(second)
}

/// `@`-variables that handlebars-rust provides itself.
const BLOCK_LOCALS: &[&str] = &["index", "key", "first", "last"];

/// Parses `source` and rewrites its `@`-data references.
pub(crate) fn compile(source: &str, name: Option<&str>) -> Result<Template, TemplateError> {
    let source = to_handlebars_rust_syntax(standalone_last_line(source));
    let mut template = match name {
        Some(name) => Template::compile_with_name(&source, name.to_owned())?,
        None => Template::compile(&source)?,
    };
    // Rendering (and every pass over the tree) recurses once per level.
    if nesting(&template, 0) > MAX_NESTING {
        return Err(TemplateError::of(TemplateErrorReason::InvalidSyntax(
            format!("blocks nest more than {MAX_NESTING} deep"),
        )));
    }
    rewrite_template(&mut template);
    keep_standalone_indents(&mut template, &source);
    Ok(template)
}

/// Handlebars.js treats a block tag (or partial, or comment) alone on the
/// template's last line as standalone (its line's whitespace removed) also
/// when spaces or tabs follow it; handlebars-rust only when nothing does.
/// Drops that trailing whitespace, so both read it the same.
fn standalone_last_line(source: &str) -> &str {
    let line_start = source.rfind('\n').map_or(0, |i| i + 1);
    let last = &source[line_start..];
    let tag = last.trim_matches([' ', '\t']);
    let trimmed = tag.len() + (last.len() - last.trim_start_matches([' ', '\t']).len());
    let is_block_tag = tag.starts_with("{{")
        && tag.ends_with("}}")
        && tag.matches("{{").count() == 1
        && matches!(
            tag.trim_start_matches("{{")
                .trim_start_matches('~')
                .chars()
                .next(),
            Some('#' | '/' | '^' | '!' | '>')
        )
        || tag.trim_matches(['{', '}', '~', ' ']) == "else";
    if is_block_tag && trimmed < last.len() && !tag.is_empty() {
        &source[..line_start + trimmed]
    } else {
        source
    }
}

/// Rewrites what Handlebars.js reads differently from handlebars-rust,
/// inside tags only (text, comments, raw blocks and escaped `\{{` are left
/// alone), before parsing:
///
/// - a lone `.` is `this` (`{{.}}`, `{{#each .}}`, `{{json .}}`), which
///   handlebars-rust's grammar rejects;
/// - a string literal is taken as written, except `\"` (or `\'`), while
///   handlebars-rust reads it as JSON: other backslashes are doubled and
///   control characters escaped, so that reading yields the same text.
///
/// (A position reported later on the same line moves right with each
/// rewrite.)
fn to_handlebars_rust_syntax(source: &str) -> Cow<'_, str> {
    // Only ASCII bytes are compared, so every index is a char boundary.
    let b = source.as_bytes();
    let find = |from: usize, what: &[u8]| -> usize {
        b.get(from..)
            .and_then(|rest| rest.windows(what.len()).position(|w| w == what))
            .map_or(b.len(), |at| from + at)
    };
    let opens = |c: u8| matches!(c, b'{' | b'~' | b'(' | b'=' | b'&') || c.is_ascii_whitespace();
    let closes = |c: u8| matches!(c, b'}' | b'~' | b')') || c.is_ascii_whitespace();
    // (byte offset, bytes replaced, replacement)
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"\\{{") {
            i += 3;
        } else if !rest.starts_with(b"{{") {
            i += 1;
        } else if rest.starts_with(b"{{{{") {
            // A raw block: its body is text up to the closing raw tag.
            let body = find(i + 4, b"}}}}") + 4;
            i = find(find(body, b"{{{{/"), b"}}}}") + 4;
        } else if rest.starts_with(b"{{!--") {
            i = find(i + 5, b"--}}") + 4;
        } else if rest.starts_with(b"{{!") {
            i = find(i + 3, b"}}") + 2;
        } else {
            let mut j = i + 2;
            let mut quote = None;
            let mut in_key = false;
            while j < b.len() {
                let c = b[j];
                if let Some(q) = quote {
                    if c == q {
                        quote = None;
                    } else if c == b'\\' && b.get(j + 1) == Some(&q) {
                        j += 1;
                    } else if c == b'\\' {
                        edits.push((j, 1, "\\\\".to_owned()));
                    } else if c < 0x20 {
                        edits.push((j, 1, format!("\\u{c:04x}")));
                    }
                } else if in_key {
                    in_key = c != b']';
                } else if c == b'"' || c == b'\'' {
                    quote = Some(c);
                } else if c == b'[' {
                    in_key = true;
                } else if c == b'}' && b.get(j + 1) == Some(&b'}') {
                    break;
                } else if c == b'.' && opens(b[j - 1]) && b.get(j + 1).is_none_or(|&n| closes(n)) {
                    edits.push((j, 1, "this".to_owned()));
                }
                j += 1;
            }
            i = j + 2;
        }
    }
    if edits.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 4 * edits.len());
    let mut from = 0;
    for (at, len, replacement) in edits {
        out.push_str(&source[from..at]);
        out.push_str(&replacement);
        from = at + len;
    }
    out.push_str(&source[from..]);
    Cow::Owned(out)
}

/// A readable message for a template syntax error in `source`. The parser's
/// list of every token it would have accepted is replaced by a short
/// description; an error at the very end usually means a block was left open.
pub(crate) fn syntax_message(e: &TemplateError, source: &str) -> String {
    let TemplateErrorReason::InvalidSyntax(detail) = e.reason() else {
        return e.reason().to_string();
    };
    if !detail.starts_with("expected ") {
        return e.reason().to_string();
    }
    let end = end_position(source);
    if e.pos() == Some(end) {
        "unexpected end of template (is a `{{#block}}` left unclosed?)".to_owned()
    } else {
        "invalid Handlebars syntax".to_owned()
    }
}

/// The 1-based (line, column) just past the last character of `source`.
fn end_position(source: &str) -> (usize, usize) {
    let line = source.matches('\n').count() + 1;
    let last = source.rsplit('\n').next().unwrap_or_default();
    (line, last.chars().count() + 1)
}

/// Position of an element in its template, 1-based.
pub(crate) type Position = Option<(usize, usize)>;

/// Helper calls and partial inclusions found in a template.
#[derive(Debug, Default)]
pub(crate) struct Usage {
    /// Helpers that must be registered: those called with arguments, as a
    /// block, or in a subexpression.
    pub(crate) helpers: Vec<(String, Position)>,
    /// Partials included by a static name.
    pub(crate) partials: Vec<(String, Position)>,
}

/// Lists the helpers and partials `template` uses (nested blocks included).
pub(crate) fn usage(template: &Template) -> Usage {
    let mut usage = Usage::default();
    collect_template(template, &mut usage);
    usage
}

fn collect_template(template: &Template, usage: &mut Usage) {
    for (index, element) in template.elements.iter().enumerate() {
        let pos = template
            .mapping
            .get(index)
            .map(|mapping: &TemplateMapping| (mapping.0, mapping.1));
        collect_element(element, pos, usage);
    }
}

fn collect_element(element: &TemplateElement, pos: Position, usage: &mut Usage) {
    match element {
        TemplateElement::Expression(ht) | TemplateElement::HtmlExpression(ht) => {
            let is_call = !ht.params.is_empty() || !ht.hash.is_empty();
            collect_helper(ht, is_call, pos, usage);
        }
        TemplateElement::HelperBlock(ht) => collect_helper(ht, true, pos, usage),
        TemplateElement::PartialExpression(dt) | TemplateElement::PartialBlock(dt) => {
            if let Parameter::Name(_) | Parameter::Path(_) = &dt.name
                && let Some(name) = dt.name.as_name().filter(|n| *n != "@partial-block")
            {
                usage.partials.push((name.to_owned(), pos));
            }
            collect_decorator(dt, pos, usage);
        }
        TemplateElement::DecoratorExpression(dt) | TemplateElement::DecoratorBlock(dt) => {
            collect_decorator(dt, pos, usage);
        }
        _ => {}
    }
}

fn collect_helper(ht: &HelperTemplate, is_call: bool, pos: Position, usage: &mut Usage) {
    if is_call && let Some(name) = ht.name.as_name().filter(|n| *n != DATA_HELPER) {
        usage.helpers.push((name.to_owned(), pos));
    }
    collect_params(&ht.params, &ht.hash, pos, usage);
    for body in [&ht.template, &ht.inverse].into_iter().flatten() {
        collect_template(body, usage);
    }
}

fn collect_decorator(dt: &DecoratorTemplate, pos: Position, usage: &mut Usage) {
    if let Parameter::Subexpression(sub) = &dt.name {
        collect_element(&sub.element, pos, usage);
    }
    collect_params(&dt.params, &dt.hash, pos, usage);
    if let Some(body) = &dt.template {
        collect_template(body, usage);
    }
}

fn collect_params(
    params: &[Parameter],
    hash: &HashMap<String, Parameter>,
    pos: Position,
    usage: &mut Usage,
) {
    for param in params.iter().chain(hash.values()) {
        if let Parameter::Subexpression(sub) = param
            && let TemplateElement::Expression(ht) = sub.element.as_ref()
        {
            collect_helper(ht, true, pos, usage);
        }
    }
}

/// handlebars-rust records the whitespace before every partial tag as the
/// partial's indentation; Handlebars.js indents a partial only when it is
/// standalone (alone on its line, blanks around it). Drops the others.
fn keep_standalone_indents(template: &mut Template, source: &str) {
    for i in 0..template.elements.len() {
        let at = template.mapping.get(i).map(|m| (m.0, m.1));
        match &mut template.elements[i] {
            TemplateElement::PartialExpression(dt)
                if dt.indent.is_some()
                    && !at.is_some_and(|(line, column)| standalone_tag(source, line, column)) =>
            {
                dt.indent = None;
            }
            TemplateElement::HelperBlock(ht) => {
                for body in [&mut ht.template, &mut ht.inverse].into_iter().flatten() {
                    keep_standalone_indents(body, source);
                }
            }
            TemplateElement::DecoratorBlock(dt) | TemplateElement::PartialBlock(dt) => {
                if let Some(body) = &mut dt.template {
                    keep_standalone_indents(body, source);
                }
            }
            _ => {}
        }
    }
}

/// Whether the tag starting at `line`:`column` (1-based, in characters) of
/// `source` is a standalone partial that keeps its indentation: only spaces
/// or tabs before it, only blanks after it up to the end of the line or of
/// the template, and the whitespace before it not already taken by a `~`
/// of the tag before.
fn standalone_tag(source: &str, line: usize, column: usize) -> bool {
    let line_start: usize = source
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    let Some(line_text) = source[line_start..].split('\n').next() else {
        return false;
    };
    let start = line_text
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(line_text.len(), |(i, _)| i);
    let (before, from_tag) = line_text.split_at(start);
    let Some(end) = from_tag.find("}}") else {
        return false;
    };
    let after = &from_tag[end + 2..];
    // A `~}}` of the tag before takes the whitespace first, unless that tag
    // opens a block (`{{#x~}}`, `{{else~}}`): Handlebars.js handles the
    // block's body, indentation included, before that `~`.
    let prefix = source[..line_start].trim_end_matches([' ', '\t', '\r', '\n']);
    let stripped_by_tilde = prefix.ends_with("~}}")
        && prefix.rfind("{{").is_none_or(|open| {
            let kind = prefix[open + 2..].trim_start_matches('~').trim_start();
            !(kind.starts_with('#') || kind.starts_with('^') || kind.starts_with("else"))
        });
    before.chars().all(|c| c == ' ' || c == '\t')
        && after.chars().all(|c| matches!(c, ' ' | '\t' | '\r'))
        && !stripped_by_tilde
}

fn rewrite_template(template: &mut Template) {
    template.elements = std::mem::take(&mut template.elements)
        .into_iter()
        .map(|mut element| {
            rewrite_element(&mut element);
            // Output is never escaped: `{{x}}` is `{{{x}}}`.
            match element {
                TemplateElement::Expression(ht) => TemplateElement::HtmlExpression(ht),
                other => other,
            }
        })
        .collect();
}

fn rewrite_element(element: &mut TemplateElement) {
    match element {
        TemplateElement::Expression(ht) | TemplateElement::HtmlExpression(ht) => {
            let data_path = match &ht.name {
                Parameter::Path(path) if ht.params.is_empty() && ht.hash.is_empty() => {
                    data_path(path)
                }
                _ => None,
            };
            match data_path {
                Some(segments) => {
                    ht.name = Parameter::Name(DATA_HELPER.to_owned());
                    ht.params = vec![Parameter::Literal(segments)];
                }
                None => rewrite_helper(ht),
            }
        }
        TemplateElement::HelperBlock(ht) => rewrite_helper(ht),
        TemplateElement::PartialExpression(dt)
        | TemplateElement::PartialBlock(dt)
        | TemplateElement::DecoratorExpression(dt)
        | TemplateElement::DecoratorBlock(dt) => {
            rewrite_params(&mut dt.params, &mut dt.hash);
            if let Some(body) = &mut dt.template {
                rewrite_template(body);
            }
        }
        _ => {}
    }
}

fn rewrite_helper(ht: &mut HelperTemplate) {
    rewrite_params(&mut ht.params, &mut ht.hash);
    for body in [&mut ht.template, &mut ht.inverse].into_iter().flatten() {
        rewrite_template(body);
    }
}

fn rewrite_params(params: &mut [Parameter], hash: &mut HashMap<String, Parameter>) {
    for param in params.iter_mut().chain(hash.values_mut()) {
        rewrite_param(param);
    }
}

fn rewrite_param(param: &mut Parameter) {
    match param {
        Parameter::Path(path) => {
            if let Some(segments) = data_path(path) {
                *param = Parameter::Subexpression(Subexpression::new(
                    Parameter::Name(DATA_HELPER.to_owned()),
                    vec![Parameter::Literal(segments)],
                    HashMap::new(),
                ));
            }
        }
        Parameter::Subexpression(sub) => rewrite_element(&mut sub.element),
        _ => {}
    }
}

/// For an `@`-data path (not a handlebars block variable), its segments as a
/// JSON array: `@state.count` gives `["state", "count"]`.
fn data_path(path: &Path) -> Option<Value> {
    let Path::Local((_, name, raw)) = path else {
        return None;
    };
    let segments = split_path(raw);
    if segments.len() == 1 && BLOCK_LOCALS.contains(&name.as_str()) {
        return None;
    }
    Some(Value::Array(
        segments.into_iter().map(Value::String).collect(),
    ))
}

/// Splits `@../a.b/[c d]` into `["a", "b", "c d"]`.
fn split_path(raw: &str) -> Vec<String> {
    let mut rest = raw.strip_prefix('@').unwrap_or(raw);
    while let Some(stripped) = rest.strip_prefix("../") {
        rest = stripped;
    }
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut in_brackets = false;
    for c in rest.chars() {
        match c {
            '[' if !in_brackets && current.is_empty() => in_brackets = true,
            ']' if in_brackets => in_brackets = false,
            '.' | '/' if !in_brackets => segments.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    segments.push(current);
    segments.retain(|s| !s.is_empty());
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_messages_are_short() {
        let source = "a\n{{#if x}}\nb";
        let e = compile(source, None).unwrap_err();
        assert_eq!(
            syntax_message(&e, source),
            "unexpected end of template (is a `{{#block}}` left unclosed?)"
        );
        let source = "a {{#if x}}b{{/each}}";
        let e = compile(source, None).unwrap_err();
        assert!(syntax_message(&e, source).contains("\"if\" was opened"));
        let source = "{{foo bar=}} tail";
        let e = compile(source, None).unwrap_err();
        assert_eq!(syntax_message(&e, source), "invalid Handlebars syntax");
    }

    #[test]
    fn a_block_tag_on_the_last_line_is_standalone_despite_trailing_blanks() {
        for (source, expected) in [
            ("a\n  {{/if}}\t ", "a\n  {{/if}}"),
            ("{{#if x}}\n{{else}} ", "{{#if x}}\n{{else}}"),
            ("a\n{{~/each}}\t", "a\n{{~/each}}"),
            ("a\n{{name}} ", "a\n{{name}} "),
            ("a\n{{/if}}{{x}} ", "a\n{{/if}}{{x}} "),
            ("a\n{{/if}}", "a\n{{/if}}"),
            ("  ", "  "),
            ("x {{/if}} ", "x {{/if}} "),
            ("a\n  {{> p}} ", "a\n  {{> p}}"),
        ] {
            assert_eq!(standalone_last_line(source), expected, "{source:?}");
        }
    }

    #[test]
    fn only_standalone_partials_keep_their_indentation() {
        for (source, expected) in [
            ("a\n  {{> p}}\nb", Some("  ")),
            ("  {{> p}}", Some("  ")),
            ("a\n\t{{> p x}} \r\nb", Some("\t")),
            ("a\n  {{> p}}x", None),
            ("a\n  {{> p}}{{x}}\n", None),
            ("a\n x {{> p}}\n", None),
            ("{{x~}}\n  {{> p}}\n", None),
            ("{{#if c~}}\n  {{> p}}\n{{/if}}", Some("  ")),
            ("{{#if c}}x{{else~}}\n  {{> p}}\n{{/if}}", Some("  ")),
            ("{{#if c}}{{/if~}}\n  {{> p}}", None),
            ("{{#if c}}\n  {{> p}}\n{{/if}}", Some("  ")),
        ] {
            let t = compile(source, None).unwrap();
            fn find(t: &Template) -> Option<Option<String>> {
                t.elements.iter().find_map(|e| match e {
                    TemplateElement::PartialExpression(dt) => Some(dt.indent.clone()),
                    TemplateElement::HelperBlock(ht) => [&ht.template, &ht.inverse]
                        .into_iter()
                        .flatten()
                        .find_map(find),
                    _ => None,
                })
            }
            let indent = find(&t).expect("a partial");
            assert_eq!(indent.as_deref(), expected, "{source:?}");
        }
    }

    #[test]
    fn a_lone_dot_is_this() {
        for (source, expected) in [
            ("{{.}}", "{{this}}"),
            (
                "{{~.~}} {{{.}}} {{& .}}",
                "{{~this~}} {{{this}}} {{& this}}",
            ),
            (
                "{{#each .}}{{json . indent=2}}{{/each}}",
                "{{#each this}}{{json this indent=2}}{{/each}}",
            ),
            (
                "{{#if (eq . x)}}{{f a=.}}{{/if}}",
                "{{#if (eq this x)}}{{f a=this}}{{/if}}",
            ),
            // Paths, numbers, strings, keys, text, comments, escapes and raw
            // blocks keep their dots.
            (
                "{{./a}} {{../a}} {{a.b}} {{f 1.5}} {{f \".\"}} {{f '.'}} {{[.]}} {{[ . ]}}",
                "",
            ),
            (
                ". {{! . }} {{!-- {{.}} --}} \\{{.}} {{{{raw}}}} {{.}} {{{{/raw}}}}",
                "",
            ),
            ("é {{.}} é", "é {{this}} é"),
            ("{{.", "{{this"),
            ("{{ .", "{{ this"),
        ] {
            let expected = if expected.is_empty() {
                source
            } else {
                expected
            };
            assert_eq!(to_handlebars_rust_syntax(source), expected, "{source:?}");
        }
        assert!(matches!(
            to_handlebars_rust_syntax("{{a.b}}"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn string_literals_are_taken_as_written() {
        for (source, expected) in [
            (r#"{{f "a\tb"}}"#, r#"{{f "a\\tb"}}"#),
            (r#"{{f 'a\nb' "q\"q"}}"#, r#"{{f 'a\\nb' "q\"q"}}"#),
            ("{{f \"a\tb\"}}", r#"{{f "a\u0009b"}}"#),
            (r#"a\tb {{! "\t" }}"#, r#"a\tb {{! "\t" }}"#),
        ] {
            assert_eq!(to_handlebars_rust_syntax(source), expected, "{source:?}");
        }
    }

    #[test]
    fn splits_data_paths() {
        assert_eq!(split_path("@state.count"), vec!["state", "count"]);
        assert_eq!(split_path("@../auth/[user id]"), vec!["auth", "user id"]);
    }

    #[test]
    fn finds_helpers_and_partials() {
        let t = compile(
            "{{name}} {{json x}} {{#if a}}{{> p1}}{{else}}{{#each b}}{{foo (bar 1)}}{{/each}}{{/if}}",
            None,
        )
        .unwrap();
        let usage = usage(&t);
        let helpers: Vec<_> = usage.helpers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(helpers, vec!["json", "if", "each", "foo", "bar"]);
        let partials: Vec<_> = usage.partials.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(partials, vec!["p1"]);
    }

    #[test]
    fn block_locals_are_left_alone() {
        let t = compile("{{#each xs}}{{@index}}{{@state.x}}{{/each}}", None).unwrap();
        let TemplateElement::HelperBlock(each) = &t.elements[0] else {
            panic!("expected a block");
        };
        let body = each.template.as_ref().unwrap();
        let names: Vec<_> = body
            .elements
            .iter()
            .filter_map(|e| match e {
                TemplateElement::HtmlExpression(ht) => ht.name.as_name().map(str::to_owned),
                _ => None,
            })
            .collect();
        assert_eq!(names, vec!["@index".to_owned(), DATA_HELPER.to_owned()]);
    }
}
