//! Rendering a [`Plan`] straight from borrowed data.

use std::fmt::Write as _;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::Abort;
use super::plan::{Arg, BlockKind, Call, Helper, Node, PathRef, Plan};
use crate::helpers::{DataScope, json_text, strict_equals};
use crate::types::JsonMap;

static NULL: Value = Value::Null;
static TRUE: Value = Value::Bool(true);
static FALSE: Value = Value::Bool(false);

/// Objects up to this size are searched linearly (cheaper than hashing).
const LINEAR_LOOKUP: usize = 8;

/// What a template renders from: the input overlaid on the defaults (never
/// merged, so nothing is copied) and the `@`-data.
#[derive(Clone, Copy)]
pub(crate) struct Data<'a> {
    /// The caller's input.
    pub(crate) input: Option<&'a JsonMap>,
    /// Default input values, under `input`.
    pub(crate) defaults: Option<&'a JsonMap>,
    /// `@`-variables.
    pub(crate) scope: &'a DataScope<'a>,
}

/// Renders `plan`; `capacity` pre-sizes the output.
pub(crate) fn render<'a>(plan: &'a Plan, data: Data<'a>, capacity: usize) -> Result<String, Abort> {
    let mut renderer = Renderer {
        data,
        frames: vec![Frame {
            this: V::Root,
            locals: Locals::default(),
        }],
        root: None,
        out: String::with_capacity(capacity),
    };
    renderer.plan(plan)?;
    Ok(renderer.out)
}

/// A value met while rendering.
enum V<'a> {
    /// A path that leads nowhere.
    Missing,
    /// The whole root context (input over defaults), not materialized.
    Root,
    /// Borrowed from the data or the plan.
    Ref(&'a Value),
    /// Derived and shared (contexts of blocks and partials).
    Shared(Rc<Value>),
    /// Derived (helper results, `@index`, `@key`); boxed to keep this small.
    Own(Box<Value>),
}

impl<'a> V<'a> {
    /// The value; `Root` must have been materialized (see
    /// [`Renderer::concrete`]) and reads as null otherwise.
    fn value(&self) -> &Value {
        match self {
            V::Missing | V::Root => &NULL,
            V::Ref(v) => v,
            V::Shared(v) => v,
            V::Own(v) => v,
        }
    }

    fn is_missing(&self) -> bool {
        matches!(self, V::Missing)
    }

    /// A copy for a block's context: owned values become shared.
    fn share(&self) -> V<'a> {
        match self {
            V::Missing => V::Shared(Rc::new(Value::Null)),
            V::Root => V::Root,
            V::Ref(v) => V::Ref(v),
            V::Shared(v) => V::Shared(Rc::clone(v)),
            V::Own(v) => V::Shared(Rc::new(Value::clone(v))),
        }
    }

    fn into_shared(self) -> V<'a> {
        match self {
            V::Own(v) => V::Shared(Rc::new(*v)),
            V::Missing => V::Shared(Rc::new(Value::Null)),
            other => other,
        }
    }
}

/// The bodies of a block helper.
struct Branches<'a> {
    template: Option<&'a Plan>,
    inverse: Option<&'a Plan>,
}

/// Block-local variables (`@index`, `@first`, `@last`, `@key`).
#[derive(Clone, Default)]
struct Locals<'a> {
    index: Option<usize>,
    first: Option<bool>,
    last: Option<bool>,
    key: Option<Key<'a>>,
}

#[derive(Clone)]
enum Key<'a> {
    Ref(&'a str),
    Shared(Rc<str>),
}

/// A block context, as handlebars-rust pushes them (the root, `each`,
/// `with` and partials).
struct Frame<'a> {
    this: V<'a>,
    locals: Locals<'a>,
}

struct Renderer<'a> {
    data: Data<'a>,
    /// Innermost last; never empty.
    frames: Vec<Frame<'a>>,
    /// The root context, once something needed it whole.
    root: Option<Rc<Value>>,
    out: String,
}

impl<'a> Renderer<'a> {
    fn plan(&mut self, plan: &'a Plan) -> Result<(), Abort> {
        for node in &plan.nodes {
            self.node(node)?;
        }
        Ok(())
    }

