//! The chat template: Genkit messages rendered into the prompt text the
//! model was trained on, with the GGUF's own Jinja template
//! (`tokenizer.chat_template`) through `minijinja`, so each model gets its
//! own format (ChatML for SmolLM2 and Qwen2, with the default system prompt
//! the template itself adds). A file without a template gets plain ChatML.
//!
//! Tool calls: a template with a tool section (one that reads `tools`, as
//! Qwen2.5's and Hermes-style ones do) gets the tools in Hugging Face's
//! shape and earlier calls as each message's `tool_calls`; the model
//! writes calls between `<tool_call>` lines. Other templates (SmolLM2's)
//! see earlier calls as the JSON object the tool convention asks for (see
//! `tools.rs`).

use crate::constrained::CallSyntax;
use crate::tools::call_text;
use genkit_core::{Error, Result};
use genkit_model::types::{Message, PartKind, Role, ToolDefinition};
use minijinja::{Environment, ErrorKind, context};
use serde::Serialize;
use serde_json::{Value, json};

/// ChatML, for files that carry no template of their own.
const CHATML: &str = "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// A message as chat templates expect it (Hugging Face's convention).
#[derive(Debug, Serialize)]
pub(crate) struct TemplateMessage {
    pub role: &'static str,
    pub content: String,
    /// Earlier tool calls, for templates with a tool section.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<Value>,
}

/// A compiled-on-demand chat template and the tokens it may refer to.
pub(crate) struct ChatTemplate {
    source: String,
    bos_token: String,
    eos_token: String,
    env: Environment<'static>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// The file's template (or ChatML), checked by rendering a sample
    /// conversation so a template this engine cannot run fails at load.
    pub fn new(source: Option<&str>, bos_token: String, eos_token: String) -> Result<Self> {
        let mut env = Environment::new();
        // Templates signal unsupported conversations with this function.
        env.add_function(
            "raise_exception",
            |message: String| -> std::result::Result<String, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
            },
        );
        let template = Self {
            source: source.unwrap_or(CHATML).to_owned(),
            bos_token,
            eos_token,
            env,
        };
        template
            .render_messages(
                &[TemplateMessage {
                    role: "user",
                    content: "Hello".into(),
                    tool_calls: Vec::new(),
                }],
                None,
            )
            .map_err(|e| {
                Error::invalid_argument(format!(
                    "the model's chat template cannot be rendered: {}",
                    e.message()
                ))
            })?;
        Ok(template)
    }

    /// How this template's model writes tool calls: between `<tool_call>`
    /// lines when the template has a tool section, else as bare JSON.
    pub fn call_syntax(&self) -> CallSyntax {
        if self.source.contains("tools") {
            CallSyntax::Tagged
        } else {
            CallSyntax::Json
        }
    }

    /// The prompt for `messages`, ending where the model's answer starts;
    /// `tools` go to templates with a tool section.
    pub fn render(&self, messages: &[Message], tools: Option<&[ToolDefinition]>) -> Result<String> {
        let syntax = self.call_syntax();
        let messages = messages
            .iter()
            .map(|m| template_message(m, syntax))
            .collect::<Result<Vec<_>>>()?;
        if messages.is_empty() {
            return Err(Error::invalid_argument("the request has no messages"));
        }
        let tools = tools.filter(|_| syntax == CallSyntax::Tagged).map(|tools| {
            tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema.clone().unwrap_or_else(|| json!({"type": "object"})),
                        }
                    })
                })
                .collect::<Vec<_>>()
        });
        self.render_messages(&messages, tools)
    }

    fn render_messages(
        &self,
        messages: &[TemplateMessage],
        tools: Option<Vec<Value>>,
    ) -> Result<String> {
        self.env
            .render_str(
                &self.source,
                context! {
                    messages => messages,
                    tools => tools,
                    add_generation_prompt => true,
                    bos_token => &self.bos_token,
                    eos_token => &self.eos_token,
                },
            )
            .map_err(|e| Error::invalid_argument(format!("rendering the chat template: {e:#}")))
    }
}

