//! Generated templates, rendered both ways: the hand-written cases above
//! cover what we thought of; these cover the combinations we did not
//! (nesting, whitespace control, standalone block lines, scope changes,
//! paths that fail). Whenever the fast renderer produces output it must be
//! exactly handlebars' output, and it must never produce output where
//! handlebars fails.

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::json;

use super::{Case, both};
use crate::template;

/// Paths an expression or block may use: plain and nested, array indexes,
/// parent and root scopes, block locals, `@`-data, missing values, and
/// paths handlebars refuses (a non-numeric index into an array).
const PATHS: &[&str] = &[
    "name",
    "n",
    "f",
    "neg",
    "zero",
    "t",
    "no",
    "nul",
    "str",
    "big",
    "empty",
    "emptyObj",
    "arr",
    "arr.2.1",
    "obj",
    "obj.a",
    "obj.b.c",
    "items",
    "items.0.title",
    "items.[1].title",
    "items.x",
    "person",
    "person.tags",
    "person.tags.1",
    "title",
    "this",
    ".",
    "this.name",
    "../name",
    "../items",
    "../../name",
    "@index",
    "@first",
    "@last",
    "@key",
    "@root.name",
    "@root.items",
    "@state.count",
    "@state",
    "missing",
    "missing.deep",
    "d",
];

/// Text between tags: the whitespace and newlines that decide standalone
/// lines, and characters next to which a tag is still a tag.
const TEXTS: &[&str] = &[
    "", "x", " ", "  ", "\n", "\n  ", "  \n", "\r\n", "\t", "a b", "{ ", " }", "-", "é",
];

const PARTIALS: &[(&str, &str)] = &[
    ("p1", "P1 {{name}}"),
    ("item", "{{@index}}{{title}}{{#if @last}}!{{/if}}"),
    ("lines", "a\nb\n"),
];

#[derive(Debug, Clone)]
enum Node {
    Text(&'static str),
    Expr {
        path: &'static str,
        triple: bool,
        trim: (bool, bool),
    },
    /// A helper call, already written out.
    Helper(String),
    Partial(&'static str, Option<&'static str>),
    Block {
        name: &'static str,
        args: String,
        trim: (bool, bool),
        body: Vec<Node>,
        otherwise: Option<Vec<Node>>,
    },
}

fn path() -> impl Strategy<Value = &'static str> {
    prop::sample::select(PATHS)
}

fn leaf() -> impl Strategy<Value = Node> {
    prop_oneof![
        4 => prop::sample::select(TEXTS).prop_map(Node::Text),
        4 => (path(), any::<bool>(), any::<(bool, bool)>())
            .prop_map(|(path, triple, trim)| Node::Expr { path, triple, trim }),
        1 => path().prop_map(|p| Node::Helper(format!("{{{{json {p}}}}}"))),
        1 => path().prop_map(|p| Node::Helper(format!("{{{{json {p} indent=2}}}}"))),
        1 => (path(), 0..3u8).prop_map(|(p, i)| Node::Helper(format!("{{{{lookup {p} {i}}}}}"))),
        1 => path().prop_map(|p| Node::Helper(format!("{{{{lookup obj \"{p}\"}}}}"))),
        1 => path().prop_map(|p| Node::Helper(format!("{{{{shout {p}}}}}"))),
        1 => (
            prop::sample::select(&["p1", "item", "lines"][..]),
            prop::option::of(path()),
        )
            .prop_map(|(name, ctx)| Node::Partial(name, ctx)),
    ]
}

fn nodes() -> impl Strategy<Value = Vec<Node>> {
    let node = leaf().prop_recursive(4, 48, 6, |inner| {
        let body = prop::collection::vec(inner, 0..5);
        (
            prop::sample::select(&["if", "unless", "each", "with", "ifEquals", "unlessEquals"][..]),
            path(),
            path(),
            any::<bool>(),
            any::<(bool, bool)>(),
            body.clone(),
            prop::option::of(body),
        )
            .prop_map(|(name, a, b, include_zero, trim, body, otherwise)| {
                let args = match name {
                    "ifEquals" | "unlessEquals" => format!("{a} {b}"),
                    "if" if include_zero => format!("{a} includeZero=true"),
                    _ => a.to_owned(),
                };
                Node::Block {
                    name,
                    args,
                    trim,
                    body,
                    otherwise,
                }
            })
    });
    prop::collection::vec(node, 0..8)
}

