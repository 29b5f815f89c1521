//! The tools agent.yaml and the recorded Genkit JS agent scenarios name:
//! `testTool`, `interruptTool` (always interrupts) and `restartTool`
//! (interrupts until re-run with `resumed` metadata). Shared by the agent
//! conformance harness and the Genkit JS replay.

use genkit_core::Registry;
use genkit_model::tool::Tool;
use serde_json::{Value, json};

fn object_schema(prop: &str) -> Value {
    json!({
        "type": "object",
        "properties": {prop: {"type": "string"}},
        "required": [prop],
        "additionalProperties": true,
        "$schema": "http://json-schema.org/draft-07/schema#"
    })
}

/// Registers the three tools; `confirmed` makes `restartTool`'s result from
/// its input once resumed (the harnesses' references word it differently).
pub fn define_agent_tools(registry: &Registry, confirmed: fn(&Value) -> String) {
    let any = json!({"$schema": "http://json-schema.org/draft-07/schema#"});
    let tools = [
        Tool::from_json_schema(
            "testTool",
            "A simple test tool",
            Some(any.clone()),
            Some(any),
            |_input, _ctx| async { Ok(json!("tool called")) },
        ),
        Tool::from_json_schema(
            "interruptTool",
            "An interrupt tool",
            Some(object_schema("query")),
            Some(object_schema("answer")),
            |_input, ctx| async move { Err(ctx.interrupt(None)) },
        ),
        Tool::from_json_schema(
            "restartTool",
            "A tool that requires confirmation before executing",
            Some(object_schema("action")),
            Some(object_schema("result")),
            move |input, ctx| async move {
                if ctx.resumed().is_some() {
                    Ok(json!({"result": confirmed(&input)}))
                } else {
                    Err(ctx.interrupt(Some(json!({"requiresConfirmation": true}))))
                }
            },
        ),
    ];
    for tool in tools {
        registry.register(tool.unwrap().to_dyn()).unwrap();
    }
}
