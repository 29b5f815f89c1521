//! The fast renderer must print exactly what handlebars prints: every case
//! is rendered both ways and compared.

mod generated;

use std::sync::Arc;

use handlebars::{Context, RenderContext, Renderable};
use serde_json::{Value, json};

use super::{Data, plan, render};
use crate::helpers::{DATA_HELPER, DataHelper, DataScope, Engine};
use crate::partials::compile_partial;
use crate::template;
use crate::types::{DataArgument, JsonMap, PromptMetadata};

struct Case<'a> {
    template: &'a str,
    input: Value,
    defaults: Value,
    context: Value,
    partials: &'a [(&'a str, &'a str)],
}

impl<'a> Case<'a> {
    fn new(template: &'a str, input: Value) -> Self {
        Self {
            template,
            input,
            defaults: json!({}),
            context: json!({}),
            partials: &[],
        }
    }
}

fn engine(partials: &[(&str, &str)]) -> Engine {
    let mut engine = Engine::new();
    engine.register_user_helper(
        "shout",
        Arc::new(|args: &[Value], _: &JsonMap| {
            Ok(Value::from(
                args.first()
                    .map(|v| match v {
                        Value::String(s) => s.to_uppercase(),
                        other => other.to_string(),
                    })
                    .unwrap_or_default(),
            ))
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

/// Renders `case` with the fast renderer (`None` without a plan, `Err` if
/// it aborts) and with handlebars.
fn both(case: &Case<'_>) -> (Option<Result<String, super::Abort>>, Result<String, String>) {
    let engine = engine(case.partials);
    let compiled = template::compile(case.template, None).expect("template parses");
    let data = DataArgument {
        input: Some(object(&case.input)),
        context: Some(object(&case.context)),
        ..DataArgument::default()
    };
    let meta = PromptMetadata {
        name: Some("case".into()),
        ..PromptMetadata::default()
    };
    let defaults = object(&case.defaults);
    let scope = DataScope::new(&data, &meta);

    let fast = plan(&compiled, &engine).map(|plan| {
        render(
            &plan,
            Data {
                input: data.input.as_ref(),
                defaults: Some(&defaults),
                scope: &scope,
            },
            0,
        )
    });

    let mut variables = defaults.clone();
    variables.extend(object(&case.input));
    let context = Context::from(Value::Object(variables));
    let mut rc = RenderContext::new(None);
    rc.register_local_helper(DATA_HELPER, Box::new(DataHelper(&scope)));
    let slow = compiled
        .renders(&engine.handlebars, &context, &mut rc)
        .map_err(|e| e.to_string());
    (fast, slow)
}

/// The fast renderer prints what handlebars prints, and gives up where
/// handlebars fails.
fn assert_same(case: Case<'_>) {
    let (fast, slow) = both(&case);
    let fast = fast.unwrap_or_else(|| panic!("no plan for {:?}", case.template));
    match slow {
        Ok(slow) => assert_eq!(fast, Ok(slow), "template {:?}", case.template),
        Err(e) => assert_eq!(
            fast,
            Err(super::Abort),
            "template {:?} ({e})",
            case.template
        ),
    }
}

#[test]
fn values_and_paths() {
    let data = json!({
        "name": "Ada", "n": 3, "f": 1.5, "neg": -2, "t": true, "no": false, "nul": null,
        "arr": [1, "two", [3, 4], {"x": 1}, null], "obj": {"a": 1},
        "person": {"name": "Bo", "tags": ["x", "y"]},
        "weird key": "w", "items": [{"title": "a"}, {"title": "b"}],
        "zero": 0, "big": 18446744073709551615u64, "min": i64::MIN, "max": i64::MAX,
        "e": 1e21, "tiny": -0.0
    });
    for template in [
        "Hello {{name}}!",
        "{{n}} {{f}} {{neg}} {{t}} {{no}} [{{nul}}] [{{missing}}] {{arr}} {{obj}}",
        "{{zero}} {{big}} {{min}} {{max}} {{e}} {{tiny}}",
        "{{person.name}} {{person/name}} {{person.tags.1}} {{this.name}} {{./name}} {{[weird key]}}",
        "{{items.0.title}}{{items.[1].title}} {{person.missing.deeper}} {{name.length}}",
        "{{this}}",
        "{{.}} {{#each arr}}{{.}},{{/each}} {{json .}}",
        "{{{name}}} {{~name~}} x {{! a comment }}{{!-- another --}}y",
        "line\n  {{#if t}}\n  yes\n  {{/if}}\nend\n",
    ] {
        assert_same(Case::new(template, data.clone()));
    }
}

#[test]
fn defaults_lie_under_the_input() {
    assert_same(Case {
        defaults: json!({"a": 1, "b": 2}),
        ..Case::new("{{a}} {{b}} {{c}} {{json this}}", json!({"b": 3, "c": [1]}))
    });
}

#[test]
fn conditionals() {
    let data = json!({
        "zero": 0, "one": 1, "empty": "", "s": "x", "emptyArr": [], "arr": [0],
        "emptyObj": {}, "obj": {"k": 1}, "a": false, "b": true, "five": 5, "fiveF": 5.0, "fiveS": "5"
    });
    for template in [
        "{{#if zero}}1{{/if}}{{#if zero includeZero=true}}2{{/if}}{{#if one}}3{{/if}}{{#if empty}}4{{/if}}{{#if s}}5{{/if}}",
        "{{#if emptyArr}}6{{/if}}{{#if arr}}7{{/if}}{{#if emptyObj}}8{{/if}}{{#if obj}}9{{/if}}{{#if missing}}10{{/if}}",
        "{{#if a}}A{{else if b}}B{{else}}C{{/if}} {{#if a}}A{{else if missing}}B{{else}}C{{/if}}",
        "{{#unless a}}not a{{else}}a{{/unless}}{{#unless b}}not b{{/unless}}",
        "{{#ifEquals five fiveF}}eq{{else}}ne{{/ifEquals}} {{#ifEquals five fiveS}}eq{{else}}ne{{/ifEquals}}",
        "{{#unlessEquals five fiveS}}differ{{/unlessEquals}}{{#ifEquals missing nope}}both missing{{/ifEquals}}",
        "{{#if}}{{/if}}",
    ] {
        let (fast, slow) = both(&Case::new(template, data.clone()));
        match slow {
            Ok(slow) => assert_eq!(fast.expect("a plan"), Ok(slow), "{template:?}"),
            // `{{#if}}` without an argument fails: no plan, handlebars reports it.
            Err(_) => assert!(fast.is_none(), "{template:?}"),
        }
    }
}

#[test]
fn loops_and_scopes() {
    let data = json!({
        "name": "root", "label": "L",
        "items": [{"title": "a", "score": 1}, {"title": "b", "score": 2}, {"title": "c"}],
        "empty": [], "words": ["x", "y"], "obj": {"k1": "v1", "k2": {"deep": true}},
        "outer": [{"label": "o1", "inner": [1, 2]}, {"label": "o2", "inner": [3]}],
        "person": {"name": "Bo", "pet": {"name": "Rex"}}
    });
    for template in [
        "{{#each items}}- {{title}} ({{score}}){{#if @last}}.{{/if}}\n{{/each}}",
        "{{#each words}}{{@index}}:{{this}} {{@first}} {{@last}}|{{/each}}{{#each empty}}x{{else}}none{{/each}}",
        "{{#each empty}}x{{/each}}{{#each missing}}x{{else}}no{{/each}}{{#each name}}x{{else}}str{{/each}}",
        "{{#each obj}}{{@key}}={{this}} {{@index}};{{/each}}",
        "{{#each items}}{{../name}}/{{name}}/{{@root.name}}/{{title}} {{/each}}",
        "{{#each outer}}{{#each inner}}{{@../index}}.{{@index}} {{../label}} {{../../name}} {{this}}; {{/each}}{{/each}}",
        "{{#with person}}{{name}} {{pet.name}} {{../name}} {{#with pet}}{{name}} {{../name}}{{/with}}{{/with}}",
        "{{#with missing}}x{{else}}no person{{/with}}{{#with empty}}x{{else}}empty{{/with}}",
        "{{#each words}}{{#with ../person}}{{name}}{{@index}}{{/with}}{{/each}}",
        "{{#each items}}{{#if score}}{{score}}{{else}}-{{/if}}{{/each}}",
        "{{#each (lookup outer 0)}}{{@key}} {{/each}}",
    ] {
        assert_same(Case::new(template, data.clone()));
    }
}

#[test]
fn helpers() {
    let data = json!({
        "name": "ada", "items": [1, 2], "obj": {"k": "v", "n": {"a": 1}}, "nul": null,
        "url": "http://x/y.png", "ct": "image/png", "idx": 1
    });
    for template in [
        "{{json items}} {{json obj indent=2}} {{json missing}} {{json nul}} {{json this indent=\"\\t\"}}",
        "{{role \"system\"}}x{{role \"user\"}}y{{history}}{{section \"s\"}}{{media url=url contentType=ct}}{{media url=url}}",
        "{{role}}{{section}}",
        "{{lookup items 1}} {{lookup items idx}} {{lookup obj \"k\"}} {{lookup (lookup obj \"n\") \"a\"}} [{{lookup obj \"zz\"}}]",
        "{{shout name}} {{shout (shout name)}} {{shout items}} {{shout}} {{shout missing}}",
        "{{#each items}}{{shout this}}{{shout @index}}{{/each}}",
    ] {
        assert_same(Case::new(template, data.clone()));
    }
}

#[test]
fn data_variables() {
    assert_same(Case {
        context: json!({"state": {"count": 2, "list": ["a"]}, "auth": {"email": "a@b.c"}}),
        ..Case::new(
            "{{@state.count}} {{@auth.email}} {{@state.list.0}} {{@metadata.prompt.name}} [{{@nope}}] {{json @state}} {{#if @state.count}}yes{{/if}}{{#each @state.list}}{{this}}{{@index}}{{/each}}",
            json!({}),
        )
    });
}

#[test]
fn partials() {
    let partials: &[(&str, &str)] = &[
        ("p1", "P1 {{name}}"),
        ("named", "{{name}}/{{../name}}"),
        ("greet", "Hi {{name}} ({{who}})"),
        ("outer", "[{{> inner}}]"),
        ("inner", "{{name}}"),
        ("item", "{{@index}}{{title}}{{#if @last}}!{{/if}}"),
        ("lines", "a\nb\n"),
    ];
    let data = json!({"name": "Ada", "person": {"name": "Bo"}, "items": [{"title": "x"}, {"title": "y"}], "who": "w"});
    for template in [
        "{{> p1}}|{{> named person}}|{{> greet name=\"X\"}}|{{> greet person who=name}}",
        "{{> outer}}|{{#each items}}{{> item}}{{/each}}",
        "{{#with person}}{{> p1}}{{/with}}|{{> greet items who=1}}|{{> p1 missing}}",
        "{{> p1 items}}",
        "{{> lines}}\n{{> lines}}\nafter",
        "{{role \"system\"}}{{> lines}}{{> lines}}",
        "{{> greet name}}",
    ] {
        assert_same(Case {
            partials,
            ..Case::new(template, data.clone())
        });
    }
}

#[test]
fn unsupported_templates_have_no_plan() {
    let partials: &[(&str, &str)] = &[("p", "P\nQ")];
    for template in [
        "{{#each items as |x|}}{{x}}{{/each}}",
        "{{#*inline \"a\"}}x{{/inline}}{{> a}}",
        "{{#> p}}fallback{{/p}}",
        "x\n  {{> p}}\ny",
        "x {{> p}}",
        "{{> (lookup this \"n\")}}",
        "{{#shout}}x{{/shout}}",
        "{{nope 1}}",
        "{{> missing}}",
        "{{log \"x\"}}",
    ] {
        let (fast, _) = both(&Case {
            partials,
            ..Case::new(template, json!({"items": [1]}))
        });
        assert!(fast.is_none(), "{template:?} should have no plan");
    }
}

#[test]
fn render_errors_abort() {
    // handlebars fails on a non-numeric index into an array; the fast
    // renderer gives up so that handlebars reports it.
    let (fast, slow) = both(&Case::new("{{items.x}}", json!({"items": [1]})));
    assert!(slow.is_err());
    assert_eq!(fast, Some(Err(super::Abort)));
}
