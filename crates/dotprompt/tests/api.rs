//! Behaviour of the public API beyond the spec suite: errors, resolvers,
//! caching, `@`-data and metadata merging.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dotprompt::{
    DataArgument, Dotprompt, DotpromptOptions, Error, PartialResolver, PicoschemaError,
    PromptMetadata, SchemaResolver, ToolDefinition, ToolResolver,
};
use futures::executor::block_on;
use serde_json::{Value, json};

fn data(value: Value) -> DataArgument {
    serde_json::from_value(value).expect("valid data")
}

fn render(dp: &Dotprompt, source: &str, input: Value) -> dotprompt::Result<Value> {
    let rendered = block_on(dp.render(source, &data(json!({ "input": input })), None))?;
    Ok(serde_json::to_value(rendered).expect("serializable"))
}

fn first_text(rendered: &Value) -> &str {
    rendered["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

#[test]
fn unknown_helper_is_an_error_with_location() {
    let dp = Dotprompt::default();
    let source = "---\nname: greet\n---\nHello\n{{shout name}}";
    let err = render(&dp, source, json!({})).unwrap_err();
    let Error::UnknownHelper { name, location } = &err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(name, "shout");
    assert_eq!(location.prompt.as_deref(), Some("greet"));
    assert_eq!(location.line, Some(5));
    assert_eq!(
        err.to_string(),
        "unknown helper `shout` (prompt `greet`, line 5, column 1)"
    );
}

#[test]
fn unknown_block_helper_is_an_error() {
    let dp = Dotprompt::default();
    let err = render(&dp, "{{#loud}}x{{/loud}}", json!({})).unwrap_err();
    assert!(matches!(err, Error::UnknownHelper { name, .. } if name == "loud"));
}

#[test]
fn handlebars_rust_extras_are_not_helpers() {
    let dp = Dotprompt::default();
    let err = render(&dp, "{{#if (eq a b)}}x{{/if}}", json!({})).unwrap_err();
    assert!(matches!(err, Error::UnknownHelper { name, .. } if name == "eq"));
}

#[test]
fn plain_variables_are_not_helper_calls() {
    let dp = Dotprompt::default();
    let out = render(&dp, "[{{missing}}][{{name}}]", json!({"name": "<b>"})).unwrap();
    assert_eq!(first_text(&out), "[][<b>]");
}

#[test]
fn a_lone_dot_means_this_as_in_handlebars_js() {
    let dp = Dotprompt::default();
    let out = render(
        &dp,
        "{{#each items}}- {{.}}\n{{/each}}{{#with person}}{{json .}}{{/with}} {{json \".\"}}",
        json!({"items": ["a", "b"], "person": {"n": 1}}),
    )
    .unwrap();
    assert_eq!(first_text(&out), "- a\n- b\n{\"n\":1} \".\"");
}

#[test]
fn unknown_partial_is_an_error() {
    let dp = Dotprompt::default();
    let err = render(&dp, "Hi {{> nowhere}}", json!({})).unwrap_err();
    assert!(
        matches!(&err, Error::UnknownPartial { name, .. } if name == "nowhere"),
        "{err}"
    );
}

#[test]
fn partial_cycle_from_resolver_is_an_error() {
    let sources: HashMap<&str, &str> = HashMap::from([("a", "A {{> b}}"), ("b", "B {{> a}}")]);
    let dp = Dotprompt::new(DotpromptOptions {
        partial_resolver: Some(PartialResolver::from_fn(move |name| {
            sources.get(name).map(|s| (*s).to_owned())
        })),
        ..DotpromptOptions::default()
    })
    .unwrap();
    let err = render(&dp, "{{> a}}", json!({})).unwrap_err();
    assert!(matches!(err, Error::PartialCycle { .. }), "{err}");
}

#[test]
fn partial_cycle_in_options_is_an_error() {
    let result = Dotprompt::new(DotpromptOptions {
        partials: HashMap::from([
            ("a".to_owned(), "{{> b}}".to_owned()),
            ("b".to_owned(), "{{> a}}".to_owned()),
        ]),
        ..DotpromptOptions::default()
    });
    assert!(matches!(result, Err(Error::PartialCycle { .. })));
}

#[test]
fn define_partial_refuses_cycles_and_keeps_working() {
    let dp = Dotprompt::default();
    dp.define_partial("outer", "<{{> inner}}>").unwrap();
    dp.define_partial("inner", "{{name}}").unwrap();
    assert!(matches!(
        dp.define_partial("inner", "{{> outer}}"),
        Err(Error::PartialCycle { .. })
    ));
    let out = render(&dp, "{{> outer}}", json!({"name": "x"})).unwrap();
    assert_eq!(first_text(&out), "<x>");
}

#[test]
fn async_partial_resolver_resolves_nested_partials_once() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let dp = Dotprompt::new(DotpromptOptions {
        partial_resolver: Some(PartialResolver::new(move |name: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                Ok(match name.as_str() {
                    "card" => Some("[{{> title}}: {{body}}]".to_owned()),
                    "title" => Some("{{title}}".to_owned()),
                    _ => None,
                })
            }
        })),
        ..DotpromptOptions::default()
    })
    .unwrap();
    let source = "{{#each cards}}{{> card}}{{/each}}";
    let input = json!({"cards": [{"title": "a", "body": "1"}, {"title": "b", "body": "2"}]});
    let out = render(&dp, source, input.clone()).unwrap();
    assert_eq!(first_text(&out), "[a: 1][b: 2]");
    render(&dp, source, input).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[test]
