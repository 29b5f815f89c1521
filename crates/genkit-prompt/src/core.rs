//! The state behind a defined prompt: its definition, its schemas (resolved
//! on first use, as named schemas may be defined after the prompt), its
//! compiled templates, and rendering into generate options.

use std::sync::{Arc, OnceLock};

use dotprompt::{DataArgument, PromptFunction, picoschema};
use genkit_core::schema::{SchemaValidator, accepts_anything};
use genkit_core::tracing::{current_context, current_trace};
use genkit_core::{ActionKind, DynAction, Error, Registry, Result};
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use super::config::{PromptContent, PromptDef, PromptMessages, SchemaSpec};
use super::convert::{message_from_dotprompt, messages_to_dotprompt, parts_from_dotprompt};
use super::env::{PromptEnv, env};
use super::errors::{SourceRef, from_dotprompt};
use genkit_generate::GenerateOptions;
use genkit_model::formats::apply_format;
use genkit_model::middleware::resolve_middleware;
use genkit_model::tool::{ToolArg, to_tool_definition};
use genkit_model::types::{
    GenerateActionOptions, GenerateActionOutputConfig, GenerateRequest, Message, MiddlewareRef,
    OutputConfig, Part, Role, ToolDefinition,
};

/// A prompt's schemas, as JSON Schema.
pub(crate) struct Resolved {
    /// The input schema.
    pub(crate) input_schema: Option<Value>,
    input_validator: Option<SchemaValidator>,
    /// The output schema.
    pub(crate) output_schema: Option<Value>,
}

/// A prompt rendered for one call: generate options, plus the middleware
/// the prompt names (resolved only when generating).
pub(crate) struct Rendered {
    pub(crate) options: GenerateOptions,
    pub(crate) middleware: Vec<MiddlewareRef>,
}

/// A defined prompt, shared by its two actions and every
/// [`ExecutablePrompt`](super::ExecutablePrompt) handle.
pub(crate) struct PromptCore {
    pub(crate) registry: Registry,
    pub(crate) env: Arc<PromptEnv>,
    pub(crate) def: PromptDef,
    /// `name` or `name.variant`.
    pub(crate) key: String,
    resolved: OnceLock<Arc<Resolved>>,
    system: OnceCell<PromptFunction>,
    user: OnceCell<PromptFunction>,
    messages: OnceCell<PromptFunction>,
}

impl PromptCore {
    /// Checks a definition (names, config, Picoschema and template syntax)
    /// and builds its state. Named schemas are resolved now if they are
    /// all known, else on first use.
    pub(crate) fn new(registry: &Registry, def: PromptDef) -> Result<Arc<Self>> {
        let key = def.key();
        let core = Self {
            registry: registry.clone(),
            env: env(registry),
            key,
            def,
            resolved: OnceLock::new(),
            system: OnceCell::new(),
            user: OnceCell::new(),
            messages: OnceCell::new(),
        };
        core.check()?;
        // Unknown schema names are not an error yet: they may be defined later.
        let _ = core.resolved();
        Ok(Arc::new(core))
    }

    /// How errors name this prompt (its file, or `prompt \`key\``).
    pub(crate) fn source(&self) -> SourceRef {
        let path = self.def.origin.as_ref().and_then(|o| o.path.as_deref());
        SourceRef::prompt(&self.key, path)
    }

    /// The source of one of its templates, with the line offset of a file's body.
    fn template_source(&self, template: &'static str) -> SourceRef {
        match &self.def.origin {
            Some(origin) => {
                SourceRef::file(&self.key, origin.path.as_deref(), origin.body_line_offset)
            }
            None => SourceRef::code(&self.key, template),
        }
    }