    fn node(&mut self, node: &'a Node) -> Result<(), Abort> {
        match node {
            Node::Text(text) => self.out.push_str(text),
            Node::Value(path) => {
                let value = self.path(path)?;
                let value = self.concrete(value);
                write_value(&mut self.out, value.value());
            }
            Node::Print(call) => {
                let value = self.call(call)?;
                write_value(&mut self.out, value.value());
            }
            Node::Block {
                kind,
                params,
                hash,
                template,
                inverse,
            } => {
                // Every argument is evaluated, as handlebars does (so that
                // failing ones fail here too), but only two are used.
                let mut args = [None, None];
                for (i, param) in params.iter().enumerate() {
                    let value = self.arg(param)?;
                    if let Some(slot) = args.get_mut(i) {
                        *slot = Some(self.concrete(value));
                    }
                }
                let mut include_zero = false;
                for (key, arg) in hash {
                    let value = self.arg(arg)?;
                    if key == "includeZero" {
                        include_zero = value.value().as_bool().unwrap_or(false);
                    }
                }
                let [first, second] = args;
                let blocks = Branches {
                    template: template.as_ref(),
                    inverse: inverse.as_ref(),
                };
                self.block(*kind, first, second, include_zero, blocks)?;
            }
            Node::Partial {
                plan,
                context,
                hash,
            } => self.partial(plan, context.as_ref(), hash)?,
        }
        Ok(())
    }

    fn block(
        &mut self,
        kind: BlockKind,
        first: Option<V<'a>>,
        second: Option<V<'a>>,
        include_zero: bool,
        branches: Branches<'a>,
    ) -> Result<(), Abort> {
        let Branches { template, inverse } = branches;
        match kind {
            BlockKind::If { positive } => {
                let first = first.ok_or(Abort)?;
                let chosen = if truthy(first.value(), include_zero) == positive {
                    template
                } else {
                    inverse
                };
                if let Some(plan) = chosen {
                    self.plan(plan)?;
                }
            }
            BlockKind::Equals { when_equal } => {
                let a = first.as_ref().map_or(&NULL, V::value);
                let b = second.as_ref().map_or(&NULL, V::value);
                let chosen = if strict_equals(a, b) == when_equal {
                    template
                } else {
                    inverse
                };
                if let Some(plan) = chosen {
                    self.plan(plan)?;
                }
            }
            BlockKind::With => {
                let arg = first.ok_or(Abort)?;
                if truthy(arg.value(), false) {
                    let locals = self.front().locals.clone();
                    self.frames.push(Frame {
                        this: arg.into_shared(),
                        locals,
                    });
                    let result = template.map_or(Ok(()), |plan| self.plan(plan));
                    self.frames.pop();
                    result?;
                } else if let Some(plan) = inverse {
                    self.plan(plan)?;
                }
            }
            BlockKind::Each => {
                let over = first.ok_or(Abort)?.into_shared();
                let Some(body) = template else {
                    return Ok(());
                };
                let iterated = match &over {
                    V::Ref(value) => self.each_ref(value, body, inverse.is_none())?,
                    V::Shared(value) => self.each_shared(value, body, inverse.is_none())?,
                    _ => false,
                };
                if !iterated && let Some(plan) = inverse {
                    self.plan(plan)?;
                }
            }
        }
        Ok(())
    }

