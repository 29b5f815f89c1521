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

use super::eval::{field, key_eq, truthy, walk, write_value};
use super::plan::{Arg, BlockKind, LocalName, Node, PathRef, Plan};
use crate::js::write_u64;

/// One step of a flat body. Blocks on other values than `@first` and
/// `@last` are laid out inline: a test that skips the steps of the branch
/// not taken.
enum Op {
    /// Literal text.
    Text(Lit),
    /// A field of the item, printed between the literal texts around it
    /// (the most common step, kept apart from [`Op::Print`]).
    Field {
        prefix: Lit,
        field: Field,
        suffix: Lit,
    },
    /// A value, printed between the literal texts around it (one step
    /// instead of three).
    Print {
        prefix: Lit,
        source: Source,
        suffix: Lit,
    },
    /// `{{#if}}` (`positive`) or `{{#unless}}`: unless the test comes out
    /// as `positive`, skips the next `skip` steps (the block's body and
    /// the jump over its `{{else}}`).
    Test {
        positive: bool,
        source: Source,
        skip: usize,
    },
    /// Skips the next steps (the `{{else}}` of a block whose body ran).
    Jump(usize),
}

/// Literal text of a step.
enum Lit {
    None,
    /// One ASCII character (pushed without a copy call).
    Char(u8),
    Text(Box<str>),
}

/// A field of the item, by name, and the slot of [`Hints`] that keeps
/// where it was found in the last item ([`NO_SLOT`]: none).
#[derive(Clone)]
struct Field {
    name: Box<str>,
    slot: usize,
}

/// Where each field of a flat body was found in the last item, per slot:
/// items of one loop mostly have the same keys in the same order, so the
/// key at that position is compared first (one comparison instead of a
/// search).
type Hints = [u8; SLOTS];

/// Fields of a body that keep a position hint; the others (and the
/// fields of a body with more) are searched.
const SLOTS: usize = 8;

/// The slot of a field that keeps no hint.
const NO_SLOT: usize = usize::MAX;

/// Where a flat body's value comes from.
#[derive(Clone)]
enum Source {
    /// A field of the item.
    Field(Field),
    /// A longer path from the item.
    Path(Box<[String]>),
    /// A block-local variable of the loop.
    Local(LocalName),
}

/// A step list.
enum Steps {
    /// A leading text, then fields of the item, each followed by a text:
    /// the most common body (no tests, no other values), printed without
    /// telling steps apart.
    Fields {
        lead: Lit,
        fields: Box<[(Field, Lit)]>,
    },
    /// Any other.
    Ops(Box<[Op]>),
}

/// A flat body: its steps, and how many programs deep it nests (the body
/// itself is one), which the renderer's nesting bound counts.
pub(super) struct Flat {
    /// The steps: one list, or, when the body tests `@first` or `@last`,
    /// one for each of their four combinations (see [`variant`]), in which
    /// those tests are decided (their branches inline, their texts merged).
    variants: Vec<Steps>,
    /// The same for array loops, rotated: the text the body starts with is
    /// printed with the text the previous item ends with, in one step.
    rotated: Option<Rotated>,
    pub(super) depth: usize,
}

/// A body whose step lists all start with the same text, `lead`: printed
/// once before the first item, then after each item with its trailing
/// text, as one text.
struct Rotated {
    lead: Lit,
    /// Per step list: the steps without the leading and trailing texts,
    /// the trailing text (after the last item), and the trailing text
    /// followed by the lead (between items).
    variants: Vec<(Steps, Lit, Lit)>,
}

/// Which step list renders the item at `index` of `len`.
fn variant(index: usize, len: usize) -> usize {
    usize::from(index == 0) | (usize::from(index + 1 == len) << 1)
}

/// The flat form of `body`, if it only prints.
pub(super) fn flatten(body: &Plan) -> Option<Flat> {
    let mut builder = Builder::new(None);
    builder.program(body, 1)?;
    let depth = builder.depth;
    let builders = if builder.tests_position {
        (0..4)
            .map(|v| {
                let mut builder = Builder::new(Some((v & 1 != 0, v & 2 != 0)));
                builder.program(body, 1)?;
                Some(builder)
            })
            .collect::<Option<Vec<_>>>()?
    } else {
        vec![builder]
    };
    let mut slots = Slots::default();
    let variants = builders
        .iter()
        .map(|b| slots.ops(b.steps.clone()))
        .collect();
    Some(Flat {
        variants,
        rotated: rotate(builders, &mut slots),
        depth,
    })
}

