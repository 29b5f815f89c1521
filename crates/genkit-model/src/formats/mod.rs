//! Output formats: how a generate call asks for structured output and reads it back.
//!
//! A request names its format with an [`OutputFormat`]; formats are found in the
//! registry ([`define_format`] adds one, as Genkit JS's `defineFormat` does; the
//! built-ins are always there) or in a [`Formats`] set, both [`FormatSource`]s.
//!
//! A [`Format`] (`json`, `array`, `enum`, `jsonl`, `text`, or your own) has a name, a
//! [`FormatConfig`] merged into the request's output options, and makes a
//! [`FormatHandler`] for a given JSON Schema. The handler supplies instructions text
//! for the model and parses a complete [`Message`] or a streamed chunk (with the chunks
//! before it, so partial output can be parsed while streaming).
//!
//! The functions here also decide *where and when* instructions go into a request:
//! [`apply_format`] (generate level: the format's instructions, only when the format
//! asks for them or the caller sets `instructions`) and
//! [`simulate_constrained_generation`] (model level: schema instructions for models
//! without native constrained output). Both place text through [`inject_instructions`].

mod array;
mod enumeration;
mod incremental;
mod json;
mod jsonl;
mod output_format;
mod registry;
mod response_output;
mod text;

use std::sync::Arc;

use genkit_core::StatusCode;
use serde_json::Value;

pub use array::ArrayFormat;
pub use enumeration::EnumFormat;
pub use json::JsonFormat;
pub use jsonl::JsonlFormat;
pub use output_format::OutputFormat;
pub use registry::{FormatSource, builtin_formats, define_format, lookup_format};
pub use response_output::format_handler;
pub use text::TextFormat;

use crate::extract::ExtractError;
use crate::types::{
    ConstrainedSupport, GenerateActionOptions, GenerateActionOutputConfig, GenerateRequest,
    GenerateResponse, GenerateResponseChunk, Message, ModelSupports, OutputConfig,
    OutputInstructions, Part, Role,
};

/// Errors of format lookup, handler creation and output parsing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormatError {
    /// No format with this name is registered.
    #[error("unknown output format '{0}'")]
    UnknownFormat(String),
    /// A format with this name is already registered.
    #[error("output format '{0}' is already registered")]
    DuplicateFormat(String),
    /// The schema does not fit the format (e.g. `array` without an array schema).
    #[error("{0}")]
    InvalidSchema(String),
    /// The model output cannot be parsed in this format.
    #[error("model output is not valid {format}: {source}")]
    InvalidOutput {
        /// Format name.
        format: String,
        /// The parse failure.
        source: ExtractError,
    },
}

impl FormatError {
    /// Genkit's canonical status for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            FormatError::DuplicateFormat(_) => StatusCode::AlreadyExists,
            FormatError::UnknownFormat(_)
            | FormatError::InvalidSchema(_)
            | FormatError::InvalidOutput { .. } => StatusCode::InvalidArgument,
        }
    }

    /// Genkit's canonical status name for this error.
    pub fn status_name(&self) -> &'static str {
        self.status().name()
    }
}

impl From<FormatError> for genkit_core::Error {
    /// The error with its [`status`](FormatError::status), its text as the
    /// message, and itself as the source.
    fn from(error: FormatError) -> Self {
        genkit_core::Error::from_source(error.status(), error)
    }
}

/// Output options a format contributes to a request (explicit options win).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatConfig {
    /// Format name to put in the request, if the format sets one.
    pub format: Option<String>,
    /// MIME type of the output.
    pub content_type: Option<String>,
    /// Whether the model should enforce the schema natively.
    pub constrained: Option<bool>,
    /// `Some(false)`: the format's instructions are injected only when the caller asks
    /// (`instructions: true` or a string); the model's constrained generation (native or
    /// simulated) carries the schema instead. `json` sets this.
    pub default_instructions: Option<bool>,
}

impl FormatConfig {
    /// Whether instructions are injected unless the caller disables them.
    pub fn injects_default_instructions(&self) -> bool {
        self.default_instructions != Some(false)
    }
}

/// Chunk being parsed, plus the chunks streamed before it.
#[derive(Debug, Clone, Copy)]
pub struct ChunkParseContext<'a> {
    /// The new chunk.
    pub chunk: &'a GenerateResponseChunk,
    /// Chunks streamed before it. Only those with the same `index` (the same message)
    /// count towards the accumulated text.
    pub previous_chunks: &'a [GenerateResponseChunk],
}

