//! The [`Dotprompt`] environment: registered helpers, partials, schemas and
//! tools, a cache of compiled templates, and rendering.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use handlebars::TemplateError;
use handlebars::template::Template;
use serde_json::Value;

use crate::error::{BoxError, Error, Location, Result};
use crate::helpers::{DataScope, Engine, HelperFn};
use crate::messages::to_messages_at;
use crate::parse::{self, parse_document};
use crate::partials;
use crate::picoschema;
use crate::renderer::{self, Fault, Plan};
use crate::resolver::{PartialResolver, SchemaResolver, ToolResolver};
use crate::template;
use crate::types::{
    DataArgument, JsonMap, ParsedPrompt, PromptMetadata, RenderedPrompt, ToolDefinition,
};

/// Compiled templates kept per environment; beyond this the cache starts over.
const CACHE_CAPACITY: usize = 512;

/// Options for [`Dotprompt::new`].
#[derive(Default)]
pub struct DotpromptOptions {
    /// Model used to pick `model_configs` when a prompt names none.
    pub default_model: Option<String>,
    /// Default `config` per model name, overridden by the prompt's own.
    pub model_configs: HashMap<String, JsonMap>,
    /// Helpers to register.
    pub helpers: HashMap<String, HelperFn>,
    /// Partials to register (name to template source).
    pub partials: HashMap<String, String>,
    /// Tool definitions by name.
    pub tools: HashMap<String, ToolDefinition>,
    /// Resolves tool names not in `tools`.
    pub tool_resolver: Option<ToolResolver>,
    /// JSON Schemas by name, for Picoschema type names.
    pub schemas: HashMap<String, Value>,
    /// Resolves schema names not in `schemas`.
    pub schema_resolver: Option<SchemaResolver>,
    /// Resolves partials that are not registered, when a template is compiled.
    pub partial_resolver: Option<PartialResolver>,
}

/// A plan (or why there is none) for the engine generation it was made in.
type PlanOf = (u64, Result<Arc<Plan>, Fault>);

/// A prompt template parsed and compiled once, shared by renders.
struct Compiled {
    prompt: ParsedPrompt,
    template: Template,
    body_line_offset: usize,
    /// The renderer's plan (or why there is none), for the engine
    /// generation it was made in.
    plan: Mutex<Option<PlanOf>>,
    /// Metadata resolved without options, for the environment generation
    /// it was resolved in.
    metadata: Mutex<Option<(u64, PromptMetadata)>>,
    /// Length of the last rendered text, to size the next one.
    last_len: AtomicUsize,
}

impl Compiled {
    fn location(&self) -> Location {
        Location::prompt(self.prompt.meta.name.as_deref())
    }

    /// The plan for the engine's current helpers and partials, made on
    /// first use and again whenever they change.
    fn plan(&self, engine: &Engine) -> Result<Arc<Plan>> {
        let mut slot = self.plan.lock().unwrap_or_else(PoisonError::into_inner);
        let plan = match &*slot {
            Some((generation, plan)) if *generation == engine.generation() => plan.clone(),
            _ => {
                let plan = renderer::plan(&self.template, engine).map(Arc::new);
                *slot = Some((engine.generation(), plan.clone()));
                plan
            }
        };
        plan.map_err(|fault| self.error(fault))
    }

    /// The error for a [`Fault`] of this template (or a partial it
    /// includes), located in its source.
    fn error(&self, fault: Fault) -> Error {
        fault_error(fault, self.location(), self.body_line_offset)
    }
}

struct Env {
    engine: RwLock<Engine>,
    default_model: Option<String>,
    model_configs: HashMap<String, JsonMap>,
    tools: RwLock<HashMap<String, ToolDefinition>>,
    tool_resolver: Option<ToolResolver>,
    schemas: RwLock<HashMap<String, Value>>,
    schema_resolver: Option<SchemaResolver>,
    partial_resolver: Option<PartialResolver>,
    cache: Mutex<HashMap<String, Arc<Compiled>>>,
    /// Number of templates compiled (cache misses), for diagnostics.
    compilations: AtomicUsize,
    /// Changes whenever a tool or schema is defined, so cached metadata can
    /// tell it is stale.
    definitions: AtomicU64,
}