fn compiled_prompts_are_cached() {
    let dp = Dotprompt::default();
    let source = "---\nmodel: m\n---\nHello {{name}}";
    let first = block_on(dp.compile(source)).unwrap();
    let second = block_on(dp.compile(source)).unwrap();
    assert!(std::ptr::eq(first.prompt(), second.prompt()));
    let other = block_on(dp.compile("Bye {{name}}")).unwrap();
    assert!(!std::ptr::eq(first.prompt(), other.prompt()));

    let rendered = block_on(first.render(&data(json!({"input": {"name": "A"}})), None)).unwrap();
    assert_eq!(rendered.meta.model.as_deref(), Some("m"));
}

#[test]
fn custom_helpers_get_params_and_hash() {
    let dp = Dotprompt::default();
    dp.define_helper("repeat", |params, hash| {
        let text = params.first().and_then(Value::as_str).unwrap_or_default();
        let times = hash.get("times").and_then(Value::as_u64).unwrap_or(1);
        Ok(json!(text.repeat(times as usize)))
    });
    let out = render(&dp, "{{repeat word times=3}}", json!({"word": "ab"})).unwrap();
    assert_eq!(first_text(&out), "ababab");
}

#[test]
fn custom_helper_errors_surface() {
    let dp = Dotprompt::default();
    dp.define_helper("fail", |_, _| Err("nope".into()));
    let err = render(&dp, "{{fail 1}}", json!({})).unwrap_err();
    assert!(err.to_string().contains("helper `fail`: nope"), "{err}");
}

#[test]
fn data_variables_reach_into_blocks_and_partials() {
    let dp = Dotprompt::default();
    dp.define_partial("who", "{{@auth.user}}").unwrap();
    let source = "---\nmodel: m\n---\n{{#each items}}{{@index}}:{{this}}:{{@state.sep}}{{> who}};{{/each}}{{@metadata.prompt.model}}";
    let rendered = block_on(dp.render(
        source,
        &data(json!({
            "input": {"items": ["a", "b"]},
            "context": {"state": {"sep": "|"}, "auth": {"user": "u"}}
        })),
        None,
    ))
    .unwrap();
    let out = serde_json::to_value(rendered).unwrap();
    assert_eq!(first_text(&out), "0:a:|u;1:b:|u;m");
}

#[test]
fn metadata_merges_model_config_frontmatter_and_options() {
    let dp = Dotprompt::new(DotpromptOptions {
        default_model: Some("base".into()),
        model_configs: HashMap::from([(
            "base".to_owned(),
            serde_json::from_value(json!({"temperature": 0.1, "topK": 3})).unwrap(),
        )]),
        ..DotpromptOptions::default()
    })
    .unwrap();
    let source = "---\nconfig:\n  temperature: 0.5\n---\nx";
    let options: PromptMetadata =
        serde_json::from_value(json!({"config": {"maxOutputTokens": 10}, "description": "d"}))
            .unwrap();
    let meta = block_on(dp.render_metadata(source, Some(&options))).unwrap();
    assert_eq!(
        serde_json::to_value(&meta.config).unwrap(),
        json!({"temperature": 0.5, "topK": 3, "maxOutputTokens": 10})
    );
    assert_eq!(meta.description.as_deref(), Some("d"));
    assert_eq!(meta.model, None);
}