impl<'a> ChunkParseContext<'a> {
    /// Context for `chunk` after `previous_chunks`.
    pub fn new(
        chunk: &'a GenerateResponseChunk,
        previous_chunks: &'a [GenerateResponseChunk],
    ) -> Self {
        Self {
            chunk,
            previous_chunks,
        }
    }

    fn same_message(&self) -> impl Iterator<Item = &'a GenerateResponseChunk> {
        let index = self.chunk.index;
        self.previous_chunks
            .iter()
            .filter(move |c| c.index == index)
    }

    /// Whether any earlier chunk of the same message exists.
    pub fn has_previous(&self) -> bool {
        self.same_message().next().is_some()
    }

    /// Text of this chunk.
    pub fn text(&self) -> String {
        self.chunk.text()
    }

    /// Text of the earlier chunks of the same message.
    pub fn previous_text(&self) -> String {
        self.same_message().map(|c| c.text()).collect()
    }

    /// Text of the earlier chunks and this one.
    pub fn accumulated_text(&self) -> String {
        let mut text = self.previous_text();
        text.push_str(&self.chunk.text());
        text
    }
}

/// A format's parser and instructions for one schema.
pub trait FormatHandler: Send + Sync {
    /// Text telling the model how to format its output, if any.
    fn instructions(&self) -> Option<String>;

    /// Parses a complete message.
    fn parse_message(&self, message: &Message) -> Result<Value, FormatError>;

    /// Parses streamed output. `Ok(None)` means nothing can be reported for this chunk.
    fn parse_chunk(&self, context: &ChunkParseContext<'_>) -> Result<Option<Value>, FormatError>;

    /// How a streamed message is parsed (asked once per message). The
    /// default, [`StreamParsing::Chunks`], calls
    /// [`parse_chunk`](Self::parse_chunk) at every chunk with the chunks so
    /// far, which costs time in proportion to the text so far; the built-in
    /// formats choose cheaper ways that give the same outputs.
    fn stream_parsing(&self) -> StreamParsing {
        StreamParsing::Chunks
    }
}

/// Parses a streamed message's text so far ([`StreamParsing::Text`]).
pub type TextParser = Arc<dyn Fn(&str) -> Option<Value> + Send + Sync>;

/// How a [`FormatHandler`] parses a streamed message.
pub enum StreamParsing {
    /// [`FormatHandler::parse_chunk`] for each chunk as it arrives.
    Chunks,
    /// The output depends only on the message's text so far, and is
    /// computed from it when a chunk's output is read (and not for chunks
    /// whose output nobody reads). For outputs that repeat the whole value
    /// so far, like `json`'s.
    Text(TextParser),
    /// A parser that keeps its place in the message between chunks.
    Incremental(Box<dyn IncrementalParser>),
}

impl std::fmt::Debug for StreamParsing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StreamParsing::Chunks => "Chunks",
            StreamParsing::Text(_) => "Text",
            StreamParsing::Incremental(_) => "Incremental",
        })
    }
}

/// A stateful parser of one streamed message ([`StreamParsing::Incremental`]).
pub trait IncrementalParser: Send {
    /// The output for the chunk that made the message's text `text`: the
    /// text given last time with the chunk's text appended.
    fn push(&mut self, text: &str) -> Option<Value>;
}

/// An output format.
pub trait Format: Send + Sync {
    /// Registered name (`json`, `array`, ...).
    fn name(&self) -> &str;

    /// Output options this format contributes.
    fn config(&self) -> FormatConfig;

    /// A handler for `schema` (the output JSON Schema, if any). Fails when the schema
    /// does not fit the format.
    fn handler(&self, schema: Option<&Value>) -> Result<Box<dyn FormatHandler>, FormatError>;
}

/// The built-in formats: `json`, `array`, `text`, `enum`, `jsonl`.
pub fn default_formats() -> Vec<Arc<dyn Format>> {
    vec![
        Arc::new(JsonFormat),
        Arc::new(ArrayFormat),
        Arc::new(TextFormat),
        Arc::new(EnumFormat),
        Arc::new(JsonlFormat),
    ]
}

/// Formats by name. [`Formats::default`] holds the built-in ones.
#[derive(Clone)]
pub struct Formats {
    formats: Vec<Arc<dyn Format>>,
}

