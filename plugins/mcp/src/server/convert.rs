//! Genkit actions and values as MCP wire JSON, for the server side: tool,
//! prompt and resource listings, tool results, prompt messages and
//! resource contents. Like [`crate::convert`] (the other direction) it
//! writes the spec's JSON shapes rather than one SDK release's Rust types.

use genkit_core::{ActionDesc, ActionKind};
use genkit_model::resource::Resource;
use genkit_model::types::{Media, Part, PartKind};
use serde_json::{Map, Value, json};

/// The wire name of the argument that carries a tool's input when its
/// input schema is not an object (MCP tool arguments are always objects).
pub const WRAPPED_INPUT: &str = "input";

/// A tool's `tools/list` entry: its action name, description and input
/// schema (`{"type": "object"}` when it has none; a non-object schema is
/// wrapped as the one property [`WRAPPED_INPUT`], see [`tool_input`]), and
/// `_meta` from the action's `mcp._meta` metadata, as Genkit JS lists them.
pub fn tool_entry(desc: &ActionDesc) -> Value {
    let schema = match &desc.input_schema {
        None => json!({"type": "object"}),
        Some(s) if is_object_schema(s) => {
            // MCP requires `"type": "object"` even where JSON schema infers it.
            let mut s = s.clone();
            if let Some(obj) = s.as_object_mut() {
                obj.entry("type").or_insert_with(|| Value::from("object"));
            }
            s
        }
        Some(s) => json!({
            "type": "object",
            "properties": { WRAPPED_INPUT: s },
            "required": [WRAPPED_INPUT],
        }),
    };
    let mut entry = Map::new();
    entry.insert("name".into(), Value::from(desc.name.clone()));
    if let Some(d) = &desc.description {
        entry.insert("description".into(), Value::from(d.clone()));
    }
    entry.insert("inputSchema".into(), schema);
    insert_meta(&mut entry, desc);
    Value::Object(entry)
}

/// The action input for a `tools/call` with `arguments`: the arguments
/// object itself, or the wrapped [`WRAPPED_INPUT`] value for a tool whose
/// input schema is not an object.
pub fn tool_input(desc: &ActionDesc, arguments: Option<Map<String, Value>>) -> Value {
    let arguments = arguments.unwrap_or_default();
    match &desc.input_schema {
        Some(s) if !is_object_schema(s) => {
            arguments.get(WRAPPED_INPUT).cloned().unwrap_or(Value::Null)
        }
        _ => Value::Object(arguments),
    }
}

/// A tool's output as a `tools/call` result. The output is a text block (a
/// string as is, anything else as JSON, as Genkit JS does) and, when it is
/// a JSON object, also `structuredContent`. A multipart tool's (`tool.v2`)
/// parts follow as blocks: parts read from a resource as embedded
/// resources, text parts as text, media with `data:` URLs as images or
/// audio, other media and resource parts as resource links; its metadata
/// becomes `_meta`.
pub fn tool_result(kind: ActionKind, output: &Value) -> Value {
    let (main, parts, meta) = match kind {
        ActionKind::ToolV2 => (
            output.get("output"),
            output.get("content").and_then(Value::as_array),
            output.get("metadata").filter(|m| m.is_object()),
        ),
        _ => (Some(output), None, None),
    };
    let mut content = Vec::new();
    if let Some(main) = main.filter(|m| !(m.is_null() && parts.is_some())) {
        let text = match main {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        content.push(json!({"type": "text", "text": text}));
    }
    for part in parts.into_iter().flatten() {
        if let Ok(part) = serde_json::from_value::<Part>(part.clone())
            && let Some(block) = part_block(&part)
        {
            content.push(block);
        }
    }
    let mut result = Map::new();
    result.insert("resultType".into(), Value::from("complete"));
    result.insert("content".into(), Value::Array(content));
    if let Some(obj) = main.filter(|m| m.is_object()) {
        result.insert("structuredContent".into(), obj.clone());
    }
    if let Some(meta) = meta {
        result.insert("_meta".into(), meta.clone());
    }
    Value::Object(result)
}

/// A failed tool call as an `isError` result carrying the message, so the
/// model on the other side can read it (a protocol error would hide it).
pub fn tool_error(message: &str) -> Value {
    json!({
        "resultType": "complete",
        "content": [{"type": "text", "text": message}],
        "isError": true,
    })
}

/// A progress report (`progress`, `total`, `message`) from a tool's stream
/// chunk, given the last progress sent (if any): a chunk that is an object
/// with a numeric `progress` (and optionally `total` and `message`) says it
/// itself; any other chunk is one more step (1, 2, ...), with its text (a
/// string chunk) as the message. `None` when the progress would not grow,
/// as progress must.
pub fn progress(chunk: &Value, last: Option<f64>) -> Option<(f64, Option<f64>, Option<String>)> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let (progress, total, message) = match chunk.get("progress").and_then(Value::as_f64) {
        Some(p) => (
            p,
            chunk.get("total").and_then(Value::as_f64),
            text(chunk.get("message")),
        ),
        None => (last.map_or(0.0, f64::floor) + 1.0, None, text(Some(chunk))),
    };
    last.is_none_or(|last| progress > last)
        .then_some((progress, total, message))
}

