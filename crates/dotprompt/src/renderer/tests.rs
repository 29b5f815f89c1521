//! What the renderer takes on. Its output is judged against Handlebars.js
//! by `tests/npm_dotprompt.rs`; these tests make sure that the cases
//! recorded there are planned and rendered (or fail where Handlebars.js
//! fails), that what it does not support is refused when planned, and that
//! failures say what failed and where.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Data, Fault, Site, plan, render};
use crate::helpers::{DataScope, Engine};
use crate::partials::compile_partial;
use crate::template;
use crate::types::{DataArgument, JsonMap, PromptMetadata};

/// The cases recorded from Handlebars.js (see `tests/npm_dotprompt`).
const REFERENCE_CASES: &str = include_str!("../../tests/npm_dotprompt/templates.jsonl");

fn engine(partials: &[(&str, &str)]) -> Engine {
    let mut engine = Engine::new();
    engine.register_user_helper(
        "shout",
        Arc::new(|args: &[Value], _: &JsonMap| match args.first() {
            Some(Value::String(s)) => Ok(Value::from(s.to_uppercase())),
            _ => Err("shout: expected a string".into()),
        }),
    );
    for (name, source) in partials {
        let partial = compile_partial(name, source).expect("partial parses");
        engine.register_partial(name, partial).expect("no cycle");
    }
    engine
}

fn object(value: &Value) -> JsonMap {
    value.as_object().cloned().unwrap_or_default()
}

/// Plans and renders `template`.
fn rendered(
    engine: &Engine,
    template: &str,
    input: &Value,
    context: &Value,
) -> Result<String, Fault> {
    let compiled = template::compile(template, None).expect("template parses");
    let data = DataArgument {
        input: Some(object(input)),
        context: Some(object(context)),
        ..DataArgument::default()
    };
    let meta = PromptMetadata {
        name: Some("case".into()),
        ..PromptMetadata::default()
    };
    let scope = DataScope::new(&data, &meta);
    let plan = plan(&compiled, engine)?;
    render(
        &plan,
        Data {
            input: data.input.as_ref(),
            defaults: None,
            scope: &scope,
        },
        0,
    )
    .map(|rendered| rendered.text)
}

/// The fault's kind and what it names, without its site.
fn what(fault: &Fault) -> (&'static str, String) {
    match fault {
        Fault::Unsupported { construct, .. } => ("unsupported", construct.clone()),
        Fault::UnknownHelper { name, .. } => ("unknown helper", name.clone()),
        Fault::MissingPartial { name, .. } => ("missing partial", name.clone()),
        Fault::Helper { message, .. } => ("helper", message.clone()),
        Fault::TooDeep => ("too deep", String::new()),
    }
}

#[test]
fn every_reference_case_is_rendered_or_fails_as_in_handlebars_js() {
    let mut lines = REFERENCE_CASES.lines();
    let header: Value = serde_json::from_str(lines.next().expect("a header")).expect("header");
    let partials: HashMap<String, String> =
        serde_json::from_value(header["partials"].clone()).expect("partials");
    let partials: Vec<(&str, &str)> = partials
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let engine = engine(&partials);
    let mut count = 0;
    for line in lines {
        let case: Value = serde_json::from_str(line).expect("a case");
        let source = case["template"].as_str().expect("template");
        // Frontmatter is not the renderer's business.
        let template = source
            .strip_prefix("---\n")
            .and_then(|rest| rest.split_once("\n---\n"))
            .map_or(source, |(_, body)| body);
        let rendered = rendered(&engine, template, &header["data"], &header["context"]);
        if case["expected"].get("error").is_some() {
            assert!(
                rendered.is_err(),
                "{template:?} fails in Handlebars.js but rendered here: {rendered:?}"
            );
        } else {
            assert!(
                rendered.is_ok(),
                "{template:?} was not rendered: {rendered:?}"
            );
        }
        count += 1;
    }
    assert!(count > 600, "only {count} cases");
}

