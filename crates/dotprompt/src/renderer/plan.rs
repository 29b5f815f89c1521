//! Turning a parsed template into a [`Plan`]: helpers bound, partials
//! resolved (recursively), paths pre-parsed. Unsupported constructs are
//! refused with a [`Fault`] that says what and where they are.

use std::collections::HashMap;
use std::sync::Arc;

use handlebars::template::{
    BlockParam, DecoratorTemplate, HelperTemplate, Parameter, Template, TemplateElement,
};
use handlebars::{Path, PathSeg};
use serde_json::Value;

use super::fast::{Flat, flatten};
use super::{Fault, Site};
use crate::helpers::{DATA_HELPER, Engine, HelperFn, MarkerHelper};
use crate::messages::MARKER_START;

/// Registered partials nested deeper than this are refused (each level is
/// planned into the includer's plan).
const MAX_PARTIAL_DEPTH: usize = 16;

/// A template ready for the renderer.
pub(crate) struct Plan {
    pub(super) nodes: Vec<Node>,
    /// The inline partials the program declares (found by name when
    /// included, so they may include themselves): the renderer keeps them,
    /// and where the program renders (their `../` goes on there).
    /// (Behind a pointer: most plans have none, and plans sit in nodes.)
    pub(super) inline: Option<Arc<HashMap<String, Plan>>>,
}

/// One step of a plan.
pub(super) enum Node {
    /// Literal text.
    Text(String),
    /// Literal text with Dotprompt markers (`<<<dotprompt:...>>>`) at these
    /// byte offsets: markers written in a template count, markers in
    /// inserted values do not.
    MarkedText(String, Vec<usize>),
    /// `{{path}}`: a value, printed.
    Value(PathRef),
    /// `{{helper args}}`: a helper's result, printed.
    Print(Call),
    /// `{{#if}}`, `{{#unless}}`, `{{#each}}`, `{{#with}}`, `{{#ifEquals}}`,
    /// `{{#unlessEquals}}`.
    Block {
        kind: BlockKind,
        params: Vec<Arg>,
        hash: Hash,
        /// How many block parameters (`as |item index|`) the body declares.
        block_params: usize,
        template: Option<Plan>,
        inverse: Option<Plan>,
        /// For `each`, its body's flat form when it only prints (see
        /// [`super::fast`]).
        flat: Option<Box<Flat>>,
    },
    /// `{{> name context key=value}}` (boxed: partials are rare, and every
    /// node is as large as the largest).
    Partial(Box<PartialNode>),
    /// A partial that does not exist: rendering it fails (as Handlebars.js
    /// fails only when it gets there).
    Fail(String, Site),
    /// Where programs nest too deep to plan further: rendering it fails.
    TooDeep,
    /// `{{> @partial-block}}`: the block of the partial being rendered.
    PartialBlock {
        /// As for [`PartialNode`].
        indent: Option<String>,
        /// Where it is (it fails outside a partial block).
        site: Site,
    },
}

/// `{{> name context key=value}}`.
pub(super) struct PartialNode {
    pub(super) target: PartialTarget,
    pub(super) context: Option<Arg>,
    pub(super) hash: Hash,
    /// A standalone partial's indentation, put before every line it
    /// prints.
    pub(super) indent: Option<String>,
    /// `{{#> name}}block{{/name}}`: what `{{> @partial-block}}` renders
    /// inside the partial.
    pub(super) block: Option<Arc<Plan>>,
    /// Where the inclusion is.
    pub(super) site: Site,
}

/// What a `{{> name}}` renders.
pub(super) enum PartialTarget {
    /// A registered partial.
    Registered(Arc<Plan>),
    /// The block of `{{#> name}}` standing in for a partial that does not
    /// exist.
    Fallback(Arc<Plan>),
    /// The inline partial `name` declared `level` inline-declaring programs
    /// out (0: the innermost), found when rendering (it may include itself).
    Inline { level: usize, name: String },
}

