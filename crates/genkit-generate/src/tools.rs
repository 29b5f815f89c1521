//! Where tool calls get executed: the tool requests of a model message run
//! concurrently (results keep request order), through the tool middleware
//! chain; interrupts and resumed (answered or restarted) calls are resolved
//! here too. Genkit's `resolve-tool-requests.ts`.

use super::engine::Engine;
use super::options::ToolErrorPolicy;
use futures::future::try_join_all;
use futures::{StreamExt, TryStreamExt, stream};
use genkit_core::{ActionKind, DynAction, Error, Registry, Result, RunOptions};
use genkit_model::middleware::{GenerateCallCtx, ToolCallCtx, ToolFn, ToolNext};
use genkit_model::tool::{ToolInterrupt, short_tool_name};
use genkit_model::types::{
    GenerateActionOptions, Message, Metadata, MultipartToolResponse, Part, PartKind, Role,
    ToolRequest, ToolResponse,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Finds tools by the names a request gives: a key, or a name under `/tool/`
/// or `/tool.v2/` (Genkit's `lookupToolByName`). A name of a dynamic action
/// provider's tools (`<host>:tool/<name>`, where `<name>` may be `*` or end
/// with `*`) stands for every tool it matches (Genkit's
/// `resolveFullToolNames`).
pub(crate) async fn resolve_tools(registry: &Registry, names: &[String]) -> Result<Vec<DynAction>> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        if let Some(key) = genkit_core::dynamic::dynamic_key_for(name) {
            let found = registry.resolve_actions(&key).await?;
            if !found.is_empty() {
                out.extend(found);
                continue;
            }
        }
        out.push(lookup_tool(registry, name).await?);
    }
    Ok(out)
}

async fn lookup_tool(registry: &Registry, name: &str) -> Result<DynAction> {
    if name.starts_with('/')
        && let Some(a) = registry.lookup_action(name).await?
    {
        return Ok(a);
    }
    for kind in [ActionKind::Tool, ActionKind::ToolV2] {
        if let Some(a) = registry.lookup(kind, name).await? {
            return Ok(a);
        }
    }
    Err(Error::not_found(format!("Tool {name} not found")))
}

/// Tools by the short name models see; two tools with one short name are an
/// `INVALID_ARGUMENT` error.
pub(crate) fn tool_map(tools: &[DynAction]) -> Result<HashMap<String, DynAction>> {
    let mut map: HashMap<String, DynAction> = HashMap::with_capacity(tools.len());
    for tool in tools {
        let short = short_tool_name(tool.name()).to_owned();
        if let Some(existing) = map.get(&short) {
            if Arc::ptr_eq(existing, tool) {
                continue;
            }
            return Err(Error::invalid_argument(format!(
                "Cannot provide two tools with the same name: '{}' and '{}'",
                tool.name(),
                existing.name()
            )));
        }
        map.insert(short, tool.clone());
    }
    Ok(map)
}

/// How one tool request ended.
enum Outcome {
    /// The tool answered with this `toolResponse` part.
    Response(Part),
    /// The tool interrupted; this is the request part annotated with `interrupt`.
    Interrupt(Part),
}