/// The rotated form of these step lists, if they all start with the same
/// (non-empty) text.
fn rotate(builders: Vec<Builder>, slots: &mut Slots) -> Option<Rotated> {
    let mut lead = None;
    let mut variants = Vec::with_capacity(builders.len());
    for Builder {
        mut steps,
        straight,
        ..
    } in builders
    {
        // The first step is never in a branch; the last is when a block
        // ends the body.
        let mut straight = straight;
        let first = match steps.first_mut() {
            Some(Step::Text(text)) => {
                let text = std::mem::take(text);
                steps.remove(0);
                straight = straight.saturating_sub(1);
                text
            }
            Some(Step::Print {
                prefix: prefix @ Text::Some(_),
                ..
            }) => match std::mem::replace(prefix, Text::None) {
                Text::Some(text) => text,
                Text::None => String::new(),
            },
            _ => return None,
        };
        if first.is_empty() || lead.as_ref().is_some_and(|lead| *lead != first) {
            return None;
        }
        let last = if steps.len() > straight {
            match steps.last_mut() {
                Some(Step::Text(text)) => {
                    let text = std::mem::take(text);
                    steps.pop();
                    text
                }
                Some(Step::Print {
                    suffix: suffix @ Text::Some(_),
                    ..
                }) => match std::mem::replace(suffix, Text::None) {
                    Text::Some(text) => text,
                    Text::None => String::new(),
                },
                _ => String::new(),
            }
        } else {
            String::new()
        };
        let joined = format!("{last}{first}");
        variants.push((
            slots.ops(steps),
            lit(Text::Some(last)),
            lit(Text::Some(joined)),
        ));
        lead = Some(first);
    }
    Some(Rotated {
        lead: lit(Text::Some(lead?)),
        variants,
    })
}

/// A literal text being laid out (made a [`Lit`] by [`ops`]).
#[derive(Clone)]
enum Text {
    None,
    Some(String),
}

/// A step being laid out.
#[derive(Clone)]
enum Step {
    Text(String),
    Print {
        prefix: Text,
        source: Source,
        suffix: Text,
    },
    Test {
        positive: bool,
        source: Source,
        skip: usize,
    },
    Jump(usize),
}

/// Lays out one step list.
struct Builder {
    steps: Vec<Step>,
    /// `@first` and `@last`, when this list is for known ones.
    known: Option<(bool, bool)>,
    /// Whether a test on `@first` or `@last` was met.
    tests_position: bool,
    /// Where the steps after the last laid-out block start: literal text
    /// joins a step only from there on (earlier steps are in a branch).
    straight: usize,
    depth: usize,
}

impl Builder {
    fn new(known: Option<(bool, bool)>) -> Self {
        Builder {
            steps: Vec::new(),
            known,
            tests_position: false,
            straight: 0,
            depth: 0,
        }
    }

    fn program(&mut self, plan: &Plan, level: usize) -> Option<()> {
        if plan.inline.is_some() {
            return None;
        }
        self.depth = self.depth.max(level);
        plan.nodes
            .iter()
            .try_for_each(|node| self.step(node, level))
    }

    fn step(&mut self, node: &Node, level: usize) -> Option<()> {
        match node {
            Node::Text(text) => self.text(text),
            Node::Value(path) => {
                let source = source(path)?;
                let prefix = match self.steps.last() {
                    Some(Step::Text(_)) if self.steps.len() > self.straight => {
                        match self.steps.pop() {
                            Some(Step::Text(text)) => Text::Some(text),
                            _ => Text::None,
                        }
                    }
                    _ => Text::None,
                };
                self.steps.push(Step::Print {
                    prefix,
                    source,
                    suffix: Text::None,
                });
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
                let source = source(path)?;
                if let Source::Local(name @ (LocalName::First | LocalName::Last)) = source {
                    self.tests_position = true;
                    if let Some((first, last)) = self.known {
                        // Decided for this list: the branch is laid out in
                        // place.
                        let truth = if name == LocalName::First {
                            first
                        } else {
                            last
                        };
                        let chosen = if truth == *positive {
                            template
                        } else {
                            inverse
                        };
                        if let Some(plan) = chosen {
                            self.program(plan, level + 1)?;
                        }
                        return Some(());
                    }
                }
                let test = self.steps.len();
                self.steps.push(Step::Jump(0));
                self.straight = self.steps.len();
                if let Some(body) = template {
                    self.program(body, level + 1)?;
                }
                let mut skip = self.steps.len() - test - 1;
                if let Some(otherwise) = inverse {
                    let jump = self.steps.len();
                    self.steps.push(Step::Jump(0));
                    skip += 1;
                    self.straight = self.steps.len();
                    self.program(otherwise, level + 1)?;
                    self.steps[jump] = Step::Jump(self.steps.len() - jump - 1);
                }
                self.steps[test] = Step::Test {
                    positive: *positive,
                    source,
                    skip,
                };
                self.straight = self.steps.len();
            }
            _ => return None,
        }
        Some(())
    }

