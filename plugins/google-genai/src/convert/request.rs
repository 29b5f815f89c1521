//! Genkit [`GenerateRequest`] → Gemini `GenerateContentRequest`.

use genkit_model::types::{
    GenerateRequest, Media, Message, Part, PartKind, Role, ToolChoice, ToolDefinition, ToolRequest,
    ToolResponse,
};
use serde_json::{Map, Value, json};

use super::schema::{clean_schema, to_gemini_schema};
use super::to_gemini_name;
use crate::config::{FunctionCallingConfig, GeminiConfig};
use crate::error::GeminiError;
use crate::wire::{
    Blob, Content, FileData, FunctionCall, FunctionResponse, GenerateContentRequest, Object,
    WirePart,
};
use genkit_provider::wire::inline_data;

/// How the model being called shapes requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RequestShape {
    /// Send the output schema as the OpenAPI-subset `responseSchema` instead
    /// of `responseJsonSchema`.
    pub legacy_response_schema: bool,
    /// Output modalities to ask for when the config names none.
    pub default_modalities: Option<&'static [&'static str]>,
    /// Drop reasoning parts and thought signatures from the history (Gemma
    /// rejects them).
    pub strip_thoughts: bool,
}

/// Builds the `generateContent` body for `req`, whose `config` was parsed as
/// `config`.
pub(crate) fn to_gemini_request(
    req: &GenerateRequest,
    config: &GeminiConfig,
    shape: RequestShape,
) -> Result<GenerateContentRequest, GeminiError> {
    let (system, messages) = split_system(&req.messages)?;
    let system_instruction = system
        .map(|m| {
            Ok::<_, GeminiError>(Content {
                role: None,
                parts: to_gemini_parts(&m.content, shape)?,
            })
        })
        .transpose()?;
    let mut contents = Vec::with_capacity(messages.len());
    for m in messages {
        let parts = to_gemini_parts(&m.content, shape)?;
        // The API rejects contents without parts (e.g. a replayed blocked turn).
        if parts.is_empty() {
            continue;
        }
        let role = match m.role {
            Role::Model => "model",
            _ => "user",
        };
        contents.push(Content {
            role: Some(role.into()),
            parts,
        });
    }
    if contents.is_empty() {
        return Err(GeminiError::InvalidRequest(
            "the request holds no user or model content".into(),
        ));
    }

    Ok(GenerateContentRequest {
        contents,
        system_instruction,
        tools: tools(req.tools(), config)?,
        tool_config: tool_config(req.tool_choice.filter(|_| !req.tools().is_empty()), config)?,
        safety_settings: config.safety_settings.as_ref().map(|settings| {
            settings
                .iter()
                .filter(|s| s.category != "HARM_CATEGORY_UNSPECIFIED")
                .map(|s| serde_json::to_value(s).unwrap_or_default())
                .collect()
        }),
        generation_config: generation_config(req, config, shape)?,
        cached_content: config.cached_content.clone(),
        service_tier: config.service_tier.clone(),
    })
}

/// The first system message becomes `systemInstruction`; Gemini has no
/// place for a second one.
fn split_system(messages: &[Message]) -> Result<(Option<&Message>, Vec<&Message>), GeminiError> {
    let mut system = None;
    let mut rest = Vec::with_capacity(messages.len());
    for m in messages {
        match m.role {
            Role::System if system.is_none() => system = Some(m),
            Role::System => {
                return Err(GeminiError::InvalidRequest(
                    "Gemini accepts a single system message".into(),
                ));
            }
            _ => rest.push(m),
        }
    }
    Ok((system, rest))
}

fn to_gemini_parts(parts: &[Part], shape: RequestShape) -> Result<Vec<WirePart>, GeminiError> {
    parts
        .iter()
        // Placeholders (unfilled sections) carry nothing for the model.
        .filter(|p| !matches!(p.kind, PartKind::Placeholder))
        .filter(|p| !(shape.strip_thoughts && p.is_reasoning()))
        .map(|p| {
            let mut wire = to_gemini_part(p)?;
            if shape.strip_thoughts {
                wire.thought_signature = None;
            }
            Ok(wire)
        })
        .collect()
}

