//! A small rule-based model so the demo runs anywhere, with no API key and no
//! download: it asks for the status and logs of the services a question
//! names, then summarises what the tools returned. Swap in a real model
//! (e.g. `genkit-openai` against any OpenAI-compatible server) by changing
//! the default model.

use crate::tools::Service;
use genkit::prelude::*;

/// The demo model's name.
pub const DEMO_MODEL: &str = "demo/ops-rules";

fn mentioned(text: &str) -> Vec<Service> {
    let lower = text.to_lowercase();
    let named: Vec<_> = Service::ALL
        .into_iter()
        .filter(|s| lower.contains(s.name()) || (*s == Service::Db && lower.contains("database")))
        .collect();
    if named.is_empty() {
        Service::ALL.to_vec()
    } else {
        named
    }
}

fn respond(req: &GenerateRequest) -> Message {
    let question = req
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(Message::text)
        .unwrap_or_default();
    let tool_results: Vec<&ToolResponse> = req
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.content.iter().filter_map(|p| p.as_tool_response()))
        .collect();
    if tool_results.is_empty() {
        // First turn: check every service the question names, in parallel.
        let calls = mentioned(&question)
            .into_iter()
            .flat_map(|s| {
                [
                    Part::tool_request(
                        ToolRequest::new("getServiceStatus", json!({"service": s.name()}))
                            .with_ref(s.name()),
                    ),
                    Part::tool_request(
                        ToolRequest::new(
                            "queryLogs",
                            json!({"service": s.name(), "recentMinutes": 60}),
                        )
                        .with_ref(s.name()),
                    ),
                ]
            })
            .collect::<Vec<_>>();
        return Message::model(calls);
    }
    // Second turn: summarise what the tools found.
    let mut lines = Vec::new();
    for r in tool_results {
        let out = r.output.clone().unwrap_or(Value::Null);
        match r.name.as_str() {
            "getServiceStatus" => {
                let cpu = out["cpu"].as_f64().unwrap_or(0.0);
                let online = out["online"].as_bool().unwrap_or(false);
                let verdict = if !online {
                    "is DOWN"
                } else if cpu > 0.9 {
                    "is overloaded"
                } else {
                    "looks healthy"
                };
                lines.push(format!(
                    "- {} {verdict} (cpu {:.0}%)",
                    r.reference.as_deref().unwrap_or("?"),
                    cpu * 100.0
                ));
            }
            _ => {
                for l in out.as_array().into_iter().flatten() {
                    lines.push(format!("  log: {}", l.as_str().unwrap_or_default()));
                }
            }
        }
    }
    Message::model(format!(
        "Here is what I found for \"{question}\":\n{}",
        lines.join("\n")
    ))
}

/// Registers the demo model.
pub fn define_demo_model(ai: &Genkit) -> Model {
    ai.define_model(
        ModelOptions::new(DEMO_MODEL)
            .label("Rule-based demo model")
            .supports(ModelSupports {
                multiturn: Some(true),
                tools: Some(true),
                system_role: Some(true),
                ..ModelSupports::default()
            }),
        |req: GenerateRequest, ctx: ModelCtx| async move {
            let message = respond(&req);
            if ctx.is_streaming() {
                for word in message.text().split_inclusive(' ') {
                    ctx.send_chunk(GenerateResponseChunk::new(vec![Part::text(word)]));
                }
            }
            Ok(GenerateResponse::new(message, FinishReason::Stop))
        },
    )
}
