//! Tool calling: what the model is told about the tools, the grammar that
//! keeps its answer either text or a valid call, and the call read back as
//! a Genkit `toolRequest` part (generate's tool loop then runs the tool).
//!
//! The convention for templates without a tool section (SmolLM2's ChatML):
//! the system prompt lists the tools (name, description, input schema) and
//! says that a call is an answer made of one JSON object
//! `{"name": "<tool>", "arguments": {…}}`. A template with a tool section
//! gets the tools itself, and the call is the same object between
//! `<tool_call>` and `</tool_call>` lines, as those templates teach.
//! Either way the grammar makes the call's `name` one of the tools and its
//! `arguments` valid for that tool's input schema.

use crate::constrained::{CALL_CLOSE, CALL_OPEN, CallSyntax, Grammar};
use genkit_model::types::{
    GenerateRequest, Message, Part, PartKind, Role, ToolChoice, ToolDefinition, ToolRequest,
};
use serde_json::{Value, json};

/// The tools a request offers, and whether one must be called.
#[derive(Debug, Clone)]
pub(crate) struct ToolUse {
    pub tools: Vec<ToolDefinition>,
    pub required: bool,
    pub syntax: CallSyntax,
}

impl ToolUse {
    /// The request's tools, unless it has none or forbids calling them
    /// (`toolChoice: none`).
    pub fn from_request(request: &GenerateRequest, syntax: CallSyntax) -> Option<Self> {
        let tools = request.tools.as_deref().filter(|t| !t.is_empty())?;
        let required = match request.tool_choice {
            Some(ToolChoice::None) => return None,
            Some(ToolChoice::Required) => true,
            // `auto`, unset, or a choice this plugin does not know.
            _ => false,
        };
        Some(Self {
            tools: tools.to_vec(),
            required,
            syntax,
        })
    }

    /// The grammar of the answer: a call, or (unless a call is required)
    /// `answer` (free text when `None`).
    pub fn grammar(&self, answer: Option<Grammar>) -> Grammar {
        Grammar::Tools {
            tools: self
                .tools
                .iter()
                .map(|t| {
                    let input = t
                        .input_schema
                        .clone()
                        .unwrap_or_else(|| json!({"type": "object"}));
                    (t.name.clone(), input)
                })
                .collect(),
            answer: answer.map(Box::new),
            required: self.required,
            syntax: self.syntax,
        }
    }

    /// The conversation with the tools described, for templates without a
    /// tool section: the description joins the first system message, or
    /// becomes one.
    pub fn prepare(&self, messages: &[Message]) -> Vec<Message> {
        let mut messages = messages.to_vec();
        if self.syntax == CallSyntax::Tagged {
            return messages;
        }
        let text = self.system_text();
        match messages.first_mut().filter(|m| m.role == Role::System) {
            Some(system) => system.content.push(Part::text(format!("\n\n{text}"))),
            None => messages.insert(0, Message::system(text)),
        }
        messages
    }

    fn system_text(&self) -> String {
        let mut text = String::from("You can call these tools:\n");
        for tool in &self.tools {
            let input = tool
                .input_schema
                .as_ref()
                .map_or_else(|| "{}".to_owned(), Value::to_string);
            text.push_str(&format!(
                "- {}: {} Arguments (JSON Schema): {input}\n",
                tool.name, tool.description
            ));
        }
        text.push_str(&format!(
            "To call a tool, answer with only a JSON object: {}.",
            call_text("<tool name>", &json!({})).replace("{}", "{<arguments>}")
        ));
        if self.required {
            text.push_str(" Call one of the tools now.");
        } else {
            text.push_str(" Otherwise answer in plain text.");
        }
        text
    }

    /// Whether a streamed answer starting with `text` (spaces aside) may be
    /// a call, which is then not streamed as text.
    pub fn may_be_call(&self, text: &str) -> bool {
        let start = text.trim_start();
        // A tagged call whose tags are control tokens starts with its JSON.
        start.starts_with('{') || (self.syntax == CallSyntax::Tagged && start.starts_with('<'))
    }