/// A prompt's `prompts/list` entry: its name, description, one argument
/// per property of its input schema (with the property's description and
/// whether it is required) and `_meta`.
///
/// MCP prompt arguments are strings; Genkit JS refuses prompts with other
/// property types, while here they are listed and their values converted
/// when the prompt is rendered (see [`prompt_input`]).
pub fn prompt_entry(desc: &ActionDesc) -> Value {
    let mut entry = Map::new();
    entry.insert("name".into(), Value::from(desc.name.clone()));
    if let Some(d) = &desc.description {
        entry.insert("description".into(), Value::from(d.clone()));
    }
    let schema = desc.input_schema.as_ref();
    if let Some(props) = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    {
        let required = |name: &str| {
            schema
                .and_then(|s| s.get("required"))
                .and_then(Value::as_array)
                .is_some_and(|r| r.iter().any(|n| n == name))
        };
        let arguments: Vec<Value> = props
            .iter()
            .map(|(name, prop)| {
                let mut arg = Map::new();
                arg.insert("name".into(), Value::from(name.clone()));
                if let Some(d) = prop.get("description").and_then(Value::as_str) {
                    arg.insert("description".into(), Value::from(d));
                }
                arg.insert("required".into(), Value::Bool(required(name)));
                Value::Object(arg)
            })
            .collect();
        entry.insert("arguments".into(), Value::Array(arguments));
    }
    insert_meta(&mut entry, desc);
    Value::Object(entry)
}

/// A prompt's input from `prompts/get` arguments (all strings on the wire):
/// a value whose property is not a string in the input schema is parsed as
/// JSON (`"3"` for a number, `"true"` for a boolean), and kept as a string
/// if it does not parse.
pub fn prompt_input(desc: &ActionDesc, arguments: Option<Map<String, Value>>) -> Value {
    let props = desc
        .input_schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let input = arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let wants_string = props
                .and_then(|p| p.get(&name))
                .is_none_or(|p| accepts_type(p, "string"));
            let value = match value {
                Value::String(s) if !wants_string => {
                    serde_json::from_str(&s).unwrap_or(Value::String(s))
                }
                other => other,
            };
            (name, value)
        })
        .collect();
    Value::Object(input)
}

