//! Helpers: Dotprompt's built-ins, user helpers, and the registry of
//! helpers and partials a [`Dotprompt`](crate::Dotprompt) renders with.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use handlebars::template::Template;
use serde_json::{Map, Value, json};

use crate::error::{BoxError, Result};
use crate::partials;
use crate::types::{DataArgument, JsonMap, PromptMetadata};

/// A user-defined helper: receives the positional arguments and the hash
/// (`key=value`) arguments, and returns the value to insert (strings are
/// inserted verbatim; the value can also feed subexpressions).
pub type HelperFn = Arc<dyn Fn(&[Value], &JsonMap) -> Result<Value, BoxError> + Send + Sync>;

/// Name of the hidden helper serving `@`-data variables; templates are
/// rewritten to call it (see `template.rs`).
pub(crate) const DATA_HELPER: &str = "@dotprompt:data";

/// The helpers every template can use: Handlebars.js' built-ins and
/// Dotprompt's.
const BUILT_IN_HELPERS: &[&str] = &[
    "if",
    "unless",
    "each",
    "with",
    "lookup",
    "log",
    "json",
    "role",
    "history",
    "section",
    "media",
    "ifEquals",
    "unlessEquals",
];

/// The helpers and partials templates render with, and a generation that
/// changes whenever one is registered (plans made from them are then
/// stale).
pub(crate) struct Engine {
    helpers: HashSet<String>,
    user_helpers: HashMap<String, HelperFn>,
    partials: HashMap<String, Template>,
    generation: u64,
}

impl Engine {
    pub(crate) fn new() -> Self {
        Self {
            helpers: BUILT_IN_HELPERS.iter().map(|&n| n.to_owned()).collect(),
            user_helpers: HashMap::new(),
            partials: HashMap::new(),
            generation: 0,
        }
    }

    /// Registers (or replaces) a user helper.
    pub(crate) fn register_user_helper(&mut self, name: &str, f: HelperFn) {
        self.helpers.insert(name.to_owned());
        self.user_helpers.insert(name.to_owned(), f);
        self.generation += 1;
    }

    /// Registers (or replaces) a compiled partial, refusing include cycles.
    pub(crate) fn register_partial(&mut self, name: &str, partial: Template) -> Result<()> {
        partials::register(&mut self.partials, name, partial)?;
        self.generation += 1;
        Ok(())
    }

    /// Registers a partial without the cycle check (see `Dotprompt::new`).
    pub(crate) fn register_partial_unchecked(&mut self, name: &str, partial: Template) {
        self.partials.insert(name.to_owned(), partial);
        self.generation += 1;
    }

    /// The registered partial of that name.
    pub(crate) fn partial(&self, name: &str) -> Option<&Template> {
        self.partials.get(name)
    }

    /// The registered partials by name.
    pub(crate) fn partials(&self) -> &HashMap<String, Template> {
        &self.partials
    }

    /// Whether a helper of that name is registered.
    pub(crate) fn has_helper(&self, name: &str) -> bool {
        self.helpers.contains(name)
    }

    /// The user helper of that name, if it is one.
    pub(crate) fn user_helper(&self, name: &str) -> Option<&HelperFn> {
        self.user_helpers.get(name)
    }

    /// Changes whenever a helper or a partial is registered, so plans made
    /// from the registry can tell they are stale.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }
}

/// Renders a value as a marker argument (strings bare, null empty).
pub(crate) fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// What `{{json value indent=...}}` inserts: `undefined` for a missing
/// value (as `JSON.stringify` gives it to Handlebars.js), else its JSON as
/// `JSON.stringify` writes it, pretty-printed with up to 10 spaces (a
/// number) or the first 10 characters (a string) of indentation.
pub(crate) fn json_text(value: Option<&Value>, indent: Option<&Value>) -> Result<String, String> {
    let Some(value) = value else {
        return Ok("undefined".to_owned());
    };
    let indent = match indent {
        Some(Value::Number(n)) => " ".repeat(n.as_f64().unwrap_or(0.0).clamp(0.0, 10.0) as usize),
        Some(Value::String(s)) => s.chars().take(10).collect(),
        _ => String::new(),
    };
    crate::js::stringify(value, &indent).map_err(|e| format!("json helper: {e}"))
}

