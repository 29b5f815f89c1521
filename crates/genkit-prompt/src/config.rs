//! [`PromptConfig`]: everything a prompt is defined with, as a builder.

use std::marker::PhantomData;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde_json::{Map, Value};

use genkit_model::model::ModelRef;
use genkit_model::tool::ToolArg;
use genkit_model::types::{
    DocumentData, IntoParts, Message, MiddlewareRef, OutputInstructions, Part, ToolChoice,
};

/// A schema as the prompt author wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SchemaSpec {
    /// JSON Schema, used as is.
    Json(Value),
    /// Picoschema (or JSON Schema with a `type`), possibly naming schemas
    /// registered with [`define_schema`](super::define_schema).
    Picoschema(Value),
}

/// The content of the system or the user message of a prompt.
#[derive(Debug, Clone)]
pub(crate) enum PromptContent {
    /// A Dotprompt (Handlebars) template rendering one message.
    Template(String),
    /// Fixed parts.
    Parts(Vec<Part>),
}

/// The conversation a prompt renders between its system and user messages.
#[derive(Debug, Clone)]
pub(crate) enum PromptMessages {
    /// A Dotprompt template, which may switch roles with `{{role}}` and
    /// place the caller's history with `{{history}}`.
    Template(String),
    /// Fixed messages.
    Messages(Vec<Message>),
}

/// The requested output of a prompt.
#[derive(Debug, Clone, Default)]
pub(crate) struct OutputDef {
    pub(crate) format: Option<String>,
    pub(crate) schema: Option<SchemaSpec>,
    pub(crate) instructions: Option<OutputInstructions>,
    pub(crate) constrained: Option<bool>,
    pub(crate) content_type: Option<String>,
}

/// The `.prompt` source a prompt was loaded from.
#[derive(Debug, Clone)]
pub(crate) struct SourceOrigin {
    /// The file, if the source was read from one.
    pub(crate) path: Option<PathBuf>,
    /// Lines before the template body (frontmatter and blank lines).
    pub(crate) body_line_offset: usize,
}

/// A prompt definition, untyped.
#[derive(Clone)]
pub(crate) struct PromptDef {
    pub(crate) name: String,
    pub(crate) variant: Option<String>,
    pub(crate) model: Option<ModelRef>,
    pub(crate) config: Option<Value>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Option<SchemaSpec>,
    pub(crate) default_input: Option<Value>,
    pub(crate) output: OutputDef,
    pub(crate) system: Option<PromptContent>,
    pub(crate) prompt: Option<PromptContent>,
    pub(crate) messages: Option<PromptMessages>,
    pub(crate) docs: Vec<DocumentData>,
    pub(crate) tools: Vec<ToolArg>,
    pub(crate) tool_choice: Option<ToolChoice>,
    /// The tool choice holds for the first turn only (see
    /// [`GenerateOptions::tool_choice_once`](genkit_generate::GenerateOptions::tool_choice_once)).
    pub(crate) tool_choice_once: bool,
    pub(crate) max_turns: Option<u32>,
    pub(crate) return_tool_requests: Option<bool>,
    pub(crate) middleware: Vec<MiddlewareRef>,
    pub(crate) metadata: Map<String, Value>,
    /// Extra entries of the listed `metadata.prompt` (a file's `raw`, `ext`, ...).
    pub(crate) prompt_metadata: Map<String, Value>,
    /// Set for prompts loaded from `.prompt` sources.
    pub(crate) origin: Option<SourceOrigin>,
}

impl PromptDef {
    /// The registry name: `name` or `name.variant`.
    pub(crate) fn key(&self) -> String {
        registry_name(&self.name, self.variant.as_deref())
    }
}

/// `name` or `name.variant`, the name both prompt actions are registered under.
pub(crate) fn registry_name(name: &str, variant: Option<&str>) -> String {
    match variant {
        Some(v) => format!("{name}.{v}"),
        None => name.to_owned(),
    }
}