    /// Literal text: joined to the step before when that step is not in a
    /// branch (the text of a step, or what follows a print).
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let joinable = self.steps.len() > self.straight;
        match self.steps.last_mut() {
            Some(Step::Text(before)) if joinable => before.push_str(text),
            Some(Step::Print { suffix, .. }) if joinable => match suffix {
                Text::Some(before) => before.push_str(text),
                Text::None => *suffix = Text::Some(text.to_owned()),
            },
            _ => self.steps.push(Step::Text(text.to_owned())),
        }
    }
}

/// The hint slots of a body's fields: one per name, in the order first
/// met, the first [`SLOTS`] of them.
#[derive(Default)]
struct Slots {
    names: Vec<Box<str>>,
}

impl Slots {
    /// The steps, their texts made [`Lit`]s and their fields given slots:
    /// [`Steps::Fields`] if they only print fields, else [`Op`]s (where a
    /// print of a field is [`Op::Field`]).
    fn ops(&mut self, steps: Vec<Step>) -> Steps {
        if let Some(fields) = self.fields(&steps) {
            return fields;
        }
        let ops = steps
            .into_iter()
            .map(|step| match step {
                Step::Text(text) => Op::Text(lit(Text::Some(text))),
                Step::Print {
                    prefix,
                    source: Source::Field(field),
                    suffix,
                } => Op::Field {
                    prefix: lit(prefix),
                    field: self.slotted(field),
                    suffix: lit(suffix),
                },
                Step::Print {
                    prefix,
                    source,
                    suffix,
                } => Op::Print {
                    prefix: lit(prefix),
                    source: self.source(source),
                    suffix: lit(suffix),
                },
                Step::Test {
                    positive,
                    source,
                    skip,
                } => Op::Test {
                    positive,
                    source: self.source(source),
                    skip,
                },
                Step::Jump(skip) => Op::Jump(skip),
            })
            .collect();
        Steps::Ops(ops)
    }

    /// [`Steps::Fields`] for steps that only print texts and fields.
    fn fields(&mut self, steps: &[Step]) -> Option<Steps> {
        let mut lead = String::new();
        let mut fields: Vec<(Field, String)> = Vec::new();
        for step in steps {
            let (prefix, field, suffix) = match step {
                Step::Text(text) => (text.as_str(), None, ""),
                Step::Print {
                    prefix,
                    source: Source::Field(field),
                    suffix,
                } => (text(prefix), Some(field), text(suffix)),
                _ => return None,
            };
            match fields.last_mut() {
                Some((_, before)) => before.push_str(prefix),
                None => lead.push_str(prefix),
            }
            if let Some(field) = field {
                fields.push((self.slotted(field.clone()), suffix.to_owned()));
            }
        }
        Some(Steps::Fields {
            lead: lit(Text::Some(lead)),
            fields: fields
                .into_iter()
                .map(|(field, suffix)| (field, lit(Text::Some(suffix))))
                .collect(),
        })
    }

    fn source(&mut self, source: Source) -> Source {
        match source {
            Source::Field(field) => Source::Field(self.slotted(field)),
            other => other,
        }
    }

    fn slotted(&mut self, field: Field) -> Field {
        let at = match self.names.iter().position(|n| *n == field.name) {
            Some(at) => at,
            None => {
                self.names.push(field.name.clone());
                self.names.len() - 1
            }
        };
        Field {
            slot: if at < SLOTS { at } else { NO_SLOT },
            ..field
        }
    }
}

fn text(text: &Text) -> &str {
    match text {
        Text::None => "",
        Text::Some(text) => text,
    }
}