/// Helpers that emit the markers message building splits on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MarkerHelper {
    /// `{{role "system"}}`
    Role,
    /// `{{history}}`
    History,
    /// `{{section "name"}}`
    Section,
    /// `{{media url=... contentType=...}}`
    Media,
}

impl MarkerHelper {
    /// The marker for these arguments (`first`: the first positional one).
    pub(crate) fn text<'v>(
        self,
        first: Option<&Value>,
        hash: &dyn Fn(&str) -> Option<&'v Value>,
    ) -> String {
        let mut text = String::new();
        self.write(&mut text, first, hash);
        text
    }

    /// Writes the marker for these arguments (`first`: the first
    /// positional one) to `out`.
    pub(crate) fn write<'v>(
        self,
        out: &mut String,
        first: Option<&Value>,
        hash: &dyn Fn(&str) -> Option<&'v Value>,
    ) {
        match self {
            MarkerHelper::Role => {
                out.push_str("<<<dotprompt:role:");
                write_text(out, first);
                out.push_str(">>>");
            }
            MarkerHelper::History => out.push_str("<<<dotprompt:history>>>"),
            MarkerHelper::Section => {
                out.push_str("<<<dotprompt:section ");
                write_text(out, first);
                out.push_str(">>>");
            }
            MarkerHelper::Media => {
                let content_type = hash("contentType").map(as_text).filter(|t| !t.is_empty());
                out.push_str("<<<dotprompt:media:url ");
                write_text(out, hash("url"));
                if let Some(content_type) = content_type {
                    out.push(' ');
                    out.push_str(&content_type);
                }
                out.push_str(">>>");
            }
        }
    }
}

/// Writes [`as_text`] of `value` (nothing for none).
fn write_text(out: &mut String, value: Option<&Value>) {
    match value {
        Some(Value::String(s)) => out.push_str(s),
        Some(Value::Null) | None => {}
        Some(other) => out.push_str(&other.to_string()),
    }
}

/// JavaScript `===` on JSON values: numbers compare by value, so `5` and
/// `5.0` are equal, but `5` and `"5"` are not.
pub(crate) fn strict_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// The `@`-variables of one render: every key of `context`, plus `@metadata`
/// (`{prompt, docs, messages}`) unless the context overrides it.
pub(crate) struct DataScope<'a> {
    data: &'a DataArgument,
    prompt: &'a PromptMetadata,
    metadata: OnceLock<Value>,
}

impl<'a> DataScope<'a> {
    pub(crate) fn new(data: &'a DataArgument, prompt: &'a PromptMetadata) -> Self {
        Self {
            data,
            prompt,
            metadata: OnceLock::new(),
        }
    }

    fn root(&self, name: &str) -> Option<&Value> {
        if let Some(value) = self.data.context.as_ref().and_then(|c| c.get(name)) {
            return Some(value);
        }
        (name == "metadata").then(|| {
            self.metadata.get_or_init(|| {
                let mut map = Map::new();
                map.insert(
                    "prompt".into(),
                    serde_json::to_value(self.prompt).unwrap_or(Value::Null),
                );
                if let Some(docs) = &self.data.docs {
                    map.insert("docs".into(), json!(docs));
                }
                if let Some(messages) = &self.data.messages {
                    map.insert("messages".into(), json!(messages));
                }
                Value::Object(map)
            })
        })
    }

    /// Looks up a path given as its segments.
    pub(crate) fn lookup_segments<S: AsRef<str>>(&self, path: &[S]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut value = self.root(first.as_ref())?;
        for segment in rest {
            let key = segment.as_ref();
            value = match value {
                Value::Object(map) => map.get(key)?,
                Value::Array(items) => items.get(key.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(value)
    }
}
