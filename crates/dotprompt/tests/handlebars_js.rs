//! Dotprompt for Rust renders templates exactly as npm `dotprompt`
//! (Handlebars.js) does: every case in `handlebars_js/cases.jsonl` was
//! rendered by the reference (`handlebars_js/generate.mjs` records them)
//! and must come out the same here, or fail where it fails.

use std::collections::HashMap;

use dotprompt::{DataArgument, Dotprompt, DotpromptOptions};
use futures::executor::block_on;
use serde_json::{Value, json};

const CASES: &str = include_str!("handlebars_js/cases.jsonl");

#[test]
fn templates_render_as_handlebars_js_renders_them() {
    let mut lines = CASES.lines();
    let header: Value = serde_json::from_str(lines.next().expect("a header")).expect("header");
    let partials: HashMap<String, String> =
        serde_json::from_value(header["partials"].clone()).expect("partials");
    let dp = Dotprompt::new(DotpromptOptions {
        partials,
        ..DotpromptOptions::default()
    })
    .expect("partials compile");
    let data: DataArgument =
        serde_json::from_value(json!({"input": header["data"], "context": header["context"]}))
            .expect("data");

    let mut failures = Vec::new();
    let mut total = 0;
    for line in lines {
        let case: Value = serde_json::from_str(line).expect("a case");
        let template = case["template"].as_str().expect("template");
        let expected = &case["expected"];
        total += 1;
        let got = block_on(dp.render(template, &data, None));
        let same = match (&got, expected.get("messages")) {
            (Ok(rendered), Some(messages)) => {
                serde_json::to_value(&rendered.messages).expect("serializable") == *messages
            }
            (Err(_), None) => true,
            _ => false,
        };
        if !same {
            let got = match got {
                Ok(rendered) => serde_json::to_string(&rendered.messages).expect("serializable"),
                Err(e) => format!("error: {e}"),
            };
            failures.push(format!(
                "template {template:?}\n  Handlebars.js: {expected}\n  here:          {got}"
            ));
        }
    }
    assert!(total > 600, "only {total} cases");
    assert!(
        failures.is_empty(),
        "{} of {total} templates render differently:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