/// A Dotprompt environment: parses, compiles and renders `.prompt` sources.
///
/// Cloning is cheap and shares the registered helpers, partials, schemas,
/// tools and the template cache.
#[derive(Clone)]
pub struct Dotprompt {
    env: Arc<Env>,
}

/// A compiled prompt, ready to render many times.
#[derive(Clone)]
pub struct PromptFunction {
    env: Arc<Env>,
    compiled: Arc<Compiled>,
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

impl Default for Dotprompt {
    fn default() -> Self {
        Self::with_env(DotpromptOptions::default())
    }
}

impl Dotprompt {
    /// Creates an environment. Fails if a partial in `options` does not parse
    /// or the partials include each other in a cycle.
    pub fn new(mut options: DotpromptOptions) -> Result<Self> {
        let partials = std::mem::take(&mut options.partials);
        let dotprompt = Self::with_env(options);
        for (name, source) in &partials {
            let partial = partials::compile_partial(name, source)?;
            // Register without the cycle check first, so partials may refer
            // to each other in any order; then check the whole set.
            write(&dotprompt.env.engine).register_partial_unchecked(name, partial);
        }
        {
            let mut engine = write(&dotprompt.env.engine);
            for name in partials.keys() {
                if let Some(partial) = engine.partial(name).cloned() {
                    engine.register_partial(name, partial)?;
                }
            }
        }
        Ok(dotprompt)
    }

    fn with_env(options: DotpromptOptions) -> Self {
        let mut engine = Engine::new();
        for (name, helper) in options.helpers {
            engine.register_user_helper(&name, helper);
        }
        Self {
            env: Arc::new(Env {
                engine: RwLock::new(engine),
                default_model: options.default_model,
                model_configs: options.model_configs,
                tools: RwLock::new(options.tools),
                tool_resolver: options.tool_resolver,
                schemas: RwLock::new(options.schemas),
                schema_resolver: options.schema_resolver,
                partial_resolver: options.partial_resolver,
                cache: Mutex::new(HashMap::new()),
                compilations: AtomicUsize::new(0),
                definitions: AtomicU64::new(0),
            }),
        }
    }

    /// Registers a helper: a function of the positional and hash arguments.
    pub fn define_helper<F>(&self, name: &str, helper: F) -> &Self
    where
        F: Fn(&[Value], &JsonMap) -> Result<Value, BoxError> + Send + Sync + 'static,
    {
        write(&self.env.engine).register_user_helper(name, Arc::new(helper));
        self
    }

    /// Registers (or replaces) a partial. Fails if it does not parse or
    /// would make partials include each other in a cycle.
    pub fn define_partial(&self, name: &str, source: &str) -> Result<&Self> {
        let partial = partials::compile_partial(name, source)?;
        write(&self.env.engine).register_partial(name, partial)?;
        Ok(self)
    }

    /// Registers a named JSON Schema for Picoschema type references.
    pub fn define_schema(&self, name: &str, schema: Value) -> &Self {
        write(&self.env.schemas).insert(name.to_owned(), schema);
        self.env.definitions.fetch_add(1, Ordering::Relaxed);
        self
    }

    /// Registers a tool definition under its name.
    pub fn define_tool(&self, tool: ToolDefinition) -> &Self {
        write(&self.env.tools).insert(tool.name.clone(), tool);
        self.env.definitions.fetch_add(1, Ordering::Relaxed);
        self
    }

    /// Parses a prompt source into metadata and template, without resolving
    /// anything.
    pub fn parse(&self, source: &str) -> Result<ParsedPrompt> {
        parse_document(source)
    }

