//! Rendering a [`Plan`] straight from borrowed data.

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use super::fast::{self, Flat};
use super::plan::{
    Arg, BlockKind, Call, Helper, LocalName, Node, PartialNode, PartialTarget, PathRef, Plan,
};
use super::{Fault, Site};
use crate::helpers::{DataScope, MarkerHelper, json_text, strict_equals};
use crate::types::JsonMap;

static NULL: Value = Value::Null;
static TRUE: Value = Value::Bool(true);
static FALSE: Value = Value::Bool(false);

/// Partials rendered inside one another beyond this are an error (a
/// partial that includes itself without end), rather than a stack overflow.
pub(crate) const MAX_PARTIAL_NESTING: usize = 64;

/// Programs (block bodies, partials) rendered inside one another beyond
/// this are an error rather than a stack overflow.
pub(crate) const MAX_RENDER_LEVELS: usize = 256;

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

/// A rendered template: its text, and where in it the Dotprompt markers
/// that count are (written in a template or made by a built-in helper, not
/// inside an inserted value), in ascending order.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// The text.
    pub(crate) text: String,
    /// Byte offsets of the markers' starts.
    pub(crate) markers: Vec<usize>,
}

/// The render stopped; why is in [`Renderer::fault`]. (Kept apart so that
/// every step returns a small `Result`.)
struct Stopped;

/// Renders `plan`; `capacity` pre-sizes the output.
pub(crate) fn render<'a>(
    plan: &'a Plan,
    data: Data<'a>,
    capacity: usize,
) -> Result<Rendered, Fault> {
    // The frame stack comes from the last render on this thread (a render
    // allocates only what it returns); room for a few nested blocks and
    // markers: most templates need no more, and then nothing grows while
    // rendering.
    let mut frames = relifetime(FRAMES.take());
    frames.reserve(8);
    frames.push(Frame::root());
    let mut renderer = Renderer {
        data,
        frames,
        root: None,
        blocks: Vec::new(),
        fault: None,
        markers: Vec::with_capacity(8),
        inline_scopes: Vec::new(),
        partial_depth: 0,
        level: 0,
        out: String::with_capacity(capacity),
    };
    let result = renderer.plan(plan);
    if renderer.frames.capacity() <= FRAMES_KEPT {
        FRAMES.set(relifetime(renderer.frames));
    }
    match result {
        Ok(()) => Ok(Rendered {
            text: renderer.out,
            markers: renderer.markers,
        }),
        Err(Stopped) => Err(renderer.fault.unwrap_or(Fault::TooDeep)),
    }
}

thread_local! {
    /// The (empty) frame stack of the last render on this thread.
    static FRAMES: Cell<Vec<Frame<'static>>> = const { Cell::new(Vec::new()) };
}

/// A frame stack larger than this is not kept for the next render.
const FRAMES_KEPT: usize = 64;

/// `frames` emptied, as a stack of frames of another lifetime: its
/// allocation is kept, as std collects a vector's own iterator back in
/// place when the items' layout is the same (and else, there being no
/// item, collects into a vector that has not allocated).
fn relifetime<'x, 'y>(mut frames: Vec<Frame<'x>>) -> Vec<Frame<'y>> {
    frames.clear();
    // No item: the closure is never called.
    frames.into_iter().map(|_| Frame::root()).collect()
}

impl Frame<'_> {
    /// The root context's frame.
    fn root() -> Self {
        Frame {
            this: V::Root,
            locals: Locals::default(),
            new_depth: true,
            partial: false,
            block_params: false,
            link: None,
        }
    }
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
    /// Whether the body declares block parameters (`as |item index|`).
    block_params: bool,
    /// `each`'s body in flat form, when it has one.
    flat: Option<&'a Flat>,
}

/// An `each` body: its plan, and its flat form when it has one.
struct Body<'a> {
    plan: &'a Plan,
    flat: Option<&'a Flat>,
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
    /// An array's (`@key` is the index there too).
    Index(usize),
    Ref(&'a str),
    Shared(Rc<str>),
}

/// A block context (the root, `each`, `with` and partials).
struct Frame<'a> {
    this: V<'a>,
    locals: Locals<'a>,
    /// Whether `this` differs from the enclosing context: Handlebars.js
    /// counts `../` over such contexts only.
    new_depth: bool,
    /// A partial's frame: `../` does not reach past it.
    partial: bool,
    /// Whether its block declares block parameters: `this` is the first
    /// (the item, or `with`'s value), the `@key` the second.
    block_params: bool,
    /// For a partial block's content rendered inside the partial: how many
    /// frames the caller had. Its `../` continues there, as the content
    /// belongs to the caller's template.
    link: Option<usize>,
}

