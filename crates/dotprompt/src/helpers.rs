//! Handlebars helpers: Dotprompt's built-ins, adapters for user helpers, and
//! the hidden helper that serves `@`-data variables.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use handlebars::{
    Context, Handlebars, Helper, HelperDef, HelperResult, Output, RenderContext, RenderError,
    RenderErrorReason, Renderable, ScopedJson,
};
use serde_json::{Map, Value, json};

use handlebars::template::Template;

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

/// Handlebars.js built-ins; handlebars-rust's extra helpers (`eq`, `len`, ...)
/// are removed so templates stay portable between implementations.
const NON_STANDARD_HELPERS: &[&str] = &[
    "eq", "ne", "gt", "gte", "lt", "lte", "and", "or", "not", "len", "raw",
];

/// Helpers every Handlebars implementation provides.
const STANDARD_HELPERS: &[&str] = &["if", "unless", "each", "with", "lookup", "log"];

/// A Handlebars registry set up the Dotprompt way (no HTML escaping, only
/// standard and Dotprompt helpers), plus the names of its helpers, the
/// user helpers themselves (for the fast renderer) and a generation that
/// changes whenever a helper or partial is registered.
pub(crate) struct Engine {
    /// The registry, with helpers and partials.
    pub(crate) handlebars: Handlebars<'static>,
    helpers: HashSet<String>,
    user_helpers: HashMap<String, HelperFn>,
    generation: u64,
}

impl Engine {
    pub(crate) fn new() -> Self {
        let mut handlebars = Handlebars::new();
        handlebars.register_escape_fn(handlebars::no_escape);
        for name in NON_STANDARD_HELPERS {
            handlebars.unregister_helper(name);
        }
        let mut engine = Self {
            handlebars,
            helpers: STANDARD_HELPERS.iter().map(|&n| n.to_owned()).collect(),
            user_helpers: HashMap::new(),
            generation: 0,
        };
        engine.register_helper("json", Box::new(JsonHelper));
        engine.register_helper("role", Box::new(MarkerHelper::Role));
        engine.register_helper("history", Box::new(MarkerHelper::History));
        engine.register_helper("section", Box::new(MarkerHelper::Section));
        engine.register_helper("media", Box::new(MarkerHelper::Media));
        engine.register_helper("ifEquals", Box::new(EqualsHelper { when_equal: true }));
        engine.register_helper("unlessEquals", Box::new(EqualsHelper { when_equal: false }));
        engine
    }

    /// Registers (or replaces) a built-in helper.
    fn register_helper(&mut self, name: &str, helper: Box<dyn HelperDef + Send + Sync>) {
        self.handlebars.register_helper(name, helper);
        self.helpers.insert(name.to_owned());
        self.user_helpers.remove(name);
        self.generation += 1;
    }

    /// Registers (or replaces) a user helper.
    pub(crate) fn register_user_helper(&mut self, name: &str, f: HelperFn) {
        let adapter = Box::new(UserHelper {
            name: name.to_owned(),
            f: Arc::clone(&f),
        });
        self.register_helper(name, adapter);
        self.user_helpers.insert(name.to_owned(), f);
    }

    /// Registers (or replaces) a compiled partial, refusing include cycles.
    pub(crate) fn register_partial(&mut self, name: &str, partial: Template) -> Result<()> {
        partials::register(&mut self.handlebars, name, partial)?;
        self.generation += 1;
        Ok(())
    }

    /// Registers a partial without the cycle check (see `Dotprompt::new`).
    pub(crate) fn register_partial_unchecked(&mut self, name: &str, partial: Template) {
        self.handlebars.register_template(name, partial);
        self.generation += 1;
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

fn derived<'rc>(value: Value) -> Result<ScopedJson<'rc>, RenderError> {
    Ok(ScopedJson::Derived(value))
}

/// Renders a value as a marker argument (strings bare, null empty).
pub(crate) fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `{{json value indent=2}}`: JSON serialization.
struct JsonHelper;

impl HelperDef for JsonHelper {
    fn call_inner<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
    ) -> Result<ScopedJson<'rc>, RenderError> {
        let value = h
            .param(0)
            .filter(|p| !p.is_value_missing())
            .map(|p| p.value());
        let indent = h.hash_get("indent").map(|v| v.value());
        let text = json_text(value, indent).map_err(RenderErrorReason::Other)?;
        derived(Value::String(text))
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

impl HelperDef for MarkerHelper {
    fn call_inner<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
    ) -> Result<ScopedJson<'rc>, RenderError> {
        let marker = self.text(h.param(0).map(|p| p.value()), &|key| {
            h.hash_get(key).map(|v| v.value())
        });
        derived(Value::String(marker))
    }
}