    /// Parses a prompt source and its template without resolving partials,
    /// helpers, schemas or tools: reports malformed frontmatter, template
    /// syntax errors and what the renderer does not support, with lines
    /// counted from the start of `source`. (Helpers and partials that are
    /// not defined yet are not errors here: they may be by the time the
    /// prompt renders.)
    pub fn check(&self, source: &str) -> Result<ParsedPrompt> {
        let doc = parse::parse_with_offsets(source)?;
        let template =
            template::compile(&doc.prompt.template, None).map_err(|e| syntax_error(&e, &doc))?;
        if let Err(fault @ Fault::Unsupported { .. }) =
            renderer::plan(&template, &read(&self.env.engine))
        {
            let prompt = Location::prompt(doc.prompt.meta.name.as_deref());
            return Err(fault_error(fault, prompt, doc.body_line_offset));
        }
        Ok(doc.prompt)
    }

    /// Compiles a prompt into a reusable [`PromptFunction`], resolving the
    /// partials it uses. Compiled templates are cached by source, so
    /// compiling (or rendering) the same source again reuses them.
    pub async fn compile(&self, source: &str) -> Result<PromptFunction> {
        let compiled = self.env.compiled(source).await?;
        Ok(PromptFunction {
            env: Arc::clone(&self.env),
            compiled,
        })
    }

    /// Renders a prompt source with `data`; `options` override the
    /// frontmatter (see [`Dotprompt::render_metadata`]).
    pub async fn render(
        &self,
        source: &str,
        data: &DataArgument,
        options: Option<&PromptMetadata>,
    ) -> Result<RenderedPrompt> {
        self.compile(source).await?.render(data, options).await
    }

    /// Resolves a prompt's metadata without rendering its template: the
    /// default model's config, then the frontmatter, then `options` (fields
    /// replace, except `config`, merged key by key); tool names resolved to
    /// `toolDefs`; Picoschema turned into JSON Schema.
    pub async fn render_metadata(
        &self,
        source: &str,
        options: Option<&PromptMetadata>,
    ) -> Result<PromptMetadata> {
        let cached = self
            .env
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(source)
            .cloned();
        match cached {
            Some(compiled) => self.env.resolve_metadata(&compiled.prompt, options).await,
            None => {
                self.env
                    .resolve_metadata(&parse_document(source)?, options)
                    .await
            }
        }
    }

    #[cfg(test)]
    fn compilations(&self) -> usize {
        self.env.compilations.load(Ordering::Relaxed)
    }
}

impl PromptFunction {
    /// The parsed prompt this function renders.
    pub fn prompt(&self) -> &ParsedPrompt {
        &self.compiled.prompt
    }

