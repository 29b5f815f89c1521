//! A fixed set of templates rendered with hostile data: fuzzer-chosen JSON
//! input (or one fuzzer-chosen string in every variable). Values are
//! inserted as text, so whatever they hold (`<<<dotprompt:role:system>>>`,
//! media or section markers, `>>>`), the rendered messages have only the
//! roles the template writes, in its order, and no more media parts than
//! it asks for; a plain string is printed exactly; and the output stays
//! linear in the data.
#![no_main]

use dotprompt::{DataArgument, Dotprompt, Part, Role};
use futures::executor::block_on;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};
use std::sync::OnceLock;

/// A template, the roles it writes (in order), and how many media parts
/// it makes.
struct Case {
    source: &'static str,
    roles: &'static [Role],
    media: usize,
}

const CASES: &[Case] = &[
    Case {
        source: "Q: {{name}}",
        roles: &[Role::User],
        media: 0,
    },
    Case {
        source: "{{role \"system\"}}Rules. {{name}}\n{{role \"user\"}}Ask: {{#each items}}{{this}};{{/each}}",
        roles: &[Role::System, Role::User],
        media: 0,
    },
    Case {
        source: "{{#with obj}}{{{q}}}{{/with}} {{json obj}} {{lookup obj \"q\"}} {{{name}}}",
        roles: &[Role::User],
        media: 0,
    },
    Case {
        source: "{{#if name}}{{name}}{{else}}none{{/if}} {{@state.note}} {{> card}}",
        roles: &[Role::User],
        media: 0,
    },
    Case {
        source: "{{media url=name}} caption: {{name}} {{#each items}}{{@index}}={{this}} {{/each}}",
        roles: &[Role::User],
        media: 1,
    },
    Case {
        source: "{{role \"user\"}}{{name}}{{section \"s\"}}{{obj.q}}\n{{role \"model\"}}{{#each items as |it i|}}{{it}}{{/each}}",
        roles: &[Role::User, Role::Model],
        media: 0,
    },
];

fn dotprompt() -> &'static Dotprompt {
    static DP: OnceLock<Dotprompt> = OnceLock::new();
    DP.get_or_init(|| {
        let dp = Dotprompt::default();
        dp.define_partial("card", "Card: {{name}} {{obj.q}}")
            .expect("the partial parses");
        dp
    })
}

/// Whether `got` is `want` with some elements left out (an empty role
/// section makes no message).
fn is_subsequence(got: &[Role], want: &[Role]) -> bool {
    let mut want = want.iter();
    got.iter().all(|r| want.any(|w| w == r))
}

fuzz_target!(|data: &[u8]| {
    let (input, plain) = match serde_json::from_slice::<Value>(data) {
        Ok(Value::Object(input)) => (input, None),
        _ => {
            let s = String::from_utf8_lossy(data).into_owned();
            let input = json!({"name": s, "items": [s, "x"], "obj": {"q": s}});
            let Value::Object(input) = input else { return };
            (input, Some(s))
        }
    };
    let note = input.get("name").cloned().unwrap_or(Value::Null);
    let mut context = Map::new();
    context.insert("state".into(), json!({ "note": note }));
    let data_arg = DataArgument {
        input: Some(input),
        context: Some(context),
        ..DataArgument::default()
    };
    let dp = dotprompt();
    for (i, case) in CASES.iter().enumerate() {
        // A render may fail (e.g. `json` of a value it cannot print); it
        // must not panic, and what it renders must keep the invariants.
        let Ok(rendered) = block_on(dp.render(case.source, &data_arg, None)) else {
            continue;
        };
        let roles: Vec<Role> = rendered.messages.iter().map(|m| m.role).collect();
        assert!(
            is_subsequence(&roles, case.roles),
            "template {i}: roles {roles:?}, the template writes {:?}",
            case.roles
        );
        let parts = rendered.messages.iter().flat_map(|m| &m.content);
        let media = parts
            .clone()
            .filter(|p| matches!(p, Part::Media(_)))
            .count();
        assert!(media <= case.media, "template {i}: {media} media parts");
        let text: usize = parts
            .map(|p| match p {
                Part::Text(t) => t.text.len(),
                Part::Media(m) => m.media.url.len(),
                _ => 0,
            })
            .sum();
        assert!(
            text <= 32 * data.len() + 4096,
            "template {i}: {text} bytes rendered from {} bytes",
            data.len()
        );
        if i == 0
            && let Some(s) = &plain
        {
            let want = json!([{"role": "user", "content": [{"text": format!("Q: {s}")}]}]);
            let got = serde_json::to_value(&rendered.messages).expect("messages serialize");
            assert_eq!(got, want, "a string value is not printed as it is");
        }
    }
});
