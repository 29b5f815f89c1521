//! Gemini `GenerateContentResponse` → Genkit [`GenerateResponse`].

use genkit_model::model::basic_usage_stats;
use genkit_model::types::{
    Candidate as GenkitCandidate, FinishReason, GenerateResponse, GenerationUsage, Message, Part,
    ToolRequest, ToolResponse,
};
use genkit_provider::wire::model_response;
use serde_json::{Map, Value, json};

use super::ToolNames;
use crate::error::GeminiError;

/// The message of an answer with neither candidates nor a block reason.
pub(crate) const NO_CANDIDATES: &str = "the Gemini API returned no candidates";
use crate::wire::{Candidate, GenerateContentResponse, UsageMetadata, WirePart};

/// Converts a complete (or aggregated streamed) response. `input` is the
/// request's conversation, for Genkit's character and media counts.
pub(crate) fn to_genkit_response(
    response: GenerateContentResponse,
    input: &[Message],
    names: &ToolNames,
) -> Result<GenerateResponse, GeminiError> {
    let raw = serde_json::to_value(&response).ok();
    let mut candidates: Vec<GenkitCandidate> = response
        .candidates
        .iter()
        .map(|c| to_genkit_candidate(c, names))
        .collect();
    candidates.sort_by_key(|c| c.index);

    let (message, finish_reason, finish_message) = match candidates.first() {
        Some(first) => (
            first.message.clone(),
            first.finish_reason,
            first.finish_message.clone(),
        ),
        None => {
            let feedback = response.prompt_feedback.as_ref();
            let Some(reason) = feedback.and_then(|f| f.block_reason.as_deref()) else {
                return Err(GeminiError::Precondition(NO_CANDIDATES.into()));
            };
            let detail = feedback
                .and_then(|f| f.block_reason_message.as_deref())
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            (
                Message::model(Vec::<Part>::new()),
                FinishReason::Blocked,
                Some(format!("The prompt was blocked ({reason}){detail}")),
            )
        }
    };

    let mut usage = basic_usage_stats(input, &message);
    if let Some(u) = &response.usage_metadata {
        apply_usage(&mut usage, u);
    }
    Ok(GenerateResponse {
        candidates: (candidates.len() > 1).then_some(candidates),
        ..model_response(message, finish_reason, finish_message, usage, raw)
    })
}

fn apply_usage(usage: &mut GenerationUsage, u: &UsageMetadata) {
    usage.input_tokens = u.prompt_token_count;
    usage.output_tokens = u.candidates_token_count;
    usage.total_tokens = u.total_token_count;
    usage.thoughts_tokens = u.thoughts_token_count;
    usage.cached_content_tokens = u.cached_content_token_count;
}

fn to_genkit_candidate(candidate: &Candidate, names: &ToolNames) -> GenkitCandidate {
    let parts = candidate
        .content
        .as_ref()
        .map(|c| to_genkit_parts(&c.parts, names))
        .unwrap_or_default();
    let mut custom = Map::new();
    if let Some(r) = &candidate.safety_ratings {
        custom.insert("safetyRatings".into(), json!(r));
    }
    if let Some(c) = &candidate.citation_metadata {
        custom.insert("citationMetadata".into(), c.clone());
    }
    GenkitCandidate {
        index: candidate.index.unwrap_or(0),
        message: Message::model(parts),
        usage: None,
        finish_reason: finish_reason(candidate.finish_reason.as_deref()),
        finish_message: candidate.finish_message.clone(),
        custom: (!custom.is_empty()).then_some(Value::Object(custom)),
    }
}

/// Gemini's finish reasons in Genkit's terms.
pub(crate) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("STOP") => FinishReason::Stop,
        Some("MAX_TOKENS") => FinishReason::Length,
        Some(
            "SAFETY"
            | "RECITATION"
            | "LANGUAGE"
            | "BLOCKLIST"
            | "PROHIBITED_CONTENT"
            | "SPII"
            | "IMAGE_SAFETY"
            | "IMAGE_PROHIBITED_CONTENT"
            | "IMAGE_RECITATION",
        ) => FinishReason::Blocked,
        Some(
            "MALFORMED_FUNCTION_CALL"
            | "UNEXPECTED_TOOL_CALL"
            | "MISSING_THOUGHT_SIGNATURE"
            | "NO_IMAGE"
            | "IMAGE_OTHER"
            | "OTHER",
        ) => FinishReason::Other,
        None | Some("FINISH_REASON_UNSPECIFIED") => FinishReason::Unknown,
        Some(_) => FinishReason::Other,
    }
}

/// The Genkit parts of a candidate's content (empty `{}` parts skipped).
pub(crate) fn to_genkit_parts(parts: &[WirePart], names: &ToolNames) -> Vec<Part> {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| to_genkit_part(p, names))
        .collect()
}

