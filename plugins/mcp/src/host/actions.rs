//! A server's prompts and resources as registry actions, offered through
//! the host's dynamic action provider next to its tools (Genkit JS's
//! `defineMcpHost` offers tools and resources; prompts are added here so
//! `generate` can take an MCP prompt's messages by name).
//!
//! Like the tool actions, each holds the host weakly and looks the server's
//! current connection up per call, so a reconnected server keeps working
//! and a disabled one fails saying so.

use super::{HostInner, live, unknown};
use crate::client::{McpClient, McpPrompt};
use genkit_core::{Action, ActionDesc, ActionKind, DynAction, Error, Result};
use genkit_model::resource::{ResourceOptions, ResourceOutput, resource};
use genkit_model::types::{GenerateActionOptions, GenerateRequest, Message};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Weak};

/// The current connection of `server`, for an action named `what`.
fn client_of(host: &Weak<HostInner>, server: &str, what: &str) -> Result<Arc<McpClient>> {
    let host = host.upgrade().ok_or_else(|| {
        Error::failed_precondition(format!(
            "MCP {what} of server `{server}`: its host was dropped"
        ))
    })?;
    let servers = host.servers.read();
    let s = servers
        .get(server)
        .ok_or_else(|| unknown(&host.name, server))?;
    Ok(live(&host.name, server, s)?.client.clone())
}

/// The input schema of a prompt: an object of its (string) arguments.
fn prompt_schema(prompt: &McpPrompt) -> Value {
    let mut properties = Map::new();
    for arg in &prompt.arguments {
        let mut p = json!({"type": "string"});
        if let Some(d) = &arg.description {
            p["description"] = Value::from(d.clone());
        }
        properties.insert(arg.name.clone(), p);
    }
    let required: Vec<Value> = prompt
        .arguments
        .iter()
        .filter(|a| a.required)
        .map(|a| Value::from(a.name.clone()))
        .collect();
    json!({"type": "object", "properties": properties, "required": required})
}

/// The arguments of a prompt call: MCP prompt arguments are strings, so
/// other JSON values are passed as their JSON text.
fn prompt_arguments(name: &str, input: Value) -> Result<Option<Map<String, Value>>> {
    match input {
        Value::Null => Ok(None),
        Value::Object(map) if map.is_empty() => Ok(None),
        Value::Object(map) => Ok(Some(
            map.into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => (k, Value::String(s)),
                    other => (k, Value::String(other.to_string())),
                })
                .collect(),
        )),
        other => Err(Error::invalid_argument(format!(
            "MCP prompt `{name}` takes an object of arguments, got {other}"
        ))),
    }
}

/// A prompt of `server` as the two actions of a Genkit prompt, both named
/// `<server>/<prompt>`: kind `prompt` renders a `GenerateRequest` and kind
/// `executable-prompt` the `generate` options (`GenerateActionOptions`),
/// whose messages are the server's rendering.
pub(super) fn prompt_actions(
    host: &Weak<HostInner>,
    server: &str,
    prompt: &McpPrompt,
) -> Result<Vec<DynAction>> {
    let name = format!("{server}/{}", prompt.name);
    let mut actions = Vec::with_capacity(2);
    for kind in [ActionKind::Prompt, ActionKind::ExecutablePrompt] {
        let mut desc = ActionDesc::new(kind, name.clone())
            .with_description(prompt.description.clone().unwrap_or_default())
            .with_metadata("type", Value::from(kind.as_str()))
            .with_metadata("mcp", json!({"server": server, "prompt": prompt.name}));
        desc.input_schema = Some(prompt_schema(prompt));
        let (host, server, prompt_name, name) = (
            host.clone(),
            server.to_owned(),
            prompt.name.clone(),
            name.clone(),
        );
        let action = Action::<Value, Value>::from_desc(desc, move |input, _ctx| {
            let (host, server, prompt_name, name) = (
                host.clone(),
                server.clone(),
                prompt_name.clone(),
                name.clone(),
            );
            async move {
                let arguments = prompt_arguments(&name, input)?;
                let client = client_of(&host, &server, &format!("prompt `{prompt_name}`"))?;
                let messages = client.get_prompt(&prompt_name, arguments).await?;
                rendered(kind, messages)
            }
        })?;
        actions.push(action.to_dyn());
    }
    Ok(actions)
}

/// A prompt's messages as the output of an action of `kind`.
fn rendered(kind: ActionKind, messages: Vec<Message>) -> Result<Value> {
    let out = if kind == ActionKind::Prompt {
        serde_json::to_value(GenerateRequest {
            messages: Arc::new(messages),
            ..Default::default()
        })
    } else {
        serde_json::to_value(GenerateActionOptions {
            messages,
            ..Default::default()
        })
    };
    out.map_err(|e| Error::internal(e.to_string()))
}

/// A resource of `server` (a fixed `uri`, or a URI `template`) as a
/// resource action named `<server>/<name>` that reads it from the server.
pub(super) fn resource_action(
    host: &Weak<HostInner>,
    server: &str,
    name: &str,
    description: Option<&str>,
    location: Location<'_>,
) -> Result<DynAction> {
    let action_name = format!("{server}/{name}");
    let opts = match location {
        Location::Uri(uri) => ResourceOptions::uri(&action_name, uri),
        Location::Template(t) => ResourceOptions::template(&action_name, t),
    };
    let opts = match description {
        Some(d) => opts.description(d),
        None => opts,
    }
    .metadata("mcp", json!({"server": server, "resource": name}));
    let (host, server, name) = (host.clone(), server.to_owned(), name.to_owned());
    let built = resource(opts, move |input, _ctx| {
        let client = client_of(&host, &server, &format!("resource `{name}`"));
        async move {
            Ok(ResourceOutput::new(
                client?.read_resource(&input.uri).await?,
            ))
        }
    })?;
    Ok(built.to_dyn())
}

/// Where a resource is: one URI, or the URIs of a template.
pub(super) enum Location<'a> {
    Uri(&'a str),
    Template(&'a str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::McpPromptArgument;

    #[test]
    fn prompt_schema_lists_string_arguments_and_required_ones() {
        let prompt = McpPrompt {
            name: "greet".into(),
            description: None,
            arguments: vec![
                McpPromptArgument {
                    name: "name".into(),
                    description: Some("Who".into()),
                    required: true,
                },
                McpPromptArgument {
                    name: "tone".into(),
                    description: None,
                    required: false,
                },
            ],
        };
        let schema = prompt_schema(&prompt);
        assert_eq!(schema["properties"]["name"]["type"], "string");
        assert_eq!(schema["properties"]["name"]["description"], "Who");
        assert_eq!(schema["required"], json!(["name"]));
    }

    #[test]
    fn prompt_arguments_become_strings() {
        let args = prompt_arguments("s/p", json!({"a": "x", "n": 3, "b": true}))
            .unwrap()
            .unwrap();
        assert_eq!(args["a"], "x");
        assert_eq!(args["n"], "3");
        assert_eq!(args["b"], "true");
        assert!(prompt_arguments("s/p", Value::Null).unwrap().is_none());
        assert!(prompt_arguments("s/p", json!([1])).is_err());
    }
}