    fn check(&self) -> Result<()> {
        let def = &self.def;
        let source = self.source();
        if def.name.is_empty() || def.name.starts_with('/') {
            return Err(source.error(&format!("invalid prompt name `{}`", def.name), None, None));
        }
        if def.variant.as_deref().is_some_and(str::is_empty) {
            return Err(source.error("the variant name is empty", None, None));
        }
        if let Some(config) = &def.config
            && !config.is_object()
            && !config.is_null()
        {
            return Err(source.error(
                &format!("`config` must be an object, got {config}"),
                None,
                None,
            ));
        }
        if let Some(defaults) = &def.default_input
            && !defaults.is_object()
        {
            return Err(source.error(
                &format!("the default input must be an object, got {defaults}"),
                None,
                None,
            ));
        }
        for (what, spec) in [("input", &def.input_schema), ("output", &def.output.schema)] {
            match spec {
                Some(SchemaSpec::Picoschema(schema)) => {
                    picoschema::referenced_schemas(schema).map_err(|e| {
                        source.error(&format!("invalid {what} schema: {e}"), None, None)
                    })?;
                }
                Some(SchemaSpec::Json(schema)) => {
                    compile_schema(schema, what, &source)?;
                }
                None => {}
            }
        }
        // A `.prompt` source was checked when it was parsed.
        if def.origin.is_none() {
            let templates = [
                ("system", template_of(&def.system)),
                ("prompt", template_of(&def.prompt)),
                (
                    "messages",
                    match &def.messages {
                        Some(PromptMessages::Template(t)) => Some(t.as_str()),
                        _ => None,
                    },
                ),
            ];
            for (which, template) in templates {
                if let Some(template) = template {
                    self.env.dotprompt.check(template).map_err(|e| {
                        from_dotprompt(e, &SourceRef::code(&self.key, which), &self.env)
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The prompt's schemas as JSON Schema, resolving named schemas through
    /// the registry. Cached once it succeeds.
    pub(crate) fn resolved(&self) -> Result<Arc<Resolved>> {
        if let Some(resolved) = self.resolved.get() {
            return Ok(Arc::clone(resolved));
        }
        let source = self.source();
        let input_schema = self.resolve_schema(self.def.input_schema.as_ref(), "input", &source)?;
        let input_validator = match &input_schema {
            Some(schema) => compile_schema(schema, "input", &source)?,
            None => None,
        };
        let output_schema =
            self.resolve_schema(self.def.output.schema.as_ref(), "output", &source)?;
        if let Some(schema) = &output_schema {
            compile_schema(schema, "output", &source)?;
        }
        let resolved = Arc::new(Resolved {
            input_schema,
            input_validator,
            output_schema,
        });
        Ok(Arc::clone(self.resolved.get_or_init(|| resolved)))
    }

    fn resolve_schema(
        &self,
        spec: Option<&SchemaSpec>,
        what: &str,
        source: &SourceRef,
    ) -> Result<Option<Value>> {
        match spec {
            None => Ok(None),
            Some(SchemaSpec::Json(schema)) => Ok(Some(schema.clone())),
            Some(SchemaSpec::Picoschema(schema)) => {
                picoschema::to_json_schema(schema, &mut |name| self.registry.lookup_schema(name))
                    .map_err(|e| source.error(&format!("invalid {what} schema: {e}"), None, None))
            }
        }
    }

    /// The template variables of a call: the default input overlaid with
    /// `input` (an object, or null for none), checked against the input
    /// schema. A violation is `INVALID_ARGUMENT` listing each field's path.
    pub(crate) fn prepare_input(
        &self,
        input: Value,
        resolved: &Resolved,
    ) -> Result<Map<String, Value>> {
        let mut variables = match &self.def.default_input {
            Some(Value::Object(defaults)) => defaults.clone(),
            _ => Map::new(),
        };
        match input {
            Value::Null => {}
            Value::Object(fields) => variables.extend(fields),
            other => {
                return Err(caller_error(Error::invalid_argument(format!(
                    "the input of prompt `{}` must be a JSON object, got {other}",
                    self.key
                ))));
            }
        }
        let Some(validator) = &resolved.input_validator else {
            return Ok(variables);
        };
        let value = Value::Object(variables);
        if let Err(e) = validator.validate(&value) {
            let mut error = Error::invalid_argument(format!(
                "invalid input for prompt `{}`: {}",
                self.key,
                e.message()
            ));
            if let Some(details) = e.details() {
                error = error.with_details(details.clone());
            }
            return Err(caller_error(error));
        }
        match value {
            Value::Object(variables) => Ok(variables),
            _ => Ok(Map::new()),
        }
    }

    /// Renders the prompt with prepared `variables`: its system message,
    /// its conversation (with the caller's `overrides.messages` as history)
    /// and its user message, then the prompt's generate options under the
    /// caller's overrides (the caller's config is merged over the prompt's).
    pub(crate) async fn render(
        &self,
        variables: Map<String, Value>,
        resolved: &Resolved,
        mut overrides: GenerateOptions,
    ) -> Result<Rendered> {
        let def = &self.def;
        let history = std::mem::take(&mut overrides.messages);
        let context = overrides
            .context
            .clone()
            .unwrap_or_else(current_context)
            .as_map()
            .cloned();
        let mut data = DataArgument {
            input: Some(variables),
            docs: None,
            messages: None,
            context,
        };

        let mut messages: Vec<Message> = Vec::with_capacity(history.len() + 2);
        if let Some(system) = &def.system {
            let parts = self.content(system, &self.system, "system", &data).await?;
            if let Some(parts) = parts {
                messages.push(Message::new(Role::System, parts));
            }
        }
        match &def.messages {
            Some(PromptMessages::Template(template)) => {
                data.messages = Some(messages_to_dotprompt(&history)?);
                let rendered = self
                    .render_template(&self.messages, template, "messages", &data)
                    .await?;
                data.messages = None;
                for message in rendered {
                    messages.push(message_from_dotprompt(message)?);
                }
            }
            Some(PromptMessages::Messages(fixed)) => messages.extend(fixed.iter().cloned()),
            None => messages.extend(history),
        }
        if let Some(prompt) = &def.prompt {
            let parts = self.content(prompt, &self.user, "prompt", &data).await?;
            if let Some(parts) = parts {
                messages.push(Message::new(Role::User, parts));
            }
        }

        let mut options = overrides;
        options.messages = messages;
        options.model = options.model.or_else(|| def.model.clone());
        options.config = merge_config(def.config.as_ref(), options.config.take())?;
        if options.docs.is_empty() {
            options.docs = def.docs.clone();
        }
        if options.tools.is_empty() {
            options.tools = def.tools.clone();
        }
        if options.tool_choice.is_none() {
            options.tool_choice = def.tool_choice;
            options.tool_choice_once = def.tool_choice_once;
        }
        if options.output.is_none() {
            options.output = self.output_config(resolved);
        }
        options.return_tool_requests = options.return_tool_requests.or(def.return_tool_requests);
        options.max_turns = options.max_turns.or(def.max_turns);
        // As in Genkit, middleware given by the caller replaces the prompt's.
        let middleware = if options.middleware.is_empty() {
            def.middleware.clone()
        } else {
            Vec::new()
        };
        Ok(Rendered {
            options,
            middleware,
        })
    }

    /// The rendered options ready for `generate`: the middleware the prompt
    /// names is resolved in the registry.
    pub(crate) fn generate_options(&self, rendered: Rendered) -> Result<GenerateOptions> {
        let mut options = rendered.options;
        for r in &rendered.middleware {
            options.middleware.push(resolve_middleware(
                &self.registry,
                &r.name,
                r.config.as_ref(),
            )?);
        }
        Ok(options)
    }

    /// What `/executable-prompt/<name>` returns: the serializable options.
    pub(crate) fn action_options(&self, rendered: Rendered) -> Result<GenerateActionOptions> {
        let names = rendered
            .options
            .tools
            .iter()
            .map(|t| match t {
                ToolArg::Name(name) => name.clone(),
                ToolArg::Action(action) => action.name().to_owned(),
            })
            .collect();
        let mut options = rendered.options.to_action_options(names)?;
        if !rendered.middleware.is_empty() {
            options.middleware = Some(rendered.middleware);
        }
        Ok(options)
    }

    /// What `/prompt/<name>` returns: the model request, with tool
    /// definitions and the output format's instructions in the messages.
    pub(crate) async fn request(&self, rendered: Rendered) -> Result<GenerateRequest> {
        let mut definitions: Vec<ToolDefinition> = Vec::with_capacity(rendered.options.tools.len());
        for tool in &rendered.options.tools {
            let action = match tool {
                ToolArg::Action(action) => action.clone(),
                ToolArg::Name(name) => {
                    // A dynamic provider's name (`mcp:tool/*`) stands for
                    // every tool it matches, as in `generate`.
                    if let Some(key) = genkit_core::dynamic::dynamic_key_for(name) {
                        let found = self.registry.resolve_actions(&key).await?;
                        if !found.is_empty() {
                            definitions.extend(found.iter().map(|a| to_tool_definition(a.desc())));
                            continue;
                        }
                    }
                    lookup_tool(&self.registry, name).await?
                }
            };
            definitions.push(to_tool_definition(action.desc()));
        }
        let mut options = self.action_options(rendered)?;
        apply_format(&mut options, &self.registry)?;
        // `{}` without output options, as in Genkit JS (and model requests).
        let output = Some(
            options
                .output
                .map_or_else(OutputConfig::default, |o| OutputConfig {
                    format: o.format,
                    schema: o.json_schema,
                    constrained: o.constrained,
                    content_type: o.content_type,
                }),
        );
        Ok(GenerateRequest {
            messages: options.messages.into(),
            // An empty config is left out, as Genkit JS does here.
            config: options
                .config
                .filter(|c| c.as_object().is_none_or(|c| !c.is_empty())),
            tools: Some(definitions.into()),
            // Genkit JS's `/prompt/` output leaves the tool choice to the
            // generate call that follows.
            tool_choice: None,
            output,
            docs: options.docs,
            candidates: None,
        })
    }

    /// The output options the prompt asks for, if any.
    pub(crate) fn output_config(&self, resolved: &Resolved) -> Option<GenerateActionOutputConfig> {
        let output = &self.def.output;
        let config = GenerateActionOutputConfig {
            format: output.format.clone(),
            content_type: output.content_type.clone(),
            instructions: output.instructions.clone(),
            json_schema: resolved.output_schema.clone(),
            constrained: output.constrained,
        };
        (config != GenerateActionOutputConfig::default()).then_some(config)
    }

    /// Renders the system or user content: fixed parts, or a template that
    /// must render one message (none when it renders nothing but whitespace).
    async fn content(
        &self,
        content: &PromptContent,
        cell: &OnceCell<PromptFunction>,
        which: &'static str,
        data: &DataArgument,
    ) -> Result<Option<Vec<Part>>> {
        let template = match content {
            PromptContent::Parts(parts) => return Ok(Some(parts.clone())),
            PromptContent::Template(template) => template,
        };
        let mut rendered = self.render_template(cell, template, which, data).await?;
        match rendered.len() {
            0 => Ok(None),
            1 => {
                let message = rendered.remove(0);
                parts_from_dotprompt(message.content).map(Some)
            }
            n => Err(self.template_source(which).error(
                &format!(
                    "the {which} template must render one message, got {n}; \
                     use a messages template for a conversation"
                ),
                None,
                None,
            )),
        }
    }

    /// Compiles (once) and renders one template.
    async fn render_template(
        &self,
        cell: &OnceCell<PromptFunction>,
        template: &str,
        which: &'static str,
        data: &DataArgument,
    ) -> Result<Vec<dotprompt::Message>> {
        let source = self.template_source(which);
        let function = cell
            .get_or_try_init(|| async {
                self.env
                    .dotprompt
                    .compile(template)
                    .await
                    .map_err(|e| from_dotprompt(e, &source, &self.env))
            })
            .await?;
        let rendered = function
            .render(data, None)
            .await
            .map_err(|e| from_dotprompt(e, &source, &self.env))?;
        Ok(rendered.messages)
    }
}

fn template_of(content: &Option<PromptContent>) -> Option<&str> {
    match content {
        Some(PromptContent::Template(template)) => Some(template),
        _ => None,
    }
}

/// Compiles a schema into a validator (none when it accepts anything).
fn compile_schema(
    schema: &Value,
    what: &str,
    source: &SourceRef,
) -> Result<Option<SchemaValidator>> {
    if accepts_anything(schema) {
        return Ok(None);
    }
    SchemaValidator::compile(schema).map(Some).map_err(|e| {
        source.error(
            &format!("invalid {what} schema: {}", e.message()),
            None,
            None,
        )
    })
}

/// Input rejected before anything ran came from the caller, who may be told
/// what is wrong with it (as actions do with their input validation).
fn caller_error(error: Error) -> Error {
    if current_trace().is_none() {
        error.into_user_facing()
    } else {
        error
    }
}

/// The prompt's config with the caller's merged over it, key by key. No
/// config at all (or only an empty one from the prompt) is none.
fn merge_config(prompt: Option<&Value>, caller: Option<Value>) -> Result<Option<Value>> {
    let caller = match caller {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "config must be an object, got {other}"
            )));
        }
    };
    let mut merged = match prompt {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let explicit = caller.is_some();
    if let Some(caller) = caller {
        merged.extend(caller);
    }
    Ok((explicit || !merged.is_empty()).then_some(Value::Object(merged)))
}

/// Finds a tool by key or by name under `/tool/` or `/tool.v2/`.
async fn lookup_tool(registry: &Registry, name: &str) -> Result<DynAction> {
    if name.starts_with('/')
        && let Some(action) = registry.lookup_action(name).await?
    {
        return Ok(action);
    }
    for kind in [ActionKind::Tool, ActionKind::ToolV2] {
        if let Some(action) = registry.lookup(kind, name).await? {
            return Ok(action);
        }
    }
    Err(Error::not_found(format!("Tool {name} not found")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_merges_key_by_key() {
        let prompt = json!({"temperature": 0.2, "topK": 3});
        assert_eq!(
            merge_config(Some(&prompt), Some(json!({"temperature": 0.9}))).unwrap(),
            Some(json!({"temperature": 0.9, "topK": 3}))
        );
        assert_eq!(merge_config(Some(&json!({})), None).unwrap(), None);
        assert_eq!(
            merge_config(None, Some(json!({}))).unwrap(),
            Some(json!({}))
        );
        assert!(merge_config(None, Some(json!(3))).is_err());
    }
}
