//! Input of the `/util/generate` action: [`GenerateActionOptions`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Metadata;
use super::document::DocumentData;
use super::message::Message;
use super::model::ToolChoice;
use super::part::Part;

/// The `instructions` output option: `true`/`false` to force or suppress the format's
/// instructions, or a string to use instead of them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum OutputInstructions {
    /// Force (`true`) or suppress (`false`) the format's own instructions.
    Enabled(bool),
    /// Custom instructions text.
    Custom(String),
}

impl OutputInstructions {
    /// True unless this is `false` (an empty string also counts as off, as in JS).
    pub fn is_enabled(&self) -> bool {
        match self {
            OutputInstructions::Enabled(b) => *b,
            OutputInstructions::Custom(s) => !s.is_empty(),
        }
    }
}

impl From<bool> for OutputInstructions {
    fn from(value: bool) -> Self {
        OutputInstructions::Enabled(value)
    }
}

impl From<&str> for OutputInstructions {
    fn from(value: &str) -> Self {
        OutputInstructions::Custom(value.to_owned())
    }
}

impl From<String> for OutputInstructions {
    fn from(value: String) -> Self {
        OutputInstructions::Custom(value)
    }
}

/// Requested output of a generate call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateActionOutputConfig {
    /// Format name (`json`, `text`, `array`, `enum`, `jsonl`, or a custom one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// MIME type of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Format instructions: on/off, or custom text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<OutputInstructions>,
    /// JSON Schema of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_schema: Option<Value>,
    /// Ask the model to enforce the schema natively.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained: Option<bool>,
}

impl GenerateActionOutputConfig {
    /// Output in `format`.
    pub fn format(format: impl Into<String>) -> Self {
        Self {
            format: Some(format.into()),
            ..Self::default()
        }
    }

    /// Output conforming to `schema` (the format defaults to `json`).
    pub fn schema(schema: Value) -> Self {
        Self {
            json_schema: Some(schema),
            ..Self::default()
        }
    }

    /// Sets the format.
    pub fn with_format(mut self, format: impl Into<String>) -> Self {
        self.format = Some(format.into());
        self
    }

    /// Sets the schema.
    pub fn with_json_schema(mut self, schema: Value) -> Self {
        self.json_schema = Some(schema);
        self
    }

    /// Sets the instructions option.
    pub fn with_instructions(mut self, instructions: impl Into<OutputInstructions>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets `constrained`.
    pub fn with_constrained(mut self, constrained: bool) -> Self {
        self.constrained = Some(constrained);
        self
    }

    /// Sets the content type.
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.content_type = Some(content_type.into());
        self
    }
}

/// How to resume a generation that stopped on interrupts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GenerateActionResume {
    /// Tool responses answering the interrupted tool requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub respond: Option<Vec<Part>>,
    /// Tool requests to run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart: Option<Vec<Part>>,
    /// Extra context for the resumed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// A middleware by registered name plus its config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MiddlewareRef {
    /// Registered middleware name.
    pub name: String,
    /// Its configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
}

/// Input of the `/util/generate` action: everything one `generate` call needs, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GenerateActionOptions {
    /// Model name (e.g. `googleai/gemini-2.5-flash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Context documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<Vec<DocumentData>>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Names of tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Names of resources that resource parts may refer to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
    /// How tools may be used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Model configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    /// Requested output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<GenerateActionOutputConfig>,
    /// Resume an interrupted generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<GenerateActionResume>,
    /// Return tool requests instead of running them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_tool_requests: Option<bool>,
    /// Maximum tool-call turns (Genkit's default is 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Span name for this call in traces (default `generate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_name: Option<String>,
    /// Middleware to apply, by name.
    #[serde(default, rename = "use", skip_serializing_if = "Option::is_none")]
    pub middleware: Option<Vec<MiddlewareRef>>,
}

impl GenerateActionOptions {
    /// Options with these messages and nothing else.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the model name.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Appends a message.
    pub fn with_message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Sets the tool names.
    pub fn with_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the resource names.
    pub fn with_resources<I, S>(mut self, resources: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.resources = Some(resources.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Sets the model config.
    pub fn with_config(mut self, config: Value) -> Self {
        self.config = Some(config);
        self
    }

    /// Sets the context documents.
    pub fn with_docs(mut self, docs: Vec<DocumentData>) -> Self {
        self.docs = Some(docs);
        self
    }

    /// Sets the output options.
    pub fn with_output(mut self, output: GenerateActionOutputConfig) -> Self {
        self.output = Some(output);
        self
    }

    /// Sets the resume options.
    pub fn with_resume(mut self, resume: GenerateActionResume) -> Self {
        self.resume = Some(resume);
        self
    }

    /// Sets `returnToolRequests`.
    pub fn with_return_tool_requests(mut self, value: bool) -> Self {
        self.return_tool_requests = Some(value);
        self
    }

    /// Sets `maxTurns`.
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = Some(turns);
        self
    }

    /// Sets the step name.
    pub fn with_step_name(mut self, name: impl Into<String>) -> Self {
        self.step_name = Some(name.into());
        self
    }

    /// Adds a middleware reference.
    pub fn with_middleware(mut self, middleware: MiddlewareRef) -> Self {
        self.middleware
            .get_or_insert_with(Vec::new)
            .push(middleware);
        self
    }
}