    /// The answer as message parts: a `toolRequest` when it is a call of
    /// one of the tools, else the text.
    pub fn parts(&self, text: &str) -> Vec<Part> {
        match self.parse_call(text) {
            Some(call) => vec![Part::tool_request(call)],
            None => vec![Part::text(text)],
        }
    }

    fn parse_call(&self, text: &str) -> Option<ToolRequest> {
        let body = match self.syntax {
            CallSyntax::Json => text.trim(),
            // Tags that are control tokens are not in the decoded text.
            CallSyntax::Tagged => {
                let text = text.trim();
                let text = text.strip_prefix(CALL_OPEN.trim()).unwrap_or(text);
                text.strip_suffix(CALL_CLOSE.trim()).unwrap_or(text).trim()
            }
        };
        let Value::Object(mut call) = serde_json::from_str(body).ok()? else {
            return None;
        };
        let name = call.get("name")?.as_str()?.to_owned();
        if !self.tools.iter().any(|t| t.name == name) {
            return None;
        }
        let arguments = call.remove("arguments").unwrap_or_else(|| json!({}));
        Some(ToolRequest::new(name, arguments))
    }
}

/// A call as the JSON convention writes it.
pub(crate) fn call_text(name: &str, arguments: &Value) -> String {
    json!({ "name": name, "arguments": arguments }).to_string()
}

/// Whether an answer's parts are a call.
pub(crate) fn is_call(parts: &[Part]) -> bool {
    !parts.is_empty()
        && parts
            .iter()
            .all(|p| matches!(p.kind, PartKind::ToolRequest(_)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather(syntax: CallSyntax, choice: Option<ToolChoice>) -> ToolUse {
        let tool =
            ToolDefinition::new("get_weather", "Gets the weather.").with_input_schema(json!({
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            }));
        let mut request =
            GenerateRequest::new(vec![Message::user("Weather in Paris?")]).with_tools(vec![tool]);
        request.tool_choice = choice;
        ToolUse::from_request(&request, syntax).unwrap()
    }

    #[test]
    fn the_convention_is_in_the_system_prompt() {
        let tools = weather(CallSyntax::Json, Some(ToolChoice::Required));
        let messages = tools.prepare(&[Message::user("Weather in Paris?")]);
        assert_eq!(messages[0].role, Role::System);
        let text = messages[0].text();
        assert!(text.contains("- get_weather: Gets the weather."), "{text}");
        assert!(
            text.contains(r#"{"name":"<tool name>","arguments":{<arguments>}}"#),
            "{text}"
        );
        assert!(text.ends_with("Call one of the tools now."), "{text}");
        // Templates with a tool section describe the tools themselves.
        let tagged = weather(CallSyntax::Tagged, None);
        assert_eq!(tagged.prepare(&messages[1..]).len(), 1);
    }

    #[test]
    fn calls_of_known_tools_become_tool_requests() {
        let tools = weather(CallSyntax::Json, None);
        let parts = tools.parts(r#" {"name": "get_weather", "arguments": {"city": "Paris"}}"#);
        let call = parts[0].as_tool_request().unwrap();
        assert_eq!(call.name, "get_weather");
        assert_eq!(call.input, Some(json!({"city": "Paris"})));
        assert!(is_call(&parts));
        let unknown = tools.parts(r#"{"name": "other", "arguments": {}}"#);
        assert_eq!(
            unknown[0].as_text(),
            Some(r#"{"name": "other", "arguments": {}}"#)
        );
        assert!(!is_call(&tools.parts("It is sunny.")));
        assert!(tools.may_be_call("  {\"na"));
        assert!(!tools.may_be_call("It"));

        let tagged = weather(CallSyntax::Tagged, None);
        let parts = tagged.parts(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        );
        assert_eq!(
            parts[0].as_tool_request().unwrap().input,
            Some(json!({"city": "Oslo"}))
        );
    }

    #[test]
    fn tool_choice_none_offers_no_tools() {
        let request = GenerateRequest::new(vec![Message::user("x")])
            .with_tools(vec![ToolDefinition::new("f", "")])
            .with_tool_choice(ToolChoice::None);
        assert!(ToolUse::from_request(&request, CallSyntax::Json).is_none());
    }
}