impl std::fmt::Debug for Formats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl Default for Formats {
    fn default() -> Self {
        Self {
            formats: default_formats(),
        }
    }
}

impl Formats {
    /// No formats at all.
    pub fn empty() -> Self {
        Self {
            formats: Vec::new(),
        }
    }

    /// Adds a format; its name must be new.
    pub fn register(&mut self, format: Arc<dyn Format>) -> Result<(), FormatError> {
        if self.get(format.name()).is_some() {
            return Err(FormatError::DuplicateFormat(format.name().to_owned()));
        }
        self.formats.push(format);
        Ok(())
    }

    /// The format called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Format>> {
        self.formats.iter().find(|f| f.name() == name).cloned()
    }

    /// Names of all formats, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.formats.iter().map(|f| f.name())
    }

    /// The format for `format` / `has_schema` (see [`resolve_format_name`]).
    pub fn resolve(
        &self,
        format: Option<&str>,
        has_schema: bool,
    ) -> Result<Option<Arc<dyn Format>>, FormatError> {
        match resolve_format_name(format, has_schema) {
            None => Ok(None),
            Some(name) => self
                .get(name)
                .map(Some)
                .ok_or_else(|| FormatError::UnknownFormat(name.to_owned())),
        }
    }

    /// The format requested by generate output options, if any.
    pub fn resolve_output(
        &self,
        output: Option<&GenerateActionOutputConfig>,
    ) -> Result<Option<Arc<dyn Format>>, FormatError> {
        match output {
            None => Ok(None),
            Some(o) => self.resolve(o.format.as_deref(), o.json_schema.is_some()),
        }
    }
}

/// Which format a request uses: the named one; `json` when there is a schema but no
/// name; none otherwise.
pub fn resolve_format_name(format: Option<&str>, has_schema: bool) -> Option<&str> {
    match format {
        Some(name) => Some(name),
        None if has_schema => Some("json"),
        None => None,
    }
}

/// The instructions for a request: a custom string wins; `false` means none; otherwise
/// the format handler's own instructions for `schema` (none without a format).
pub fn resolve_instructions(
    format: Option<&dyn Format>,
    schema: Option<&Value>,
    option: Option<&OutputInstructions>,
) -> Result<Option<String>, FormatError> {
    match option {
        Some(OutputInstructions::Custom(text)) => return Ok(Some(text.clone())),
        Some(OutputInstructions::Enabled(false)) => return Ok(None),
        _ => {}
    }
    match format {
        None => Ok(None),
        Some(f) => Ok(f.handler(schema)?.instructions()),
    }
}

/// Whether format instructions go into the messages: yes unless the format opts out of
/// default instructions (`json`) and the caller did not ask for them.
pub fn should_inject_format_instructions(
    config: Option<&FormatConfig>,
    output: Option<&GenerateActionOutputConfig>,
) -> bool {
    config.is_none_or(FormatConfig::injects_default_instructions)
        || output
            .and_then(|o| o.instructions.as_ref())
            .is_some_and(OutputInstructions::is_enabled)
}

fn is_output_part(part: &Part) -> bool {
    part.metadata_value("purpose").and_then(Value::as_str) == Some("output")
}

fn is_pending(part: &Part) -> bool {
    part.metadata_value("pending")
        .is_some_and(crate::types::is_truthy)
}

/// Puts `instructions` into the conversation as a text part with metadata
/// `{"purpose": "output"}`. Returns whether anything changed.
///
/// - Nothing happens when `instructions` is empty, or when some message already has a
///   (non-pending) output part: explicit placement wins.
/// - The target is the first `system` message, else the last `user` message; without
///   either nothing happens.
/// - In the target, a placeholder output part (`{"purpose": "output", "pending": true}`,
///   e.g. from a prompt template) is replaced; otherwise the part is appended.
pub fn inject_instructions(messages: &mut [Message], instructions: &str) -> bool {
    if instructions.is_empty() {
        return false;
    }
    let placed = messages
        .iter()
        .flat_map(|m| m.content.iter())
        .any(|p| is_output_part(p) && !is_pending(p));
    if placed {
        return false;
    }
    let target = messages
        .iter()
        .position(|m| m.role == Role::System)
        .or_else(|| messages.iter().rposition(|m| m.role == Role::User));
    let Some(message) = target.and_then(|i| messages.get_mut(i)) else {
        return false;
    };
    let part = Part::text(instructions).with_metadata("purpose", Value::from("output"));
    match message
        .content
        .iter()
        .position(|p| is_output_part(p) && is_pending(p))
    {
        Some(i) => message.content[i] = part,
        None => message.content.push(part),
    }
    true
}

