//! JSON Patch (RFC 6902) as Genkit's agents use it.
//!
//! An agent streams its custom session state to the client as `customPatch`
//! chunks: the first patch of a turn replaces the whole document (path `""`),
//! later ones are diffs against the previous patch's document. Clients and
//! conformance suites compare patches operation by operation, so [`diff`]
//! produces exactly the operations Genkit JS's `diff` does, in the same
//! order:
//!
//! - objects: one entry per key, the old document's keys first, then keys only
//!   the new one has, each side in JavaScript's key order (integer-like keys
//!   such as `"2"` and `"10"` first, ascending, then the rest as written); a key
//!   only in the old document is `remove`d, a key only in the new one `add`ed,
//!   a key in both is diffed recursively;
//! - arrays: items diffed pairwise by index, then extra new items appended with
//!   `add` at `/-` in order, or extra old items `remove`d from the last one down;
//! - anything else that differs (scalars, a type change) is one `replace`.
//!
//! Numbers compare by value (`1` equals `1.0`), as in JavaScript. No `move`
//! or `copy` is ever produced; [`apply`] accepts all six operations.
//!
//! One deliberate difference: keys named like members of JavaScript's
//! `Object.prototype` (`constructor`, `toString`, `__proto__`, ...) are
//! ordinary keys here. Genkit JS's `diff` mistakes them for present keys (a new
//! one becomes a `replace`, a removed one throws) and its `applyPatch` refuses
//! `__proto__`, `prototype` and `constructor` in paths.
//!
//! ```
//! use genkit_session::json_patch::{apply, diff, JsonPatchOperation};
//! use serde_json::json;
//!
//! let old = json!({"counter": 1, "status": "working"});
//! let new = json!({"counter": 2, "status": "working", "done": true});
//! let patch = diff(&old, &new);
//! assert_eq!(
//!     patch,
//!     vec![
//!         JsonPatchOperation::Replace { path: "/counter".into(), value: json!(2) },
//!         JsonPatchOperation::Add { path: "/done".into(), value: json!(true) },
//!     ]
//! );
//! assert_eq!(apply(&old, &patch)?, new);
//! # Ok::<(), genkit_session::json_patch::JsonPatchError>(())
//! ```

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

/// A JSON Patch: operations applied in order (Genkit's `JsonPatch`).
pub type JsonPatch = Vec<JsonPatchOperation>;

/// One JSON Patch operation (Genkit's `JsonPatchOperation`), serialized as
/// `{"op": "add", "path": "/a", "value": 1}`. Paths are JSON Pointers
/// (RFC 6901); `""` is the whole document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum JsonPatchOperation {
    /// Adds `value` at `path`: sets an object member, inserts into an array
    /// (`-` appends), or replaces the document at `""`.
    Add {
        /// Where to add.
        path: String,
        /// What to add.
        value: Value,
    },
    /// Removes the value at `path`, which must exist.
    Remove {
        /// What to remove.
        path: String,
    },
    /// Replaces the value at `path`, which must exist.
    Replace {
        /// What to replace.
        path: String,
        /// The new value.
        value: Value,
    },
    /// Removes the value at `from` and adds it at `path`.
    Move {
        /// Where the value is taken from.
        from: String,
        /// Where it is added.
        path: String,
    },
    /// Adds a copy of the value at `from` at `path`.
    Copy {
        /// Where the value is copied from.
        from: String,
        /// Where the copy is added.
        path: String,
    },
    /// Checks that the value at `path` equals `value`; the patch fails otherwise.
    Test {
        /// What to check.
        path: String,
        /// The expected value.
        value: Value,
    },
}

impl JsonPatchOperation {
    /// The operation's target pointer.
    pub fn path(&self) -> &str {
        match self {
            Self::Add { path, .. }
            | Self::Remove { path }
            | Self::Replace { path, .. }
            | Self::Move { path, .. }
            | Self::Copy { path, .. }
            | Self::Test { path, .. } => path,
        }
    }
}