fn write(nodes: &[Node], out: &mut String) {
    let open = |trim: bool| if trim { "{{~" } else { "{{" };
    let close = |trim: bool| if trim { "~}}" } else { "}}" };
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Expr {
                path,
                triple: true,
                trim,
            } => {
                out.push_str(if trim.0 { "{{~{" } else { "{{{" });
                out.push_str(path);
                out.push_str(if trim.1 { "}~}}" } else { "}}}" });
            }
            Node::Expr { path, trim, .. } => {
                out.push_str(open(trim.0));
                out.push_str(path);
                out.push_str(close(trim.1));
            }
            Node::Helper(call) => out.push_str(call),
            Node::Partial(name, ctx) => {
                out.push_str("{{> ");
                out.push_str(name);
                if let Some(ctx) = ctx {
                    out.push(' ');
                    out.push_str(ctx);
                }
                out.push_str("}}");
            }
            Node::Block {
                name,
                args,
                trim,
                body,
                otherwise,
            } => {
                out.push_str(&format!("{}#{name} {args}{}", open(trim.0), close(trim.1)));
                write(body, out);
                if let Some(otherwise) = otherwise {
                    out.push_str("{{else}}");
                    write(otherwise, out);
                }
                out.push_str(&format!("{}/{name}{}", open(trim.1), close(trim.0)));
            }
        }
    }
}

/// How the generated cases went (the runner takes a `Fn`, hence cells).
#[derive(Default)]
struct Tally {
    rendered_same: Cell<usize>,
    aborted: Cell<usize>,
    no_plan: Cell<usize>,
    both_failed: Cell<usize>,
}

fn bump(c: &Cell<usize>) {
    c.set(c.get() + 1);
}

const CASES: u32 = 2000;

#[test]
fn generated_templates_render_exactly_as_handlebars() {
    let input = json!({
        "name": "Ada", "n": 3, "f": 1.5, "neg": -2, "zero": 0, "t": true, "no": false,
        "nul": null, "str": "s", "big": 1e21, "empty": [], "emptyObj": {},
        "arr": [1, "two", [3, 4], {"x": 1}, null], "obj": {"a": 1, "b": {"c": "deep"}},
        "items": [{"title": "a", "name": "i0"}, {"title": "b"},
                  {"title": null, "items": [{"title": "nested"}]}],
        "person": {"name": "Bo", "tags": ["x", "y"]}
    });
    let tally = Tally::default();
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&nodes(), |nodes| {
            let mut source = String::new();
            write(&nodes, &mut source);
            // Every generated template is valid Handlebars (as Handlebars.js
            // reads it), so it must parse.
            if let Err(e) = template::compile(&source, None) {
                return Err(TestCaseError::fail(format!(
                    "template {source:?} does not parse: {e}"
                )));
            }
            let case = Case {
                defaults: json!({"name": "Def", "d": 1}),
                context: json!({"state": {"count": 2}}),
                partials: PARTIALS,
                ..Case::new(&source, input.clone())
            };
            match both(&case) {
                (None, _) => bump(&tally.no_plan),
                (Some(Ok(fast)), Ok(slow)) => {
                    prop_assert_eq!(fast, slow, "template {:?}", source);
                    bump(&tally.rendered_same);
                }
                (Some(Ok(fast)), Err(e)) => {
                    return Err(TestCaseError::fail(format!(
                        "template {source:?}: handlebars fails ({e}) but the fast renderer printed {fast:?}"
                    )));
                }
                (Some(Err(_)), Ok(_)) => bump(&tally.aborted),
                (Some(Err(_)), Err(_)) => bump(&tally.both_failed),
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
    // The comparison must mostly happen, not be skipped: most generated
    // templates have a plan and render.
    assert!(
        tally.rendered_same.get() > CASES as usize / 2,
        "too few compared: {} same, {} aborted, {} without a plan, {} failing both ways",
        tally.rendered_same.get(),
        tally.aborted.get(),
        tally.no_plan.get(),
        tally.both_failed.get()
    );
}