/// A rendered prompt (the `/prompt/` action's `GenerateRequest`) as a
/// `prompts/get` result: `user` messages stay `user`, `model` messages
/// become `assistant`; a message's parts become one message each, in order
/// (see `message_blocks`): joined text, embedded resources, and images or
/// audio (media must be `data:` URLs). Other roles (`system`, `tool`) cannot be expressed in MCP and
/// are an error, as in Genkit JS.
pub fn prompt_result(description: Option<&str>, request: &Value) -> Result<Value, String> {
    let messages = request
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = Vec::new();
    for message in messages {
        let role = match message.get("role").and_then(Value::as_str) {
            Some("user") => "user",
            Some("model") => "assistant",
            other => {
                return Err(format!(
                    "MCP prompt messages cannot have the role `{}`: only `user` and `model` messages can be served",
                    other.unwrap_or("(none)")
                ));
            }
        };
        let parts: Vec<Part> = message
            .get("content")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| format!("a rendered message has invalid content: {e}"))?
            .unwrap_or_default();
        for block in message_blocks(&parts)? {
            out.push(json!({"role": role, "content": block}));
        }
    }
    let mut result = Map::new();
    result.insert("resultType".into(), Value::from("complete"));
    if let Some(d) = description {
        result.insert("description".into(), Value::from(d));
    }
    result.insert("messages".into(), Value::Array(out));
    Ok(Value::Object(result))
}

/// One message's parts as prompt message contents, in order: consecutive
/// text parts joined into one text block, each part read from a resource
/// (`metadata.resource.uri`, as resources mark their parts) an embedded
/// resource, each media part (a `data:` URL) an image or audio block. Parts
/// with no MCP form (tool requests, reasoning...) are left out; a message
/// with nothing left is one empty text block.
fn message_blocks(parts: &[Part]) -> Result<Vec<Value>, String> {
    let mut blocks = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, blocks: &mut Vec<Value>| {
        if !text.is_empty() {
            blocks.push(json!({"type": "text", "text": std::mem::take(text)}));
        }
    };
    for part in parts {
        if let Some(block) = embedded_resource(part) {
            flush(&mut text, &mut blocks);
            blocks.push(block);
            continue;
        }
        match &part.kind {
            PartKind::Text(t) => text.push_str(t),
            PartKind::Media(m) => {
                flush(&mut text, &mut blocks);
                let (mime, data) = data_url(m).ok_or_else(|| {
                    format!(
                        "MCP prompt messages only carry base64 `data:` media, not `{}`",
                        m.url
                    )
                })?;
                blocks
                    .push(json!({"type": media_block_type(&mime), "mimeType": mime, "data": data}));
            }
            _ => {}
        }
    }
    flush(&mut text, &mut blocks);
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": ""}));
    }
    Ok(blocks)
}

/// A part read from a resource (`metadata.resource.uri`, which resources
/// set on their parts) as an embedded resource block: text with the
/// metadata's `mimeType` (`text/plain` if none), or a `data:` media blob.
fn embedded_resource(part: &Part) -> Option<Value> {
    let source = part.metadata_value("resource")?;
    let uri = source.get("uri")?.as_str()?;
    let resource = match &part.kind {
        PartKind::Text(text) => {
            let mime = source
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("text/plain");
            json!({"uri": uri, "mimeType": mime, "text": text})
        }
        PartKind::Media(m) => {
            let (mime, data) = data_url(m)?;
            json!({"uri": uri, "mimeType": mime, "blob": data})
        }
        _ => return None,
    };
    Some(json!({"type": "resource", "resource": resource}))
}

/// A fixed-URI resource's `resources/list` entry (`None` for a template).
pub fn resource_entry(resource: &Resource) -> Option<Value> {
    let uri = resource.uri()?;
    let mut entry = resource_common(resource);
    entry.insert("uri".into(), Value::from(uri));
    Some(Value::Object(entry))
}

/// A templated resource's `resources/templates/list` entry (`None` for a
/// fixed URI).
pub fn template_entry(resource: &Resource) -> Option<Value> {
    let template = resource.template()?;
    let mut entry = resource_common(resource);
    entry.insert("uriTemplate".into(), Value::from(template.as_str()));
    Some(Value::Object(entry))
}