fn lit(text: Text) -> Lit {
    match text {
        Text::None => Lit::None,
        Text::Some(text) => match text.as_bytes() {
            [] => Lit::None,
            [c] if c.is_ascii() => Lit::Char(*c),
            _ => Lit::Text(text.into_boxed_str()),
        },
    }
}

fn source(path: &PathRef) -> Option<Source> {
    match path {
        PathRef::Relative {
            up: 0,
            root: false,
            segs,
        } => match segs.as_slice() {
            [] => None,
            [name] => Some(Source::Field(Field {
                name: name.as_str().into(),
                slot: NO_SLOT,
            })),
            _ => Some(Source::Path(segs.clone().into_boxed_slice())),
        },
        PathRef::Local { level: 0, name } => Some(Source::Local(*name)),
        _ => None,
    }
}

impl Flat {
    /// Renders the items of an array from `from` on, as long as they are
    /// objects; returns where it stopped (an item that is not an object,
    /// which the general renderer takes, or the end).
    pub(super) fn run_array(&self, items: &[Value], from: usize, out: &mut String) -> usize {
        if let Some(rotated) = &self.rotated {
            return rotated.run_array(items, from, out);
        }
        let len = items.len();
        let mut hints = Hints::default();
        for (index, item) in items.iter().enumerate().skip(from) {
            let Value::Object(fields) = item else {
                return index;
            };
            let at = Item {
                index,
                len,
                key: None,
            };
            let Some(ops) = self.ops(index, len) else {
                return len;
            };
            run(ops, item, fields, &at, &mut hints, out);
        }
        len
    }

    /// The steps for the item at `index` of `len`.
    #[inline]
    fn ops(&self, index: usize, len: usize) -> Option<&Steps> {
        match self.variants.as_slice() {
            [ops] => Some(ops),
            variants => variants.get(variant(index, len)),
        }
    }

    /// Renders the body for the object `item` (whose fields are `fields`).
    pub(super) fn run(
        &self,
        item: &Value,
        fields: &Map<String, Value>,
        at: Item<'_>,
        out: &mut String,
    ) {
        if let Some(ops) = self.ops(at.index, at.len) {
            run(ops, item, fields, &at, &mut Hints::default(), out);
        }
    }
}

impl Rotated {
    /// [`Flat::run_array`] with the rotated steps.
    fn run_array(&self, items: &[Value], from: usize, out: &mut String) -> usize {
        let len = items.len();
        let (Some(Value::Object(first)), Some(middle)) = (items.get(from), self.variants.first())
        else {
            return from;
        };
        let mut fields = first;
        // With four step lists, the first is for items neither first nor
        // last.
        let positioned = self.variants.len() > 1;
        push(&self.lead, out);
        let mut hints = Hints::default();
        let mut index = from;
        loop {
            let (steps, trail, trail_lead) = if positioned && (index == 0 || index + 1 == len) {
                match self.variants.get(variant(index, len)) {
                    Some(steps) => steps,
                    None => return len,
                }
            } else {
                middle
            };
            match steps {
                Steps::Fields {
                    lead,
                    fields: printed,
                } => print_fields(lead, printed, fields, &mut hints, out),
                Steps::Ops(ops) => {
                    let at = Item {
                        index,
                        len,
                        key: None,
                    };
                    run_ops(ops, &items[index], fields, &at, &mut hints, out);
                }
            }
            index += 1;
            // The next item's leading text goes with this one's trailing
            // text, unless the general renderer takes the next item.
            match items.get(index) {
                Some(Value::Object(next)) => {
                    push(trail_lead, out);
                    fields = next;
                }
                _ => {
                    push(trail, out);
                    return index;
                }
            }
        }
    }
}

/// [`Steps::Fields`] for the object whose fields are `fields`.
#[inline(always)]
fn print_fields(
    lead: &Lit,
    printed: &[(Field, Lit)],
    fields: &Map<String, Value>,
    hints: &mut Hints,
    out: &mut String,
) {
    push(lead, out);
    for (field, suffix) in printed {
        if let Some(value) = hinted(fields, field, hints) {
            print(value, out);
        }
        push(suffix, out);
    }
}

/// Renders the steps `steps` for the object `item` (whose fields are
/// `fields`).
#[inline(always)]
fn run(
    steps: &Steps,
    item: &Value,
    fields: &Map<String, Value>,
    at: &Item<'_>,
    hints: &mut Hints,
    out: &mut String,
) {
    match steps {
        Steps::Fields {
            lead,
            fields: printed,
        } => print_fields(lead, printed, fields, hints, out),
        Steps::Ops(ops) => run_ops(ops, item, fields, at, hints, out),
    }
}

