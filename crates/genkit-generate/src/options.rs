//! `GenerateOptions`: what a caller of `generate` writes — a builder over the
//! serializable [`GenerateActionOptions`] plus in-process extras (tools and
//! middleware by value, context, cancellation).

use genkit_core::{ActionContext, CancellationToken, Error, Result};
use genkit_model::formats::OutputFormat;
use genkit_model::middleware::{GenerateMiddleware, ModelHook, ModelMiddleware};
use genkit_model::model::ModelRef;
use genkit_model::tool::ToolArg;
use genkit_model::types::{
    DocumentData, GenerateActionOptions, GenerateActionOutputConfig, GenerateActionResume,
    IntoParts, Message, Metadata, OutputInstructions, Part, Role, ToolChoice,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// What happens when a tool fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolErrorPolicy {
    /// The whole generate call fails with the tool's error (Genkit's behaviour).
    #[default]
    Fail,
    /// The error goes back to the model as the tool's response
    /// (`{"error": "STATUS: message"}`), so it can try something else.
    ReturnToModel,
}

/// Default hard cap on the `maxTurns` a request may ask for.
pub const DEFAULT_MAX_TURNS_CAP: u32 = 100;

/// Default number of one turn's tool requests that run at once.
pub const DEFAULT_TOOL_CONCURRENCY: usize = 32;

/// Limits of the tool loop that a request cannot raise: a hard cap on its
/// `maxTurns` (a request asking for more gets the cap, and ends `ABORTED` at
/// the cap as at its own limit), and how many of one turn's tool requests run
/// at once (their results keep request order).
///
/// ```
/// use genkit_generate::LoopLimits;
/// let limits = LoopLimits::default().max_turns_cap(1_000).tool_concurrency(4);
/// assert_eq!(limits.max_turns(Some(5_000)), 1_000);
/// assert_eq!(limits.max_turns(None), 5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopLimits {
    max_turns_cap: u32,
    tool_concurrency: usize,
    wire_messages: bool,
}

impl Default for LoopLimits {
    fn default() -> Self {
        Self {
            max_turns_cap: DEFAULT_MAX_TURNS_CAP,
            tool_concurrency: DEFAULT_TOOL_CONCURRENCY,
            wire_messages: false,
        }
    }
}

impl LoopLimits {
    /// Sets the hard cap on `maxTurns` (at least 1).
    pub fn max_turns_cap(mut self, cap: u32) -> Self {
        self.max_turns_cap = cap.max(1);
        self
    }

    /// Sets how many tool requests of one turn run at once (at least 1).
    pub fn tool_concurrency(mut self, limit: usize) -> Self {
        self.tool_concurrency = limit.max(1);
        self
    }

    /// Error messages exactly as Genkit JS words them (for `/util/generate`,
    /// whose callers compare them), without the hints added for Rust callers.
    pub(crate) fn with_wire_messages(mut self) -> Self {
        self.wire_messages = true;
        self
    }

    pub(crate) fn wire_messages(&self) -> bool {
        self.wire_messages
    }

    /// The cap on `maxTurns`.
    pub fn cap(&self) -> u32 {
        self.max_turns_cap
    }

    /// How many tool requests of one turn run at once.
    pub fn concurrency(&self) -> usize {
        self.tool_concurrency
    }

    /// The turn limit for a request asking for `requested` turns
    /// ([`DEFAULT_MAX_TURNS`](super::DEFAULT_MAX_TURNS) when it asks for none).
    pub fn max_turns(&self, requested: Option<u32>) -> u32 {
        requested
            .unwrap_or(super::DEFAULT_MAX_TURNS)
            .min(self.max_turns_cap)
    }

    /// The `ABORTED` error when the turn after `turn` would pass the limit.
    pub(crate) fn turn_limit_error(
        &self,
        requested: Option<u32>,
        turn: u32,
    ) -> Option<genkit_core::Error> {
        let limit = self.max_turns(requested);
        if turn < limit {
            return None;
        }
        let asked = requested.unwrap_or(super::DEFAULT_MAX_TURNS);
        let message = if asked > limit {
            format!(
                "Exceeded maximum tool call iterations ({limit}; the request asked for {asked}, above the engine's cap of {limit})"
            )
        } else {
            format!("Exceeded maximum tool call iterations ({limit})")
        };
        Some(genkit_core::Error::new(
            genkit_core::StatusCode::Aborted,
            message,
        ))
    }
}