struct Renderer<'a> {
    data: Data<'a>,
    /// Innermost last; never empty.
    frames: Vec<Frame<'a>>,
    /// The root context, once something needed it whole.
    root: Option<Rc<Value>>,
    /// Why the render stopped, when it did (see [`Self::fail`]).
    fault: Option<Fault>,
    /// Offsets in `out` of the markers that count (see [`Rendered`]).
    markers: Vec<usize>,
    /// The programs rendering that declare inline partials: where each
    /// started (frame count) and its partials, innermost last.
    inline_scopes: Vec<(usize, &'a HashMap<String, Plan>)>,
    /// Partials being rendered inside one another.
    partial_depth: usize,
    /// Programs (template, block bodies, partials) being rendered inside
    /// one another.
    level: usize,
    /// The blocks of the partial blocks being rendered, innermost last,
    /// with how many frames their caller had.
    blocks: Vec<(&'a Plan, usize)>,
    out: String,
}

impl<'a> Renderer<'a> {
    fn plan(&mut self, plan: &'a Plan) -> Result<(), Stopped> {
        // Blocks and partials render recursively: a bound, not a stack
        // overflow, for templates that nest (or recurse) too deep.
        if self.level >= MAX_RENDER_LEVELS {
            return Err(self.fail(Fault::TooDeep));
        }
        self.level += 1;
        let result = match &plan.inline {
            Some(inline) => self.inline_scope(plan, inline),
            None => plan.nodes.iter().try_for_each(|node| self.node(node)),
        };
        self.level -= 1;
        result
    }

    /// A program that declares inline partials: they are found here while
    /// it renders (see [`PartialNode`]'s `inline`).
    #[inline(never)]
    fn inline_scope(
        &mut self,
        plan: &'a Plan,
        inline: &'a HashMap<String, Plan>,
    ) -> Result<(), Stopped> {
        self.inline_scopes.push((self.frames.len(), inline));
        let result = plan.nodes.iter().try_for_each(|node| self.node(node));
        self.inline_scopes.pop();
        result
    }

    fn node(&mut self, node: &'a Node) -> Result<(), Stopped> {
        match node {
            Node::Text(text) => self.out.push_str(text),
            Node::MarkedText(text, markers) => {
                let start = self.out.len();
                self.markers.extend(markers.iter().map(|at| start + at));
                self.out.push_str(text);
            }
            Node::Value(path) => match self.look(path) {
                Look::Ref(value) => write_value(&mut self.out, value),
                Look::Missing => {}
                Look::Slow => self.print_path(path)?,
            },
            Node::Print(call) if let Helper::Marker(marker) = call.helper => {
                self.print_marker(marker, call)?;
            }
            Node::Print(call) => {
                let value = self.call(call)?;
                // What the built-in marker helpers print is a marker.
                if matches!(call.helper, Helper::Marker(_)) {
                    self.markers.push(self.out.len());
                }
                write_value(&mut self.out, value.value());
            }
            Node::Block {
                kind: BlockKind::If { positive },
                params,
                hash,
                template,
                inverse,
                ..
            } if hash.is_empty()
                && let [Arg::Path(path)] = params.as_slice()
                && let Some(value) = self.look(path).value() =>
            {
                // `{{#if path}}` where the path leads into the data or
                // nowhere: tested where it is, nothing made.
                let chosen = if truthy(value.unwrap_or(&NULL), false) == *positive {
                    template
                } else {
                    inverse
                };
                if let Some(plan) = chosen {
                    self.plan_in_this(plan)?;
                }
            }
            Node::Block {
                kind,
                params,
                hash,
                block_params,
                template,
                inverse,
                flat,
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
                    block_params: *block_params > 0,
                    flat: flat.as_deref(),
                };
                self.block(*kind, first, second, include_zero, blocks)?;
            }
            Node::Partial(partial) => self.include(partial)?,
            Node::Fail(name, site) => {
                return Err(self.fail(Fault::MissingPartial {
                    name: name.clone(),
                    site: site.clone(),
                }));
            }
            Node::TooDeep => return Err(self.fail(Fault::TooDeep)),
            Node::PartialBlock { indent, site } => self.partial_block(indent.as_deref(), site)?,
        }
        Ok(())
    }

    /// `{{role "system"}}` ...: the marker, written where it goes (it
    /// counts: see [`Rendered`]).
    #[inline(never)]
    fn print_marker(&mut self, marker: MarkerHelper, call: &'a Call) -> Result<(), Stopped> {
        // Every argument is evaluated (a failing one fails here), as for
        // any call; the first positional one and the hash are used.
        let mut first = None;
        for param in &call.params {
            let value = self.arg(param)?;
            let value = self.concrete(value);
            if first.is_none() {
                first = Some(value);
            }
        }
        let mut hash = Vec::with_capacity(call.hash.len());
        for (key, arg) in &call.hash {
            let value = self.arg(arg)?;
            hash.push((key.as_str(), self.concrete(value)));
        }
        let hash_get = |key: &str| hash.iter().find(|(k, _)| *k == key).map(|(_, v)| v.value());
        self.markers.push(self.out.len());
        marker.write(&mut self.out, first.as_ref().map(V::value), &hash_get);
        Ok(())
    }

    /// Prints a path [`Self::look`] does not take.
    #[inline(never)]
    fn print_path(&mut self, path: &'a PathRef) -> Result<(), Stopped> {
        if let PathRef::Local { level, name } = path
            && let Some(frame) = self.block_at(*level)
        {
            // `@index` and `@key` print without being made into values.
            let locals = &frame.locals;
            let number = match (name, &locals.key) {
                (LocalName::Index, _) => Some(locals.index),
                (LocalName::Key, Some(Key::Index(i))) => Some(Some(*i)),
                (LocalName::Key, Some(Key::Ref(k))) => {
                    let k: &'a str = k;
                    self.out.push_str(k);
                    return Ok(());
                }
                _ => None,
            };
            if let Some(number) = number {
                if let Some(i) = number {
                    crate::js::write_u64(&mut self.out, i as u64);
                }
                return Ok(());
            }
        }
        let value = self.path(path)?;
        let value = self.concrete(value);
        write_value(&mut self.out, value.value());
        Ok(())
    }

    /// A path's value when it is in the data (or a block-local boolean),
    /// found without making anything: the common case, kept cheap.
    /// [`Look::Slow`] for anything else ([`Self::path`] takes those).
    #[inline]
    fn look(&self, path: &'a PathRef) -> Look<'a> {
        match path {
            PathRef::Relative { up: 0, root, segs } if !segs.is_empty() => {
                let this = if *root { &V::Root } else { &self.front().this };
                match this {
                    V::Ref(value) => walk_ref(value, segs),
                    V::Root => {
                        let data = self.data;
                        let first = &segs[0];
                        let start = data
                            .input
                            .and_then(|m| field(m, first))
                            .or_else(|| data.defaults.and_then(|m| field(m, first)));
                        match start {
                            Some(value) => walk_ref(value, &segs[1..]),
                            None => Look::Missing,
                        }
                    }
                    V::Missing => Look::Missing,
                    _ => Look::Slow,
                }
            }
            PathRef::Local {
                level,
                name: name @ (LocalName::First | LocalName::Last),
            } => {
                let Some(frame) = self.block_at(*level) else {
                    return Look::Missing;
                };
                let flag = if *name == LocalName::First {
                    frame.locals.first
                } else {
                    frame.locals.last
                };
                match flag {
                    Some(b) => Look::Ref(if b { &TRUE } else { &FALSE }),
                    None => Look::Missing,
                }
            }
            _ => Look::Slow,
        }
    }

    /// `{{> name}}` (kept out of [`Self::node`], which every node goes
    /// through).
    #[inline(never)]
    fn include(&mut self, include: &'a PartialNode) -> Result<(), Stopped> {
        let start = self.out.len();
        if let Some(block) = &include.block {
            self.blocks.push((block, self.frames.len()));
        }
        // A fallback block and an inline partial belong to the caller's
        // template: their `../` goes on in its contexts (the declaring
        // program's, for an inline partial).
        let (plan, link) = match &include.target {
            PartialTarget::Registered(plan) => (&**plan, None),
            PartialTarget::Fallback(plan) => (&**plan, Some(self.frames.len())),
            PartialTarget::Inline { level, name } => {
                // The planner found it in scope, so it is there.
                let declared = self
                    .inline_scopes
                    .len()
                    .checked_sub(level + 1)
                    .and_then(|at| self.inline_scopes.get(at))
                    .and_then(|(frames, partials)| Some((partials.get(name)?, *frames)));
                let Some((plan, frames)) = declared else {
                    return Err(self.fail(Fault::MissingPartial {
                        name: name.clone(),
                        site: include.site.clone(),
                    }));
                };
                (plan, Some(frames))
            }
        };
        let result = self.partial(plan, include.context.as_ref(), &include.hash, link);
        if include.block.is_some() {
            self.blocks.pop();
        }
        result?;
        self.indent_from(start, include.indent.as_deref());
        Ok(())
    }

    /// Indents what was printed since `start`, for a standalone partial.
    fn indent_from(&mut self, start: usize, indent: Option<&str>) {
        let Some(indent) = indent else {
            return;
        };
        let printed = self.out.split_off(start);
        indent_lines(&mut self.out, &printed, indent);
        // Markers printed since `start` moved right by one indentation per
        // line up to theirs (markers hold no line breaks).
        let moved = self.markers.partition_point(|&at| at < start);
        if moved < self.markers.len() {
            let mut lines = 0;
            let mut counted = 0;
            for at in &mut self.markers[moved..] {
                let offset = *at - start;
                lines += printed
                    .as_bytes()
                    .get(counted..offset)
                    .map_or(0, line_breaks);
                counted = offset;
                *at += indent.len() * (lines + 1);
            }
        }
    }

    /// `{{> @partial-block}}`: the block renders with the current context,
    /// and its `../` goes on in its caller's contexts; a
    /// `{{> @partial-block}}` inside it is the enclosing one's.
    #[inline(never)]
    fn partial_block(&mut self, indent: Option<&str>, site: &Site) -> Result<(), Stopped> {
        // Outside a partial block there is none, as in Handlebars.js.
        let Some((block, caller)) = self.blocks.pop() else {
            return Err(self.fail(Fault::MissingPartial {
                name: "@partial-block".to_owned(),
                site: site.clone(),
            }));
        };
        let start = self.out.len();
        let this = self.front().this.share();
        self.push_linked(this, caller);
        let result = self.plan(block);
        self.frames.pop();
        self.blocks.push((block, caller));
        result?;
        self.indent_from(start, indent);
        Ok(())
    }

    /// Stops the render for `fault`.
    #[cold]
    fn fail(&mut self, fault: Fault) -> Stopped {
        self.fault = Some(fault);
        Stopped
    }

    fn block(
        &mut self,
        kind: BlockKind,
        first: Option<V<'a>>,
        second: Option<V<'a>>,
        include_zero: bool,
        branches: Branches<'a>,
    ) -> Result<(), Stopped> {
        let Branches {
            template,
            inverse,
            block_params,
            flat,
        } = branches;
        match kind {
            BlockKind::If { positive } => {
                let first = first.unwrap_or(V::Missing);
                let chosen = if truthy(first.value(), include_zero) == positive {
                    template
                } else {
                    inverse
                };
                if let Some(plan) = chosen {
                    self.plan_in_this(plan)?;
                }
            }
            BlockKind::Equals { when_equal } => {
                // `===`: a missing value (undefined) is not null.
                let missing = |v: &Option<V<'_>>| v.as_ref().is_none_or(V::is_missing);
                let equal = match (missing(&first), missing(&second)) {
                    (true, true) => true,
                    (false, false) => {
                        let a = first.as_ref().map_or(&NULL, V::value);
                        let b = second.as_ref().map_or(&NULL, V::value);
                        strict_equals(a, b)
                    }
                    _ => false,
                };
                let chosen = if equal == when_equal {
                    template
                } else {
                    inverse
                };
                if let Some(plan) = chosen {
                    self.plan_in_this(plan)?;
                }
            }
            BlockKind::With => {
                let arg = first.unwrap_or(V::Missing);
                if !is_empty(arg.value()) {
                    self.push(arg.into_shared());
                    self.front_mut().block_params = block_params;
                    let result = template.map_or(Ok(()), |plan| self.plan(plan));
                    self.frames.pop();
                    result?;
                } else if let Some(plan) = inverse {
                    self.plan_in_this(plan)?;
                }
            }
            BlockKind::Each => {
                let over = first.unwrap_or(V::Missing).into_shared();
                let Some(body) = template else {
                    return Ok(());
                };
                let iterated = match &over {
                    V::Ref(value) => {
                        // The flat body, unless it would nest past the bound
                        // (the general renderer then fails where it does).
                        let flat = flat.filter(|f| self.level + f.depth <= MAX_RENDER_LEVELS);
                        let body = Body { plan: body, flat };
                        self.each_ref(value, body, inverse.is_none(), block_params)?
                    }
                    V::Shared(value) => {
                        self.each_shared(value, body, inverse.is_none(), block_params)?
                    }
                    _ => false,
                };
                if !iterated && let Some(plan) = inverse {
                    self.plan_in_this(plan)?;
                }
            }
        }
        Ok(())
    }

    /// Renders a block body that keeps the current context (`if`'s,
    /// an inverse). Handlebars.js calls a block helper on a null or missing
    /// context with an empty object instead, without a new `../` level.
    fn plan_in_this(&mut self, plan: &'a Plan) -> Result<(), Stopped> {
        let this = &self.front().this;
        if !(this.is_missing()
            || matches!(this, V::Ref(_) | V::Shared(_) if this.value().is_null()))
        {
            return self.plan(plan);
        }
        let locals = self.front().locals.clone();
        self.frames.push(Frame {
            this: V::Shared(Rc::new(Value::Object(Map::new()))),
            locals,
            new_depth: false,
            partial: false,
            block_params: false,
            link: None,
        });
        let result = self.plan(plan);
        self.frames.pop();
        result
    }

    /// `{{#each}}` over borrowed data; `false` if the value is not a
    /// collection (or is empty and there is an `{{else}}`).
    fn each_ref(
        &mut self,
        value: &'a Value,
        Body { plan: body, flat }: Body<'a>,
        no_inverse: bool,
        block_params: bool,
    ) -> Result<bool, Stopped> {
        let outer = self.context();
        let outer = outer.as_ref();
        match value {
            Value::Array(items) if !items.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                    new_depth: true,
                    partial: false,
                    block_params,
                    link: None,
                });
                let len = items.len();
                let mut result = Ok(());
                let mut i = 0;
                while i < len {
                    if let Some(flat) = flat {
                        i = flat.run_array(items, i, &mut self.out);
                        if i == len {
                            break;
                        }
                    }
                    self.set_item(V::Ref(&items[i]), outer, i, len, Some(Key::Index(i)));
                    result = self.plan(body);
                    if result.is_err() {
                        break;
                    }
                    i += 1;
                }
                self.frames.pop();
                result.map(|()| true)
            }
            Value::Object(map) if !map.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                    new_depth: true,
                    partial: false,
                    block_params,
                    link: None,
                });
                let len = map.len();
                let result = js_key_order(map)
                    .enumerate()
                    .try_for_each(|(i, (key, item))| {
                        if let (Some(flat), Value::Object(fields)) = (flat, item) {
                            let at = fast::Item {
                                index: i,
                                len,
                                key: Some(key.as_str()),
                            };
                            flat.run(item, fields, at, &mut self.out);
                            return Ok(());
                        }
                        self.set_item(V::Ref(item), outer, i, len, Some(Key::Ref(key)));
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
        block_params: bool,
    ) -> Result<bool, Stopped> {
        let outer = self.context();
        let outer = outer.as_ref();
        match value {
            Value::Array(items) if !items.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                    new_depth: true,
                    partial: false,
                    block_params,
                    link: None,
                });
                let len = items.len();
                let result = items.iter().enumerate().try_for_each(|(i, item)| {
                    let item = V::Shared(Rc::new(item.clone()));
                    self.set_item(item, outer, i, len, Some(Key::Index(i)));
                    self.plan(body)
                });
                self.frames.pop();
                result.map(|()| true)
            }
            Value::Object(map) if !map.is_empty() || no_inverse => {
                self.frames.push(Frame {
                    this: V::Missing,
                    locals: Locals::default(),
                    new_depth: true,
                    partial: false,
                    block_params,
                    link: None,
                });
                let len = map.len();
                let result = js_key_order(map)
                    .enumerate()
                    .try_for_each(|(i, (key, item))| {
                        let key = Key::Shared(Rc::from(key.as_str()));
                        let item = V::Shared(Rc::new(item.clone()));
                        self.set_item(item, outer, i, len, Some(key));
                        self.plan(body)
                    });
                self.frames.pop();
                result.map(|()| true)
            }
            _ => Ok(false),
        }
    }

    /// The current context (for a loop, which compares each item with it).
    fn context(&self) -> Option<V<'a>> {
        depths(&self.frames).next().map(V::share)
    }

    /// Makes `item` the each frame's context; `outer` is the context around
    /// the loop (see [`Self::context`]).
    fn set_item(
        &mut self,
        item: V<'a>,
        outer: Option<&V<'a>>,
        index: usize,
        len: usize,
        key: Option<Key<'a>>,
    ) {
        let new_depth = !outer.is_some_and(|c| same_context(c, &item));
        let frame = self.front_mut();
        frame.this = item;
        frame.new_depth = new_depth;
        frame.locals = Locals {
            index: Some(index),
            first: Some(index == 0),
            last: Some(index + 1 == len),
            key,
        };
    }

    /// Renders a partial: a registered one starts afresh (no outer
    /// contexts); one that belongs to the caller's template (`link`: a
    /// fallback block, an inline partial) goes on in the contexts of the
    /// first `link` frames.
    fn partial(
        &mut self,
        plan: &'a Plan,
        context: Option<&'a Arg>,
        hash: &'a [(String, Arg)],
        link: Option<usize>,
    ) -> Result<(), Stopped> {
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
        if self.partial_depth >= MAX_PARTIAL_NESTING {
            return Err(self.fail(Fault::TooDeep));
        }
        match link {
            Some(caller) => self.push_linked(this, caller),
            None => {
                self.push(this);
                // The partial's context is its outermost one, changed or not.
                let frame = self.front_mut();
                frame.new_depth = true;
                frame.partial = true;
            }
        }
        self.partial_depth += 1;
        let result = self.plan(plan);
        self.partial_depth -= 1;
        self.frames.pop();
        result
    }

    /// Enters a program of the caller's template whose outer contexts are
    /// those of the first `caller` frames.
    fn push_linked(&mut self, this: V<'a>, caller: usize) {
        let caller = caller.min(self.frames.len());
        let new_depth = !depths(&self.frames[..caller])
            .next()
            .is_some_and(|c| same_context(c, &this));
        self.push(this);
        let frame = self.front_mut();
        frame.new_depth = new_depth;
        frame.link = Some(caller);
    }

    /// Enters a block whose context is `this`, keeping the block-local
    /// variables.
    fn push(&mut self, this: V<'a>) {
        // The materialized root is still the root context.
        let this = match this {
            V::Shared(value) if self.root.as_ref().is_some_and(|r| Rc::ptr_eq(r, &value)) => {
                V::Root
            }
            other => other,
        };
        let new_depth = !depths(&self.frames)
            .next()
            .is_some_and(|c| same_context(c, &this));
        let locals = self.front().locals.clone();
        self.frames.push(Frame {
            this,
            locals,
            new_depth,
            partial: false,
            block_params: false,
            link: None,
        });
    }

    /// The context `up` distinct contexts out, as Handlebars.js counts
    /// `../`: a frame that did not change the context is not a level.
    fn depth_context(&self, up: usize) -> Option<&V<'a>> {
        depths(&self.frames).nth(up)
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

    fn arg(&mut self, arg: &'a Arg) -> Result<V<'a>, Stopped> {
        match arg {
            Arg::Literal(value) => Ok(V::Ref(value)),
            Arg::Path(path) => self.path(path),
            Arg::Call(call) => self.call(call),
        }
    }

    fn path(&mut self, path: &'a PathRef) -> Result<V<'a>, Stopped> {
        match path {
            PathRef::BlockParam { level, index, segs } => {
                let Some(frame) = self
                    .frames
                    .iter()
                    .rev()
                    .filter(|f| f.block_params)
                    .nth(*level)
                else {
                    return Ok(V::Missing);
                };
                let base = match index {
                    0 => frame.this.share(),
                    _ => match &frame.locals.key {
                        Some(Key::Index(i)) => own(Value::from(*i)),
                        Some(Key::Ref(k)) => own(Value::from(*k)),
                        Some(Key::Shared(k)) => own(Value::from(k.as_ref())),
                        None => V::Missing,
                    },
                };
                self.navigate(base, segs)
            }
            PathRef::Local { level, name } => {
                let Some(frame) = self.block_at(*level) else {
                    return Ok(V::Missing);
                };
                let locals = &frame.locals;
                Ok(match name {
                    LocalName::Index => locals.index.map_or(V::Missing, |i| own(Value::from(i))),
                    LocalName::First => locals.first.map_or(V::Missing, boolean),
                    LocalName::Last => locals.last.map_or(V::Missing, boolean),
                    LocalName::Key => match &locals.key {
                        Some(Key::Index(i)) => own(Value::from(*i)),
                        Some(Key::Ref(k)) => own(Value::from(*k)),
                        Some(Key::Shared(k)) => own(Value::from(k.as_ref())),
                        None => V::Missing,
                    },
                    LocalName::Other => V::Missing,
                })
            }
            PathRef::Relative { up, root, segs } => {
                let base = if *up > 0 {
                    match self.depth_context(*up) {
                        Some(context) => context.share(),
                        None => return Ok(V::Missing),
                    }
                } else if *root {
                    V::Root
                } else {
                    self.front().this.share()
                };
                self.navigate(base, segs)
            }
        }
    }

    /// Follows `segs` from `base`, as Handlebars.js looks up properties.
    fn navigate(&mut self, base: V<'a>, segs: &[String]) -> Result<V<'a>, Stopped> {
        let Some((first, rest)) = segs.split_first() else {
            return Ok(base);
        };
        Ok(match base {
            V::Missing => V::Missing,
            V::Root => {
                let data = self.data;
                let start = data
                    .input
                    .and_then(|m| field(m, first))
                    .or_else(|| data.defaults.and_then(|m| field(m, first)));
                match start {
                    Some(value) => found(walk(value, rest)),
                    None => V::Missing,
                }
            }
            V::Ref(value) => found(walk(value, segs)),
            V::Shared(value) => found(walk(&value, segs).map(Found::into_owned)),
            V::Own(value) => found(walk(&value, segs).map(Found::into_owned)),
        })
    }

    fn call(&mut self, call: &'a Call) -> Result<V<'a>, Stopped> {
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
                match json_text(value, hash_get("indent")) {
                    Ok(text) => own(Value::String(text)),
                    Err(message) => {
                        let site = call.site.clone();
                        return Err(self.fail(Fault::Helper { message, site }));
                    }
                }
            }
            Helper::Marker(marker) => own(Value::String(
                marker.text(params.first().map(V::value), &hash_get),
            )),
            Helper::Lookup => {
                let mut params = params.into_iter();
                let (Some(collection), Some(index)) = (params.next(), params.next()) else {
                    // The planner checked there are two.
                    return Ok(V::Missing);
                };
                // `lookup` returns a falsy collection itself.
                if is_falsy(collection.value()) {
                    return Ok(collection);
                }
                let key = property_key(&index);
                match collection {
                    V::Ref(outer) => found(walk(outer, std::slice::from_ref(&key))),
                    other => found(
                        walk(other.value(), std::slice::from_ref(&key)).map(Found::into_owned),
                    ),
                }
            }
            Helper::Data(segments) => {
                let scope = self.data.scope;
                scope
                    .lookup_segments(segments)
                    .map_or(V::Ref(&NULL), V::Ref)
            }
            Helper::Log => V::Missing,
            Helper::User(name, f) => {
                let args: Vec<Value> = params.iter().map(|v| v.value().clone()).collect();
                let named: Map<String, Value> = hash
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.value().clone()))
                    .collect();
                match f(&args, &named) {
                    Ok(value) => own(value),
                    Err(e) => {
                        let message = format!("helper `{name}`: {e}");
                        let site = call.site.clone();
                        return Err(self.fail(Fault::Helper { message, site }));
                    }
                }
            }
        })
    }
}