    /// Renders the prompt with `data`. Template variables are
    /// `input.default` (from `options`, else the frontmatter) overlaid with
    /// `data.input`; `data.context` keys are `@`-variables, and
    /// `@metadata` holds `{prompt, docs, messages}`.
    pub async fn render(
        &self,
        data: &DataArgument,
        options: Option<&PromptMetadata>,
    ) -> Result<RenderedPrompt> {
        // The rendered prompt's metadata leaves `input` out; only its
        // defaults are used, as the template's variables.
        let (meta, defaults) = match options {
            None => self.env.prompt_metadata(&self.compiled).await?,
            Some(_) => {
                let mut meta = self
                    .env
                    .resolve_metadata(&self.compiled.prompt, options)
                    .await?;
                let defaults = meta.input.take().and_then(|input| input.default);
                (meta, defaults)
            }
        };
        self.env
            .render_compiled(&self.compiled, data, defaults, meta)
    }
}

impl Env {
    /// Returns the compiled template for `source`, from the cache if possible.
    async fn compiled(&self, source: &str) -> Result<Arc<Compiled>> {
        if let Some(hit) = self.cache().get(source) {
            return Ok(Arc::clone(hit));
        }
        let doc = parse::parse_with_offsets(source)?;
        let template =
            template::compile(&doc.prompt.template, None).map_err(|e| syntax_error(&e, &doc))?;
        self.resolve_partials(&template).await?;
        let compiled = Compiled {
            prompt: doc.prompt,
            template,
            body_line_offset: doc.body_line_offset,
            plan: Mutex::new(None),
            metadata: Mutex::new(None),
            last_len: AtomicUsize::new(0),
        };
        self.check_helpers(&compiled)?;
        // What the renderer does not support is refused here, not when
        // (or if) it renders.
        compiled.plan(&read(&self.engine))?;
        self.compilations.fetch_add(1, Ordering::Relaxed);

        let compiled = Arc::new(compiled);
        let mut cache = self.cache();
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(source.to_owned(), Arc::clone(&compiled));
        Ok(compiled)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Compiled>>> {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers, through the partial resolver, every partial the template
    /// (or a partial it includes) uses that is not registered yet.
    async fn resolve_partials(&self, template: &Template) -> Result<()> {
        let Some(resolver) = &self.partial_resolver else {
            return Ok(());
        };
        let mut queue: Vec<String> = template::usage(template)
            .partials
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut seen = HashSet::new();
        while let Some(name) = queue.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            let registered = read(&self.engine)
                .partial(&name)
                .map(|t| template::usage(t).partials);
            if let Some(includes) = registered {
                queue.extend(includes.into_iter().map(|(n, _)| n));
                continue;
            }
            let source = resolver
                .resolve(&name)
                .await
                .map_err(|source| Error::Resolver {
                    kind: "partial",
                    name: name.clone(),
                    source,
                })?;
            let Some(source) = source.filter(|s| !s.is_empty()) else {
                continue;
            };
            let partial = partials::compile_partial(&name, &source)?;
            queue.extend(
                template::usage(&partial)
                    .partials
                    .into_iter()
                    .map(|(n, _)| n),
            );
            let mut engine = write(&self.engine);
            if engine.partial(&name).is_none() {
                engine.register_partial(&name, partial)?;
            }
        }
        Ok(())
    }

    /// Fails on helpers that are called but not registered, in the template
    /// or in a partial it includes.
    fn check_helpers(&self, compiled: &Compiled) -> Result<()> {
        let engine = read(&self.engine);
        let unknown = |usage: template::Usage| {
            usage
                .helpers
                .into_iter()
                .find(|(name, _)| !engine.has_helper(name))
        };
        if let Some((name, pos)) = unknown(template::usage(&compiled.template)) {
            return Err(Error::UnknownHelper {
                name,
                location: Location {
                    line: pos.map(|p| p.0 + compiled.body_line_offset),
                    column: pos.map(|p| p.1),
                    ..compiled.location()
                },
            });
        }
        for (partial, template) in partials::reachable(engine.partials(), &compiled.template) {
            if let Some((name, pos)) = unknown(template::usage(template)) {
                return Err(Error::UnknownHelper {
                    name,
                    location: Location {
                        partial: Some(partial.to_owned()),
                        line: pos.map(|p| p.0),
                        column: pos.map(|p| p.1),
                        ..compiled.location()
                    },
                });
            }
        }
        Ok(())
    }

    /// The metadata of a compiled prompt rendered without options, less its
    /// `input`, and the input's defaults. Without resolvers it depends only
    /// on the defined tools and schemas, so it is resolved once per change
    /// of those and copied for each render. The copy leaves out `input`
    /// (its JSON schema is most of the metadata, and a render drops it):
    /// only the defaults are copied.
    async fn prompt_metadata(
        &self,
        compiled: &Compiled,
    ) -> Result<(PromptMetadata, Option<JsonMap>)> {
        let split = |mut meta: PromptMetadata| {
            let defaults = meta.input.take().and_then(|input| input.default);
            (meta, defaults)
        };
        if self.tool_resolver.is_some() || self.schema_resolver.is_some() {
            return self
                .resolve_metadata(&compiled.prompt, None)
                .await
                .map(split);
        }
        let generation = self.definitions.load(Ordering::Acquire);
        {
            let mut slot = compiled
                .metadata
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some((_, cached)) = slot.as_mut().filter(|(g, _)| *g == generation) {
                let input = cached.input.take();
                let meta = cached.clone();
                let defaults = input.as_ref().and_then(|i| i.default.clone());
                cached.input = input;
                return Ok((meta, defaults));
            }
        }
        let meta = self.resolve_metadata(&compiled.prompt, None).await?;
        *compiled
            .metadata
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((generation, meta.clone()));
        Ok(split(meta))
    }

    /// Merges model defaults, frontmatter and options, then resolves tools
    /// and schemas.
    async fn resolve_metadata(
        &self,
        prompt: &ParsedPrompt,
        options: Option<&PromptMetadata>,
    ) -> Result<PromptMetadata> {
        let model = options
            .and_then(|o| o.model.as_deref())
            .or(prompt.meta.model.as_deref())
            .or(self.default_model.as_deref());
        let mut meta = PromptMetadata {
            config: model.and_then(|m| self.model_configs.get(m)).cloned(),
            ..PromptMetadata::default()
        };
        meta.merge(&prompt.meta);
        if let Some(options) = options {
            meta.merge(options);
        }
        let location = Location::prompt(meta.name.as_deref());
        self.resolve_tools(&mut meta, &location).await?;
        self.resolve_schemas(&mut meta, &location).await?;
        Ok(meta)
    }

    /// Moves known tools from `tools` to `toolDefs`; unknown names stay in
    /// `tools` unless a tool resolver is set, which must know them.
    async fn resolve_tools(&self, meta: &mut PromptMetadata, location: &Location) -> Result<()> {
        let Some(names) = meta.tools.take() else {
            return Ok(());
        };
        let mut defs = meta.tool_defs.take().unwrap_or_default();
        let mut unresolved = Vec::new();
        for name in names {
            let known = read(&self.tools).get(&name).cloned();
            if let Some(def) = known {
                defs.push(def);
            } else if let Some(resolver) = &self.tool_resolver {
                let def = resolver
                    .resolve(&name)
                    .await
                    .map_err(|source| Error::Resolver {
                        kind: "tool",
                        name: name.clone(),
                        source,
                    })?;
                defs.push(def.ok_or_else(|| Error::UnknownTool {
                    name,
                    location: location.clone(),
                })?);
            } else {
                unresolved.push(name);
            }
        }
        meta.tools = Some(unresolved);
        meta.tool_defs = Some(defs);
        Ok(())
    }

    /// Converts the input and output schemas from Picoschema.
    async fn resolve_schemas(&self, meta: &mut PromptMetadata, location: &Location) -> Result<()> {
        let input = meta.input.as_mut().and_then(|i| i.schema.as_mut());
        if let Some(schema) = input {
            self.convert_schema(schema, location).await?;
        }
        let output = meta.output.as_mut().and_then(|o| o.schema.as_mut());
        if let Some(schema) = output {
            self.convert_schema(schema, location).await?;
        }
        Ok(())
    }

    async fn convert_schema(&self, schema: &mut Value, location: &Location) -> Result<()> {
        let pico_error = |source| Error::Picoschema {
            source,
            location: location.clone(),
        };
        let mut named = HashMap::new();
        for name in picoschema::referenced_schemas(schema).map_err(pico_error)? {
            let registered = read(&self.schemas).get(&name).cloned();
            let found = match (registered, &self.schema_resolver) {
                (Some(found), _) => Some(found),
                (None, Some(resolver)) => {
                    resolver
                        .resolve(&name)
                        .await
                        .map_err(|source| Error::Resolver {
                            kind: "schema",
                            name: name.clone(),
                            source,
                        })?
                }
                (None, None) => None,
            };
            if let Some(found) = found {
                named.insert(name, found);
            }
        }
        let converted = picoschema::to_json_schema(schema, &mut |name| named.get(name).cloned())
            .map_err(pico_error)?;
        if let Some(converted) = converted {
            *schema = converted;
        }
        Ok(())
    }

    /// Renders the template and builds the messages.
    fn render_compiled(
        &self,
        compiled: &Compiled,
        data: &DataArgument,
        defaults: Option<JsonMap>,
        meta: PromptMetadata,
    ) -> Result<RenderedPrompt> {
        let scope = DataScope::new(data, &meta);
        let rendered = {
            let engine = read(&self.engine);
            let plan = compiled.plan(&engine)?;
            let input = renderer::Data {
                input: data.input.as_ref(),
                defaults: defaults.as_ref(),
                scope: &scope,
            };
            let capacity = compiled.last_len.load(Ordering::Relaxed);
            renderer::render(&plan, input, capacity).map_err(|fault| compiled.error(fault))?
        };
        compiled
            .last_len
            .store(rendered.text.len(), Ordering::Relaxed);
        let renderer::Rendered { text, markers } = rendered;
        let messages = to_messages_at(Cow::Owned(text), &markers, data.messages.as_deref())
            .map_err(|e| match e {
                Error::InvalidRole { role, .. } => Error::InvalidRole {
                    role,
                    location: compiled.location(),
                },
                other => other,
            })?;
        Ok(RenderedPrompt { meta, messages })
    }
}

/// The error for a [`Fault`] of a prompt's template (or a partial it
/// includes): `prompt` locates the prompt, and its template starts after
/// `body_line_offset` lines of the source.
fn fault_error(fault: Fault, prompt: Location, body_line_offset: usize) -> Error {
    let located = |site: renderer::Site| {
        // Lines of the prompt's own template count from the start of the
        // source; a partial's from its start.
        let offset = if site.partial.is_some() {
            0
        } else {
            body_line_offset
        };
        Location {
            partial: site.partial.map(|p| p.to_string()),
            line: site.pos.map(|p| p.0 + offset),
            column: site.pos.map(|p| p.1),
            ..prompt.clone()
        }
    };
    match fault {
        Fault::Unsupported { construct, site } => Error::TemplateSyntax {
            message: format!("not supported: {construct}"),
            location: located(site),
        },
        Fault::UnknownHelper { name, site } => Error::UnknownHelper {
            name,
            location: located(site),
        },
        Fault::MissingPartial { name, site } => Error::UnknownPartial {
            name,
            location: located(site),
        },
        Fault::Helper { message, site } => Error::Render {
            message,
            location: located(site),
        },
        Fault::TooDeep => Error::Render {
            message: format!(
                "partials nest more than {} deep (a partial that includes itself without end?)",
                renderer::MAX_PARTIAL_NESTING
            ),
            location: prompt,
        },
    }
}

/// A syntax error in the template body of `doc`, located in its source.
fn syntax_error(e: &TemplateError, doc: &parse::Document) -> Error {
    Error::TemplateSyntax {
        message: template::syntax_message(e, &doc.prompt.template),
        location: Location {
            prompt: doc.prompt.meta.name.clone(),
            line: e.pos().map(|p| p.0 + doc.body_line_offset),
            column: e.pos().map(|p| p.1),
            ..Location::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn block_on<F: std::future::Future>(f: F) -> F::Output {
        futures::executor::block_on(f)
    }

    fn data(input: Value) -> DataArgument {
        serde_json::from_value(json!({ "input": input })).unwrap()
    }

    #[test]
    fn rendering_twice_compiles_once() {
        let dp = Dotprompt::default();
        let source = "---\nmodel: m\n---\nHello {{name}}!";
        let first = block_on(dp.render(source, &data(json!({"name": "A"})), None)).unwrap();
        let second = block_on(dp.render(source, &data(json!({"name": "B"})), None)).unwrap();
        assert_eq!(dp.compilations(), 1);
        assert_ne!(first.messages, second.messages);
        block_on(dp.render("other", &DataArgument::default(), None)).unwrap();
        assert_eq!(dp.compilations(), 2);
    }

    #[test]
    fn template_errors_are_not_cached() {
        let dp = Dotprompt::default();
        let source = "{{shout name}}";
        assert!(block_on(dp.render(source, &DataArgument::default(), None)).is_err());
        dp.define_helper("shout", |params, _| {
            Ok(json!(
                params
                    .first()
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_uppercase()
            ))
        });
        let out = block_on(dp.render(source, &data(json!({"name": "hi"})), None)).unwrap();
        assert_eq!(
            serde_json::to_value(&out.messages).unwrap()[0]["content"][0]["text"],
            "HI"
        );
    }
}
