//! Any template text, however broken, gives a result or an error: never a
//! panic or a stack overflow. Random sequences of template tokens (tags,
//! blocks, partials, inline partials, partial blocks, whitespace control,
//! literals) are compiled and rendered.

use std::collections::HashMap;

use dotprompt::{DataArgument, Dotprompt, DotpromptOptions};
use futures::executor::block_on;
use serde_json::json;

const TOKENS: &[&str] = &[
    "{{",
    "}}",
    "{{{",
    "}}}",
    "~",
    "#",
    "/",
    "if",
    "each",
    "with",
    "unless",
    "else",
    "> ",
    "p",
    "layout",
    "@partial-block",
    "*inline",
    "\"x\"",
    " ",
    "\n",
    "x",
    ".",
    "..",
    "../",
    "@index",
    "this",
    "json",
    "lookup",
    "as |a b|",
    "|",
    "a",
    "(",
    ")",
    "=",
    "1",
    "'",
    "\\",
    "!",
    "--",
    "inl",
    "#>",
    "{{#*inline \"inl\"}}",
    "{{/inline}}",
    "{{> inl}}",
    "{{#> layout}}",
    "{{/layout}}",
    "{{#each a}}",
    "{{/each}}",
    "{{#if a}}",
    "{{/if}}",
    "{{role \"user\"}}",
];

#[test]
fn random_template_text_never_panics() {
    let mut partials = HashMap::new();
    partials.insert("p".to_owned(), "P{{a}}{{> @partial-block}}".to_owned());
    partials.insert("layout".to_owned(), "L[{{> @partial-block}}]".to_owned());
    let dp = Dotprompt::new(DotpromptOptions {
        partials,
        ..Default::default()
    })
    .expect("partials");
    let data: DataArgument =
        serde_json::from_value(json!({"input": {"a": [1, {"b": 2}], "x": "s"}})).expect("data");
    // A fixed linear congruential sequence: the same cases every run.
    let mut seed: u64 = 20261130;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    let mut rendered = 0;
    for _ in 0..5000 {
        let mut template = String::new();
        for _ in 0..next() % 30 + 1 {
            template.push_str(TOKENS[next() % TOKENS.len()]);
        }
        if block_on(dp.render(&template, &data, None)).is_ok() {
            rendered += 1;
        }
    }
    // Not only errors: a good share of the random texts are templates.
    assert!(rendered > 500, "only {rendered} rendered");
}