/// Options for one `generate` call. Start from [`GenerateOptions::prompt`],
/// [`GenerateOptions::messages`] or [`GenerateOptions::new`] and chain setters.
#[derive(Clone, Default)]
pub struct GenerateOptions {
    /// The model; the registry's default model when `None`.
    pub model: Option<ModelRef>,
    /// A system message put first.
    pub system: Option<Vec<Part>>,
    /// Conversation history.
    pub messages: Vec<Message>,
    /// A user message put last.
    pub prompt: Option<Vec<Part>>,
    /// Documents for grounding.
    pub docs: Vec<DocumentData>,
    /// Tools the model may call.
    pub tools: Vec<ToolArg>,
    /// Resources (names of `/resource/` actions) tried first when a
    /// `resource` part of the messages is replaced by its content; any
    /// registered resource serving the URI is used otherwise.
    pub resources: Vec<String>,
    /// Whether the model must, may or must not call tools. A forced choice
    /// (`required`) applies to every turn of the tool loop unless
    /// `tool_choice_once` is set, so a loop forced on every turn cannot end
    /// with a text answer (it ends at `max_turns`).
    pub tool_choice: Option<ToolChoice>,
    /// Applies `tool_choice` to the first turn only; later turns use `auto`
    /// (see [`tool_choice_once`](Self::tool_choice_once)).
    pub tool_choice_once: bool,
    /// Model configuration.
    pub config: Option<Value>,
    /// Structured output.
    pub output: Option<GenerateActionOutputConfig>,
    /// Answers to interrupted tool calls.
    pub resume: Option<GenerateActionResume>,
    /// Return tool requests instead of running tools.
    pub return_tool_requests: Option<bool>,
    /// Limit of tool-loop turns (default 5; never more than the cap in
    /// `limits`, 100 unless raised).
    pub max_turns: Option<u32>,
    /// Name of the span of each turn (default `generate`).
    pub step_name: Option<String>,
    /// Generate-level middleware, outermost first.
    pub middleware: Vec<Arc<dyn GenerateMiddleware>>,
    /// Action context for the model and tools (inherited when `None`).
    pub context: Option<ActionContext>,
    /// Cancels the call.
    pub cancel: Option<CancellationToken>,
    /// What a failing tool does.
    pub tool_errors: ToolErrorPolicy,
    /// Limits of the tool loop (turn cap, tool concurrency).
    pub limits: LoopLimits,
}