/// Why a patch could not be applied. Every case is the caller's input at
/// fault: its status is `INVALID_ARGUMENT`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JsonPatchError {
    /// The pointer is not a JSON Pointer (it must be `""` or start with `/`,
    /// and `~` may only be followed by `0` or `1`).
    #[error(
        "invalid JSON Pointer \"{0}\": it must be empty or start with '/', and '~' must be followed by '0' or '1'"
    )]
    InvalidPointer(String),
    /// Nothing is at the pointer (or at its parent, for `add`).
    #[error("JSON Patch path \"{0}\" does not exist in the document")]
    PathNotFound(String),
    /// An array index that is not a number, is out of range, or is `-` where
    /// only `add` allows it.
    #[error("JSON Patch path \"{path}\": invalid array index '{index}'")]
    InvalidIndex {
        /// The operation's pointer.
        path: String,
        /// The offending reference token.
        index: String,
    },
    /// A `test` operation found a different value.
    #[error("JSON Patch 'test' failed at \"{0}\"")]
    TestFailed(String),
    /// `remove` at `""`: a document cannot remove itself.
    #[error("JSON Patch cannot remove the whole document")]
    RemoveRoot,
    /// `move` into one of the moved value's own children.
    #[error("JSON Patch cannot move \"{from}\" into its own child \"{path}\"")]
    MoveIntoChild {
        /// The source pointer.
        from: String,
        /// The target pointer.
        path: String,
    },
}

impl JsonPatchError {
    /// Genkit's canonical status for this error: always `INVALID_ARGUMENT`.
    pub fn status(&self) -> genkit_core::StatusCode {
        genkit_core::StatusCode::InvalidArgument
    }
}

impl From<JsonPatchError> for genkit_core::Error {
    fn from(e: JsonPatchError) -> Self {
        genkit_core::Error::invalid_argument(e.to_string())
    }
}

/// The operations that turn `from` into `to`, exactly as Genkit JS's `diff`
/// computes them (see the [module docs](self) for the rules). Empty when the
/// documents are equal.
pub fn diff(from: &Value, to: &Value) -> JsonPatch {
    let mut patch = Vec::new();
    let mut pointer = String::new();
    diff_into(from, to, &mut pointer, &mut patch);
    patch
}

fn diff_into(from: &Value, to: &Value, pointer: &mut String, patch: &mut JsonPatch) {
    if json_equal(from, to) {
        return;
    }
    match (from, to) {
        (Value::Object(old), Value::Object(new)) => {
            let old_keys = js_key_order(old);
            let added_keys = js_key_order(new)
                .into_iter()
                .filter(|k| !old.contains_key(*k));
            for key in old_keys.into_iter().chain(added_keys) {
                let len = pointer.len();
                pointer.push('/');
                push_escaped(pointer, key);
                match (old.get(key), new.get(key)) {
                    (Some(_), None) => patch.push(JsonPatchOperation::Remove {
                        path: pointer.clone(),
                    }),
                    (None, Some(value)) => patch.push(JsonPatchOperation::Add {
                        path: pointer.clone(),
                        value: value.clone(),
                    }),
                    (Some(a), Some(b)) => diff_into(a, b, pointer, patch),
                    (None, None) => {}
                }
                pointer.truncate(len);
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for (i, (a, b)) in old.iter().zip(new).enumerate() {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&i.to_string());
                diff_into(a, b, pointer, patch);
                pointer.truncate(len);
            }
            for value in new.iter().skip(old.len()) {
                patch.push(JsonPatchOperation::Add {
                    path: format!("{pointer}/-"),
                    value: value.clone(),
                });
            }
            for i in (new.len()..old.len()).rev() {
                patch.push(JsonPatchOperation::Remove {
                    path: format!("{pointer}/{i}"),
                });
            }
        }
        _ => patch.push(JsonPatchOperation::Replace {
            path: pointer.clone(),
            value: to.clone(),
        }),
    }
}