/// The built-in block helpers.
#[derive(Clone, Copy)]
pub(super) enum BlockKind {
    /// `if` (`positive`) or `unless`.
    If { positive: bool },
    /// `each`.
    Each,
    /// `with`.
    With,
    /// `ifEquals` (`when_equal`) or `unlessEquals`.
    Equals { when_equal: bool },
}

/// A helper call.
pub(super) struct Call {
    pub(super) helper: Helper,
    pub(super) params: Vec<Arg>,
    pub(super) hash: Hash,
    /// Where the call is, for its errors.
    pub(super) site: Site,
}

/// A helper that returns a value.
pub(super) enum Helper {
    /// `json`.
    Json,
    /// `role`, `history`, `section`, `media`.
    Marker(MarkerHelper),
    /// `lookup`.
    Lookup,
    /// `log`: prints nothing (Handlebars.js logs to the console).
    Log,
    /// An `@`-data path (the template rewrite's hidden helper).
    Data(Vec<String>),
    /// A user helper, with its name.
    User(Arc<str>, HelperFn),
}

/// Named (`key=value`) arguments.
pub(super) type Hash = Vec<(String, Arg)>;

/// A helper argument.
pub(super) enum Arg {
    /// A literal.
    Literal(Value),
    /// A path.
    Path(PathRef),
    /// A subexpression.
    Call(Box<Call>),
}

/// A pre-parsed path, resolved as Handlebars.js does.
pub(super) enum PathRef {
    /// `item.name` under `as |item index|`: parameter `index` of the block
    /// `level` block-parameter scopes out, then `segs`.
    BlockParam {
        level: usize,
        index: usize,
        segs: Vec<String>,
    },
    /// `@index`, `@../first` ...: a block-local variable `level` blocks up.
    Local { level: usize, name: LocalName },
    /// `a.b`, `../a`, `@root.a`, `this`: named segments from the context
    /// `up` blocks up, or from the root.
    Relative {
        up: usize,
        root: bool,
        segs: Vec<String>,
    },
}

/// The block-local variables (`@index`, `@first`, `@last`, `@key`), told
/// apart when the plan is made rather than by name on every render.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum LocalName {
    Index,
    First,
    Last,
    Key,
    /// Any other name: always missing.
    Other,
}

impl LocalName {
    fn parse(name: &str) -> Self {
        match name {
            "index" => Self::Index,
            "first" => Self::First,
            "last" => Self::Last,
            "key" => Self::Key,
            _ => Self::Other,
        }
    }
}

/// Plans `template` with the helpers and partials of `engine`; a
/// [`Fault`] if it uses something the renderer does not do.
pub(crate) fn plan(template: &Template, engine: &Engine) -> Result<Plan, Fault> {
    Planner {
        engine,
        depth: 0,
        partials: HashMap::new(),
        block_params: Vec::new(),
        level: 0,
        inline: Vec::new(),
        site: Site::default(),
    }
    .template(template)
}

struct Planner<'e> {
    engine: &'e Engine,
    depth: usize,
    /// Partials planned so far (each partial is planned once).
    partials: HashMap<String, Arc<Plan>>,
    /// The block parameter names in scope, innermost block last.
    block_params: Vec<Vec<String>>,
    /// Programs being planned inside one another.
    level: usize,
    /// The names of the inline partials (`{{#*inline "name"}}`) in scope,
    /// innermost program last. They are seen by the partials it includes,
    /// too.
    inline: Vec<Vec<String>>,
    /// Where the element being planned is.
    site: Site,
}