/// What [`Renderer::look`] found.
enum Look<'a> {
    /// A value in the data (or a static one).
    Ref(&'a Value),
    /// Nothing: the path leads nowhere.
    Missing,
    /// A case left to [`Renderer::path`] (a value to be made, a derived
    /// context, `../`, block parameters).
    Slow,
}

impl<'a> Look<'a> {
    /// `Some(None)` for missing, `None` for [`Look::Slow`].
    fn value(self) -> Option<Option<&'a Value>> {
        match self {
            Look::Ref(v) => Some(Some(v)),
            Look::Missing => Some(None),
            Look::Slow => None,
        }
    }
}

/// [`walk`] where it stays in the data: [`Look::Slow`] where it would make
/// a value (an array's or a string's `length`, a string's character).
fn walk_ref<'v>(start: &'v Value, segs: &[String]) -> Look<'v> {
    let mut current = start;
    for seg in segs {
        current = match current {
            Value::Object(map) => match field(map, seg) {
                Some(value) => value,
                None => return Look::Missing,
            },
            Value::Array(_) | Value::String(_) => return Look::Slow,
            Value::Null => return Look::Ref(current),
            _ => return Look::Missing,
        };
    }
    Look::Ref(current)
}

/// Where a path led: into the data, or to a value made on the way (a
/// `length`, a character of a string).
pub(super) enum Found<'v> {
    Ref(&'v Value),
    Own(Value),
}

