//! JSON Patch diffs as Genkit JS computes them.
//!
//! `genkit_js_agent/json_patch.jsonl` holds what Genkit JS 1.42's `diff` and
//! `applyPatch` give for hand-written and generated documents (see
//! `genkit_js_agent/json_patch.mjs`); `genkit_session::json_patch` must
//! give the same operations in the same order, and its patches must turn the
//! old document into the new one.

use genkit_session::json_patch::{JsonPatch, apply, diff, json_equal};
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    genkit: String,
    seed: u64,
    cases: usize,
}

/// One recorded case: a diff, or a hand-written patch applied.
#[derive(Debug, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum Case {
    Diff {
        name: String,
        /// The old document as written (key order as the author gave it).
        #[serde(rename = "fromText")]
        from_text: Option<String>,
        #[serde(rename = "toText")]
        to_text: Option<String>,
        from: Value,
        to: Value,
        patch: JsonPatch,
    },
    Apply {
        name: String,
        doc: Value,
        apply: JsonPatch,
        result: Value,
    },
}

fn recorded() -> (Header, Vec<Case>) {
    let text = include_str!("../../genkit-agent/tests/genkit_js_agent/json_patch.jsonl");
    let mut lines = text.lines();
    let header: Header =
        serde_json::from_str(lines.next().expect("a header line")).expect("header");
    let cases: Vec<Case> = lines
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 2))
        })
        .collect();
    (header, cases)
}

#[test]
fn diffs_match_genkit_js_op_by_op() {
    let (header, cases) = recorded();
    assert_eq!(header.genkit, "1.42.0");
    assert_eq!(header.cases, cases.len());
    assert_ne!(header.seed, 0);
    let mut diffs = 0;
    for case in &cases {
        let Case::Diff {
            name,
            from_text,
            to_text,
            from,
            to,
            patch,
        } = case
        else {
            continue;
        };
        diffs += 1;
        // The text as written, when there is one: JavaScript reorders
        // integer-like keys, and so must `diff`.
        let parse = |text: &Option<String>, value: &Value| match text {
            Some(text) => serde_json::from_str(text).expect("case text"),
            None => value.clone(),
        };
        let (old, new) = (parse(from_text, from), parse(to_text, to));
        let ours = diff(&old, &new);
        assert_eq!(&ours, patch, "{name}: diff differs from Genkit JS's");
        let applied = apply(&old, &ours).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(
            json_equal(&applied, &new),
            "{name}: applying the diff gave {applied}"
        );
    }
    assert!(diffs >= 400, "only {diffs} diff cases");
}

#[test]
fn valid_patches_apply_as_in_genkit_js() {
    let (_, cases) = recorded();
    let mut applied = 0;
    for case in &cases {
        let Case::Apply {
            name,
            doc,
            apply: patch,
            result,
        } = case
        else {
            continue;
        };
        applied += 1;
        let ours = apply(doc, patch).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(&ours, result, "{name}");
    }
    assert!(applied >= 10, "only {applied} apply cases");
}

/// JSON values with the keys that matter to a diff: integer-like ones,
/// ones JSON Pointer escapes, and the empty key.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-20i64..20).prop_map(Value::from),
        (-1000.0f64..1000.0).prop_map(|f| Value::from((f * 8.0).round() / 8.0)),
        "[a-z~/]{0,3}".prop_map(Value::from),
    ];
    let key = prop_oneof![
        Just(String::new()),
        "[a-c]",
        "(0|1|2|10|01|-1)",
        "[a~/]{1,2}",
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// A document and an edited copy of it, so most pairs share structure.
fn related_pair() -> impl Strategy<Value = (Value, Value)> {
    (json_value(), json_value(), any::<u64>()).prop_map(|(old, other, seed)| {
        let new = edit(&old, &other, seed);
        (old, new)
    })
}

/// Replaces, drops or appends a few parts of `doc`, chosen by `seed`'s bits.
fn edit(doc: &Value, other: &Value, seed: u64) -> Value {
    let bit = |n: u32| seed.rotate_right(n) & 0b111;
    match doc {
        _ if bit(0) == 0 => other.clone(),
        Value::Array(items) => {
            let mut items: Vec<Value> = items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    if bit(i as u32 * 3 + 3) == 1 {
                        edit(item, other, seed >> 7)
                    } else {
                        item.clone()
                    }
                })
                .collect();
            match bit(5) {
                1 => items.push(other.clone()),
                2 if !items.is_empty() => {
                    items.remove(seed as usize % items.len());
                }
                3 => items.insert(0, other.clone()),
                _ => {}
            }
            Value::Array(items)
        }
        Value::Object(map) => {
            let mut map: serde_json::Map<String, Value> = map
                .iter()
                .enumerate()
                .filter(|(i, _)| bit(*i as u32 * 3 + 1) != 2)
                .map(|(i, (k, v))| {
                    let v = if bit(i as u32 * 3 + 2) == 1 {
                        edit(v, other, seed >> 5)
                    } else {
                        v.clone()
                    };
                    (k.clone(), v)
                })
                .collect();
            if bit(4) == 1 {
                map.insert(format!("k{}", seed % 3), other.clone());
            }
            Value::Object(map)
        }
        _ => doc.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn applying_a_diff_gives_the_new_document((old, new) in related_pair()) {
        let patch = diff(&old, &new);
        let applied = apply(&old, &patch).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(json_equal(&applied, &new), "got {applied}, wanted {new}, patch {patch:?}");
        prop_assert_eq!(patch.is_empty(), json_equal(&old, &new));
        // The patch survives Genkit's wire form.
        let wire = serde_json::to_string(&patch).expect("serialize");
        let back: JsonPatch = serde_json::from_str(&wire).expect("deserialize");
        prop_assert_eq!(back, patch);
    }

    #[test]
    fn unrelated_documents_diff_too(old in json_value(), new in json_value()) {
        let applied = apply(&old, &diff(&old, &new)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(json_equal(&applied, &new));
        prop_assert!(diff(&new, &new).is_empty());
    }
}