#[test]
fn unsupported_templates_are_refused_when_planned() {
    let engine = engine(&[("p", "P\nQ")]);
    for (template, kind, names) in [
        (
            "{{#*inline a}}x{{/inline}}{{> a}}",
            "unsupported",
            "inline partial",
        ),
        (
            "{{#*inline \"a\" x=1}}x{{/inline}}",
            "unsupported",
            "inline partial",
        ),
        ("{{* deco}}", "unsupported", "decorator `{{*deco}}`"),
        (
            "{{#*deco}}x{{/deco}}",
            "unsupported",
            "decorator `{{*deco}}`",
        ),
        (
            "{{#> missing}}{{> @partial-block x}}{{/missing}}",
            "unsupported",
            "@partial-block",
        ),
        (
            "{{> (lookup this \"n\")}}",
            "unsupported",
            "dynamic partial name",
        ),
        ("{{> p a b}}", "unsupported", "2 positional arguments"),
        ("{{#shout}}x{{/shout}}", "unsupported", "`shout` as a block"),
        (
            "{{#lookup a b}}x{{/lookup}}",
            "unsupported",
            "`{{#lookup}}` as a block",
        ),
        (
            "{{#if x as |y|}}{{y}}{{/if}}",
            "unsupported",
            "block parameters",
        ),
        (
            "{{#each xs as |a b|}}{{/each}}{{#with x as |a b|}}{{/with}}",
            "unsupported",
            "block parameters",
        ),
        ("{{if x}}", "unsupported", "without a block"),
        (
            "{{lookup x}}",
            "unsupported",
            "`lookup` with fewer than two",
        ),
        ("{{nope 1}}", "unknown helper", "nope"),
        ("{{#nope}}{{/nope}}", "unknown helper", "nope"),
        (
            "{{#if}}{{/if}}",
            "unsupported",
            "`{{#if}}` without an argument",
        ),
    ] {
        let fault =
            rendered(&engine, template, &json!({"items": [1]}), &json!({})).expect_err(template);
        let (got, named) = what(&fault);
        assert_eq!(got, kind, "{template:?}: {fault:?}");
        assert!(named.contains(names), "{template:?}: {named}");
    }
}

#[test]
fn refusals_say_where() {
    let engine = engine(&[("deep", "a\n  {{* deco}}")]);
    let fault = rendered(&engine, "x\n\n ab{{* deco}}", &json!({}), &json!({})).unwrap_err();
    let Fault::Unsupported { site, .. } = fault else {
        panic!("{fault:?}");
    };
    assert_eq!(
        site,
        Site {
            partial: None,
            pos: Some((3, 4)),
        }
    );
    let fault = rendered(
        &engine,
        "{{#if x}}{{> deep}}{{/if}}",
        &json!({}),
        &json!({}),
    )
    .unwrap_err();
    let Fault::Unsupported { site, .. } = fault else {
        panic!("{fault:?}");
    };
    assert_eq!(site.partial.as_deref(), Some("deep"));
    assert_eq!(site.pos, Some((2, 3)));
}

#[test]
fn log_prints_nothing() {
    let engine = engine(&[]);
    let out = rendered(
        &engine,
        "a{{log \"x\" level=\"warn\"}}b",
        &json!({}),
        &json!({}),
    );
    assert_eq!(out, Ok("ab".to_owned()));
}

#[test]
fn a_missing_partial_fails_only_where_it_renders() {
    let engine = engine(&[]);
    let fault = rendered(&engine, "ab\n {{> missing}}", &json!({}), &json!({})).unwrap_err();
    assert_eq!(
        fault,
        Fault::MissingPartial {
            name: "missing".into(),
            site: Site {
                partial: None,
                pos: Some((2, 2)),
            },
        }
    );
    let out = rendered(
        &engine,
        "a{{#if no}}{{> missing}}{{/if}}",
        &json!({}),
        &json!({}),
    );
    assert_eq!(out, Ok("a".to_owned()));
}

#[test]
fn a_partial_block_slot_without_a_block_fails() {
    // As in Handlebars.js ("The partial @partial-block could not be found").
    let engine = engine(&[("layout", "L[{{> @partial-block}}]")]);
    let fault = rendered(&engine, "{{> layout}}", &json!({}), &json!({})).unwrap_err();
    assert_eq!(
        what(&fault),
        ("missing partial", "@partial-block".to_owned())
    );
    let Fault::MissingPartial { site, .. } = fault else {
        panic!("{fault:?}");
    };
    assert_eq!(site.partial.as_deref(), Some("layout"));
    let out = rendered(
        &engine,
        "{{#> layout}}in{{/layout}}",
        &json!({}),
        &json!({}),
    );
    assert_eq!(out, Ok("L[in]".to_owned()));
}