impl Found<'_> {
    /// The value found.
    pub(super) fn value(&self) -> &Value {
        match self {
            Found::Ref(v) => v,
            Found::Own(v) => v,
        }
    }

    fn into_owned(self) -> Found<'static> {
        match self {
            Found::Ref(v) => Found::Own(v.clone()),
            Found::Own(v) => Found::Own(v),
        }
    }
}

fn found<'a>(f: Option<Found<'a>>) -> V<'a> {
    match f {
        Some(Found::Ref(v)) => V::Ref(v),
        Some(Found::Own(v)) => own(v),
        None => V::Missing,
    }
}

/// Follows `segs` from `start` as Handlebars.js does: only own properties
/// (an object's fields; an array's items and `length`; a string's
/// characters and `length`), anything else leads nowhere, and a null on
/// the way is the result.
pub(super) fn walk<'v>(start: &'v Value, segs: &[String]) -> Option<Found<'v>> {
    let mut current = start;
    for (i, seg) in segs.iter().enumerate() {
        current = match current {
            Value::Object(map) => field(map, seg)?,
            Value::Array(items) if seg == "length" => {
                return derived(Value::from(items.len()), &segs[i + 1..]);
            }
            Value::Array(items) => items.get(usize::try_from(array_index(seg)?).ok()?)?,
            Value::String(s) => return derived(string_property(s, seg)?, &segs[i + 1..]),
            Value::Null => return Some(Found::Ref(current)),
            _ => return None,
        };
    }
    Some(Found::Ref(current))
}