/// Runs one tool request through the tool middleware chain.
async fn run_tool_request(
    engine: &Engine,
    part: &Part,
    tools: &HashMap<String, DynAction>,
    ctx: &GenerateCallCtx,
) -> Result<Option<Outcome>> {
    let Some(request) = part.as_tool_request() else {
        return Ok(None);
    };
    let tool = tools
        .get(&request.name)
        .cloned()
        .ok_or_else(|| Error::not_found(format!("Tool {} not found", request.name)))?;
    let tctx = ToolCallCtx {
        context: ctx.context.clone(),
        cancel: ctx.cancel.clone(),
        metadata: part.metadata.clone().map(Value::Object),
        tool: Some(tool.clone()),
    };
    let result = if engine.middleware.is_empty() {
        // No middleware to wrap the call: run the tool directly.
        execute_tool(&tool, part, tctx).await.map(Some)
    } else {
        let tail: ToolFn = Arc::new(move |part: Part, tctx: ToolCallCtx| {
            let tool = tool.clone();
            Box::pin(async move { execute_tool(&tool, &part, tctx).await.map(Some) })
        });
        ToolNext::new(engine.middleware.clone(), tail)
            .run(part.clone(), tctx)
            .await
    };
    match result {
        Ok(Some(response)) => Ok(Some(Outcome::Response(response))),
        Ok(None) => Ok(None),
        Err(e) => {
            if let Some(interrupt) = ToolInterrupt::from_error(&e) {
                tracing::debug!("tool '{}' triggered an interrupt", request.name);
                let mut interrupted = part.clone();
                interrupted
                    .metadata
                    .get_or_insert_with(Metadata::new)
                    .insert("interrupt".into(), interrupt.metadata().clone());
                return Ok(Some(Outcome::Interrupt(interrupted)));
            }
            if engine.tool_errors == ToolErrorPolicy::ReturnToModel
                && e.status() != genkit_core::StatusCode::Cancelled
            {
                tracing::warn!(
                    "tool '{}' failed; returning the error to the model: {e}",
                    request.name
                );
                let response =
                    ToolResponse::for_request(request, json!({ "error": e.to_string() }));
                return Ok(Some(Outcome::Response(Part::tool_response(response))));
            }
            Err(e)
        }
    }
}

/// Runs the tool action itself and turns its output into a `toolResponse` part.
async fn execute_tool(tool: &DynAction, part: &Part, ctx: ToolCallCtx) -> Result<Part> {
    let Some(request) = part.as_tool_request() else {
        return Err(Error::invalid_argument(
            "a tool can only run a tool request part",
        ));
    };
    let opts = RunOptions {
        context: Some(ctx.context),
        cancel: ctx.cancel.into_option(),
        metadata: ctx.metadata,
        ..RunOptions::default()
    };
    let input = request.input.clone().unwrap_or(Value::Null);
    let output = tool.run_json(input, opts).await?.output;
    if tool.desc().kind == ActionKind::ToolV2 {
        let multipart: MultipartToolResponse = serde_json::from_value(output).map_err(|e| {
            Error::internal(format!(
                "multipart tool '{}' returned an invalid response: {e}",
                tool.name()
            ))
            .with_source(e)
        })?;
        let mut response = ToolResponse {
            reference: request.reference.clone(),
            name: request.name.clone(),
            output: multipart.output,
            content: multipart.content,
        };
        if response.content.as_ref().is_some_and(Vec::is_empty) {
            response.content = None;
        }
        let mut out = Part::tool_response(response);
        out.metadata = multipart.metadata;
        return Ok(out);
    }
    let mut response = ToolResponse::for_request(request, output);
    // A tool that returns nothing (`()`, `None`) answers without an output,
    // as a Genkit JS tool returning `undefined` does.
    if response.output.as_ref().is_some_and(Value::is_null) {
        response.output = None;
    }
    Ok(Part::tool_response(response))
}

/// The result of running a model message's tool requests.
pub(crate) enum ToolRun {
    /// At least one tool interrupted: the model message with interrupted
    /// requests marked `interrupt` and finished ones carrying `pendingOutput`.
    Interrupted(Message),
    /// Every tool answered: the `tool` message (none if nothing answered).
    Completed(Option<Message>),
}