/// The definition of a prompt, built with chained setters and registered
/// with [`define_prompt`](super::define_prompt).
///
/// `I` and `O` are the types the resulting
/// [`ExecutablePrompt`](super::ExecutablePrompt) takes as input and returns
/// as structured output; [`input`](Self::input) and [`output`](Self::output)
/// set them together with their schemas. Without them both are JSON values.
///
/// Templates use the Dotprompt language: `{{name}}` inserts an input field,
/// `{{role "system"}}` starts a message, `{{> partial}}` includes a partial,
/// `{{media url=...}}` inserts media, `{{history}}` places the caller's
/// conversation, and `@state`, `@auth` ... read the action context.
///
/// ```
/// use genkit_prompt::PromptConfig;
/// use serde::{Deserialize, Serialize};
/// use schemars::JsonSchema;
///
/// #[derive(Serialize, JsonSchema)]
/// struct Topic { topic: String }
/// #[derive(Deserialize, JsonSchema)]
/// struct Joke { setup: String, punchline: String }
///
/// let config = PromptConfig::new("joke")
///     .model("googleai/gemini-2.5-flash")
///     .config(serde_json::json!({"temperature": 0.9}))
///     .input::<Topic>()
///     .output::<Joke>()
///     .system("You are a comedian.")
///     .prompt("Tell a joke about {{topic}}.");
/// assert_eq!(config.key(), "joke");
/// ```
pub struct PromptConfig<I = Value, O = Value> {
    pub(crate) def: PromptDef,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for PromptConfig<I, O> {
    fn clone(&self) -> Self {
        Self {
            def: self.def.clone(),
            _types: PhantomData,
        }
    }
}

impl<I, O> std::fmt::Debug for PromptConfig<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PromptConfig")
            .field("name", &self.def.name)
            .field("variant", &self.def.variant)
            .field("model", &self.def.model)
            .finish_non_exhaustive()
    }
}

impl PromptConfig {
    /// A prompt named `name`, with JSON input and output.
    pub fn new(name: impl Into<String>) -> Self {
        Self::from_def(PromptDef {
            name: name.into(),
            variant: None,
            model: None,
            config: None,
            description: None,
            input_schema: None,
            default_input: None,
            output: OutputDef::default(),
            system: None,
            prompt: None,
            messages: None,
            docs: Vec::new(),
            tools: Vec::new(),
            tool_choice: None,
            tool_choice_once: false,
            max_turns: None,
            return_tool_requests: None,
            middleware: Vec::new(),
            metadata: Map::new(),
            prompt_metadata: Map::new(),
            origin: None,
        })
    }
}

impl<I, O> PromptConfig<I, O> {
    pub(crate) fn from_def(def: PromptDef) -> Self {
        Self {
            def,
            _types: PhantomData,
        }
    }

    fn retype<I2, O2>(self) -> PromptConfig<I2, O2> {
        PromptConfig::from_def(self.def)
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }

    /// The variant, if any.
    pub fn variant_name(&self) -> Option<&str> {
        self.def.variant.as_deref()
    }

    /// The name the prompt's actions are registered under: `name` or
    /// `name.variant`.
    pub fn key(&self) -> String {
        self.def.key()
    }

    /// Makes this a variant of the prompt `name` (registered as
    /// `name.variant`, found with `prompt(registry, name, Some(variant))`).
    pub fn variant(mut self, variant: impl Into<String>) -> Self {
        self.def.variant = Some(variant.into());
        self
    }

    /// The model (a name, a [`ModelRef`] or a [`Model`](genkit_model::model::Model));
    /// the registry's default model when unset.
    pub fn model(mut self, model: impl Into<ModelRef>) -> Self {
        self.def.model = Some(model.into());
        self
    }

    /// The model configuration (a JSON object); a caller's config is merged
    /// over it key by key.
    pub fn config(mut self, config: Value) -> Self {
        self.def.config = Some(config);
        self
    }