/// Continues a walk from a value made on the way.
fn derived(value: Value, rest: &[String]) -> Option<Found<'static>> {
    if rest.is_empty() {
        return Some(Found::Own(value));
    }
    walk(&value, rest).map(Found::into_owned)
}

/// A string's `length` (in UTF-16 units, as JavaScript counts) or its
/// character at an index (a lone surrogate half as U+FFFD).
fn string_property(s: &str, key: &str) -> Option<Value> {
    if key == "length" {
        return Some(Value::from(s.encode_utf16().count()));
    }
    let unit = s
        .encode_utf16()
        .nth(usize::try_from(array_index(key)?).ok()?)?;
    let c = char::from_u32(u32::from(unit)).unwrap_or(char::REPLACEMENT_CHARACTER);
    Some(Value::String(c.to_string()))
}

/// JavaScript's falsy values: false, null, missing, `0` and `""`.
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Null => true,
        Value::Number(n) => is_zero(n),
        Value::String(s) => s.is_empty(),
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// A value used as a property name, as JavaScript converts it.
fn property_key(value: &V<'_>) -> String {
    match value {
        V::Missing => "undefined".to_owned(),
        other => match other.value() {
            Value::Null => "null".to_owned(),
            value => {
                let mut key = String::new();
                write_value(&mut key, value);
                key
            }
        },
    }
}