#[test]
fn frontmatter_input_defaults_apply() {
    let dp = Dotprompt::default();
    let source = "---\ninput:\n  default:\n    name: World\n---\nHello {{name}}";
    assert_eq!(
        first_text(&render(&dp, source, json!({})).unwrap()),
        "Hello World"
    );
    assert_eq!(
        first_text(&render(&dp, source, json!({"name": "Ada"})).unwrap()),
        "Hello Ada"
    );
}

#[test]
fn tools_are_resolved() {
    let tool = |name: &str| ToolDefinition {
        name: name.to_owned(),
        description: None,
        input_schema: json!({"type": "object"}),
        output_schema: None,
        metadata: None,
    };
    let known = tool("search");
    let dp = Dotprompt::default();
    dp.define_tool(known.clone());
    let source = "---\ntools: [search, other]\n---\nx";
    let meta = block_on(dp.render_metadata(source, None)).unwrap();
    assert_eq!(meta.tool_defs, Some(vec![known.clone()]));
    assert_eq!(meta.tools, Some(vec!["other".to_owned()]));

    let resolving = Dotprompt::new(DotpromptOptions {
        tool_resolver: Some(ToolResolver::from_fn(move |name| {
            (name == "other").then(|| tool("other"))
        })),
        ..DotpromptOptions::default()
    })
    .unwrap();
    let meta = block_on(resolving.render_metadata(source, None));
    assert!(matches!(meta, Err(Error::UnknownTool { name, .. }) if name == "search"));
}

#[test]
fn schemas_come_from_registry_then_resolver() {
    let dp = Dotprompt::new(DotpromptOptions {
        schema_resolver: Some(SchemaResolver::new(|name: String| async move {
            Ok((name == "Pet").then(|| json!({"type": "object", "title": "Pet"})))
        })),
        ..DotpromptOptions::default()
    })
    .unwrap();
    dp.define_schema("Owner", json!({"type": "string"}));
    let source = "---\noutput:\n  schema:\n    owner: Owner\n    pet?: Pet, the pet\n---\n";
    let meta = block_on(dp.render_metadata(source, None)).unwrap();
    assert_eq!(
        meta.output.and_then(|o| o.schema),
        Some(json!({
            "type": "object",
            "properties": {
                "owner": {"type": "string"},
                "pet": {"type": ["object", "null"], "title": "Pet", "description": "the pet"}
            },
            "required": ["owner"],
            "additionalProperties": false
        }))
    );
}

#[test]
fn invalid_picoschema_is_an_error() {
    let dp = Dotprompt::default();
    let source = "---\nname: p\ninput:\n  schema:\n    a: Missing\n---\n";
    let err = block_on(dp.render_metadata(source, None)).unwrap_err();
    assert!(
        matches!(&err, Error::Picoschema { source: PicoschemaError::UnknownSchema(n), location }
            if n == "Missing" && location.prompt.as_deref() == Some("p")),
        "{err}"
    );
}

#[test]
fn template_syntax_errors_point_into_the_source() {
    let dp = Dotprompt::default();
    let err = render(
        &dp,
        "---\nmodel: m\n---\nok\n{{#if x}}never closed",
        json!({}),
    )
    .unwrap_err();
    let Error::TemplateSyntax { location, .. } = &err else {
        panic!("unexpected error {err}");
    };
    assert!(location.line.is_some_and(|l| l >= 5), "{err}");
}

#[test]
fn malformed_frontmatter_is_an_error() {
    let dp = Dotprompt::default();
    let err = render(&dp, "---\nmodel: [unclosed\n---\nx", json!({})).unwrap_err();
    assert!(matches!(err, Error::Frontmatter { .. }), "{err}");
}

#[test]
fn history_without_marker_goes_before_the_user_turn() {
    let dp = Dotprompt::default();
    let rendered = block_on(dp.render(
        "{{role \"system\"}}sys{{role \"user\"}}now",
        &data(json!({"messages": [{"role": "model", "content": [{"text": "before"}]}]})),
        None,
    ))
    .unwrap();
    let roles: Vec<_> = rendered.messages.iter().map(|m| m.role).collect();
    use dotprompt::Role::*;
    assert_eq!(roles, vec![System, Model, User]);
}