/// An object's keys in the order JavaScript's `Object.keys` gives them:
/// array-index keys (canonical integers below 2^32 - 1) first, ascending, then
/// every other key in insertion order.
fn js_key_order(map: &Map<String, Value>) -> Vec<&String> {
    let mut indices: Vec<(u32, &String)> = map
        .keys()
        .filter_map(|k| array_index_key(k).map(|i| (i, k)))
        .collect();
    indices.sort_unstable_by_key(|(i, _)| *i);
    let others = map.keys().filter(|k| array_index_key(k).is_none());
    indices.into_iter().map(|(_, k)| k).chain(others).collect()
}

/// `Some(n)` when `key` is a JavaScript array index: the canonical decimal form
/// of an integer from 0 to 2^32 - 2.
fn array_index_key(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u32>().ok().filter(|&n| n != u32::MAX)
}

/// Deep equality as Genkit JS's patch code has it: numbers by value (`1` equals
/// `1.0`), objects regardless of key order.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_equal(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| json_equal(a, b)))
        }
        _ => a == b,
    }
}

fn numbers_equal(x: &Number, y: &Number) -> bool {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a == b;
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a == b;
    }
    match (x.as_f64(), y.as_f64()) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn push_escaped(pointer: &mut String, token: &str) {
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// Applies `patch` to a copy of `doc` and returns the result; `doc` is left as
/// it was whether or not the patch applies.
///
/// Operations follow RFC 6902 strictly: the target of `remove`, `replace`,
/// `move`'s `from` and `copy`'s `from` must exist, `add` needs an existing
/// parent, array indices must be in range (`-` appends, for `add` only), and a
/// failed `test` fails the whole patch. (Genkit JS's `applyPatch` is lenient:
/// it creates missing parents and ignores out-of-range removals. Every patch
/// [`diff`] produces applies the same way under both.)
pub fn apply(doc: &Value, patch: &[JsonPatchOperation]) -> Result<Value, JsonPatchError> {
    let mut doc = doc.clone();
    for op in patch {
        apply_operation(&mut doc, op)?;
    }
    Ok(doc)
}

fn apply_operation(doc: &mut Value, op: &JsonPatchOperation) -> Result<(), JsonPatchError> {
    match op {
        JsonPatchOperation::Add { path, value } => add(doc, path, value.clone()),
        JsonPatchOperation::Remove { path } => remove(doc, path).map(drop),
        JsonPatchOperation::Replace { path, value } => {
            let target = get_mut(doc, path)?;
            *target = value.clone();
            Ok(())
        }
        JsonPatchOperation::Move { from, path } => {
            let from_tokens = parse_pointer(from)?;
            let path_tokens = parse_pointer(path)?;
            if from_tokens == path_tokens {
                // Still required to exist.
                return get_mut(doc, from).map(drop);
            }
            if path_tokens.len() > from_tokens.len() && path_tokens.starts_with(&from_tokens) {
                return Err(JsonPatchError::MoveIntoChild {
                    from: from.clone(),
                    path: path.clone(),
                });
            }
            let value = remove(doc, from)?;
            add(doc, path, value)
        }
        JsonPatchOperation::Copy { from, path } => {
            let value = get_mut(doc, from)?.clone();
            add(doc, path, value)
        }
        JsonPatchOperation::Test { path, value } => {
            let actual = get_mut(doc, path)?;
            if json_equal(actual, value) {
                Ok(())
            } else {
                Err(JsonPatchError::TestFailed(path.clone()))
            }
        }
    }
}

/// The reference tokens of a JSON Pointer, unescaped.
fn parse_pointer(pointer: &str) -> Result<Vec<String>, JsonPatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(JsonPatchError::InvalidPointer(pointer.to_string()));
    };
    rest.split('/')
        .map(|token| {
            unescape(token).ok_or_else(|| JsonPatchError::InvalidPointer(pointer.to_string()))
        })
        .collect()
}