impl MarkerHelper {
    /// The marker for these arguments (`first`: the first positional one).
    pub(crate) fn text<'v>(
        self,
        first: Option<&Value>,
        hash: &dyn Fn(&str) -> Option<&'v Value>,
    ) -> String {
        let first = || first.map(as_text).unwrap_or_default();
        match self {
            MarkerHelper::Role => format!("<<<dotprompt:role:{}>>>", first()),
            MarkerHelper::History => "<<<dotprompt:history>>>".to_owned(),
            MarkerHelper::Section => format!("<<<dotprompt:section {}>>>", first()),
            MarkerHelper::Media => {
                let hash = |key| hash(key).map(as_text);
                let url = hash("url").unwrap_or_default();
                match hash("contentType").filter(|t| !t.is_empty()) {
                    Some(content_type) => format!("<<<dotprompt:media:url {url} {content_type}>>>"),
                    None => format!("<<<dotprompt:media:url {url}>>>"),
                }
            }
        }
    }
}

/// `{{#ifEquals a b}}` / `{{#unlessEquals a b}}`: strict (type-aware) equality.
struct EqualsHelper {
    when_equal: bool,
}

/// JavaScript `===` on JSON values: numbers compare by value, so `5` and
/// `5.0` are equal, but `5` and `"5"` are not.
pub(crate) fn strict_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

impl HelperDef for EqualsHelper {
    fn call<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        r: &'reg Handlebars<'reg>,
        ctx: &'rc Context,
        rc: &mut RenderContext<'reg, 'rc>,
        out: &mut dyn Output,
    ) -> HelperResult {
        let value = |i| h.param(i).map_or(&Value::Null, |p| p.value());
        let branch = if strict_equals(value(0), value(1)) == self.when_equal {
            h.template()
        } else {
            h.inverse()
        };
        match branch {
            Some(template) => template.render(r, ctx, rc, out),
            None => Ok(()),
        }
    }
}

/// Adapter from [`HelperFn`] to Handlebars.
struct UserHelper {
    name: String,
    f: HelperFn,
}

impl HelperDef for UserHelper {
    fn call_inner<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
    ) -> Result<ScopedJson<'rc>, RenderError> {
        let params: Vec<Value> = h.params().iter().map(|p| p.value().clone()).collect();
        let hash: JsonMap = h
            .hash()
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.value().clone()))
            .collect();
        match (self.f)(&params, &hash) {
            Ok(value) => derived(value),
            Err(e) => Err(RenderErrorReason::Other(format!("helper `{}`: {e}", self.name)).into()),
        }
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

    /// Looks up a path such as `["state", "count"]`.
    fn lookup(&self, path: &[Value]) -> Option<&Value> {
        let segments = path.iter().map(Value::as_str).collect::<Option<Vec<_>>>()?;
        self.lookup_segments(&segments)
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

/// Serves `@`-data lookups for one render (registered as a local helper).
pub(crate) struct DataHelper<'a>(pub(crate) &'a DataScope<'a>);

impl HelperDef for DataHelper<'_> {
    fn call_inner<'reg: 'rc, 'rc>(
        &self,
        h: &Helper<'rc>,
        _: &'reg Handlebars<'reg>,
        _: &'rc Context,
        _: &mut RenderContext<'reg, 'rc>,
    ) -> Result<ScopedJson<'rc>, RenderError> {
        let path = h.param(0).and_then(|p| p.value().as_array());
        let value = path.and_then(|p| self.0.lookup(p)).cloned();
        derived(value.unwrap_or(Value::Null))
    }
}