/// One Genkit part as a Gemini part, with its thought signature and
/// `partMetadata` (Genkit's `metadata.thoughtSignature` / `metadata.metadata`).
pub(crate) fn to_gemini_part(part: &Part) -> Result<WirePart, GeminiError> {
    let mut wire = match &part.kind {
        PartKind::Text(text) => WirePart::text(text.clone()),
        PartKind::Placeholder => WirePart::text(String::new()),
        PartKind::Reasoning(text) => WirePart {
            thought: Some(true),
            text: (!text.is_empty()).then(|| text.clone()),
            ..WirePart::default()
        },
        PartKind::Media(media) => media_part(media, part)?,
        PartKind::ToolRequest(request) => WirePart {
            function_call: Some(function_call(request)),
            ..WirePart::default()
        },
        PartKind::ToolResponse(response) => WirePart {
            function_response: Some(function_response(response)?),
            ..WirePart::default()
        },
        PartKind::Resource(resource) => WirePart {
            file_data: Some(FileData {
                mime_type: Some(
                    part.metadata_value("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("application/octet-stream")
                        .to_owned(),
                ),
                file_uri: resource.uri.clone(),
            }),
            ..WirePart::default()
        },
        PartKind::Custom(custom) => custom_part(custom)?,
        PartKind::Data(_) => {
            return Err(GeminiError::InvalidRequest(
                "Gemini does not accept `data` parts; send the data as text".into(),
            ));
        }
        _ => {
            return Err(GeminiError::InvalidRequest(
                "Gemini does not accept this kind of part".into(),
            ));
        }
    };
    if let Some(signature) = part
        .metadata_value("thoughtSignature")
        .and_then(Value::as_str)
    {
        wire.thought_signature = Some(signature.to_owned());
    }
    if let Some(Value::Object(meta)) = part.metadata_value("metadata")
        && !meta.is_empty()
    {
        wire.part_metadata = Some(meta.clone());
    }
    Ok(wire)
}

/// `data:` URLs go inline (`inlineData`); any other URL by reference
/// (`fileData`).
fn media_part(media: &Media, part: &Part) -> Result<WirePart, GeminiError> {
    let mut wire = if let Some(inline) = inline_data(media) {
        let (mime_type, data) = inline.map_err(GeminiError::InvalidRequest)?;
        WirePart {
            inline_data: Some(Blob {
                mime_type,
                data: data.to_owned(),
            }),
            ..WirePart::default()
        }
    } else {
        WirePart {
            file_data: Some(FileData {
                mime_type: media.content_type.clone(),
                file_uri: media.url.clone(),
            }),
            ..WirePart::default()
        }
    };
    wire.video_metadata = part.metadata_value("videoMetadata").cloned();
    wire.media_resolution = part.metadata_value("mediaResolution").cloned();
    Ok(wire)
}

fn function_call(request: &ToolRequest) -> FunctionCall {
    FunctionCall {
        id: request.reference.clone(),
        name: to_gemini_name(&request.name),
        args: Some(request.input.clone().unwrap_or_else(|| json!({}))),
        other: Map::new(),
    }
}

/// Genkit wraps the output as `{name, content}` so that outputs which are not
/// objects still form the JSON object Gemini expects.
fn function_response(response: &ToolResponse) -> Result<FunctionResponse, GeminiError> {
    if response.output.is_none() && response.content.is_none() {
        return Err(GeminiError::InvalidRequest(format!(
            "the tool response of `{}` has neither output nor content",
            response.name
        )));
    }
    let mut wrapped = Map::new();
    wrapped.insert("name".into(), json!(response.name));
    if let Some(output) = &response.output {
        wrapped.insert("content".into(), output.clone());
    }
    let parts = response
        .content
        .as_ref()
        .map(|content| {
            content
                .iter()
                .map(to_gemini_part)
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()?;
    Ok(FunctionResponse {
        id: response.reference.clone(),
        name: to_gemini_name(&response.name),
        response: Value::Object(wrapped),
        parts,
    })
}

/// Provider-specific parts this plugin produced from a response go back as
/// they came.
fn custom_part(custom: &Object) -> Result<WirePart, GeminiError> {
    let mut wire = WirePart::default();
    if let Some(v) = custom.get("executableCode") {
        wire.executable_code = Some(v.clone());
    } else if let Some(v) = custom.get("codeExecutionResult") {
        wire.code_execution_result = Some(v.clone());
    } else if let Some(v) = custom.get("geminiToolCall") {
        wire.other.insert("toolCall".into(), v.clone());
    } else if let Some(v) = custom.get("geminiToolResponse") {
        wire.other.insert("toolResponse".into(), v.clone());
    } else if let Some(v) = custom.get("geminiPart") {
        wire = serde_json::from_value(v.clone()).map_err(|e| {
            GeminiError::InvalidRequest(format!(
                "a `geminiPart` custom part is not a Gemini part: {e}"
            ))
        })?;
    } else {
        return Err(GeminiError::InvalidRequest(
            "Gemini does not accept this `custom` part".into(),
        ));
    }
    Ok(wire)
}

/// Function declarations from the request's tools, then the built-in tools
/// the config enables.
fn tools(
    defs: &[ToolDefinition],
    config: &GeminiConfig,
) -> Result<Option<Vec<Value>>, GeminiError> {
    let mut tools = Vec::new();
    if !defs.is_empty() {
        let declarations = defs
            .iter()
            .map(function_declaration)
            .collect::<Result<Vec<_>, _>>()?;
        tools.push(json!({ "functionDeclarations": declarations }));
    }
    fn flag_or_object(v: &Value) -> Value {
        match v {
            Value::Bool(_) => json!({}),
            other => other.clone(),
        }
    }
    fn enabled(v: &Option<Value>) -> Option<&Value> {
        v.as_ref().filter(|v| v.as_bool() != Some(false))
    }
    if let Some(v) = enabled(&config.code_execution) {
        tools.push(json!({ "codeExecution": flag_or_object(v) }));
    }
    if let Some(v) = enabled(&config.google_search_retrieval) {
        tools.push(json!({ "googleSearch": flag_or_object(v) }));
    }
    if let Some(v) = enabled(&config.google_search) {
        tools.push(json!({ "googleSearch": flag_or_object(v) }));
    }
    if let Some(v) = &config.file_search {
        tools.push(json!({ "fileSearch": v }));
    }
    if let Some(v) = enabled(&config.url_context) {
        tools.push(json!({ "urlContext": flag_or_object(v) }));
    }
    if let Some(extra) = &config.tools {
        tools.extend(extra.iter().cloned());
    }
    Ok((!tools.is_empty()).then_some(tools))
}

fn function_declaration(tool: &ToolDefinition) -> Result<Value, GeminiError> {
    let mut decl = Map::new();
    decl.insert("name".into(), json!(to_gemini_name(&tool.name)));
    decl.insert("description".into(), json!(tool.description));
    if let Some(schema) = &tool.input_schema {
        let parameters = to_gemini_schema(schema).map_err(|e| {
            GeminiError::InvalidRequest(format!("input of tool `{}`: {e}", tool.name))
        })?;
        if let Some(p) = parameters {
            decl.insert("parameters".into(), p);
        }
    }
    Ok(Value::Object(decl))
}

/// `toolConfig`: the config's `functionCallingConfig`, else the request's
/// tool choice (given only when there are functions to choose from).
fn tool_config(
    choice: Option<ToolChoice>,
    config: &GeminiConfig,
) -> Result<Option<Object>, GeminiError> {
    let mut out = Map::new();
    let calling = match (&config.function_calling_config, choice) {
        (Some(fcc), _) => Some(function_calling(fcc)?),
        (None, Some(choice)) => Some(json!({ "mode": choice_mode(choice) })),
        (None, None) => None,
    };
    if let Some(c) = calling {
        out.insert("functionCallingConfig".into(), c);
    }
    if let Some(extra) = &config.tool_config {
        for (k, v) in extra {
            out.insert(k.clone(), v.clone());
        }
    }
    if let Some(r) = &config.retrieval_config {
        out.insert("retrievalConfig".into(), r.clone());
    }
    Ok((!out.is_empty()).then_some(out))
}

fn choice_mode(choice: ToolChoice) -> &'static str {
    match choice {
        ToolChoice::Auto => "AUTO",
        ToolChoice::Required => "ANY",
        ToolChoice::None => "NONE",
        // A choice Genkit's schema may add later: let the model decide.
        _ => "AUTO",
    }
}

fn function_calling(fcc: &FunctionCallingConfig) -> Result<Value, GeminiError> {
    let mut out = Map::new();
    if let Some(mode) = &fcc.mode {
        let mode = match mode.as_str() {
            "auto" | "AUTO" => "AUTO",
            "required" | "ANY" => "ANY",
            "none" | "NONE" => "NONE",
            "MODE_UNSPECIFIED" => "MODE_UNSPECIFIED",
            other => {
                return Err(GeminiError::InvalidRequest(format!(
                    "unsupported function calling mode `{other}`"
                )));
            }
        };
        out.insert("mode".into(), json!(mode));
    }
    if let Some(names) = &fcc.allowed_function_names {
        let names: Vec<String> = names.iter().map(|n| to_gemini_name(n)).collect();
        out.insert("allowedFunctionNames".into(), json!(names));
    }
    Ok(Value::Object(out))
}

/// Genkit's common options, thinking, modalities, the passthrough keys, and
/// JSON mode / the response schema from the request's output options.
fn generation_config(
    req: &GenerateRequest,
    config: &GeminiConfig,
    shape: RequestShape,
) -> Result<Option<Object>, GeminiError> {
    let mut out = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            out.insert(key.to_owned(), v);
        }
    };
    put("temperature", config.common.temperature.map(|v| json!(v)));
    put(
        "maxOutputTokens",
        config.common.max_output_tokens.map(|v| json!(v)),
    );
    put("topK", config.common.top_k.map(|v| json!(v)));
    put("topP", config.common.top_p.map(|v| json!(v)));
    put(
        "stopSequences",
        config.common.stop_sequences.as_ref().map(|v| json!(v)),
    );
    put(
        "candidateCount",
        config.candidate_count.or(req.candidates).map(|v| json!(v)),
    );
    put(
        "thinkingConfig",
        config
            .thinking_config
            .as_ref()
            .map(serde_json::to_value)
            .transpose()
            .map_err(|e| GeminiError::unencodable("thinkingConfig", e))?,
    );
    let modalities = config
        .response_modalities
        .as_ref()
        .map(|m| json!(m))
        .or_else(|| shape.default_modalities.map(|m| json!(m)));
    put("responseModalities", modalities);
    for (k, v) in &config.extra {
        out.entry(k.clone()).or_insert_with(|| v.clone());
    }

    if let Some(output) = &req.output {
        let json_mode = output.format.as_deref() == Some("json")
            || output.content_type.as_deref() == Some("application/json");
        if json_mode {
            out.insert("responseMimeType".into(), json!("application/json"));
            if output.constrained == Some(true)
                && let Some(schema) = &output.schema
            {
                if shape.legacy_response_schema {
                    out.insert("responseSchema".into(), clean_schema(schema));
                } else {
                    out.insert("responseJsonSchema".into(), schema.clone());
                }
            }
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::types::OutputConfig;

    fn shape() -> RequestShape {
        RequestShape::default()
    }

    #[test]
    fn system_media_and_roles() {
        let req = GenerateRequest::new(vec![
            Message::system("Be brief."),
            Message::user(vec![
                Part::text("What is this?"),
                Part::media("data:image/png;base64,iVBORw0K", None),
                Part::media("https://example.com/cat.jpg", Some("image/jpeg")),
            ]),
        ]);
        let body = to_gemini_request(&req, &GeminiConfig::default(), shape()).unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap(),
            json!({
                "contents": [{"role": "user", "parts": [
                    {"text": "What is this?"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}}
                ]}],
                "systemInstruction": {"parts": [{"text": "Be brief."}]}
            })
        );
    }

    #[test]
    fn placeholders_are_not_sent() {
        let section = Part::new(PartKind::Placeholder).with_metadata("purpose", json!("after"));
        let req = GenerateRequest::new(vec![Message::user(vec![Part::text("Hi"), section])]);
        let body = to_gemini_request(&req, &GeminiConfig::default(), shape()).unwrap();
        assert_eq!(
            serde_json::to_value(&body).unwrap()["contents"],
            json!([{"role": "user", "parts": [{"text": "Hi"}]}])
        );
    }

    #[test]
    fn two_system_messages_and_data_parts_are_rejected() {
        let req = GenerateRequest::new(vec![
            Message::system("a"),
            Message::system("b"),
            Message::user("c"),
        ]);
        assert!(to_gemini_request(&req, &GeminiConfig::default(), shape()).is_err());
        let req = GenerateRequest::new(vec![Message::user(Part::data(json!({"a": 1})))]);
        assert!(to_gemini_request(&req, &GeminiConfig::default(), shape()).is_err());
        let req =
            GenerateRequest::new(vec![Message::user(Part::media("data:text/plain,hi", None))]);
        assert!(to_gemini_request(&req, &GeminiConfig::default(), shape()).is_err());
    }

    #[test]
    fn tool_names_with_slashes_and_tool_choice() {
        let req = GenerateRequest::new(vec![Message::user("hi")])
            .with_tools(vec![ToolDefinition::new("ns/lookup", "Looks up")])
            .with_tool_choice(ToolChoice::Required);
        let body = to_gemini_request(&req, &GeminiConfig::default(), shape()).unwrap();
        let body = serde_json::to_value(&body).unwrap();
        assert_eq!(
            body["tools"],
            json!([{"functionDeclarations": [{"name": "ns__lookup", "description": "Looks up"}]}])
        );
        assert_eq!(
            body["toolConfig"],
            json!({"functionCallingConfig": {"mode": "ANY"}})
        );
    }

    #[test]
    fn legacy_response_schema_and_gemma_stripping() {
        let mut model_turn = Message::model(vec![
            Part::reasoning("hmm"),
            Part::text("ok").with_metadata("thoughtSignature", json!("sig")),
        ]);
        model_turn.metadata = None;
        let req = GenerateRequest::new(vec![
            Message::user("hi"),
            model_turn,
            Message::user("again"),
        ])
        .with_output(OutputConfig {
            format: Some("json".into()),
            schema: Some(json!({"$schema": "x", "type": "object", "additionalProperties": false})),
            constrained: Some(true),
            content_type: None,
        });
        let shape = RequestShape {
            legacy_response_schema: true,
            strip_thoughts: true,
            ..RequestShape::default()
        };
        let body =
            serde_json::to_value(to_gemini_request(&req, &GeminiConfig::default(), shape).unwrap())
                .unwrap();
        assert_eq!(
            body["contents"][1],
            json!({"role": "model", "parts": [{"text": "ok"}]})
        );
        assert_eq!(
            body["generationConfig"],
            json!({"responseMimeType": "application/json", "responseSchema": {"type": "object"}})
        );
    }
}
