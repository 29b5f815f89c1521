//! What the fast renderer takes on. Its output is judged against
//! Handlebars.js by `tests/npm_dotprompt.rs`; these tests make sure that
//! the cases recorded there are rendered by the fast renderer itself (a
//! plan, and no abort), not by the handlebars fallback, and that what it
//! leaves to handlebars is left.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Data, plan, render};
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

/// Renders `template` with the fast renderer: `None` without a plan,
/// `Some(Err)` if it aborts.
fn fast(
    engine: &Engine,
    template: &str,
    input: &Value,
    context: &Value,
) -> Option<Result<String, super::Stop>> {
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
    plan(&compiled, engine).map(|plan| {
        render(
            &plan,
            Data {
                input: data.input.as_ref(),
                defaults: None,
                scope: &scope,
            },
            0,
        )
    })
}

#[test]
fn every_reference_case_is_rendered_by_the_fast_renderer() {
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
        let rendered = fast(&engine, template, &header["data"], &header["context"]);
        if case["expected"].get("error").is_some() {
            // Where the reference fails, the fast renderer gives up and the
            // fallback reports the error.
            assert!(
                !matches!(rendered, Some(Ok(_))),
                "{template:?} fails in Handlebars.js but rendered here: {rendered:?}"
            );
        } else {
            assert!(
                matches!(rendered, Some(Ok(_))),
                "{template:?} was not rendered by the fast renderer: {rendered:?}"
            );
        }
        count += 1;
    }
    assert!(count > 600, "only {count} cases");
}

#[test]
fn unsupported_templates_have_no_plan() {
    let engine = engine(&[("p", "P\nQ")]);
    for template in [
        "{{#*inline a}}x{{/inline}}{{> a}}",
        "{{#*inline \"a\" x=1}}x{{/inline}}",
        "{{#> missing}}{{> @partial-block x}}{{/missing}}",
        "{{> (lookup this \"n\")}}",
        "{{#shout}}x{{/shout}}",
        "{{#if x as |y|}}{{y}}{{/if}}",
        "{{#each xs as |a b|}}{{/each}}{{#with x as |a b|}}{{/with}}",
        "{{nope 1}}",
        "{{log \"x\"}}",
        "{{#if}}{{/if}}",
    ] {
        let rendered = fast(&engine, template, &json!({"items": [1]}), &json!({}));
        assert!(rendered.is_none(), "{template:?} should have no plan");
    }
}

#[test]
fn a_missing_partial_fails_only_where_it_renders() {
    let engine = engine(&[]);
    let rendered = fast(&engine, "{{> missing}}", &json!({}), &json!({}));
    assert_eq!(
        rendered,
        Some(Err(super::Stop::MissingPartial("missing".into())))
    );
    let rendered = fast(
        &engine,
        "a{{#if no}}{{> missing}}{{/if}}",
        &json!({}),
        &json!({}),
    );
    assert_eq!(rendered, Some(Ok("a".to_owned())));
}

#[test]
fn a_partial_block_slot_without_a_block_aborts() {
    // Handlebars.js fails here ("The partial @partial-block could not be
    // found"); the fallback reports it.
    let engine = engine(&[("layout", "L[{{> @partial-block}}]")]);
    let rendered = fast(&engine, "{{> layout}}", &json!({}), &json!({}));
    assert_eq!(rendered, Some(Err(super::Stop::Abort)));
    let rendered = fast(
        &engine,
        "{{#> layout}}in{{/layout}}",
        &json!({}),
        &json!({}),
    );
    assert_eq!(rendered, Some(Ok("L[in]".to_owned())));
}

#[test]
fn a_failing_user_helper_aborts() {
    // The fallback renders it again and reports the helper's own error.
    let engine = engine(&[]);
    let rendered = fast(&engine, "{{shout n}}", &json!({"n": 1}), &json!({}));
    assert_eq!(rendered, Some(Err(super::Stop::Abort)));
    let rendered = fast(&engine, "{{shout s}}", &json!({"s": "a"}), &json!({}));
    assert_eq!(rendered, Some(Ok("A".to_owned())));
}
