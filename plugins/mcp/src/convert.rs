//! MCP results as Genkit values. The mapping reads the MCP wire JSON (the
//! spec's shapes), not the SDK's Rust types, so it follows the protocol
//! rather than one SDK release.

use genkit_model::types::{Message, MultipartToolResponse, Part, Role};
use serde_json::Value;

/// A `tools/call` result (`CallToolResult`) as a multipart tool response:
/// the output is `structuredContent` when present, else the text blocks
/// joined (parsed as JSON when they hold a JSON object or array); images and
/// audio become media parts with `data:` URLs, embedded blob resources media
/// parts, resource links resource parts, and embedded text resources are
/// appended to the text as Genkit JS does. `_meta` becomes the metadata.
///
/// An `isError` result is not mapped: see [`error_text`].
pub fn tool_result(result: &Value) -> MultipartToolResponse {
    let mut text = String::new();
    let mut content = Vec::new();
    for block in blocks(result) {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    text.push_str(t);
                }
            }
            Some("image" | "audio") => {
                if let Some(part) = media_part(block, "data") {
                    content.push(part);
                }
            }
            Some("resource_link") => {
                if let Some(uri) = block.get("uri").and_then(Value::as_str) {
                    content.push(Part::resource(uri));
                }
            }
            Some("resource") => match block.get("resource") {
                Some(res) if res.get("text").is_some() => {
                    let uri = res.get("uri").and_then(Value::as_str).unwrap_or_default();
                    let body = res.get("text").and_then(Value::as_str).unwrap_or_default();
                    if !text.is_empty() {
                        text.push_str("\n\n");
                    }
                    text.push_str(&format!("Resource ({uri}):\n{body}"));
                }
                Some(res) => {
                    if let Some(part) = media_part(res, "blob") {
                        content.push(part);
                    }
                }
                None => {}
            },
            // Unknown block types (a newer protocol revision) are skipped.
            _ => {}
        }
    }
    let output = match result.get("structuredContent") {
        Some(structured) => Some(structured.clone()),
        None if text.is_empty() => None,
        None => Some(text_output(text)),
    };
    MultipartToolResponse {
        output,
        content: (!content.is_empty()).then_some(content),
        metadata: result
            .get("_meta")
            .and_then(Value::as_object)
            .map(|m| m.clone().into_iter().collect()),
    }
}

/// The text of an `isError` tool result (its text blocks, joined).
pub fn error_text(result: &Value) -> String {
    blocks(result)
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// Whether a `tools/call` result is an error result (`isError: true`).
pub fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// A `prompts/get` result's messages as Genkit messages (`assistant` becomes
/// `model`). A message whose content cannot be mapped is skipped.
pub fn prompt_messages(result: &Value) -> Vec<Message> {
    let Some(messages) = result.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    messages
        .iter()
        .filter_map(|m| {
            let role = match m.get("role").and_then(Value::as_str)? {
                "assistant" => Role::Model,
                _ => Role::User,
            };
            let part = content_part(m.get("content")?)?;
            Some(Message::new(role, vec![part]))
        })
        .collect()
}

/// A `resources/read` result's contents as parts: text contents as text
/// parts, blob contents as media parts with `data:` URLs.
pub fn resource_parts(result: &Value) -> Vec<Part> {
    let Some(contents) = result.get("contents").and_then(Value::as_array) else {
        return Vec::new();
    };
    contents
        .iter()
        .filter_map(|c| match c.get("text").and_then(Value::as_str) {
            Some(text) => Some(Part::text(text)),
            None => media_part(c, "blob"),
        })
        .collect()
}

/// One content block (of a prompt message) as a part.
fn content_part(block: &Value) -> Option<Part> {
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some(Part::text(block.get("text")?.as_str()?)),
        "image" | "audio" => media_part(block, "data"),
        "resource_link" => Some(Part::resource(block.get("uri")?.as_str()?)),
        "resource" => {
            let res = block.get("resource")?;
            match res.get("text").and_then(Value::as_str) {
                Some(text) => Some(Part::text(text)),
                None => media_part(res, "blob"),
            }
        }
        _ => None,
    }
}