fn unescape(token: &str) -> Option<String> {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// An array position for `token`: decimal digits without a leading zero.
fn array_index(token: &str, path: &str) -> Result<usize, JsonPatchError> {
    let canonical = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    canonical
        .then(|| token.parse::<usize>().ok())
        .flatten()
        .ok_or_else(|| JsonPatchError::InvalidIndex {
            path: path.to_string(),
            index: token.to_string(),
        })
}

/// The value at `path`, which must exist.
fn get_mut<'a>(doc: &'a mut Value, path: &str) -> Result<&'a mut Value, JsonPatchError> {
    let tokens = parse_pointer(path)?;
    let mut current = doc;
    for token in &tokens {
        current = child_mut(current, token, path)?;
    }
    Ok(current)
}

fn child_mut<'a>(
    value: &'a mut Value,
    token: &str,
    path: &str,
) -> Result<&'a mut Value, JsonPatchError> {
    match value {
        Value::Object(map) => map
            .get_mut(token)
            .ok_or_else(|| JsonPatchError::PathNotFound(path.to_string())),
        Value::Array(items) => {
            let i = array_index(token, path)?;
            let len = items.len();
            items
                .get_mut(i)
                .ok_or_else(|| JsonPatchError::InvalidIndex {
                    path: path.to_string(),
                    index: format!("{i} (the array has {len} items)"),
                })
        }
        _ => Err(JsonPatchError::PathNotFound(path.to_string())),
    }
}

