//! The flat form of an `{{#each}}` body that only prints: text, fields of
//! the item, the loop's `@index`/`@first`/`@last`/`@key`, and
//! `{{#if}}`/`{{#unless}}` on those. Such a body renders each item
//! without the renderer's contexts: no frame set per item, no value made,
//! the output written straight into the buffer. Anything else in the body
//! (helpers, partials, other blocks, `../`, block parameters, markers)
//! leaves the loop to the general renderer.
//!
//! The result is the general renderer's, for an item that is an object:
//! `{{#if}}` keeps that context, a field is looked up as [`walk`] does,
//! and the block-local variables are the innermost loop's.

use serde_json::{Map, Value};

use super::eval::{field, truthy, walk, write_value};
use super::plan::{Arg, BlockKind, LocalName, Node, PathRef, Plan};
use crate::js::write_u64;

/// One step of a flat body: small, with its text and paths kept aside in
/// the [`Flat`], so that stepping through a body stays cheap. Blocks are
/// laid out inline: a test that skips the steps of the branch not taken.
#[derive(Clone, Copy)]
pub(super) enum Op {
    /// Literal text (its index in [`Flat::texts`]).
    Text(u32),
    /// Literal text of one ASCII character (pushed without a copy call).
    Char(u8),
    /// A value, printed after the literal text before it (one step
    /// instead of two).
    Print(Prefix, Source),
    /// `{{#if}}` (`positive`) or `{{#unless}}`: unless the test comes out
    /// as `positive`, skips the next `skip` steps (the block's body and
    /// the jump over its `{{else}}`).
    Test {
        positive: bool,
        source: Source,
        skip: u32,
    },
    /// Skips the next steps (the `{{else}}` of a block whose body ran).
    Jump(u32),
}

/// The literal text a [`Op::Print`] prints first.
#[derive(Clone, Copy)]
pub(super) enum Prefix {
    None,
    Char(u8),
    Text(u32),
}

/// Where a flat body's value comes from.
#[derive(Clone, Copy)]
pub(super) enum Source {
    /// A field of the item (its name's index in [`Flat::names`]).
    Field(u32),
    /// A longer path from the item (its index in [`Flat::paths`]).
    Path(u32),
    /// A block-local variable of the loop.
    Local(LocalName),
}

/// A flat body: its steps, the texts and paths they use, and how many
/// programs deep it nests (the body itself is one), which the renderer's
/// nesting bound counts.
pub(super) struct Flat {
    ops: Vec<Op>,
    texts: Vec<String>,
    names: Vec<String>,
    paths: Vec<Vec<String>>,
    pub(super) depth: usize,
    /// Where the steps after the last block start: a print may take in
    /// the text before it only from there on (earlier steps are in a
    /// branch).
    straight: usize,
}

/// The flat form of `body`, if it only prints.
pub(super) fn flatten(body: &Plan) -> Option<Flat> {
    let mut flat = Flat {
        ops: Vec::new(),
        texts: Vec::new(),
        names: Vec::new(),
        paths: Vec::new(),
        depth: 0,
        straight: 0,
    };
    flat.program(body, 1)?;
    Some(flat)
}

/// `n` as a step's index (bodies with more than `u32::MAX` steps are not
/// flattened).
fn index(n: usize) -> Option<u32> {
    u32::try_from(n).ok()
}

impl Flat {
    fn program(&mut self, plan: &Plan, level: usize) -> Option<()> {
        if plan.inline.is_some() {
            return None;
        }
        self.depth = self.depth.max(level);
        plan.nodes.iter().try_for_each(|node| self.op(node, level))
    }

    fn op(&mut self, node: &Node, level: usize) -> Option<()> {
        match node {
            Node::Text(text) => {
                let op = match text.as_bytes() {
                    [c] if c.is_ascii() => Op::Char(*c),
                    _ => {
                        self.texts.push(text.clone());
                        Op::Text(index(self.texts.len() - 1)?)
                    }
                };
                self.ops.push(op);
            }
            Node::Value(path) => {
                let source = self.source(path)?;
                let prefix = match self.ops.last() {
                    _ if self.ops.len() <= self.straight => None,
                    Some(Op::Char(c)) => Some(Prefix::Char(*c)),
                    Some(Op::Text(i)) => Some(Prefix::Text(*i)),
                    _ => None,
                };
                if prefix.is_some() {
                    self.ops.pop();
                }
                self.ops
                    .push(Op::Print(prefix.unwrap_or(Prefix::None), source));
            }
            Node::Block {
                kind: BlockKind::If { positive },
                params,
                hash,
                block_params: 0,
                template,
                inverse,
                ..
            } if hash.is_empty() => {
                let [Arg::Path(path)] = params.as_slice() else {
                    return None;
                };
                let source = self.source(path)?;
                let test = self.ops.len();
                self.ops.push(Op::Jump(0));
                if let Some(body) = template {
                    self.program(body, level + 1)?;
                }
                let mut skip = self.ops.len() - test - 1;
                if let Some(otherwise) = inverse {
                    let jump = self.ops.len();
                    self.ops.push(Op::Jump(0));
                    skip += 1;
                    self.program(otherwise, level + 1)?;
                    self.ops[jump] = Op::Jump(index(self.ops.len() - jump - 1)?);
                }
                self.ops[test] = Op::Test {
                    positive: *positive,
                    source,
                    skip: index(skip)?,
                };
                self.straight = self.ops.len();
            }
            _ => return None,
        }
        Some(())
    }