#[test]
fn a_failing_user_helper_fails_the_render_where_it_is_called() {
    let engine = engine(&[]);
    let fault = rendered(
        &engine,
        "x\n{{#if n}}{{shout n}}{{/if}}",
        &json!({"n": 1}),
        &json!({}),
    )
    .unwrap_err();
    assert_eq!(
        fault,
        Fault::Helper {
            message: "helper `shout`: shout: expected a string".into(),
            site: Site {
                partial: None,
                pos: Some((2, 10)),
            },
        }
    );
    let out = rendered(&engine, "{{shout s}}", &json!({"s": "a"}), &json!({}));
    assert_eq!(out, Ok("A".to_owned()));
}

#[test]
fn lookup_uses_its_first_two_arguments() {
    let engine = engine(&[]);
    let out = rendered(
        &engine,
        "{{lookup o \"k\" \"extra\"}}",
        &json!({"o": {"k": "v"}}),
        &json!({}),
    );
    assert_eq!(out, Ok("v".to_owned()));
}

/// `{{#each}}` bodies that only print render from their flat form; a
/// `{{log}}` (which prints nothing) keeps a body out of it. Both must
/// print the same, for every kind of item and body.
#[test]
fn flat_each_bodies_render_as_the_general_renderer() {
    let engine = engine(&[]);
    let input = json!({
        "xs": [
            {"title": "a", "score": 1, "tags": ["x", null, "y"], "inner": {"n": 2.5, "deep": {"k": "v"}}},
            {"title": "", "score": 0, "flag": true, "inner": null, "name": "héllo"},
            {"score": -3, "big": 12345678901234567890u64, "f": 1e21, "small": 1.5e-7, "flag": false},
            "a string item",
            7,
            null,
            {},
            {"title": "last", "score": 100, "tags": [], "obj": {"a": 1}}
        ],
        "map": {"b": {"title": "bee"}, "2": {"title": "two"}, "a": {"title": "ay"}, "1": 5},
        "empty": [],
    });
    let bodies = [
        "- {{title}} (score {{score}}){{#if @last}}.{{/if}}\n",
        "{{@index}}:{{@first}}/{{@last}}/{{@key}}|",
        "{{#if @first}}[{{else}},{{/if}}{{title}}{{#unless @last}};{{else}}]{{/unless}}",
        "{{#if @index}}+{{/if}}{{#if @key}}k{{/if}}{{#if @first}}{{#if @last}}only{{else}}first{{/if}}{{/if}}",
        "{{tags}}|{{tags.length}}|{{tags.[0]}}|{{name.length}}|{{name.[1]}}|{{inner.n}}|{{inner.deep.k}}|{{inner.missing}}",
        "{{big}} {{f}} {{small}} {{flag}} {{obj}} {{missing}} {{inner}}",
        "{{#if title}}T{{else if score}}S{{else}}N{{/if}}{{#unless flag}}!{{/unless}}{{#if tags}}t{{/if}}{{#if inner.deep}}d{{/if}}",
        "{{#if tags.length}}L{{/if}}{{#if name.length}}n{{/if}}{{@../index}}",
        "",
        "{{this}}{{.}}",
    ];
    // The bodies without `../` or `this` are flat.
    let flat_bodies = bodies.iter().filter(|body| {
        let source = format!("{{{{#each xs}}}}{body}{{{{/each}}}}");
        let compiled = template::compile(&source, None).expect("template parses");
        let planned = plan(&compiled, &engine).expect("planned");
        matches!(
            planned.nodes.as_slice(),
            [super::plan::Node::Block { flat: Some(_), .. }]
        )
    });
    assert_eq!(flat_bodies.count(), bodies.len() - 2);
    for over in ["xs", "map", "empty"] {
        for body in bodies {
            let flat = format!("{{{{#each {over}}}}}{body}{{{{else}}}}none{{{{/each}}}}");
            let general =
                format!("{{{{#each {over}}}}}{body}{{{{log 1}}}}{{{{else}}}}none{{{{/each}}}}");
            assert_eq!(
                rendered(&engine, &flat, &input, &json!({})),
                rendered(&engine, &general, &input, &json!({})),
                "{flat:?}"
            );
        }
    }
}