/// Renders the steps `ops` for the object `item` (whose fields are
/// `fields`).
#[inline(always)]
fn run_ops(
    ops: &[Op],
    item: &Value,
    fields: &Map<String, Value>,
    at: &Item<'_>,
    hints: &mut Hints,
    out: &mut String,
) {
    let mut pc = 0;
    while let Some(op) = ops.get(pc) {
        pc += 1;
        match op {
            Op::Field {
                prefix,
                field,
                suffix,
            } => {
                push(prefix, out);
                if let Some(value) = hinted(fields, field, hints) {
                    print(value, out);
                }
                push(suffix, out);
            }
            Op::Text(lit) => push(lit, out),
            Op::Print {
                prefix,
                source,
                suffix,
            } => {
                push(prefix, out);
                match look(source, item, fields, hints) {
                    Look::Found(value) => print(value, out),
                    Look::Missing => {}
                    Look::Local(name) => print_local(name, at, out),
                    Look::Derived(segs) => {
                        if let Some(value) = walk(item, segs) {
                            write_value(out, value.value());
                        }
                    }
                }
                push(suffix, out);
            }
            Op::Test {
                positive,
                source,
                skip,
            } => {
                let truth = match look(source, item, fields, hints) {
                    Look::Found(value) => truthy(value, false),
                    Look::Missing => false,
                    Look::Local(name) => local_truth(name, at),
                    Look::Derived(segs) => {
                        walk(item, segs).is_some_and(|v| truthy(v.value(), false))
                    }
                };
                if truth != *positive {
                    pc += skip;
                }
            }
            Op::Jump(skip) => pc += skip,
        }
    }
}

/// Prints a value found in the data, as [`write_value`] does (strings and
/// small integers without a call).
#[inline(always)]
fn print(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => out.push_str(s),
        Value::Number(n) if let Some(u) = n.as_u64() => write_u64(out, u),
        value => write_value(out, value),
    }
}

#[inline]
fn push(lit: &Lit, out: &mut String) {
    match lit {
        Lit::None => {}
        Lit::Char(c) => out.push(char::from(*c)),
        Lit::Text(text) => out.push_str(text),
    }
}

/// The field `field` of an object (as [`field`] finds it), trying first
/// the position where it was in the last item; keys are unique, so a key
/// found there is the one a search finds.
#[inline(always)]
fn hinted<'v>(
    fields: &'v Map<String, Value>,
    field: &Field,
    hints: &mut Hints,
) -> Option<&'v Value> {
    let Some(hint) = hints.get_mut(field.slot) else {
        return self::field(fields, &field.name);
    };
    if let Some((key, value)) = fields.iter().nth(usize::from(*hint))
        && key_eq(key, &field.name)
    {
        return Some(value);
    }
    search(fields, &field.name, hint)
}

/// [`hinted`] when the hint missed: in a small object, a search that
/// records where the field was found; in a larger one, [`field`]'s.
#[inline(never)]
fn search<'v>(fields: &'v Map<String, Value>, name: &str, hint: &mut u8) -> Option<&'v Value> {
    if fields.len() > SEARCHED {
        return field(fields, name);
    }
    let (at, (_, value)) = fields
        .iter()
        .enumerate()
        .find(|(_, (key, _))| key_eq(key, name))?;
    // `at` is below `SEARCHED`.
    *hint = at as u8;
    Some(value)
}

/// Objects up to this size are searched for a field that missed its
/// hint, the position recorded; larger ones are looked up by hash.
const SEARCHED: usize = 16;

#[inline]
fn look<'v>(
    source: &'v Source,
    item: &'v Value,
    fields: &'v Map<String, Value>,
    hints: &mut Hints,
) -> Look<'v> {
    match source {
        Source::Field(field) => match hinted(fields, field, hints) {
            Some(value) => Look::Found(value),
            None => Look::Missing,
        },
        Source::Path(segs) => lookup(item, segs),
        Source::Local(name) => Look::Local(*name),
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
#[inline(never)]
fn print_local(name: LocalName, at: &Item<'_>, out: &mut String) {
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
#[inline(never)]
fn local_truth(name: LocalName, at: &Item<'_>) -> bool {
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