/// One Genkit message as the template sees it: text, tool calls and tool
/// results; media is not supported by this model, and saying so beats
/// silently dropping it.
fn template_message(message: &Message, syntax: CallSyntax) -> Result<TemplateMessage> {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Model => "assistant",
        Role::Tool => "tool",
        other => {
            return Err(Error::invalid_argument(format!(
                "this local model has no chat role for {other:?} messages"
            )));
        }
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for part in &message.content {
        match &part.kind {
            PartKind::Text(text) => content.push_str(text),
            // Earlier answers' reasoning is not shown to the model again.
            PartKind::Reasoning(_) => {}
            PartKind::ToolRequest(call) => {
                let arguments = call.input.clone().unwrap_or_else(|| json!({}));
                match syntax {
                    CallSyntax::Tagged => tool_calls.push(json!({
                        "type": "function",
                        "function": { "name": call.name, "arguments": arguments },
                    })),
                    CallSyntax::Json => content.push_str(&call_text(&call.name, &arguments)),
                }
            }
            PartKind::ToolResponse(result) => {
                let output = result.output.clone().unwrap_or(Value::Null);
                let text = match syntax {
                    // The result as is: the template wraps it.
                    CallSyntax::Tagged => match output {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                    CallSyntax::Json => {
                        json!({ "name": result.name, "result": output }).to_string()
                    }
                };
                if !content.is_empty() {
                    content.push('\n');
                }
                content.push_str(&text);
            }
            other => {
                return Err(Error::invalid_argument(format!(
                    "this local model reads text only; a {role} message has a `{}` part",
                    other.key()
                )));
            }
        }
    }
    Ok(TemplateMessage {
        role,
        content,
        tool_calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::Part;

    fn chatml() -> ChatTemplate {
        ChatTemplate::new(None, "<s>".into(), "</s>".into()).unwrap()
    }

    #[test]
    fn files_without_a_template_get_chatml() {
        let prompt = chatml()
            .render(
                &[
                    Message::system("Be brief."),
                    Message::user("Hi"),
                    Message::model("Hello"),
                    Message::user("Bye"),
                ],
                None,
            )
            .unwrap();
        assert_eq!(
            prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn templates_see_the_special_tokens_and_can_refuse() {
        let source = "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' %}\
                      {{ raise_exception('no system role') }}{% endif %}{{ m.content }}{% endfor %}";
        let template = ChatTemplate::new(Some(source), "<s>".into(), "</s>".into()).unwrap();
        assert_eq!(
            template.render(&[Message::user("a")], None).unwrap(),
            "<s>a"
        );
        let refused = template.render(&[Message::system("x")], None).unwrap_err();
        assert!(refused.message().contains("no system role"), "{refused}");
    }

    fn tool_turns() -> Vec<Message> {
        use genkit_model::types::{ToolRequest, ToolResponse};
        vec![
            Message::user("Weather in Oslo?"),
            Message::model(vec![Part::tool_request(ToolRequest::new(
                "get_weather",
                serde_json::json!({"city": "Oslo"}),
            ))]),
            Message::tool(vec![Part::tool_response(ToolResponse::new(
                "get_weather",
                serde_json::json!("Rain"),
            ))]),
        ]
    }

    #[test]
    fn tool_turns_without_a_tool_section_are_json_text() {
        let prompt = chatml().render(&tool_turns(), None).unwrap();
        assert_eq!(chatml().call_syntax(), CallSyntax::Json);
        assert!(
            prompt.contains(
                "<|im_start|>assistant\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Oslo\"}}<|im_end|>"
            ),
            "{prompt}"
        );
        assert!(
            prompt.contains(
                "<|im_start|>tool\n{\"name\":\"get_weather\",\"result\":\"Rain\"}<|im_end|>"
            ),
            "{prompt}"
        );
    }

    #[test]
    fn templates_with_a_tool_section_get_tools_and_tool_calls() {
        // The shape of Qwen2.5's tool section, cut down.
        let source = "{% if tools %}TOOLS:{% for t in tools %}{{ t.function.name }};{% endfor %}\n{% endif %}\
                      {% for m in messages %}{{ m.role }}:{{ m.content }}\
                      {% for c in m.tool_calls %}<tool_call>{{ c.function.name }} {{ c.function.arguments | tojson }}</tool_call>{% endfor %}\n\
                      {% endfor %}";
        let template = ChatTemplate::new(Some(source), String::new(), String::new()).unwrap();
        assert_eq!(template.call_syntax(), CallSyntax::Tagged);
        let tools = [ToolDefinition::new("get_weather", "Weather.")];
        let prompt = template.render(&tool_turns(), Some(&tools)).unwrap();
        assert_eq!(
            prompt,
            "TOOLS:get_weather;\nuser:Weather in Oslo?\n\
             assistant:<tool_call>get_weather {\"city\":\"Oslo\"}</tool_call>\ntool:Rain\n"
        );
    }

    #[test]
    fn broken_templates_fail_at_load_and_non_text_parts_are_refused() {
        let broken = ChatTemplate::new(Some("{% for %}"), String::new(), String::new());
        assert!(broken.is_err());
        let media = Message::user(vec![Part::media("data:image/png;base64,AA==", None)]);
        let err = chatml().render(&[media], None).unwrap_err();
        assert!(err.message().contains("`media` part"), "{err}");
        assert!(chatml().render(&[], None).is_err());
    }
}