    /// `{{#each}}` over borrowed data; `false` if the value is not a
    /// collection (or is empty and there is an `{{else}}`).
    fn each_ref(
        &mut self,
        value: &'a Value,
        body: &'a Plan,
        no_inverse: bool,
    ) -> Result<bool, Abort> {
        match value {
            Value::Array(items) if !items.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                });
                let len = items.len();
                let result = items.iter().enumerate().try_for_each(|(i, item)| {
                    self.set_item(V::Ref(item), i, len, None);
                    self.plan(body)
                });
                self.frames.pop();
                result.map(|()| true)
            }
            Value::Object(map) if !map.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                });
                let len = map.len();
                let result = map.iter().enumerate().try_for_each(|(i, (key, item))| {
                    self.set_item(V::Ref(item), i, len, Some(Key::Ref(key)));
                    self.plan(body)
                });
                self.frames.pop();
                result.map(|()| true)
            }
            _ => Ok(false),
        }
    }

    /// `{{#each}}` over a derived value: each item is copied, as
    /// handlebars does.
    fn each_shared(
        &mut self,
        value: &Value,
        body: &'a Plan,
        no_inverse: bool,
    ) -> Result<bool, Abort> {
        match value {
            Value::Array(items) if !items.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                });
                let len = items.len();
                let result = items.iter().enumerate().try_for_each(|(i, item)| {
                    self.set_item(V::Shared(Rc::new(item.clone())), i, len, None);
                    self.plan(body)
                });
                self.frames.pop();
                result.map(|()| true)
            }
            Value::Object(map) if !map.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                });
                let len = map.len();
                let result = map.iter().enumerate().try_for_each(|(i, (key, item))| {
                    let key = Key::Shared(Rc::from(key.as_str()));
                    self.set_item(V::Shared(Rc::new(item.clone())), i, len, Some(key));
                    self.plan(body)
                });
                self.frames.pop();
                result.map(|()| true)
            }
            _ => Ok(false),
        }
    }

    fn set_item(&mut self, item: V<'a>, index: usize, len: usize, key: Option<Key<'a>>) {
        let frame = self.front_mut();
        frame.this = item;
        frame.locals = Locals {
            index: Some(index),
            first: Some(index == 0),
            last: Some(index + 1 == len),
            key,
        };
    }

    fn partial(
        &mut self,
        plan: &'a Plan,
        context: Option<&'a Arg>,
        hash: &'a [(String, Arg)],
    ) -> Result<(), Abort> {
        let base = match context {
            Some(arg) => self.arg(arg)?,
            None => self.front().this.share(),
        };
        let mut named = Vec::with_capacity(hash.len());
        for (key, arg) in hash {
            let value = self.arg(arg)?;
            named.push((key.as_str(), self.concrete(value)));
        }
        let this = if named.is_empty() {
            base.into_shared()
        } else {
            let base = self.concrete(base);
            V::Shared(Rc::new(merge(base.value(), &named)))
        };
        let locals = self.front().locals.clone();
        self.frames.push(Frame { this, locals });
        let result = self.plan(plan);
        self.frames.pop();
        result
    }

    fn front(&self) -> &Frame<'a> {
        &self.frames[self.frames.len() - 1]
    }

    fn front_mut(&mut self) -> &mut Frame<'a> {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    /// The block `level` levels up (0 is the innermost), as handlebars
    /// counts them.
    fn block_at(&self, level: usize) -> Option<&Frame<'a>> {
        let len = self.frames.len();
        (level < len).then(|| &self.frames[len - 1 - level])
    }

    /// Replaces `Root` by the materialized root context.
    fn concrete(&mut self, value: V<'a>) -> V<'a> {
        match value {
            V::Root => V::Shared(self.root()),
            other => other,
        }
    }

    fn root(&mut self) -> Rc<Value> {
        if let Some(root) = &self.root {
            return Rc::clone(root);
        }
        let mut merged = self.data.defaults.cloned().unwrap_or_default();
        if let Some(input) = self.data.input {
            merged.extend(input.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let root = Rc::new(Value::Object(merged));
        self.root = Some(Rc::clone(&root));
        root
    }

    fn arg(&mut self, arg: &'a Arg) -> Result<V<'a>, Abort> {
        match arg {
            Arg::Literal(value) => Ok(V::Ref(value)),
            Arg::Path(path) => self.path(path),
            Arg::Call(call) => self.call(call),
        }
    }

    fn path(&mut self, path: &'a PathRef) -> Result<V<'a>, Abort> {
        match path {
            PathRef::Local { level, name } => {
                let Some(frame) = self.block_at(*level) else {
                    return Ok(V::Missing);
                };
                let locals = &frame.locals;
                Ok(match name.as_str() {
                    "index" => locals.index.map_or(V::Missing, |i| own(Value::from(i))),
                    "first" => locals.first.map_or(V::Missing, boolean),
                    "last" => locals.last.map_or(V::Missing, boolean),
                    "key" => match &locals.key {
                        Some(Key::Ref(k)) => own(Value::from(*k)),
                        Some(Key::Shared(k)) => own(Value::from(k.as_ref())),
                        None => V::Missing,
                    },
                    _ => V::Missing,
                })
            }
            PathRef::Relative { up, root, segs } => {
                let base = if *up > 0 {
                    self.block_at(*up)
                        .unwrap_or_else(|| self.front())
                        .this
                        .share()
                } else if *root {
                    V::Root
                } else {
                    self.front().this.share()
                };
                self.navigate(base, segs)
            }
        }
    }

    /// Follows `segs` from `base` (handlebars' `get_data`: an array needs a
    /// numeric segment, anything but an object or array has no fields).
    fn navigate(&mut self, base: V<'a>, segs: &[String]) -> Result<V<'a>, Abort> {
        let Some((first, rest)) = segs.split_first() else {
            return Ok(base);
        };
        match base {
            V::Missing => Ok(V::Missing),
            V::Root => {
                let data = self.data;
                let start = data
                    .input
                    .and_then(|m| field(m, first))
                    .or_else(|| data.defaults.and_then(|m| field(m, first)));
                Ok(walk(start, rest)?.map_or(V::Missing, V::Ref))
            }
            V::Ref(value) => Ok(walk(Some(value), segs)?.map_or(V::Missing, V::Ref)),
            V::Shared(value) => {
                Ok(walk(Some(&value), segs)?.map_or(V::Missing, |v| own(v.clone())))
            }
            V::Own(value) => Ok(walk(Some(&value), segs)?.map_or(V::Missing, |v| own(v.clone()))),
        }
    }

    fn call(&mut self, call: &'a Call) -> Result<V<'a>, Abort> {
        let mut params = Vec::with_capacity(call.params.len());
        for param in &call.params {
            let value = self.arg(param)?;
            params.push(self.concrete(value));
        }
        let mut hash = Vec::with_capacity(call.hash.len());
        for (key, arg) in &call.hash {
            let value = self.arg(arg)?;
            hash.push((key.as_str(), self.concrete(value)));
        }
        let hash_get = |key: &str| hash.iter().find(|(k, _)| *k == key).map(|(_, v)| v.value());
        Ok(match &call.helper {
            Helper::Json => {
                let value = params.first().filter(|v| !v.is_missing()).map(V::value);
                own(Value::String(
                    json_text(value, hash_get("indent")).map_err(|_| Abort)?,
                ))
            }
            Helper::Marker(marker) => own(Value::String(
                marker.text(params.first().map(V::value), &hash_get),
            )),
            Helper::Lookup => {
                let (Some(collection), Some(index)) = (params.first(), params.get(1)) else {
                    return Err(Abort);
                };
                match collection {
                    V::Ref(outer) => lookup(outer, index.value()).map_or(V::Ref(&NULL), V::Ref),
                    other => own(lookup(other.value(), index.value())
                        .cloned()
                        .unwrap_or(Value::Null)),
                }
            }
            Helper::Data(segments) => {
                let scope = self.data.scope;
                scope
                    .lookup_segments(segments)
                    .map_or(V::Ref(&NULL), V::Ref)
            }
            Helper::User(f) => {
                let args: Vec<Value> = params.iter().map(|v| v.value().clone()).collect();
                let named: Map<String, Value> = hash
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.value().clone()))
                    .collect();
                own(f(&args, &named).map_err(|_| Abort)?)
            }
        })
    }
}

/// `{{lookup collection index}}`: an array item by number or an object
/// field by name.
fn lookup<'v>(collection: &'v Value, index: &Value) -> Option<&'v Value> {
    match collection {
        Value::Array(items) => items.get(usize::try_from(index.as_u64()?).ok()?),
        Value::Object(map) => map.get(index.as_str()?),
        _ => None,
    }
}

/// Follows `segs` from `start`.
fn walk<'v>(start: Option<&'v Value>, segs: &[String]) -> Result<Option<&'v Value>, Abort> {
    let mut current = start;
    for seg in segs {
        current = match current {
            Some(Value::Array(items)) => items.get(seg.parse::<usize>().map_err(|_| Abort)?),
            Some(Value::Object(map)) => field(map, seg),
            _ => None,
        };
    }
    Ok(current)
}