impl Planner<'_> {
    /// A refusal of `construct` where the element being planned is.
    fn unsupported(&self, construct: impl Into<String>) -> Fault {
        Fault::Unsupported {
            construct: construct.into(),
            site: self.site.clone(),
        }
    }

    fn template(&mut self, template: &Template) -> Result<Plan, Fault> {
        // Partials multiply the nesting of blocks: past the renderer's own
        // bound, stop planning (and fail there if it ever renders).
        if self.level >= super::eval::MAX_RENDER_LEVELS {
            return Ok(Plan {
                nodes: vec![Node::TooDeep],
                inline: None,
            });
        }
        self.level += 1;
        let pos = self.site.pos;
        let planned = self.program(template);
        self.site.pos = pos;
        self.level -= 1;
        planned
    }

    fn program(&mut self, template: &Template) -> Result<Plan, Fault> {
        // Inline partials belong to the whole program, wherever they are
        // declared in it (Handlebars.js runs the declarations first).
        let mut inline = Vec::new();
        for (i, element) in template.elements.iter().enumerate() {
            if let Some(declared) = inline_partial(element) {
                self.site.pos = position(template, i);
                inline.push(declared.map_err(|what| self.unsupported(what))?);
            }
        }
        if inline.is_empty() {
            return self.nodes(template);
        }
        // All the names first: the partials may include each other (and
        // themselves).
        self.inline
            .push(inline.iter().map(|(name, _)| (*name).to_owned()).collect());
        let planned = self.inline_partials(&inline).and_then(|partials| {
            let mut plan = self.nodes(template)?;
            plan.inline = Some(Arc::new(partials));
            Ok(plan)
        });
        self.inline.pop();
        planned
    }

    fn inline_partials(
        &mut self,
        inline: &[(&str, &Template)],
    ) -> Result<HashMap<String, Plan>, Fault> {
        let mut partials = HashMap::with_capacity(inline.len());
        for (name, body) in inline {
            let plan = self.template(body)?;
            // A later declaration of the same name wins, as in Handlebars.js.
            partials.insert((*name).to_owned(), plan);
        }
        Ok(partials)
    }

    fn nodes(&mut self, template: &Template) -> Result<Plan, Fault> {
        let mut nodes = Vec::with_capacity(template.elements.len());
        for (i, element) in template.elements.iter().enumerate() {
            self.site.pos = position(template, i);
            let node = match element {
                TemplateElement::PartialExpression(dt) | TemplateElement::PartialBlock(dt) => {
                    Some(self.partial(dt)?)
                }
                TemplateElement::DecoratorBlock(_) if inline_partial(element).is_some() => None,
                other => self.element(other)?,
            };
            if let Some(node) = node {
                nodes.push(node);
            }
        }
        Ok(Plan {
            nodes,
            inline: None,
        })
    }

    fn optional(&mut self, template: Option<&Template>) -> Result<Option<Plan>, Fault> {
        template.map(|t| self.template(t)).transpose()
    }

    fn element(&mut self, element: &TemplateElement) -> Result<Option<Node>, Fault> {
        Ok(Some(match element {
            TemplateElement::RawString(text) => {
                if text.is_empty() {
                    return Ok(None);
                }
                text_node(text)
            }
            TemplateElement::Comment(_) => return Ok(None),
            TemplateElement::Expression(ht) | TemplateElement::HtmlExpression(ht) => {
                self.expression(ht)?
            }
            TemplateElement::HelperBlock(ht) => self.block(ht)?,
            TemplateElement::DecoratorExpression(dt) | TemplateElement::DecoratorBlock(dt) => {
                let name = helper_name(&dt.name).unwrap_or("(...)");
                return Err(self.unsupported(format!(
                    "the decorator `{{{{*{name}}}}}` (only `{{{{#*inline \"name\"}}}}` is supported)"
                )));
            }
            _ => return Err(self.unsupported("this kind of template element")),
        }))
    }

    /// `{{name}}` prints a value unless a helper has that name; anything
    /// with arguments is a helper call.
    fn expression(&mut self, ht: &HelperTemplate) -> Result<Node, Fault> {
        if ht.block_param.is_some() {
            return Err(self.unsupported("block parameters (`as |x|`) outside a block"));
        }
        if ht.params.is_empty() && ht.hash.is_empty() {
            let Parameter::Path(path) = &ht.name else {
                return Err(self.unsupported("an expression that is not a path or a helper call"));
            };
            let raw = match path {
                Path::Relative((_, raw)) | Path::Local((_, _, raw)) => raw,
            };
            // A block parameter wins over a helper of the same name.
            if let Some(param) = self.block_param(path) {
                return Ok(Node::Value(param));
            }
            if !self.is_helper(raw) {
                return Ok(Node::Value(self.path_ref(path)?));
            }
        }
        self.call(ht).map(Node::Print)
    }

    /// `path` as a block parameter in scope: its first name, unless the
    /// path is scoped (`this.`, `./`, `../`, `@`).
    fn block_param(&self, path: &Path) -> Option<PathRef> {
        let Path::Relative((segs, raw)) = path else {
            return None;
        };
        let scoped = ["this.", "this/", "./", "../", "@"]
            .iter()
            .any(|p| raw.starts_with(p))
            || raw == "this";
        let Some(PathSeg::Named(first)) = segs.first() else {
            return None;
        };
        if scoped {
            return None;
        }
        let (level, index) =
            self.block_params
                .iter()
                .rev()
                .enumerate()
                .find_map(|(level, names)| {
                    names
                        .iter()
                        .position(|n| n == first)
                        .map(|index| (level, index))
                })?;
        let mut rest = Vec::with_capacity(segs.len() - 1);
        for seg in &segs[1..] {
            match seg {
                PathSeg::Named(name) => rest.push(name.clone()),
                // Anything else after a block parameter: read as an ordinary path.
                _ => return None,
            }
        }
        Some(PathRef::BlockParam {
            level,
            index,
            segs: rest,
        })
    }

    fn is_helper(&self, name: &str) -> bool {
        name == DATA_HELPER || self.engine.has_helper(name)
    }

    fn call(&mut self, ht: &HelperTemplate) -> Result<Call, Fault> {
        let name = self.helper_name(&ht.name)?;
        let (params, hash) = self.arguments(&ht.params, &ht.hash)?;
        let site = self.site.clone();
        let helper = if let Some(f) = self.engine.user_helper(name) {
            Helper::User(Arc::from(name), Arc::clone(f))
        } else {
            match name {
                DATA_HELPER => {
                    let segments = match params.as_slice() {
                        [Arg::Literal(Value::Array(segments))] => segments
                            .iter()
                            .map(|s| s.as_str().map(str::to_owned))
                            .collect::<Option<Vec<_>>>(),
                        _ => None,
                    };
                    let segments =
                        segments.ok_or_else(|| self.unsupported("a malformed `@` path"))?;
                    return Ok(Call {
                        helper: Helper::Data(segments),
                        params: Vec::new(),
                        hash,
                        site,
                    });
                }
                "json" => Helper::Json,
                "role" => Helper::Marker(MarkerHelper::Role),
                "history" => Helper::Marker(MarkerHelper::History),
                "section" => Helper::Marker(MarkerHelper::Section),
                "media" => Helper::Marker(MarkerHelper::Media),
                "lookup" if params.len() >= 2 => Helper::Lookup,
                "lookup" => {
                    return Err(self.unsupported(
                        "`lookup` with fewer than two arguments (it takes an object and a key)",
                    ));
                }
                "log" => Helper::Log,
                "if" | "unless" | "each" | "with" | "ifEquals" | "unlessEquals" => {
                    return Err(self.unsupported(format!(
                        "the block helper `{name}` used without a block (write `{{{{#{name} ...}}}}...{{{{/{name}}}}}`)"
                    )));
                }
                _ if !self.engine.has_helper(name) => {
                    return Err(Fault::UnknownHelper {
                        name: name.to_owned(),
                        site,
                    });
                }
                _ => return Err(self.unsupported(format!("the helper `{name}`"))),
            }
        };
        Ok(Call {
            helper,
            params,
            hash,
            site,
        })
    }

    fn block(&mut self, ht: &HelperTemplate) -> Result<Node, Fault> {
        let name = self.helper_name(&ht.name)?;
        if self.engine.user_helper(name).is_some() {
            return Err(self.unsupported(format!(
                "the helper `{name}` as a block (`{{{{#{name}}}}}`): helpers defined with `define_helper` return values"
            )));
        }
        if !self.engine.has_helper(name) {
            return Err(Fault::UnknownHelper {
                name: name.to_owned(),
                site: self.site.clone(),
            });
        }
        let kind = match name {
            "if" => BlockKind::If { positive: true },
            "unless" => BlockKind::If { positive: false },
            "each" => BlockKind::Each,
            "with" => BlockKind::With,
            "ifEquals" => BlockKind::Equals { when_equal: true },
            "unlessEquals" => BlockKind::Equals { when_equal: false },
            _ => {
                return Err(self.unsupported(format!(
                    "`{{{{#{name}}}}}` as a block (only `if`, `unless`, `each`, `with`, `ifEquals` and `unlessEquals` take blocks)"
                )));
            }
        };
        let (params, hash) = self.arguments(&ht.params, &ht.hash)?;
        // `if`, `unless`, `each` and `with` fail without their argument, as
        // in Handlebars.js.
        if params.is_empty() && !matches!(kind, BlockKind::Equals { .. }) {
            return Err(self.unsupported(format!("`{{{{#{name}}}}}` without an argument")));
        }
        // `each` gives its body the item and its index (or key), `with` its
        // value, as block parameters.
        let names = match (&ht.block_param, kind) {
            (None, _) => Vec::new(),
            (Some(BlockParam::Single(Parameter::Name(a))), BlockKind::Each | BlockKind::With) => {
                vec![a.clone()]
            }
            (Some(BlockParam::Pair((Parameter::Name(a), Parameter::Name(b)))), BlockKind::Each) => {
                vec![a.clone(), b.clone()]
            }
            _ => {
                return Err(self.unsupported(format!(
                    "these block parameters on `{{{{#{name}}}}}` (`each` takes `as |item index|`, `with` `as |value|`)"
                )));
            }
        };
        let block_params = names.len();
        let template = if names.is_empty() {
            self.optional(ht.template.as_ref())?
        } else {
            self.block_params.push(names);
            let planned = self.optional(ht.template.as_ref());
            self.block_params.pop();
            planned?
        };
        let flat = match (kind, &template) {
            (BlockKind::Each, Some(body)) if block_params == 0 => flatten(body).map(Box::new),
            _ => None,
        };
        Ok(Node::Block {
            kind,
            params,
            hash,
            block_params,
            template,
            inverse: self.optional(ht.inverse.as_ref())?,
            flat,
        })
    }

    /// `{{> name}}`, `{{#> name}}block{{/name}}` and `{{> @partial-block}}`.
    fn partial(&mut self, dt: &DecoratorTemplate) -> Result<Node, Fault> {
        // Only standalone partials keep an indentation (see
        // `template::keep_standalone_indents`).
        let indent = dt.indent.clone().filter(|indent| !indent.is_empty());
        let site = self.site.clone();
        let name = match &dt.name {
            Parameter::Name(name) => name.as_str(),
            Parameter::Path(Path::Relative((_, raw)) | Path::Local((_, _, raw))) => raw.as_str(),
            _ => {
                return Err(self.unsupported(
                    "a dynamic partial name (`{{> (expression)}}`); name the partial",
                ));
            }
        };
        if name == "@partial-block" {
            if !dt.params.is_empty() || !dt.hash.is_empty() || dt.template.is_some() {
                return Err(self.unsupported("`{{> @partial-block}}` with arguments or a block"));
            }
            return Ok(Node::PartialBlock { indent, site });
        }
        let (mut params, hash) = self.arguments(&dt.params, &dt.hash)?;
        if params.len() > 1 {
            return Err(self.unsupported(format!(
                "the partial `{name}` with {} positional arguments (it takes one context)",
                params.len()
            )));
        }
        // The block is the caller's: planned in its scope.
        let mut block = self.optional(dt.template.as_ref())?.map(Arc::new);
        let target = match (self.find_partial(name)?, block.take()) {
            (Some(target), taken) => {
                block = taken;
                target
            }
            // A missing partial renders its block instead, in its place.
            (None, Some(fallback)) => PartialTarget::Fallback(fallback),
            (None, None) => return Ok(Node::Fail(name.to_owned(), site)),
        };
        Ok(Node::Partial(Box::new(PartialNode {
            target,
            context: params.pop(),
            hash,
            indent,
            block,
            site,
        })))
    }

    /// The partial `name`: an inline partial in scope, else a registered
    /// one (`None` if there is neither).
    fn find_partial(&mut self, name: &str) -> Result<Option<PartialTarget>, Fault> {
        let level = self
            .inline
            .iter()
            .rev()
            .position(|scope| scope.iter().any(|n| n == name));
        if let Some(level) = level {
            return Ok(Some(PartialTarget::Inline {
                level,
                name: name.to_owned(),
            }));
        }
        // A registered partial's plan depends on the inline partials it can
        // see, so it is reused only when there are none.
        let cacheable = self.inline.is_empty();
        if cacheable && let Some(plan) = self.partials.get(name) {
            return Ok(Some(PartialTarget::Registered(Arc::clone(plan))));
        }
        let Some(template) = self.engine.partial(name) else {
            return Ok(None);
        };
        if self.depth >= MAX_PARTIAL_DEPTH {
            return Err(self.unsupported(format!(
                "partials included more than {MAX_PARTIAL_DEPTH} deep (at `{{{{> {name}}}}}`)"
            )));
        }
        // A partial sees none of the includer's block parameters; its
        // errors are located in it.
        self.depth += 1;
        let outer_params = std::mem::take(&mut self.block_params);
        let outer_site = std::mem::replace(
            &mut self.site,
            Site {
                partial: Some(Arc::from(name)),
                pos: None,
            },
        );
        let planned = self.template(template);
        self.site = outer_site;
        self.block_params = outer_params;
        self.depth -= 1;
        let plan = Arc::new(planned?);
        if cacheable {
            self.partials.insert(name.to_owned(), Arc::clone(&plan));
        }
        Ok(Some(PartialTarget::Registered(plan)))
    }

    fn arguments(
        &mut self,
        params: &[Parameter],
        hash: &HashMap<String, Parameter>,
    ) -> Result<(Vec<Arg>, Hash), Fault> {
        let params = params
            .iter()
            .map(|p| self.argument(p))
            .collect::<Result<Vec<_>, _>>()?;
        let hash = hash
            .iter()
            .map(|(k, p)| Ok((k.clone(), self.argument(p)?)))
            .collect::<Result<Vec<_>, Fault>>()?;
        Ok((params, hash))
    }

    fn argument(&mut self, param: &Parameter) -> Result<Arg, Fault> {
        match param {
            Parameter::Literal(value) => Ok(Arg::Literal(value.clone())),
            Parameter::Path(path) => match self.block_param(path) {
                Some(param) => Ok(Arg::Path(param)),
                None => self.path_ref(path).map(Arg::Path),
            },
            Parameter::Subexpression(sub) => match sub.element.as_ref() {
                TemplateElement::Expression(ht) if !ht.block => {
                    self.call(ht).map(|c| Arg::Call(Box::new(c)))
                }
                _ => Err(self.unsupported("this kind of subexpression")),
            },
            _ => Err(self.unsupported("this kind of argument")),
        }
    }

    fn helper_name<'t>(&self, name: &'t Parameter) -> Result<&'t str, Fault> {
        helper_name(name).ok_or_else(|| self.unsupported("a helper name that is not a plain name"))
    }

    /// A path as handlebars-rust resolves it: leading `../` count, `@root`
    /// before any name, then every named segment (`this` is already
    /// dropped by the parser; other rules are ignored).
    fn path_ref(&self, path: &Path) -> Result<PathRef, Fault> {
        let raw = match path {
            Path::Local((level, name, _)) => {
                return Ok(PathRef::Local {
                    level: *level,
                    name: LocalName::parse(name),
                });
            }
            Path::Relative((_, raw)) => raw,
        };
        let unsupported = || self.unsupported(format!("the path `{raw}`"));
        let Path::Relative((segs, _)) = path else {
            return Err(unsupported());
        };
        let mut up = 0;
        let mut root = false;
        for seg in segs {
            match seg {
                PathSeg::Named(_) => break,
                PathSeg::Ruled(_) => match rule(seg) {
                    Some(Rule::Root) => {
                        root = true;
                        break;
                    }
                    Some(Rule::Up) => up += 1,
                    _ => break,
                },
                _ => return Err(unsupported()),
            }
        }
        let mut names = Vec::with_capacity(segs.len());
        for seg in segs {
            match seg {
                PathSeg::Named(name) => names.push(name.clone()),
                PathSeg::Ruled(_) if rule(seg).is_some() => {}
                _ => return Err(unsupported()),
            }
        }
        Ok(PathRef::Relative {
            up,
            root,
            segs: names,
        })
    }
}