/// How many line breaks `bytes` holds.
fn line_breaks(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

/// Writes `printed` with `indent` before each line (not after a final
/// newline), as Handlebars.js indents a standalone partial's output.
fn indent_lines(out: &mut String, printed: &str, indent: &str) {
    let mut lines = printed.split('\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if last && line.is_empty() {
            break;
        }
        out.push_str(indent);
        out.push_str(line);
        if !last {
            out.push('\n');
        }
    }
}

/// The distinct contexts of `frames`, innermost first. A partial starts
/// afresh: Handlebars.js gives it no outer contexts, so `../` inside one
/// leads nowhere; a partial block's content goes on with its caller's.
fn depths<'f, 'a>(frames: &'f [Frame<'a>]) -> impl Iterator<Item = &'f V<'a>> {
    let mut end = frames.len();
    let mut ended = false;
    std::iter::from_fn(move || {
        while !ended && end > 0 {
            end -= 1;
            let frame = &frames[end];
            ended = frame.partial;
            if let Some(caller) = frame.link {
                end = caller.min(end);
            }
            if frame.new_depth {
                return Some(&frame.this);
            }
        }
        None
    })
}

/// Whether entering `b` from `a` keeps the context (JavaScript's `!=`
/// between them is false): the same object, or equal plain values.
fn same_context(a: &V<'_>, b: &V<'_>) -> bool {
    match (a, b) {
        (V::Root, V::Root) => true,
        (V::Root, _) | (_, V::Root) => false,
        (V::Ref(x), V::Ref(y)) if std::ptr::eq(*x, *y) => true,
        (V::Shared(x), V::Shared(y)) if Rc::ptr_eq(x, y) => true,
        _ => {
            let (x, y) = (a.value(), b.value());
            let plain = |v: &Value| !matches!(v, Value::Array(_) | Value::Object(_));
            plain(x) && plain(y) && strict_equals(x, y)
        }
    }
}