/// A field of an object.
fn field<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if map.len() <= LINEAR_LOOKUP {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

fn own<'a>(value: Value) -> V<'a> {
    V::Own(Box::new(value))
}

fn boolean<'a>(b: bool) -> V<'a> {
    V::Ref(if b { &TRUE } else { &FALSE })
}

/// Handlebars' truthiness (`includeZero` makes `0` true; empty arrays and
/// objects are false).
fn truthy(value: &Value, include_zero: bool) -> bool {
    match value {
        Value::Bool(b) => *b,
        Value::Number(n) => {
            if include_zero {
                n.as_f64().is_some_and(|f| !f.is_nan())
            } else {
                n.as_f64().is_some_and(f64::is_normal)
            }
        }
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// Prints a value as handlebars-rust does.
fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => write_u64(out, u),
            (None, Some(i)) => {
                out.push('-');
                write_u64(out, i.unsigned_abs());
            }
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        Value::Null => {}
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(_) => out.push_str("[object]"),
    }
}

/// Prints an integer (the formatting machinery is slow for this).
fn write_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        // `n % 10` is below 10, so this is an ASCII digit.
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &digit in &digits[at..] {
        out.push(char::from(digit));
    }
}

/// A partial's context with its hash arguments (handlebars' `merge_json`).
fn merge(base: &Value, hash: &[(&str, V<'_>)]) -> Value {
    let mut map = match base {
        Value::Object(m) => m.clone(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v.clone()))
            .collect(),
        Value::String(s) => s
            .chars()
            .enumerate()
            .map(|(i, c)| (i.to_string(), Value::String(c.to_string())))
            .collect(),
        _ => Map::new(),
    };
    for (key, value) in hash {
        map.insert((*key).to_owned(), value.value().clone());
    }
    Value::Object(map)
}