/// A media part with a `data:` URL from a block holding base64 in `field`
/// and its `mimeType`.
fn media_part(block: &Value, field: &str) -> Option<Part> {
    let data = block.get(field).and_then(Value::as_str)?;
    let mime = block
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("application/octet-stream");
    Some(Part::media(
        format!("data:{mime};base64,{data}"),
        Some(mime),
    ))
}

fn blocks(result: &Value) -> impl Iterator<Item = &Value> {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.is_object())
}

/// Text that looks like a JSON object or array is parsed (Genkit JS does the
/// same, so a tool answering JSON text gives the model structured output).
fn text_output(text: String) -> Value {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(v) = serde_json::from_str(&text)
    {
        return v;
    }
    Value::String(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_json_and_structured_outputs() {
        let r = tool_result(&json!({"content": [{"type": "text", "text": "4"}]}));
        assert_eq!(r.output, Some(json!("4")));
        assert!(r.content.is_none());
        let r = tool_result(&json!({"content": [{"type": "text", "text": " {\"a\": 1}"}]}));
        assert_eq!(r.output, Some(json!({"a": 1})));
        let r = tool_result(&json!({"content": [{"type": "text", "text": "[oops"}]}));
        assert_eq!(r.output, Some(json!("[oops")));
        let r = tool_result(&json!({
            "content": [{"type": "text", "text": "ignored"}],
            "structuredContent": {"n": 2},
            "_meta": {"k": "v"}
        }));
        assert_eq!(r.output, Some(json!({"n": 2})));
        assert_eq!(r.metadata.unwrap().get("k"), Some(&json!("v")));
    }

    #[test]
    fn images_resources_and_links_become_parts() {
        let r = tool_result(&json!({"content": [
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "a://t", "text": "body"}},
            {"type": "resource", "resource": {"uri": "a://b", "blob": "BBBB", "mimeType": "application/pdf"}},
            {"type": "resource_link", "uri": "a://l", "name": "l"},
            {"type": "something-new"}
        ]}));
        assert_eq!(r.output, Some(json!("Resource (a://t):\nbody")));
        let content = r.content.unwrap();
        assert_eq!(content.len(), 3);
        let media = content[0].as_media().unwrap();
        assert_eq!(media.url, "data:image/png;base64,AAAA");
        assert_eq!(media.content_type.as_deref(), Some("image/png"));
        assert_eq!(
            content[1].as_media().unwrap().url,
            "data:application/pdf;base64,BBBB"
        );
        assert_eq!(content[2].as_resource().unwrap().uri, "a://l");
    }

    #[test]
    fn errors_prompts_and_resources() {
        let err = json!({"isError": true, "content": [{"type": "text", "text": "no"}, {"type": "text", "text": "pe"}]});
        assert!(is_error(&err));
        assert_eq!(error_text(&err), "nope");
        assert!(!is_error(&json!({"content": []})));

        let msgs = prompt_messages(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "assistant", "content": {"type": "image", "data": "AA", "mimeType": "image/gif"}}
        ]}));
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[0].role, Role::User);
        assert_eq!(msgs[0].text(), "hi");
        assert_eq!(msgs[1].role, Role::Model);
        assert_eq!(msgs[1].media().unwrap().url, "data:image/gif;base64,AA");

        let parts = resource_parts(&json!({"contents": [
            {"uri": "a://t", "text": "hello"},
            {"uri": "a://b", "blob": "CC", "mimeType": "image/png"}
        ]}));
        assert_eq!(parts[0].as_text(), Some("hello"));
        assert_eq!(parts[1].as_media().unwrap().url, "data:image/png;base64,CC");
    }
}