/// The 1-based position of element `index` of `template`.
fn position(template: &Template, index: usize) -> Option<(usize, usize)> {
    template.mapping.get(index).map(|m| (m.0, m.1))
}

/// A text node, with the offsets of the Dotprompt markers it contains.
fn text_node(text: &str) -> Node {
    let markers: Vec<usize> = text.match_indices(MARKER_START).map(|(i, _)| i).collect();
    if markers.is_empty() {
        Node::Text(text.to_owned())
    } else {
        Node::MarkedText(text.to_owned(), markers)
    }
}

fn helper_name(name: &Parameter) -> Option<&str> {
    match name {
        Parameter::Name(name) => Some(name),
        Parameter::Path(Path::Relative((_, raw))) => Some(raw),
        _ => None,
    }
}

/// `{{#*inline "name"}}body{{/inline}}` as `(name, body)`; `None` for any
/// other element, `Some(Err)` (what is wrong) for an inline declaration the
/// renderer does not take.
fn inline_partial(element: &TemplateElement) -> Option<Result<(&str, &Template), String>> {
    let TemplateElement::DecoratorBlock(dt) = element else {
        return None;
    };
    if helper_name(&dt.name)? != "inline" {
        return None;
    }
    Some(match (dt.params.as_slice(), dt.template.as_ref()) {
        ([Parameter::Literal(Value::String(name))], Some(body)) if dt.hash.is_empty() => {
            Ok((name.as_str(), body))
        }
        _ => Err(
            "an inline partial not declared as `{{#*inline \"name\"}}...{{/inline}}`".to_owned(),
        ),
    })
}

/// The path rules handlebars keeps in paths.
#[derive(PartialEq, Eq)]
enum Rule {
    Root,
    Up,
    Local,
}

/// handlebars does not export its grammar's rules; they are told apart by
/// name. An unknown rule gives `None` (and no plan).
fn rule(seg: &PathSeg) -> Option<Rule> {
    match format!("{seg:?}").as_str() {
        "Ruled(path_root)" => Some(Rule::Root),
        "Ruled(path_up)" => Some(Rule::Up),
        "Ruled(path_local)" => Some(Rule::Local),
        _ => None,
    }
}