/// An object's entries in JavaScript's key order: keys that are array
/// indexes first, ascending, then the others in insertion order.
fn js_key_order(map: &Map<String, Value>) -> impl Iterator<Item = (&String, &Value)> {
    let mut indexed: Vec<(u32, (&String, &Value))> = map
        .iter()
        .filter_map(|e| Some((array_index(e.0)?, e)))
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let others = map.iter().filter(|(k, _)| array_index(k).is_none());
    indexed.into_iter().map(|(_, e)| e).chain(others)
}

/// `key` as a JavaScript array index: a canonical decimal below 2^32 - 1.
fn array_index(key: &str) -> Option<u32> {
    let digits = !key.is_empty() && key.bytes().all(|b| b.is_ascii_digit());
    if !digits || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    key.parse::<u32>().ok().filter(|i| *i != u32::MAX)
}

/// A field of an object.
#[inline]
pub(super) fn field<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if map.len() <= LINEAR_LOOKUP {
        map.iter().find(|(k, _)| key_eq(k, key)).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// `a == b` for object keys, which are mostly short: up to 16 bytes
/// compared in two overlapping words (no call to `memcmp`).
#[inline]
pub(super) fn key_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => words::<4>(a) == words::<4>(b),
        8..=16 => words::<8>(a) == words::<8>(b),
        _ => a == b,
    }
}

