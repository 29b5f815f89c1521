//! Conversions between Dotprompt's message types and Genkit's.

use genkit_core::{Error, Result};
use serde_json::Value;

use genkit_model::types::{Message, Metadata, Part, PartKind, Role, ToolRequest, ToolResponse};

/// A rendered Dotprompt message as a Genkit message.
pub(crate) fn message_from_dotprompt(message: dotprompt::Message) -> Result<Message> {
    let role = match message.role {
        dotprompt::Role::User => Role::User,
        dotprompt::Role::Model => Role::Model,
        dotprompt::Role::Tool => Role::Tool,
        dotprompt::Role::System => Role::System,
    };
    let content = parts_from_dotprompt(message.content)?;
    let mut out = Message::new(role, content);
    out.metadata = message.metadata;
    Ok(out)
}

/// Rendered Dotprompt parts as Genkit parts.
pub(crate) fn parts_from_dotprompt(parts: Vec<dotprompt::Part>) -> Result<Vec<Part>> {
    parts.into_iter().map(part_from_dotprompt).collect()
}

fn with_metadata(mut part: Part, metadata: Option<Metadata>) -> Part {
    part.metadata = metadata;
    part
}

/// One part. A pending placeholder (the start of a `{{section}}`) becomes a
/// placeholder part carrying only its metadata (`purpose`, `pending: true`),
/// as in Genkit JS, which
/// is what middleware such as context augmentation looks for.
fn part_from_dotprompt(part: dotprompt::Part) -> Result<Part> {
    use dotprompt::Part as P;
    Ok(match part {
        P::Text(t) => with_metadata(Part::text(t.text), t.metadata),
        P::Media(m) => with_metadata(
            Part::media(m.media.url, m.media.content_type.as_deref()),
            m.metadata,
        ),
        P::Data(d) => with_metadata(Part::data(d.data), d.metadata),
        P::ToolRequest(t) => with_metadata(
            Part::tool_request(ToolRequest {
                reference: t.tool_request.r#ref,
                name: t.tool_request.name,
                input: t.tool_request.input,
                partial: None,
            }),
            t.metadata,
        ),
        P::ToolResponse(t) => with_metadata(
            Part::tool_response(ToolResponse {
                reference: t.tool_response.r#ref,
                name: t.tool_response.name,
                output: t.tool_response.output,
                content: None,
            }),
            t.metadata,
        ),
        P::Pending(p) => with_metadata(Part::new(PartKind::Placeholder), Some(p.metadata)),
        P::Other(map) => serde_json::from_value(Value::Object(map)).map_err(|e| {
            Error::invalid_argument(format!("a rendered part is not valid: {e}")).with_source(e)
        })?,
    })
}

/// Genkit messages as Dotprompt messages (for `{{history}}`).
pub(crate) fn messages_to_dotprompt(messages: &[Message]) -> Result<Vec<dotprompt::Message>> {
    messages
        .iter()
        .map(|m| {
            serde_json::to_value(m)
                .and_then(serde_json::from_value)
                .map_err(|e| {
                    Error::invalid_argument(format!(
                        "a history message cannot be passed to the template: {e}"
                    ))
                    .with_source(e)
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_part_kind_converts() {
        let parts: Vec<dotprompt::Part> = serde_json::from_value(json!([
            {"text": "hi", "metadata": {"a": 1}},
            {"media": {"url": "http://x/y.png", "contentType": "image/png"}},
            {"data": {"k": 1}},
            {"toolRequest": {"name": "t", "input": {"q": 1}, "ref": "r1"}},
            {"toolResponse": {"name": "t", "output": 2, "ref": "r1"}},
            {"metadata": {"purpose": "context", "pending": true}},
            {"reasoning": "thinking"}
        ]))
        .unwrap();
        let out = parts_from_dotprompt(parts).unwrap();
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!([
                {"text": "hi", "metadata": {"a": 1}},
                {"media": {"url": "http://x/y.png", "contentType": "image/png"}},
                {"data": {"k": 1}},
                {"toolRequest": {"name": "t", "input": {"q": 1}, "ref": "r1"}},
                {"toolResponse": {"name": "t", "output": 2, "ref": "r1"}},
                {"metadata": {"purpose": "context", "pending": true}},
                {"reasoning": "thinking"}
            ])
        );
    }

    #[test]
    fn history_round_trips() {
        let history = vec![
            Message::user("question"),
            Message::model("answer").with_metadata("k", json!("v")),
        ];
        let dp = messages_to_dotprompt(&history).unwrap();
        let back: Vec<Message> = dp
            .into_iter()
            .map(|m| message_from_dotprompt(m).unwrap())
            .collect();
        assert_eq!(back, history);
    }
}