/// Runs the tool requests of `message` concurrently (at most the engine's
/// tool concurrency at once, results in request order); a failure fails the
/// whole call (unless errors go back to the model) and cancels the rest.
pub(crate) async fn resolve_tool_requests(
    engine: &Engine,
    _raw: &GenerateActionOptions,
    message: &Message,
    tools: &HashMap<String, DynAction>,
    ctx: &GenerateCallCtx,
) -> Result<ToolRun> {
    let runs = message
        .content
        .iter()
        .map(|part| run_tool_request(engine, part, tools, ctx));
    let limit = engine.limits.concurrency();
    let outcomes: Vec<Option<Outcome>> = if message.content.len() <= limit {
        try_join_all(runs).await?
    } else {
        // At most `limit` at once; `buffered` keeps request order. (The
        // futures are collected first: a stream over a borrowing closure
        // would not be `Send` for every lifetime.)
        let runs: Vec<_> = runs.collect();
        stream::iter(runs).buffered(limit).try_collect().await?
    };
    let interrupted = outcomes
        .iter()
        .any(|o| matches!(o, Some(Outcome::Interrupt(_))));
    if interrupted {
        // Interrupted requests are marked; finished ones keep their output as
        // `pendingOutput` so a resume does not run them again.
        let mut revised = message.clone();
        for (i, outcome) in outcomes.into_iter().enumerate() {
            match outcome {
                None => {}
                Some(Outcome::Response(response)) => {
                    if let (Some(out), PartKind::ToolResponse(r)) =
                        (revised.content.get_mut(i), &response.kind)
                    {
                        out.metadata.get_or_insert_with(Metadata::new).insert(
                            "pendingOutput".into(),
                            r.output.clone().unwrap_or(Value::Null),
                        );
                    }
                }
                Some(Outcome::Interrupt(part)) => revised.content[i] = part,
            }
        }
        return Ok(ToolRun::Interrupted(revised));
    }
    let responses: Vec<Part> = outcomes
        .into_iter()
        .filter_map(|o| match o {
            Some(Outcome::Response(r)) => Some(r),
            _ => None,
        })
        .collect();
    if responses.is_empty() {
        return Ok(ToolRun::Completed(None));
    }
    Ok(ToolRun::Completed(Some(Message::new(
        Role::Tool,
        responses,
    ))))
}

/// The result of applying `resume` to a request.
pub(crate) enum ResumeOutcome {
    /// A restarted tool interrupted again (the last model message, revised).
    Interrupted(Message),
    /// The request with the resumed tool message appended (and `resume` cleared).
    Resumed {
        /// The next request.
        request: Box<GenerateActionOptions>,
        /// The tool message built from the answers and restarts.
        tool_message: Message,
    },
}

fn same_call(req: &ToolRequest, name: &str, reference: Option<&String>) -> bool {
    req.name == name && req.reference.as_ref() == reference
}