impl std::fmt::Debug for GenerateOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenerateOptions")
            .field("model", &self.model)
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl GenerateOptions {
    /// Empty options (add a prompt or messages before generating).
    pub fn new() -> Self {
        Self::default()
    }

    /// Options with a user prompt.
    pub fn prompt(prompt: impl IntoParts) -> Self {
        Self::new().with_prompt(prompt)
    }

    /// Options with a conversation history.
    pub fn messages(messages: impl IntoIterator<Item = Message>) -> Self {
        Self::new().with_messages(messages)
    }

    /// Sets the user prompt.
    pub fn with_prompt(mut self, prompt: impl IntoParts) -> Self {
        self.prompt = Some(prompt.into_parts());
        self
    }

    /// Sets the history.
    pub fn with_messages(mut self, messages: impl IntoIterator<Item = Message>) -> Self {
        self.messages = messages.into_iter().collect();
        self
    }

    /// Appends one message to the history.
    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Sets the model (a name, a [`ModelRef`] or a [`Model`](genkit_model::model::Model)).
    pub fn model(mut self, model: impl Into<ModelRef>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the system prompt.
    pub fn system(mut self, system: impl IntoParts) -> Self {
        self.system = Some(system.into_parts());
        self
    }

    /// Adds documents.
    pub fn docs(mut self, docs: impl IntoIterator<Item = DocumentData>) -> Self {
        self.docs.extend(docs);
        self
    }

    /// Adds a tool (by name or value).
    pub fn tool(mut self, tool: impl Into<ToolArg>) -> Self {
        self.tools.push(tool.into());
        self
    }

    /// Names resources to try first for the messages' `resource` parts
    /// (Genkit JS's `resources`): each part is replaced by the content of
    /// the resource serving its URI before the model sees it.
    pub fn resources<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.resources.extend(names.into_iter().map(Into::into));
        self
    }

    /// Adds tools.
    pub fn tools<T: Into<ToolArg>>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Sets the tool choice for every turn of the tool loop.
    ///
    /// `Required` forces a tool call on *every* turn, as in Genkit JS: the
    /// model can never answer with text, and the loop ends `ABORTED` at
    /// `max_turns` unless tools interrupt or `return_tool_requests` is set.
    /// To force a tool only at the start, use
    /// [`tool_choice_once`](Self::tool_choice_once).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self.tool_choice_once = false;
        self
    }

    /// Sets the tool choice for the first turn only: after the tools of that
    /// turn ran, a forced choice (`Required`) becomes `Auto`, so the model
    /// can answer. Genkit JS has no such option yet; it is the `required-once`
    /// its maintainers proposed (genkit-ai/genkit#1886).
    pub fn tool_choice_once(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self.tool_choice_once = true;
        self
    }

    /// Sets the model config as JSON.
    pub fn config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Sets the model config from a typed value.
    pub fn config_from<C: Serialize>(mut self, config: &C) -> Result<Self> {
        self.config = Some(serde_json::to_value(config)?);
        Ok(self)
    }

    fn output_mut(&mut self) -> &mut GenerateActionOutputConfig {
        self.output
            .get_or_insert_with(GenerateActionOutputConfig::default)
    }

    /// Asks for JSON output of type `T` (schema derived from `T`); read it
    /// with `response.output::<T>()`.
    pub fn output<T: JsonSchema>(mut self) -> Self {
        self.output_mut().json_schema = Some(genkit_core::schema::schema_for::<T>());
        self
    }

    /// Sets the output schema as raw JSON schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_mut().json_schema = Some(schema);
        self
    }

    /// Sets the output format: a built-in ([`OutputFormat::Json`], `Array`,
    /// `Enum`, `Jsonl`, `Text`) or one registered with
    /// [`define_format`](genkit_model::formats::define_format), by value or by name
    /// (`"json"`, `"myFormat"`).
    pub fn output_format(mut self, format: impl Into<OutputFormat>) -> Self {
        self.output_mut().format = Some(format.into().into());
        self
    }

    /// Overrides (`"..."`), forces (`true`) or suppresses (`false`) format instructions.
    pub fn output_instructions(mut self, instructions: impl Into<OutputInstructions>) -> Self {
        self.output_mut().instructions = Some(instructions.into());
        self
    }

    /// Asks for natively constrained output where the model supports it.
    pub fn constrained(mut self, constrained: bool) -> Self {
        self.output_mut().constrained = Some(constrained);
        self
    }

    /// Resumes after an interrupt with tool responses (from [`Tool::respond`](genkit_model::tool::Tool::respond)).
    pub fn resume_respond(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        let resume = self.resume.get_or_insert_with(Default::default);
        resume.respond.get_or_insert_with(Vec::new).extend(parts);
        self
    }

    /// Resumes after an interrupt by re-running tools (from [`Tool::restart`](genkit_model::tool::Tool::restart)).
    pub fn resume_restart(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        let resume = self.resume.get_or_insert_with(Default::default);
        resume.restart.get_or_insert_with(Vec::new).extend(parts);
        self
    }

    /// Metadata recorded on the resumed tool message.
    pub fn resume_metadata(mut self, metadata: Metadata) -> Self {
        self.resume.get_or_insert_with(Default::default).metadata = Some(metadata);
        self
    }

    /// Returns tool requests to the caller instead of running them.
    pub fn return_tool_requests(mut self, on: bool) -> Self {
        self.return_tool_requests = Some(on);
        self
    }

    /// Limits the tool loop (default 5 turns). A limit above the cap of
    /// [`limits`](Self::limits) (100 unless raised) is lowered to the cap.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Names the span of each turn.
    pub fn step_name(mut self, name: impl Into<String>) -> Self {
        self.step_name = Some(name.into());
        self
    }

    /// Adds generate-level middleware.
    pub fn use_middleware(mut self, middleware: impl GenerateMiddleware) -> Self {
        self.middleware.push(Arc::new(middleware));
        self
    }

    /// Adds model middleware (retry, fallback ...) to this call's model chain.
    pub fn use_model_middleware(mut self, middleware: impl ModelMiddleware) -> Self {
        self.middleware.push(Arc::new(ModelHook(middleware)));
        self
    }

    /// Sets the action context.
    pub fn context(mut self, context: ActionContext) -> Self {
        self.context = Some(context);
        self
    }

    /// Sets the cancellation token.
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Sets the tool loop's limits (turn cap, tool concurrency).
    pub fn limits(mut self, limits: LoopLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Chooses what a failing tool does.
    pub fn tool_errors(mut self, policy: ToolErrorPolicy) -> Self {
        self.tool_errors = policy;
        self
    }

    /// The messages sent: system, then history, then prompt. Empty is
    /// `INVALID_ARGUMENT`.
    fn take_messages(&mut self) -> Result<Vec<Message>> {
        let mut out = Vec::with_capacity(self.messages.len() + 2);
        if let Some(system) = self.system.take() {
            out.push(Message::new(Role::System, system));
        }
        out.append(&mut self.messages);
        if let Some(prompt) = self.prompt.take() {
            out.push(Message::new(Role::User, prompt));
        }
        if out.is_empty() {
            return Err(Error::invalid_argument(
                "at least one message is required in generate request",
            ));
        }
        Ok(out)
    }

    /// The serializable options (Genkit's `toGenerateActionOptions`), given
    /// the names the tools resolved to.
    pub fn to_action_options(&self, tool_names: Vec<String>) -> Result<GenerateActionOptions> {
        self.clone().into_action_options(tool_names)
    }

    /// [`to_action_options`](Self::to_action_options), taking the messages,
    /// documents and output options instead of copying them.
    pub(crate) fn into_action_options(
        mut self,
        tool_names: Vec<String>,
    ) -> Result<GenerateActionOptions> {
        let mut config = serde_json::Map::new();
        if let Some(m) = &self.model {
            if let Some(v) = &m.version {
                config.insert("version".into(), Value::from(v.clone()));
            }
            if let Some(Value::Object(c)) = &m.config {
                config.extend(
                    c.iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
        }
        match &self.config {
            Some(Value::Object(c)) => config.extend(
                c.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone())),
            ),
            Some(Value::Null) | None => {}
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "config must be an object, got {other}"
                )));
            }
        }
        let mut output = self.output.take();
        if let Some(o) = &mut output
            && o.json_schema.is_some()
            && o.format.is_none()
        {
            o.format = Some("json".into());
        }
        let resume = self.resume.take().map(|r| GenerateActionResume {
            respond: Some(r.respond.unwrap_or_default()),
            restart: Some(r.restart.unwrap_or_default()),
            metadata: r.metadata,
        });
        Ok(GenerateActionOptions {
            messages: self.take_messages()?,
            model: self.model.map(|m| m.name),
            docs: (!self.docs.is_empty()).then_some(self.docs),
            tools: (!tool_names.is_empty()).then_some(tool_names),
            resources: (!self.resources.is_empty()).then(|| std::mem::take(&mut self.resources)),
            tool_choice: self.tool_choice,
            // Always an object, as Genkit JS's `generate` sends it.
            config: Some(Value::Object(config)),
            output,
            resume,
            return_tool_requests: self.return_tool_requests,
            max_turns: self.max_turns,
            step_name: self.step_name,
            middleware: None,
        })
    }
}