/// A resource's MIME type: its action's `mimeType` metadata
/// (`ResourceOptions::metadata("mimeType", ...)`), if any.
pub fn resource_mime_type(resource: &Resource) -> Option<String> {
    resource
        .to_dyn()
        .desc()
        .metadata
        .get("mimeType")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A resource's content as a `resources/read` result for `uri`: text parts
/// as text contents (of the resource's `mime_type`, `text/plain` if it has
/// none), media parts (`data:` URLs only) as blobs, as Genkit JS does; any
/// other part is an error.
pub fn resource_result(
    uri: &str,
    mime_type: Option<&str>,
    parts: &[Part],
) -> Result<Value, String> {
    let text_mime = mime_type.unwrap_or("text/plain");
    let contents = parts
        .iter()
        .map(|p| match &p.kind {
            PartKind::Text(text) => Ok(json!({"uri": uri, "mimeType": text_mime, "text": text})),
            PartKind::Media(m) => {
                let (mime, data) = data_url(m).ok_or_else(|| {
                    format!(
                        "MCP resource contents only carry base64 `data:` media, not `{}`",
                        m.url
                    )
                })?;
                Ok(json!({"uri": uri, "mimeType": mime, "blob": data}))
            }
            _ => Err(format!(
                "MCP resource contents carry text and media parts only, not a `{}` part",
                p.kind.key()
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({"resultType": "complete", "contents": contents}))
}

fn resource_common(resource: &Resource) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("name".into(), Value::from(resource.name()));
    if let Some(d) = resource.description() {
        entry.insert("description".into(), Value::from(d));
    }
    if let Some(m) = resource_mime_type(resource) {
        entry.insert("mimeType".into(), Value::from(m));
    }
    insert_meta(&mut entry, resource.to_dyn().desc());
    entry
}

/// `_meta` from an action's `mcp._meta` metadata (Genkit JS's convention).
fn insert_meta(entry: &mut Map<String, Value>, desc: &ActionDesc) {
    if let Some(meta) = desc
        .metadata
        .get("mcp")
        .and_then(|m| m.get("_meta"))
        .filter(|m| m.is_object())
    {
        entry.insert("_meta".into(), meta.clone());
    }
}

/// A part as a tool result content block, if it has a wire form.
fn part_block(part: &Part) -> Option<Value> {
    if let Some(block) = embedded_resource(part) {
        return Some(block);
    }
    match &part.kind {
        PartKind::Text(text) => Some(json!({"type": "text", "text": text})),
        PartKind::Media(m) => Some(match data_url(m) {
            Some((mime, data)) => {
                json!({"type": media_block_type(&mime), "mimeType": mime, "data": data})
            }
            None => json!({"type": "resource_link", "uri": m.url, "name": m.url}),
        }),
        PartKind::Resource(r) => {
            Some(json!({"type": "resource_link", "uri": r.uri, "name": r.uri}))
        }
        _ => None,
    }
}

/// The MIME type (the part's content type, else the URL's) and base64 data
/// of a media part with a `data:...;base64,` URL.
fn data_url(media: &Media) -> Option<(String, String)> {
    let rest = media.url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let url_mime = header.strip_suffix(";base64")?;
    let mime = media
        .content_type
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| (!url_mime.is_empty()).then(|| url_mime.to_owned()))
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    Some((mime, data.to_owned()))
}

fn media_block_type(mime: &str) -> &'static str {
    if mime.starts_with("audio/") {
        "audio"
    } else {
        "image"
    }
}

fn is_object_schema(schema: &Value) -> bool {
    match schema.get("type") {
        Some(t) => t == "object",
        // An untyped schema with properties describes an object, and one
        // with no constraint at all accepts an object too.
        None => schema.as_object().is_some_and(|o| {
            o.contains_key("properties")
                || o.keys()
                    .all(|k| k.starts_with('$') || k == "description" || k == "title")
        }),
    }
}

/// Whether a property schema allows `ty` (`"type": ty` or a list with it,
/// or no type at all).
fn accepts_type(prop: &Value, ty: &str) -> bool {
    match prop.get("type") {
        Some(Value::String(t)) => t == ty,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == ty),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(schema: Option<Value>) -> ActionDesc {
        let mut d = ActionDesc::new(ActionKind::Tool, "math/add").with_description("Adds.");
        d.input_schema = schema;
        d
    }

    #[test]
    fn tools_list_with_object_schemas_and_wrapped_inputs() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]});
        let entry = tool_entry(
            &tool(Some(schema.clone())).with_metadata("mcp", json!({"_meta": {"k": 1}})),
        );
        assert_eq!(
            entry,
            json!({"name": "math/add", "description": "Adds.", "inputSchema": schema, "_meta": {"k": 1}})
        );
        assert_eq!(
            tool_entry(&tool(None))["inputSchema"],
            json!({"type": "object"})
        );
        let args = Map::from_iter([("a".to_owned(), json!(1))]);
        assert_eq!(
            tool_input(&tool(Some(schema)), Some(args.clone())),
            json!({"a": 1})
        );
        assert_eq!(tool_input(&tool(None), None), json!({}));

        let string_tool = tool(Some(json!({"type": "string"})));
        assert_eq!(
            tool_entry(&string_tool)["inputSchema"],
            json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]})
        );
        let wrapped = Map::from_iter([("input".to_owned(), json!("hi"))]);
        assert_eq!(tool_input(&string_tool, Some(wrapped)), json!("hi"));
    }

    #[test]
    fn tool_results_text_structured_and_multipart() {
        assert_eq!(
            tool_result(ActionKind::Tool, &json!("5")),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "5"}]})
        );
        assert_eq!(
            tool_result(ActionKind::Tool, &json!({"sum": 5})),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "{\"sum\":5}"}], "structuredContent": {"sum": 5}})
        );
        let multipart = json!({
            "output": "see picture",
            "content": [
                {"media": {"url": "data:image/png;base64,AAAA"}},
                {"media": {"url": "https://x/y.wav", "contentType": "audio/wav"}},
                {"media": {"url": "data:audio/wav;base64,BBBB"}},
                {"resource": {"uri": "docs://a"}},
                {"text": "more"},
                {"data": {"ignored": true}}
            ],
            "metadata": {"m": true}
        });
        assert_eq!(
            tool_result(ActionKind::ToolV2, &multipart),
            json!({"resultType": "complete", "content": [
                {"type": "text", "text": "see picture"},
                {"type": "image", "mimeType": "image/png", "data": "AAAA"},
                {"type": "resource_link", "uri": "https://x/y.wav", "name": "https://x/y.wav"},
                {"type": "audio", "mimeType": "audio/wav", "data": "BBBB"},
                {"type": "resource_link", "uri": "docs://a", "name": "docs://a"},
                {"type": "text", "text": "more"}
            ], "_meta": {"m": true}})
        );
        let err = tool_error("boom");
        assert_eq!(err["isError"], json!(true));
        assert_eq!(err["content"][0]["text"], json!("boom"));
    }

    #[test]
    fn progress_from_chunks() {
        let step = |s: &str| Some((1.0, None, Some(s.to_owned())));
        assert_eq!(progress(&json!("step"), None), step("step"));
        assert_eq!(
            progress(&json!({"n": 1}), Some(1.0)),
            Some((2.0, None, None))
        );
        assert_eq!(
            progress(&json!({"progress": 0}), None),
            Some((0.0, None, None))
        );
        let half = json!({"progress": 50, "total": 100, "message": "half"});
        assert_eq!(
            progress(&half, Some(0.0)),
            Some((50.0, Some(100.0), Some("half".into())))
        );
        assert_eq!(progress(&half, Some(50.0)), None);
    }

    #[test]
    fn prompts_arguments_inputs_and_messages() {
        let mut desc = ActionDesc::new(ActionKind::Prompt, "greet").with_description("Greets.");
        desc.input_schema = Some(json!({"type": "object", "properties": {
            "name": {"type": "string", "description": "Who"},
            "times": {"type": "integer"},
            "loud": {"type": ["boolean", "null"]}
        }, "required": ["name"]}));
        assert_eq!(
            prompt_entry(&desc),
            json!({"name": "greet", "description": "Greets.", "arguments": [
                {"name": "name", "description": "Who", "required": true},
                {"name": "times", "required": false},
                {"name": "loud", "required": false}
            ]})
        );
        let args = Map::from_iter([
            ("name".to_owned(), json!("42")),
            ("times".to_owned(), json!("3")),
            ("loud".to_owned(), json!("true")),
            ("extra".to_owned(), json!("x")),
        ]);
        assert_eq!(
            prompt_input(&desc, Some(args)),
            json!({"name": "42", "times": 3, "loud": true, "extra": "x"})
        );
        let bad = Map::from_iter([("times".to_owned(), json!("three"))]);
        assert_eq!(prompt_input(&desc, Some(bad)), json!({"times": "three"}));

        let request = json!({"messages": [
            {"role": "user", "content": [{"text": "Hello "}, {"text": "Ada"}, {"media": {"url": "data:image/png;base64,AA"}}]},
            {"role": "model", "content": [{"text": "Hi"}]}
        ]});
        assert_eq!(
            prompt_result(Some("Greets."), &request).unwrap(),
            json!({"resultType": "complete", "description": "Greets.", "messages": [
                {"role": "user", "content": {"type": "text", "text": "Hello Ada"}},
                {"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "AA"}},
                {"role": "assistant", "content": {"type": "text", "text": "Hi"}}
            ]})
        );
        let system = json!({"messages": [{"role": "system", "content": [{"text": "Be nice"}]}]});
        assert!(
            prompt_result(None, &system)
                .unwrap_err()
                .contains("`system`")
        );
        let remote = json!({"messages": [{"role": "user", "content": [{"media": {"url": "https://x/a.png"}}]}]});
        assert!(
            prompt_result(None, &remote)
                .unwrap_err()
                .contains("https://x/a.png")
        );
    }

    #[test]
    fn parts_read_from_resources_are_embedded() {
        let from_resource = |p: Part, source: Value| p.with_metadata("resource", source);
        let output = json!({
            "output": "see",
            "content": [
                from_resource(Part::text("{\"a\":1}"), json!({"uri": "r://j", "mimeType": "application/json"})),
                from_resource(Part::media("data:image/png;base64,AA", None), json!({"uri": "r://i"})),
            ]
        });
        assert_eq!(
            tool_result(ActionKind::ToolV2, &output)["content"],
            json!([
                {"type": "text", "text": "see"},
                {"type": "resource", "resource": {"uri": "r://j", "mimeType": "application/json", "text": "{\"a\":1}"}},
                {"type": "resource", "resource": {"uri": "r://i", "mimeType": "image/png", "blob": "AA"}}
            ])
        );
        let request = json!({"messages": [{"role": "user", "content": [
            from_resource(Part::text("body"), json!({"uri": "r://t"})),
            Part::text("Use it."),
            Part::reasoning("hidden"),
        ]}]});
        assert_eq!(
            prompt_result(None, &request).unwrap()["messages"],
            json!([
                {"role": "user", "content": {"type": "resource", "resource": {"uri": "r://t", "mimeType": "text/plain", "text": "body"}}},
                {"role": "user", "content": {"type": "text", "text": "Use it."}}
            ])
        );
    }

    #[test]
    fn resource_contents() {
        let parts = [
            Part::text("hello"),
            Part::media("data:application/pdf;base64,CC", None),
        ];
        assert_eq!(
            resource_result("docs://a", None, &parts).unwrap(),
            json!({"resultType": "complete", "contents": [
                {"uri": "docs://a", "mimeType": "text/plain", "text": "hello"},
                {"uri": "docs://a", "mimeType": "application/pdf", "blob": "CC"}
            ]})
        );
        assert_eq!(
            resource_result("docs://a", Some("text/markdown"), &parts[..1]).unwrap()["contents"][0]
                ["mimeType"],
            "text/markdown"
        );
        assert!(resource_result("docs://a", None, &[Part::data(json!(1))]).is_err());
        assert!(resource_result("docs://a", None, &[Part::media("https://x", None)]).is_err());
    }
}