/// Answers the interrupted tool requests of the last model message from
/// `resume.respond` / `resume.restart` (Genkit's `resolveResumeOption`).
pub(crate) async fn resolve_resume(
    engine: &Engine,
    raw: &GenerateActionOptions,
    tools: &HashMap<String, DynAction>,
    ctx: &GenerateCallCtx,
) -> Result<ResumeOutcome> {
    let resume = raw.resume.clone().unwrap_or_default();
    let mut messages = raw.messages.clone();
    let last = match messages.last_mut() {
        Some(m) if m.role == Role::Model && m.content.iter().any(Part::is_tool_request) => m,
        _ => {
            return Err(Error::failed_precondition(
                "Cannot 'resume' generation unless the previous message is a model message with at least one tool request.",
            ));
        }
    };
    let respond = resume.respond.unwrap_or_default();
    let restart = resume.restart.unwrap_or_default();
    // Every answer must match a request of the last model message: forged or
    // stray answers are refused rather than silently dropped.
    for part in respond.iter().chain(restart.iter()) {
        let (name, reference) = match &part.kind {
            PartKind::ToolResponse(r) => (&r.name, r.reference.as_ref()),
            PartKind::ToolRequest(r) => (&r.name, r.reference.as_ref()),
            _ => {
                return Err(Error::invalid_argument(
                    "resume parts must be tool responses (respond) or tool requests (restart)",
                ));
            }
        };
        let matches = last
            .content
            .iter()
            .filter_map(Part::as_tool_request)
            .any(|r| same_call(r, name, reference));
        if !matches {
            return Err(Error::invalid_argument(format!(
                "resume names tool request '{name}{}' that the last model message does not contain",
                reference.map(|r| format!("#{r}")).unwrap_or_default()
            )));
        }
    }

    let mut tool_responses: Vec<Part> = Vec::new();
    let mut interrupted = false;
    for part in last.content.iter_mut() {
        let Some(req) = part.as_tool_request().cloned() else {
            continue;
        };
        let meta = part.metadata.clone().unwrap_or_default();
        // A tool that finished before the interrupt: its output was kept.
        if let Some(pending) = meta.get("pendingOutput").cloned() {
            let mut rest = meta.clone();
            rest.remove("pendingOutput");
            let mut response = Part::tool_response(ToolResponse::for_request(&req, pending));
            let mut rmeta = rest.clone();
            rmeta.insert("source".into(), Value::from("pending"));
            response.metadata = Some(rmeta);
            tool_responses.push(response);
            // (Genkit JS keeps the emptied metadata.)
            part.metadata = Some(rest);
            continue;
        }
        // An answer from the caller.
        if let Some(answer) = respond.iter().find(|p| {
            p.as_tool_response()
                .is_some_and(|r| r.name == req.name && r.reference == req.reference)
        }) {
            tool_responses.push(answer.clone());
            part.metadata = Some(resolved_metadata(meta));
            continue;
        }
        // A restart: run the tool again with the restart part's input and metadata.
        if let Some(restart_part) = restart.iter().find(|p| {
            p.as_tool_request()
                .is_some_and(|r| r.name == req.name && r.reference == req.reference)
        }) {
            // A restart built by hand (without `restart`) is resumed too.
            let mut restart_part = restart_part.clone();
            restart_part
                .metadata
                .get_or_insert_with(Metadata::new)
                .entry("resumed")
                .or_insert(Value::Bool(true));
            match run_tool_request(engine, &restart_part, tools, ctx).await? {
                Some(Outcome::Interrupt(p)) => {
                    *part = p;
                    interrupted = true;
                }
                Some(Outcome::Response(r)) => {
                    tool_responses.push(r);
                    part.metadata = Some(resolved_metadata(meta));
                }
                None => {}
            }
            continue;
        }
        return Err(Error::invalid_argument(format!(
            "Unresolved tool request '{}{}' was not handled by the 'resume' argument. You must supply replies or restarts for all interrupted tool requests.",
            req.name,
            req.reference
                .as_ref()
                .map(|r| format!("#{r}"))
                .unwrap_or_default()
        )));
    }
    if interrupted {
        return Ok(ResumeOutcome::Interrupted(last.clone()));
    }
    let requests = last.content.iter().filter(|p| p.is_tool_request()).count();
    if tool_responses.len() != requests {
        return Err(Error::failed_precondition(format!(
            "Expected {requests} tool responses but resolved to {}.",
            tool_responses.len()
        )));
    }
    let mut tool_message = Message::new(Role::Tool, tool_responses);
    tool_message.metadata = Some(Metadata::from_iter([(
        "resumed".to_owned(),
        resume
            .metadata
            .map(Value::Object)
            .unwrap_or(Value::Bool(true)),
    )]));
    messages.push(tool_message.clone());
    let mut request = raw.clone();
    request.resume = None;
    request.messages = messages;
    Ok(ResumeOutcome::Resumed {
        request: Box::new(request),
        tool_message,
    })
}

/// Replaces `interrupt` with `resolvedInterrupt` in a request's metadata.
fn resolved_metadata(mut meta: Metadata) -> Metadata {
    if let Some(i) = meta.remove("interrupt") {
        meta.insert("resolvedInterrupt".into(), i);
    }
    meta
}