    /// A description, listed with the prompt's actions.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.def.description = Some(description.into());
        self
    }

    /// Typed input: the schema is derived from `T`, and the prompt is called
    /// with `T` values.
    pub fn input<T: JsonSchema>(mut self) -> PromptConfig<T, O> {
        self.def.input_schema = Some(SchemaSpec::Json(genkit_core::schema::schema_for::<T>()));
        self.retype()
    }

    /// The input's JSON Schema.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.def.input_schema = Some(SchemaSpec::Json(schema));
        self
    }

    /// The input's schema in Picoschema (`{name: "string, who to greet"}`),
    /// which may name schemas registered with
    /// [`define_schema`](super::define_schema).
    pub fn input_picoschema(mut self, schema: Value) -> Self {
        self.def.input_schema = Some(SchemaSpec::Picoschema(schema));
        self
    }

    /// Default input values (a JSON object), overlaid by the caller's input.
    pub fn default_input(mut self, defaults: Value) -> Self {
        self.def.default_input = Some(defaults);
        self
    }

    /// Typed output: asks the model for JSON matching `T`'s schema, read
    /// back with [`ExecutablePrompt::run`](super::ExecutablePrompt::run).
    pub fn output<T: JsonSchema>(mut self) -> PromptConfig<I, T> {
        self.def.output.schema = Some(SchemaSpec::Json(genkit_core::schema::schema_for::<T>()));
        self.retype()
    }

    /// The output's JSON Schema (the format defaults to `json`).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.def.output.schema = Some(SchemaSpec::Json(schema));
        self
    }

    /// The output's schema in Picoschema (the format defaults to `json`).
    pub fn output_picoschema(mut self, schema: Value) -> Self {
        self.def.output.schema = Some(SchemaSpec::Picoschema(schema));
        self
    }

    /// The output format: a built-in ([`OutputFormat::Json`](genkit_model::formats::OutputFormat),
    /// `Text`, `Array`, `Enum`, `Jsonl`) or one registered with
    /// [`define_format`](genkit_model::formats::define_format), by value or by name.
    pub fn output_format(mut self, format: impl Into<genkit_model::formats::OutputFormat>) -> Self {
        self.def.output.format = Some(format.into().into());
        self
    }

    /// Overrides (`"..."`), forces (`true`) or suppresses (`false`) the
    /// format's instructions.
    pub fn output_instructions(mut self, instructions: impl Into<OutputInstructions>) -> Self {
        self.def.output.instructions = Some(instructions.into());
        self
    }

    /// Asks for natively constrained output where the model supports it.
    pub fn output_constrained(mut self, constrained: bool) -> Self {
        self.def.output.constrained = Some(constrained);
        self
    }

    /// The MIME type of the output.
    pub fn output_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.def.output.content_type = Some(content_type.into());
        self
    }

    /// The system message, as a Dotprompt template rendering one message.
    pub fn system(mut self, template: impl Into<String>) -> Self {
        self.def.system = Some(PromptContent::Template(template.into()));
        self
    }

    /// The system message, as fixed parts (not a template).
    pub fn system_parts(mut self, parts: impl IntoParts) -> Self {
        self.def.system = Some(PromptContent::Parts(parts.into_parts()));
        self
    }

    /// The user message, as a Dotprompt template rendering one message.
    pub fn prompt(mut self, template: impl Into<String>) -> Self {
        self.def.prompt = Some(PromptContent::Template(template.into()));
        self
    }

    /// The user message, as fixed parts (not a template).
    pub fn prompt_parts(mut self, parts: impl IntoParts) -> Self {
        self.def.prompt = Some(PromptContent::Parts(parts.into_parts()));
        self
    }

    /// The conversation, as a Dotprompt template: `{{role "..."}}` starts
    /// a message and `{{history}}` places the caller's messages (put before
    /// the last user message when the template has no `{{history}}`).
    pub fn messages_template(mut self, template: impl Into<String>) -> Self {
        self.def.messages = Some(PromptMessages::Template(template.into()));
        self
    }

    /// The conversation, as fixed messages (the caller's messages are then
    /// not used).
    pub fn messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.def.messages = Some(PromptMessages::Messages(messages.into_iter().collect()));
        self
    }

    /// Documents for grounding.
    pub fn docs(mut self, docs: impl IntoIterator<Item = DocumentData>) -> Self {
        self.def.docs.extend(docs);
        self
    }

    /// Adds a tool (by name or value).
    pub fn tool(mut self, tool: impl Into<ToolArg>) -> Self {
        self.def.tools.push(tool.into());
        self
    }

    /// Adds tools.
    pub fn tools<T: Into<ToolArg>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.def.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Whether the model must, may or must not call tools, on every turn of
    /// the tool loop.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.def.tool_choice = Some(choice);
        self.def.tool_choice_once = false;
        self
    }

    /// The tool choice for the first turn only: a forced choice
    /// (`Required`) becomes `Auto` once that turn's tools ran, so the model
    /// can answer. What servers that ignore tools unless one is forced (a
    /// llama.cpp server) need; a caller's own tool choice overrides it.
    pub fn tool_choice_once(mut self, choice: ToolChoice) -> Self {
        self.def.tool_choice = Some(choice);
        self.def.tool_choice_once = true;
        self
    }

    /// Limits the tool loop.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.def.max_turns = Some(turns);
        self
    }

    /// Returns tool requests to the caller instead of running the tools.
    pub fn return_tool_requests(mut self, on: bool) -> Self {
        self.def.return_tool_requests = Some(on);
        self
    }

    /// Runs the generate call through a middleware registered by name with
    /// [`define_middleware`](genkit_model::middleware::define_middleware).
    pub fn use_middleware(mut self, name: impl Into<String>, config: Option<Value>) -> Self {
        self.def.middleware.push(MiddlewareRef {
            name: name.into(),
            config,
        });
        self
    }

    /// Sets one entry of the metadata listed with the prompt's actions.
    pub fn metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.def.metadata.insert(key.into(), value);
        self
    }
}