/// Generate-level format handling for `/util/generate` options, in place:
///
/// 1. a schema without a format selects `json`;
/// 2. the format is looked up (unknown names are an error);
/// 3. instructions ([`resolve_instructions`]) are injected into the messages when
///    [`should_inject_format_instructions`] says so;
/// 4. the format's config fills output options the caller left unset.
///
/// Returns the resolved format (none when the request has no output options).
pub fn apply_format(
    options: &mut GenerateActionOptions,
    formats: &(impl FormatSource + ?Sized),
) -> Result<Option<Arc<dyn Format>>, FormatError> {
    let Some(output) = options.output.as_mut() else {
        return Ok(None);
    };
    if output.json_schema.is_some() && output.format.is_none() {
        output.format = Some("json".to_owned());
    }
    let Some(format) =
        formats.resolve_format(output.format.as_deref(), output.json_schema.is_some())?
    else {
        return Ok(None);
    };
    let instructions = resolve_instructions(
        Some(format.as_ref()),
        output.json_schema.as_ref(),
        output.instructions.as_ref(),
    )?;
    let config = format.config();
    if should_inject_format_instructions(Some(&config), Some(output))
        && let Some(text) = instructions.as_deref()
    {
        inject_instructions(&mut options.messages, text);
    }
    if let Some(output) = options.output.as_mut() {
        output.format = output.format.take().or(config.format);
        output.content_type = output.content_type.take().or(config.content_type);
        output.constrained = output.constrained.or(config.constrained);
    }
    Ok(Some(format))
}

/// The instructions used to simulate constrained generation for `schema`.
pub fn constrained_instructions(schema: &Value) -> String {
    format!(
        "Output should be in JSON format and conform to the following schema:\n\n```\n{}\n```\n",
        serde_json::to_string(schema).unwrap_or_default()
    )
}

/// Whether a model with `supports` needs constrained generation simulated for
/// `request`: it lacks native support, or supports it only without tools and the
/// request has tools.
pub fn needs_simulated_constraints(
    supports: Option<&ModelSupports>,
    request: &GenerateRequest,
) -> bool {
    match supports.and_then(|s| s.constrained) {
        None | Some(ConstrainedSupport::None) => true,
        Some(ConstrainedSupport::NoTools) => !request.tools().is_empty(),
        Some(ConstrainedSupport::All) => false,
    }
}

/// Model-level simulation of constrained output: when the request asks for
/// `constrained` output with a schema, the schema instructions are injected (unless an
/// output part is already there) and the output options are cleared to
/// `{"constrained": false}`, since the model itself is not constrained. Returns whether
/// the request changed.
pub fn simulate_constrained_generation(request: &mut GenerateRequest) -> bool {
    let Some(output) = request.output.as_ref() else {
        return false;
    };
    let (Some(true), Some(schema)) = (output.constrained, output.schema.as_ref()) else {
        return false;
    };
    let instructions = constrained_instructions(schema);
    inject_instructions(
        Arc::make_mut(&mut request.messages).as_mut_slice(),
        &instructions,
    );
    request.output = Some(OutputConfig {
        constrained: Some(false),
        ..OutputConfig::default()
    });
    true
}

impl GenerateActionOutputConfig {
    /// The model-request output options for these generate options.
    pub fn to_output_config(&self) -> OutputConfig {
        OutputConfig {
            format: self.format.clone(),
            schema: self.json_schema.clone(),
            constrained: self.constrained,
            content_type: self.content_type.clone(),
        }
    }
}

impl GenerateResponse {
    /// Parses the response's message with a format handler (`Ok(None)` without a message).
    pub fn output_with(&self, handler: &dyn FormatHandler) -> Result<Option<Value>, FormatError> {
        self.message().map(|m| handler.parse_message(m)).transpose()
    }
}

/// The `type` of a schema is `expected`, or a type list containing it.
pub(crate) fn schema_type_is(schema: &Value, expected: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == expected,
        Some(Value::Array(ts)) => ts.iter().any(|t| t.as_str() == Some(expected)),
        _ => false,
    }
}

/// Compact JSON of a schema, for instructions.
pub(crate) fn schema_json(schema: &Value) -> String {
    serde_json::to_string(schema).unwrap_or_default()
}