/// The parent of `path`'s target and the last token, or `None` for the root.
fn parent_mut<'a>(
    doc: &'a mut Value,
    path: &str,
) -> Result<Option<(&'a mut Value, String)>, JsonPatchError> {
    let mut tokens = parse_pointer(path)?;
    let Some(last) = tokens.pop() else {
        return Ok(None);
    };
    let mut current = doc;
    for token in &tokens {
        current = child_mut(current, token, path)?;
    }
    Ok(Some((current, last)))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), JsonPatchError> {
    let Some((parent, last)) = parent_mut(doc, path)? else {
        *doc = value;
        return Ok(());
    };
    match parent {
        Value::Object(map) => {
            map.insert(last, value);
            Ok(())
        }
        Value::Array(items) if last == "-" => {
            items.push(value);
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(&last, path)?;
            if i > items.len() {
                return Err(JsonPatchError::InvalidIndex {
                    path: path.to_string(),
                    index: format!("{i} (the array has {} items)", items.len()),
                });
            }
            items.insert(i, value);
            Ok(())
        }
        _ => Err(JsonPatchError::PathNotFound(path.to_string())),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, JsonPatchError> {
    let Some((parent, last)) = parent_mut(doc, path)? else {
        return Err(JsonPatchError::RemoveRoot);
    };
    match parent {
        Value::Object(map) => map
            .shift_remove(&last)
            .ok_or_else(|| JsonPatchError::PathNotFound(path.to_string())),
        Value::Array(items) => {
            let i = array_index(&last, path)?;
            if i >= items.len() {
                return Err(JsonPatchError::InvalidIndex {
                    path: path.to_string(),
                    index: format!("{i} (the array has {} items)", items.len()),
                });
            }
            Ok(items.remove(i))
        }
        _ => Err(JsonPatchError::PathNotFound(path.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shape_is_genkits() {
        let op = JsonPatchOperation::Replace {
            path: String::new(),
            value: json!({"counter": 1}),
        };
        assert_eq!(
            serde_json::to_value(&op).unwrap(),
            json!({"op": "replace", "path": "", "value": {"counter": 1}})
        );
        let moved: JsonPatchOperation =
            serde_json::from_value(json!({"op": "move", "from": "/a", "path": "/b"})).unwrap();
        assert_eq!(
            moved,
            JsonPatchOperation::Move {
                from: "/a".into(),
                path: "/b".into()
            }
        );
        assert!(
            serde_json::from_value::<JsonPatchOperation>(json!({"op": "add", "path": "/a"}))
                .is_err()
        );
        assert!(
            serde_json::from_value::<JsonPatchOperation>(json!({"op": "merge", "path": "/a"}))
                .is_err()
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(diff(&json!({"a": 1}), &json!({"a": 1.0})).is_empty());
        assert_eq!(diff(&json!(1), &json!(-1)).len(), 1);
        assert_eq!(diff(&json!(u64::MAX), &json!(-1)).len(), 1);
    }

    #[test]
    fn integer_like_keys_are_ordered_as_javascript_does() {
        let from: Value =
            serde_json::from_str(r#"{"b": 1, "10": 1, "a": 1, "2": 1, "01": 1}"#).unwrap();
        let to: Value =
            serde_json::from_str(r#"{"b": 2, "10": 2, "a": 2, "2": 2, "01": 2}"#).unwrap();
        let paths: Vec<_> = diff(&from, &to)
            .iter()
            .map(|op| op.path().to_string())
            .collect();
        assert_eq!(paths, ["/2", "/10", "/b", "/a", "/01"]);
    }

    #[test]
    fn prototype_member_names_are_ordinary_keys() {
        let old = json!({"a": 1, "toString": 2});
        let new = json!({"a": 1, "constructor": 2});
        let patch = diff(&old, &new);
        assert_eq!(
            patch,
            vec![
                JsonPatchOperation::Remove {
                    path: "/toString".into()
                },
                JsonPatchOperation::Add {
                    path: "/constructor".into(),
                    value: json!(2)
                },
            ]
        );
        assert_eq!(apply(&old, &patch).unwrap(), new);
    }

    #[test]
    fn bad_paths_are_errors_not_panics() {
        let doc = json!({"a": [1, 2], "s": "x"});
        let cases = [
            (
                json!({"op": "replace", "path": "a", "value": 1}),
                "invalid JSON Pointer",
            ),
            (
                json!({"op": "replace", "path": "/a~2", "value": 1}),
                "invalid JSON Pointer",
            ),
            (
                json!({"op": "replace", "path": "/missing", "value": 1}),
                "does not exist",
            ),
            (
                json!({"op": "add", "path": "/missing/x", "value": 1}),
                "does not exist",
            ),
            (
                json!({"op": "add", "path": "/s/x", "value": 1}),
                "does not exist",
            ),
            (
                json!({"op": "add", "path": "/a/3", "value": 1}),
                "invalid array index",
            ),
            (
                json!({"op": "add", "path": "/a/01", "value": 1}),
                "invalid array index",
            ),
            (
                json!({"op": "remove", "path": "/a/-"}),
                "invalid array index",
            ),
            (
                json!({"op": "remove", "path": "/a/2"}),
                "invalid array index",
            ),
            (
                json!({"op": "remove", "path": "/a/99999999999999999999999"}),
                "invalid array index",
            ),
            (json!({"op": "remove", "path": ""}), "whole document"),
            (
                json!({"op": "test", "path": "/a/0", "value": 2}),
                "'test' failed",
            ),
            (
                json!({"op": "move", "from": "/a", "path": "/a/0"}),
                "own child",
            ),
            (
                json!({"op": "copy", "from": "/nope", "path": "/b"}),
                "does not exist",
            ),
        ];
        for (op, message) in cases {
            let op: JsonPatchOperation = serde_json::from_value(op).unwrap();
            let err = apply(&doc, std::slice::from_ref(&op)).unwrap_err();
            assert!(err.to_string().contains(message), "{op:?}: {err}");
            let status = genkit_core::Error::from(err).status();
            assert_eq!(status, genkit_core::StatusCode::InvalidArgument);
        }
    }

    #[test]
    fn a_failing_patch_changes_nothing() {
        let doc = json!({"a": 1});
        let patch = vec![
            JsonPatchOperation::Add {
                path: "/b".into(),
                value: json!(2),
            },
            JsonPatchOperation::Test {
                path: "/a".into(),
                value: json!(5),
            },
        ];
        assert!(apply(&doc, &patch).is_err());
        assert_eq!(doc, json!({"a": 1}));
    }

    #[test]
    fn move_to_itself_is_a_no_op() {
        let doc = json!({"a": {"b": 1}});
        let patch = [JsonPatchOperation::Move {
            from: "/a".into(),
            path: "/a".into(),
        }];
        assert_eq!(apply(&doc, &patch).unwrap(), doc);
    }
}
