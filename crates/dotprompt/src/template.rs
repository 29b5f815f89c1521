//! Compiling Handlebars templates and inspecting their syntax tree.
//!
//! handlebars-rust only knows its own block variables (`@index`, `@key`,
//! `@first`, `@last`) and cannot follow a path after them (`@state.count`).
//! Dotprompt exposes arbitrary `@`-data, so after parsing, every other
//! `@name.path` reference is rewritten into a call of a hidden helper that
//! looks the path up in the render's data (see `helpers::DataHelper`).

use std::borrow::Cow;
use std::collections::HashMap;

use handlebars::template::{
    DecoratorTemplate, HelperTemplate, Parameter, Subexpression, Template, TemplateElement,
    TemplateMapping,
};
use handlebars::{Path, TemplateError, TemplateErrorReason};
use serde_json::Value;

use crate::helpers::DATA_HELPER;

/// `@`-variables that handlebars-rust provides itself.
const BLOCK_LOCALS: &[&str] = &["index", "key", "first", "last"];

/// Parses `source` and rewrites its `@`-data references.
pub(crate) fn compile(source: &str, name: Option<&str>) -> Result<Template, TemplateError> {
    let source = lone_dots_as_this(source);
    let mut template = match name {
        Some(name) => Template::compile_with_name(&source, name.to_owned())?,
        None => Template::compile(&source)?,
    };
    rewrite_template(&mut template);
    Ok(template)
}

/// Handlebars.js reads a lone `.` as `this` (`{{.}}`, `{{#each .}}`,
/// `{{json .}}`); handlebars-rust's grammar has no such path and rejects
/// the template. Rewrites each lone `.` inside a tag to `this` before
/// parsing, leaving text, string literals, `[…]` keys, comments, raw blocks
/// and escaped `\{{` alone. (A position reported later on the same line
/// is then three columns further right per rewrite.)
fn lone_dots_as_this(source: &str) -> Cow<'_, str> {
    // Only ASCII bytes are compared, so every index is a char boundary.
    let b = source.as_bytes();
    let find = |from: usize, what: &[u8]| -> usize {
        b.get(from..)
            .and_then(|rest| rest.windows(what.len()).position(|w| w == what))
            .map_or(b.len(), |at| from + at)
    };
    let opens = |c: u8| matches!(c, b'{' | b'~' | b'(' | b'=' | b'&') || c.is_ascii_whitespace();
    let closes = |c: u8| matches!(c, b'}' | b'~' | b')') || c.is_ascii_whitespace();
    let mut dots = Vec::new();
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
                    dots.push(j);
                }
                j += 1;
            }
            i = j + 2;
        }
    }
    if dots.is_empty() {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 3 * dots.len());
    let mut from = 0;
    for dot in dots {
        out.push_str(&source[from..dot]);
        out.push_str("this");
        from = dot + 1;
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

fn rewrite_template(template: &mut Template) {
    template.elements = std::mem::take(&mut template.elements)
        .into_iter()
        .map(|mut element| {
            rewrite_element(&mut element);
            // Output is never escaped, so `{{x}}` may render as `{{{x}}}`,
            // which skips the escape function and its copy of every value.
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
            assert_eq!(lone_dots_as_this(source), expected, "{source:?}");
        }
        assert!(matches!(lone_dots_as_this("{{a.b}}"), Cow::Borrowed(_)));
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