fn to_genkit_part(part: &WirePart, names: &ToolNames) -> Part {
    let genkit = if part.thought == Some(true) {
        Part::reasoning(part.text.clone().unwrap_or_default())
    } else if let Some(text) = &part.text {
        Part::text(text.clone())
    } else if let Some(blob) = &part.inline_data {
        Part::media(
            format!("data:{};base64,{}", blob.mime_type, blob.data),
            Some(&blob.mime_type),
        )
    } else if let Some(file) = &part.file_data {
        Part::media(file.file_uri.clone(), file.mime_type.as_deref())
    } else if let Some(call) = &part.function_call {
        Part::tool_request(ToolRequest {
            reference: call.id.clone(),
            name: names.genkit_name(&call.name),
            input: call.args.clone(),
            partial: None,
        })
    } else if let Some(response) = &part.function_response {
        let output = match &response.response {
            Value::Object(m) if m.contains_key("name") && m.contains_key("content") => {
                m.get("content").cloned()
            }
            other => Some(other.clone()),
        };
        Part::tool_response(ToolResponse {
            reference: response.id.clone(),
            name: names.genkit_name(&response.name),
            output,
            content: None,
        })
    } else if let Some(code) = &part.executable_code {
        custom_part("executableCode", code.clone())
    } else if let Some(result) = &part.code_execution_result {
        custom_part("codeExecutionResult", result.clone())
    } else if let Some(call) = part.other.get("toolCall") {
        custom_part("geminiToolCall", call.clone())
    } else if let Some(response) = part.other.get("toolResponse") {
        custom_part("geminiToolResponse", response.clone())
    } else if part.thought_signature.is_some() && part.other.is_empty() {
        // A bare signature: kept on an empty reasoning part so it goes back.
        Part::reasoning("")
    } else {
        // A part kind this plugin does not know: kept whole, sent back as is.
        let raw = serde_json::to_value(part).unwrap_or_default();
        return custom_part("geminiPart", raw);
    };
    with_signature_and_metadata(genkit, part)
}

fn custom_part(key: &str, value: Value) -> Part {
    let mut custom = Map::new();
    custom.insert(key.into(), value);
    Part::custom(custom)
}

fn with_signature_and_metadata(mut genkit: Part, part: &WirePart) -> Part {
    if let Some(signature) = &part.thought_signature {
        genkit = genkit.with_metadata("thoughtSignature", json!(signature));
    }
    if let Some(meta) = &part.part_metadata {
        genkit = genkit.with_metadata("metadata", Value::Object(meta.clone()));
    }
    if let Some(v) = &part.video_metadata {
        genkit = genkit.with_metadata("videoMetadata", v.clone());
    }
    genkit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::FunctionCall;

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason(Some("STOP")), FinishReason::Stop);
        assert_eq!(finish_reason(Some("MAX_TOKENS")), FinishReason::Length);
        for r in [
            "SAFETY",
            "RECITATION",
            "BLOCKLIST",
            "PROHIBITED_CONTENT",
            "SPII",
        ] {
            assert_eq!(finish_reason(Some(r)), FinishReason::Blocked, "{r}");
        }
        assert_eq!(finish_reason(Some("OTHER")), FinishReason::Other);
        assert_eq!(finish_reason(Some("SOMETHING_NEW")), FinishReason::Other);
        assert_eq!(finish_reason(None), FinishReason::Unknown);
    }

    #[test]
    fn parts_map_back_to_genkit() {
        let names = ToolNames::new(&[genkit_model::types::ToolDefinition::new("ns/tool", "d")]);
        let parts = vec![
            WirePart {
                thought: Some(true),
                text: Some("thinking".into()),
                ..WirePart::default()
            },
            WirePart {
                function_call: Some(FunctionCall {
                    id: Some("c1".into()),
                    name: "ns__tool".into(),
                    args: Some(json!({"a": 1})),
                    ..FunctionCall::default()
                }),
                thought_signature: Some("sig".into()),
                ..WirePart::default()
            },
            WirePart::default(),
            serde_json::from_value(json!({"somethingNew": {"x": 1}})).unwrap(),
        ];
        let out = to_genkit_parts(&parts, &names);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].as_reasoning(), Some("thinking"));
        let call = out[1].as_tool_request().unwrap();
        assert_eq!(call.name, "ns/tool");
        assert_eq!(call.reference.as_deref(), Some("c1"));
        assert_eq!(
            out[1].metadata_value("thoughtSignature"),
            Some(&json!("sig"))
        );
        // Unknown kinds round-trip through a custom part.
        let back = crate::convert::request::to_gemini_part(&out[2]).unwrap();
        assert_eq!(
            serde_json::to_value(back).unwrap(),
            json!({"somethingNew": {"x": 1}})
        );
    }

    #[test]
    fn blocked_prompt_and_empty_response() {
        let blocked: GenerateContentResponse = serde_json::from_value(json!({
            "promptFeedback": {"blockReason": "SAFETY"}
        }))
        .unwrap();
        let r = to_genkit_response(blocked, &[], &ToolNames::default()).unwrap();
        assert_eq!(r.finish_reason, Some(FinishReason::Blocked));
        assert_eq!(
            r.finish_message.as_deref(),
            Some("The prompt was blocked (SAFETY)")
        );
        let empty = GenerateContentResponse::default();
        assert!(matches!(
            to_genkit_response(empty, &[], &ToolNames::default()),
            Err(GeminiError::Precondition(_))
        ));
    }
}