#[test]
fn flat_each_bodies_print_as_handlebars_js() {
    let engine = engine(&[]);
    let input = json!({"xs": [
        {"title": "a", "score": 1},
        {"title": "b", "score": 22.5},
        "s",
        {"title": "c", "score": 300}
    ]});
    let out = rendered(
        &engine,
        "{{#each xs}}{{@index}}{{#if @first}}^{{/if}} {{title}}={{score}}{{#if @last}}.{{else}},{{/if}}{{/each}}",
        &input,
        &json!({}),
    );
    assert_eq!(out, Ok("0^ a=1,1 b=22.5,2 =,3 c=300.".to_owned()));
}

/// Flat bodies look fields up where the last item had them first: items
/// whose keys move, go missing, repeat across bodies or are too many to
/// search must print what the general renderer prints.
#[test]
fn flat_each_bodies_find_fields_that_move_between_items() {
    let engine = engine(&[]);
    let wide: serde_json::Map<String, Value> = (0..20)
        .map(|i| (format!("k{i}"), json!(format!("w{i}"))))
        .collect();
    let mut wide_with_title = wide.clone();
    wide_with_title.insert("title".into(), json!("wide"));
    let input = json!({"xs": [
        {"title": "a", "score": 1},
        {"score": 2, "title": "b"},
        {"title": "c"},
        {"score": 4},
        {"x": 0, "y": 0, "title": "e", "score": 5},
        {"titl": "no", "titles": "no", "Title": "no", "score": 6},
        {"score": 7, "title": "g", "k0": "z"},
        Value::Object(wide.clone()),
        Value::Object(wide_with_title),
        {"k19": "last", "k0": "first", "title": "h", "score": 8},
        "a string",
        {"title": "i", "score": 9},
        {"title": "j", "score": 10},
    ]});
    let many: String = (0..12).map(|i| format!("{{{{k{i}}}}},")).collect();
    let bodies = [
        "- {{title}} (score {{score}}){{#if @last}}.{{/if}}\n".to_owned(),
        "{{title}}{{score}}{{title}}".to_owned(),
        "{{score}}:{{#if title}}{{title}}{{else}}-{{/if}}".to_owned(),
        format!("{many}{{{{title}}}}{{{{k19}}}}|"),
        "[{{k0}}{{k19}}{{k7}}]".to_owned(),
    ];
    // Arrays that start or end with items the general renderer takes, or
    // hold one or two items (the first and last steps of a body).
    let mut input = input;
    input["starts"] = json!(["s", {"title": "a", "score": 1}, {"score": 2, "title": "b"}, 3]);
    input["one"] = json!([{"title": "a", "score": 1}]);
    input["two"] = json!([{"title": "a", "score": 1}, {"score": 2, "title": "b"}]);
    input["ends"] = json!([{"title": "a", "score": 1}, null]);
    for body in &bodies {
        for over in ["xs", "starts", "one", "two", "ends"] {
            let flat = format!("{{{{#each {over}}}}}{body}{{{{/each}}}}");
            let general = format!("{{{{#each {over}}}}}{body}{{{{log 1}}}}{{{{/each}}}}");
            let planned = plan(&template::compile(&flat, None).expect("parses"), &engine);
            assert!(
                matches!(
                    planned.expect("planned").nodes.as_slice(),
                    [super::plan::Node::Block { flat: Some(_), .. }]
                ),
                "{flat:?} is flat"
            );
            let printed = rendered(&engine, &flat, &input, &json!({}));
            assert_eq!(
                printed,
                rendered(&engine, &general, &input, &json!({})),
                "{flat:?}"
            );
            assert!(printed.is_ok_and(|text| !text.is_empty()), "{flat:?}");
        }
    }
    // As Handlebars.js prints the first body.
    let out = rendered(
        &engine,
        &format!("{{{{#each xs}}}}{}{{{{/each}}}}", bodies[0]),
        &json!({"xs": [{"title": "a", "score": 1}, {"score": 2, "title": "b"}, {"title": "c"}]}),
        &json!({}),
    );
    assert_eq!(
        out,
        Ok("- a (score 1)\n- b (score 2)\n- c (score ).\n".to_owned())
    );
}