/// The first and the last `N` bytes of `bytes` (at least `N` long).
#[inline]
fn words<const N: usize>(bytes: &[u8]) -> Option<([u8; N], [u8; N])> {
    Some((*bytes.first_chunk::<N>()?, *bytes.last_chunk::<N>()?))
}

fn own<'a>(value: Value) -> V<'a> {
    V::Own(Box::new(value))
}

fn boolean<'a>(b: bool) -> V<'a> {
    V::Ref(if b { &TRUE } else { &FALSE })
}

/// Handlebars.js' `if`: false, null, missing, `""`, `[]` and (unless
/// `includeZero`) `0` are false; everything else, `{}` included, is true.
pub(super) fn truthy(value: &Value, include_zero: bool) -> bool {
    match value {
        Value::Number(n) if is_zero(n) => include_zero,
        other => !is_empty(other),
    }
}

/// Handlebars.js' `isEmpty` (what `with` and `each` test): false, null,
/// missing, `""` and `[]`. `0` and `{}` are not empty.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Number(_) => false,
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(_) => false,
    }
}

fn is_zero(n: &serde_json::Number) -> bool {
    n.as_f64() == Some(0.0)
}

/// Prints a value as Handlebars.js does (JavaScript's string conversion):
/// null prints nothing, an array its items joined by `,` (null items
/// empty), an object `[object Object]`, a number as JavaScript prints it.
pub(super) fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => crate::js::write_number(out, n),
        Value::Null => {}
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
        }
        Value::Object(_) => out.push_str("[object Object]"),
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