    fn source(&mut self, path: &PathRef) -> Option<Source> {
        match path {
            PathRef::Relative {
                up: 0,
                root: false,
                segs,
            } => match segs.as_slice() {
                [] => None,
                [name] => {
                    self.names.push(name.clone());
                    Some(Source::Field(index(self.names.len() - 1)?))
                }
                _ => {
                    self.paths.push(segs.clone());
                    Some(Source::Path(index(self.paths.len() - 1)?))
                }
            },
            PathRef::Local { level: 0, name } => Some(Source::Local(*name)),
            _ => None,
        }
    }

    /// Renders the items of an array from `from` on, as long as they are
    /// objects; returns where it stopped (an item that is not an object,
    /// which the general renderer takes, or the end).
    pub(super) fn run_array(&self, items: &[Value], from: usize, out: &mut String) -> usize {
        let len = items.len();
        for (index, item) in items.iter().enumerate().skip(from) {
            let Value::Object(fields) = item else {
                return index;
            };
            let at = Item {
                index,
                len,
                key: None,
            };
            self.run(item, fields, at, out);
        }
        len
    }

    /// Renders the body for the object `item` (whose fields are `fields`).
    #[inline]
    pub(super) fn run(
        &self,
        item: &Value,
        fields: &Map<String, Value>,
        at: Item<'_>,
        out: &mut String,
    ) {
        let ops = self.ops.as_slice();
        let mut pc = 0;
        while let Some(op) = ops.get(pc) {
            pc += 1;
            match *op {
                Op::Char(c) => out.push(char::from(c)),
                Op::Text(i) => out.push_str(self.text(i)),
                Op::Print(prefix, source) => {
                    match prefix {
                        Prefix::None => {}
                        Prefix::Char(c) => out.push(char::from(c)),
                        Prefix::Text(i) => out.push_str(self.text(i)),
                    }
                    match self.look(source, item, fields) {
                        Look::Found(Value::String(s)) => out.push_str(s),
                        Look::Found(Value::Number(n)) if let Some(u) = n.as_u64() => {
                            write_u64(out, u);
                        }
                        Look::Found(value) => write_value(out, value),
                        Look::Missing => {}
                        Look::Local(name) => print_local(name, at, out),
                        Look::Derived(segs) => {
                            if let Some(value) = walk(item, segs) {
                                write_value(out, value.value());
                            }
                        }
                    }
                }
                Op::Test {
                    positive,
                    source,
                    skip,
                } => {
                    let truth = match self.look(source, item, fields) {
                        Look::Found(value) => truthy(value, false),
                        Look::Missing => false,
                        Look::Local(name) => local_truth(name, at),
                        Look::Derived(segs) => {
                            walk(item, segs).is_some_and(|v| truthy(v.value(), false))
                        }
                    };
                    if truth != positive {
                        pc += skip as usize;
                    }
                }
                Op::Jump(skip) => pc += skip as usize,
            }
        }
    }

    fn text(&self, i: u32) -> &str {
        self.texts.get(i as usize).map_or("", String::as_str)
    }

    #[inline]
    fn look<'v>(
        &'v self,
        source: Source,
        item: &'v Value,
        fields: &'v Map<String, Value>,
    ) -> Look<'v> {
        match source {
            Source::Field(i) => match self
                .names
                .get(i as usize)
                .and_then(|name| field(fields, name))
            {
                Some(value) => Look::Found(value),
                None => Look::Missing,
            },
            Source::Path(i) => match self.paths.get(i as usize) {
                Some(segs) => lookup(item, segs),
                None => Look::Missing,
            },
            Source::Local(name) => Look::Local(name),
        }
    }
}

/// The loop's block-local variables for one item.
#[derive(Clone, Copy)]
pub(super) struct Item<'v> {
    pub(super) index: usize,
    pub(super) len: usize,
    /// The object key, when looping over an object (else `@key` is the
    /// index).
    pub(super) key: Option<&'v str>,
}

/// What a source leads to.
enum Look<'v> {
    Found(&'v Value),
    Missing,
    /// A block-local variable.
    Local(LocalName),
    /// A path through an array or a string: left to [`walk`], which makes
    /// `length`s and characters.
    Derived(&'v [String]),
}

/// [`walk`] for the common case, a path through objects, without making
/// anything.
fn lookup<'v>(item: &'v Value, segs: &'v [String]) -> Look<'v> {
    let mut current = item;
    for seg in segs {
        current = match current {
            Value::Object(map) => match field(map, seg) {
                Some(value) => value,
                None => return Look::Missing,
            },
            Value::Null => return Look::Found(current),
            Value::Array(_) | Value::String(_) => return Look::Derived(segs),
            _ => return Look::Missing,
        };
    }
    Look::Found(current)
}

/// Prints `@index`, `@first`, `@last` or `@key` as the general renderer
/// does (a missing one prints nothing).
fn print_local(name: LocalName, at: Item<'_>, out: &mut String) {
    match name {
        LocalName::Index => write_u64(out, at.index as u64),
        LocalName::First => out.push_str(bool_text(at.index == 0)),
        LocalName::Last => out.push_str(bool_text(at.index + 1 == at.len)),
        LocalName::Key => match at.key {
            Some(key) => out.push_str(key),
            None => write_u64(out, at.index as u64),
        },
        LocalName::Other => {}
    }
}

/// `{{#if @index}}` ...: JavaScript's truthiness of the variable.
fn local_truth(name: LocalName, at: Item<'_>) -> bool {
    match name {
        LocalName::Index => at.index != 0,
        LocalName::First => at.index == 0,
        LocalName::Last => at.index + 1 == at.len,
        LocalName::Key => match at.key {
            Some(key) => !key.is_empty(),
            None => at.index != 0,
        },
        LocalName::Other => false,
    }
}

fn bool_text(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}