#[test]
fn environment_and_futures_are_thread_safe() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let dp = Dotprompt::default();
    send_sync(&dp);
    let data = DataArgument::default();
    let future = dp.render("x", &data, None);
    send(&future);
    let compiled = block_on(dp.compile("x")).unwrap();
    send_sync(&compiled);
    send(&compiled.render(&data, None));
    send(&dp.render_metadata("x", None));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let dp = Dotprompt::default();
    // Blocks nested deeper than the limit are refused when compiling.
    let deep = format!("{}x{}", "{{#if a}}".repeat(200), "{{/if}}".repeat(200));
    let err = render(&dp, &deep, json!({"a": true})).unwrap_err();
    assert!(err.to_string().contains("nest more than"), "{err}");
    // Within it, they render.
    let ok = format!("{}x{}", "{{#each a}}".repeat(100), "{{/each}}".repeat(100));
    assert_eq!(
        first_text(&render(&dp, &ok, json!({"a": [[[1]]]})).unwrap()),
        ""
    );
    // An inline partial that includes itself without end fails cleanly.
    let looping = "{{#*inline \"loop\"}}x{{> loop}}{{/inline}}{{> loop}}";
    let err = render(&dp, looping, json!({})).unwrap_err();
    assert!(err.to_string().contains("nest more than"), "{err}");
    // One that recurses over data renders, as a tree.
    let tree = "{{#*inline \"t\"}}{{n}}({{#each kids}}{{> t}}{{/each}}){{/inline}}{{> t}}";
    let data = json!({"n": 1, "kids": [{"n": 2, "kids": [{"n": 3}]}, {"n": 4}]});
    assert_eq!(
        first_text(&render(&dp, tree, data).unwrap()),
        "1(2(3())4())"
    );
}

#[test]
fn unsupported_constructs_are_refused_when_compiled_with_their_line() {
    let dp = Dotprompt::default();
    dp.define_partial("p", "ok\n{{> (dynamic)}}").unwrap();
    for (source, construct, partial, line) in [
        (
            "---\nname: t\n---\nHello\n{{#*deco}}x{{/deco}}",
            "decorator",
            None,
            5,
        ),
        (
            "---\nname: t\n---\n{{> p}}",
            "dynamic partial name",
            Some("p"),
            2,
        ),
        (
            "---\nname: t\n---\n\n\n{{#with x as |a b|}}{{/with}}",
            "block parameters",
            None,
            6,
        ),
    ] {
        let err = match block_on(dp.compile(source)) {
            Ok(_) => panic!("{source:?} compiled"),
            Err(err) => err,
        };
        let Error::TemplateSyntax { message, location } = &err else {
            panic!("unexpected error {err}");
        };
        assert!(message.contains(construct), "{err}");
        assert_eq!(location.prompt.as_deref(), Some("t"), "{err}");
        assert_eq!(location.partial.as_deref(), partial, "{err}");
        assert_eq!(location.line, Some(line), "{err}");
    }
}

#[test]
fn a_failing_helper_fails_the_render_once_with_its_line() {
    let dp = Dotprompt::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    dp.define_helper("count", move |_, _| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(json!(""))
    });
    dp.define_helper("fail", |_, _| Err("nope".into()));
    let source = "---\nname: t\n---\n{{count}}\n  {{fail}}";
    let err = render(&dp, source, json!({})).unwrap_err();
    let Error::Render { message, location } = &err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(message, "helper `fail`: nope");
    assert_eq!((location.line, location.column), (Some(5), Some(3)));
    // The template was not rendered a second time (by another engine).
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[test]
fn check_refuses_what_the_renderer_does_not_support_but_not_undefined_helpers() {
    let dp = Dotprompt::default();
    let err = dp
        .check("---\nname: t\n---\nHi\n {{> (which)}}")
        .unwrap_err();
    let Error::TemplateSyntax { message, location } = &err else {
        panic!("unexpected error {err}");
    };
    assert!(message.contains("dynamic partial name"), "{err}");
    assert_eq!((location.line, location.column), (Some(5), Some(2)));
    // Helpers and partials may still be defined before the prompt renders.
    dp.check("{{shout name}}{{#loud}}x{{/loud}}{{> later}}")
        .unwrap();
}
