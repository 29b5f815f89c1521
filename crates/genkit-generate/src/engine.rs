//! The tool loop (Genkit's `generateHelper` / `generateActionTurn`): a loop
//! over [`LoopState`], one `generate` span per turn (each nested in the one
//! before). Each turn resolves model, tools and format, calls the model
//! through the middleware chain, and leaves by one of three exits — (A) no
//! tool requests or `returnToolRequests`, (B) too many turns (`ABORTED`,
//! checked before any tool runs), (C) a tool interrupted — or runs the tools
//! and hands the next turn's request back to the loop. What the turns'
//! spans record is the business of [`trace`](super::trace): the loop and the
//! turn each call it before and after their work, and nowhere else.

use super::options::{LoopLimits, ToolErrorPolicy};
use super::tools::{
    ResumeOutcome, ToolRun, resolve_resume, resolve_tool_requests, resolve_tools, tool_map,
};
use super::trace::{ModelTrace, TurnSpans};
use futures::future::BoxFuture;
use genkit_core::schema::SchemaValidator;
use genkit_core::tracing::SpanJson;
use genkit_core::{ActionKind, DynAction, Error, Registry, Result, RunOptions, StatusCode};
use genkit_model::formats::apply_format;
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateModelHook, GenerateNext,
    ModelCallCtx, ModelFn, ModelMiddleware, ModelNext, augment_with_context,
};
use genkit_model::model::{call_model_recorded, lookup_model, model_info};
use genkit_model::span_record::History;
use genkit_model::tool::definitions::tool_definitions;
use genkit_model::types::{
    FinishReason, GenerateActionOptions, GenerateRequest, GenerateResponse, GenerateResponseChunk,
    Message, Metadata, OutputConfig, Role, ToolChoice,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default limit of tool-loop turns.
pub const DEFAULT_MAX_TURNS: u32 = 5;

/// Where the tool loop stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct LoopState {
    /// The turn about to run; 0 for the first model call.
    pub(crate) turn: u32,
    /// Index of the message the turn will produce.
    pub(crate) message_index: u32,
}

impl LoopState {
    /// After a turn whose tools ran: the next model call.
    fn next_turn(self) -> Self {
        Self {
            turn: self.turn + 1,
            message_index: self.message_index + 1,
        }
    }

    /// After a resume appended its tool message: the same turn, one message on.
    fn after_resume(self) -> Self {
        Self {
            message_index: self.message_index + 1,
            ..self
        }
    }
}

/// How one turn ended. (Not boxed: it is moved once per turn, and boxing
/// the response would cost an allocation per call.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum TurnOutcome {
    /// The loop is over: the call's response.
    Done(GenerateResponse),
    /// Tools ran (or a resume was applied): the next turn's request.
    Next {
        request: Box<GenerateActionOptions>,
        state: LoopState,
    },
}

/// Stamps streamed chunks with their message index and role: the index moves
/// on whenever the role changes (model → tool → model ...), across turns.
/// One atomic word (index << 8 | role code) keeps this lock-free, since it
/// runs for every chunk.
#[derive(Default)]
pub(crate) struct ChunkIndexer {
    state: AtomicU64,
}

impl ChunkIndexer {
    fn role_code(role: Role) -> u64 {
        match role {
            Role::System => 1,
            Role::User => 2,
            Role::Model => 3,
            Role::Tool => 4,
            _ => 5,
        }
    }

    fn stamp(&self, role: Role, chunk: &mut GenerateResponseChunk) {
        let code = Self::role_code(role);
        let mut current = self.state.load(Ordering::Acquire);
        if current & 0xff == code {
            // Same role as the chunk before: the index stays (no write).
            chunk.index = Some(u32::try_from(current >> 8).unwrap_or(u32::MAX));
            chunk.role = Some(role);
            return;
        }
        let index = loop {
            let (index, prev) = (current >> 8, current & 0xff);
            let index = if prev != 0 && prev != code {
                index + 1
            } else {
                index
            };
            match self.state.compare_exchange_weak(
                current,
                (index << 8) | code,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break index,
                Err(actual) => current = actual,
            }
        };
        chunk.index = Some(u32::try_from(index).unwrap_or(u32::MAX));
        chunk.role = Some(role);
    }
}

/// A call's generate middleware and the model hooks made of them.
type Chains = (
    Arc<[Arc<dyn GenerateMiddleware>]>,
    Arc<[Arc<dyn ModelMiddleware>]>,
);

thread_local! {
    /// The chains of a call without middleware.
    static NO_MIDDLEWARE: Chains = (Arc::from(Vec::new()), Arc::from(Vec::new()));
}

/// Everything one generate call shares across its turns.
pub(crate) struct Engine {
    pub(crate) registry: Registry,
    pub(crate) middleware: Arc<[Arc<dyn GenerateMiddleware>]>,
    model_hooks: Arc<[Arc<dyn ModelMiddleware>]>,
    pub(crate) tool_errors: ToolErrorPolicy,
    pub(crate) limits: LoopLimits,
    tool_choice_once: bool,
    indexer: ChunkIndexer,
    resolved: Mutex<Option<Arc<Resolved>>>,
    /// The messages the turns' spans record (each copied once).
    history: History,
}

/// What a turn's model and tool names resolved to.
struct Resolved {
    model_name: Option<String>,
    tool_names: Vec<String>,
    model: DynAction,
    tools: Vec<DynAction>,
    tools_by_name: HashMap<String, DynAction>,
}

impl Engine {
    pub(crate) fn new(
        registry: Registry,
        middleware: Vec<Arc<dyn GenerateMiddleware>>,
        tool_errors: ToolErrorPolicy,
        limits: LoopLimits,
        tool_choice_once: bool,
    ) -> Arc<Self> {
        // Without middleware (the usual call) both chains are one shared
        // empty list: an `Arc<[_]>`, even empty, is an allocation.
        let (middleware, model_hooks) = if middleware.is_empty() {
            NO_MIDDLEWARE.with(Clone::clone)
        } else {
            let hooks: Vec<Arc<dyn ModelMiddleware>> = middleware
                .iter()
                .map(|m| Arc::new(GenerateModelHook(m.clone())) as Arc<dyn ModelMiddleware>)
                .collect();
            (middleware.into(), hooks.into())
        };
        Arc::new(Self {
            registry,
            middleware,
            model_hooks,
            tool_errors,
            limits,
            tool_choice_once,
            indexer: ChunkIndexer::default(),
            resolved: Mutex::new(None),
            history: History::default(),
        })
    }

    /// Runs the tool loop from `state` to its end: one `generate` span per
    /// turn, each opened inside the previous turn's span (so the spans nest
    /// as Genkit JS's recursion nests them), all closed with the final
    /// response once the loop ends.
    pub(crate) fn run(
        self: Arc<Self>,
        raw: Box<GenerateActionOptions>,
        state: LoopState,
        ctx: GenerateCallCtx,
    ) -> BoxFuture<'static, Result<GenerateResponse>> {
        Box::pin(self.run_loop(raw, state, ctx))
    }

    async fn run_loop(
        self: Arc<Self>,
        mut raw: Box<GenerateActionOptions>,
        mut state: LoopState,
        ctx: GenerateCallCtx,
    ) -> Result<GenerateResponse> {
        // Without middleware the loop only appends to the history, so the
        // turns' records share one copy of it (see `span_record`).
        let history = self.middleware.is_empty().then_some(&self.history);
        let mut spans = TurnSpans::default();
        let result = loop {
            let span = spans.open(&mut raw, history);
            // Boxed: a turn's future is large, and the loop's own state stays
            // small instead of holding (and moving) it.
            let step = span.scope(Box::pin(self.step(raw, state, &ctx))).await;
            spans.push(span);
            match step {
                Ok(TurnOutcome::Next {
                    request,
                    state: next,
                }) => {
                    raw = request;
                    state = next;
                }
                Ok(TurnOutcome::Done(response)) => break Ok(response),
                Err(e) => break Err(e),
            }
        };
        spans.close(result, history)
    }

    /// One turn, through the generate-level middleware if there is any.
    /// A generate hook wraps its turn and every turn after it (its `next`
    /// returns the call's final response, as in Genkit JS), so with
    /// middleware the turns after this one run inside its chain.
    async fn step(
        self: &Arc<Self>,
        raw: Box<GenerateActionOptions>,
        state: LoopState,
        ctx: &GenerateCallCtx,
    ) -> Result<TurnOutcome> {
        if self.middleware.is_empty() {
            return self.turn(raw, state, ctx).await;
        }
        let engine = self.clone();
        let tail = Arc::new(move |env: GenerateEnvelope, ctx: GenerateCallCtx| {
            let engine = engine.clone();
            let state = LoopState {
                turn: env.current_turn,
                message_index: env.message_index,
            };
            Box::pin(async move {
                match engine.turn(Box::new(env.request), state, &ctx).await? {
                    TurnOutcome::Done(response) => Ok(response),
                    TurnOutcome::Next { request, state } => engine.run(request, state, ctx).await,
                }
            }) as BoxFuture<'static, Result<GenerateResponse>>
        });
        let env = GenerateEnvelope {
            request: *raw,
            current_turn: state.turn,
            message_index: state.message_index,
        };
        GenerateNext::new(self.middleware.clone(), tail)
            .run(env, ctx.clone())
            .await
            .map(TurnOutcome::Done)
    }

    fn emit(&self, ctx: &GenerateCallCtx, role: Role, mut chunk: GenerateResponseChunk) {
        if let Some(cb) = &ctx.on_chunk {
            self.indexer.stamp(role, &mut chunk);
            cb(chunk);
        }
    }

    /// One turn of the loop: ends the loop (exits A, B, C) or says which
    /// request the next turn runs.
    async fn turn(
        self: &Arc<Self>,
        mut raw: Box<GenerateActionOptions>,
        state: LoopState,
        ctx: &GenerateCallCtx,
    ) -> Result<TurnOutcome> {
        // Resolve the model, the tools (plus middleware tools) and the format.
        let resolved = self.resolve_model_and_tools(&raw).await?;
        let (model, tools, tools_by_name) =
            (&resolved.model, &resolved.tools, &resolved.tools_by_name);
        apply_format(&mut raw, &self.registry)?;
        crate::resources::apply_resources(&self.registry, &mut raw).await?;

        if raw.resume.is_some() {
            match resolve_resume(self, &raw, tools_by_name, ctx).await? {
                ResumeOutcome::Interrupted(message) => {
                    return Err(Error::failed_precondition(
                        "One or more tools triggered an interrupt during a restarted execution.",
                    )
                    .with_details(json!({ "message": message })));
                }
                ResumeOutcome::Resumed {
                    request,
                    tool_message,
                } => {
                    self.emit(
                        ctx,
                        Role::Tool,
                        GenerateResponseChunk::new(tool_message.content.clone()),
                    );
                    return Ok(TurnOutcome::Next {
                        request,
                        state: state.after_resume(),
                    });
                }
            }
        }

        if state.turn == 0 {
            // Once per call, not once per turn of the same request.
            warn_about_capabilities(&raw, tools, model);
        }
        // Documents for a model that cannot take them go into the last user
        // message, and stay in the history (as in Genkit JS, where the
        // model's context middleware changes the request's own messages).
        if let Some(docs) = raw.docs.as_deref().filter(|d| !d.is_empty())
            && model_info(model)
                .and_then(|i| i.supports)
                .is_none_or(|s| s.context != Some(true))
        {
            augment_with_context().augment(&mut raw.messages, docs);
        }
        // The model request, built once: the model gets a copy (sharing the
        // history and the tool definitions), the model span records it, and
        // the response that leaves the loop echoes it.
        let request = self.to_model_request(&mut raw, tools);
        let is_background = model.desc().kind == ActionKind::BackgroundModel;
        // Without hooks the model span's request is this one; a background
        // model's answer is an operation, not the turn's message.
        let direct = self.model_hooks.is_empty() && !is_background;
        let (trace, span_input) = ModelTrace::open(&self.history, &raw, &request, direct);
        let mut response = self
            .dispatch_model(model, request.clone(), ctx, span_input)
            .await?;
        if is_background {
            return Ok(TurnOutcome::Done(response));
        }
        assert_valid(&response)?;
        let mut message = response
            .message
            .take()
            .or_else(|| response.message().cloned())
            .unwrap_or_else(|| Message::new(Role::Model, Vec::<genkit_model::types::Part>::new()));
        annotate_output_format(&mut message, request.output.as_ref());
        trace.close(&message);
        let finish = |request: GenerateRequest, response: GenerateResponse, message: Message| {
            Finished { response, request }.into_response(message)
        };

        let has_tool_requests = message.content.iter().any(|p| p.is_tool_request());
        // Exit A: nothing to run, or the caller runs tools itself.
        if raw.return_tool_requests == Some(true) || !has_tool_requests {
            if !has_tool_requests {
                let output = request.output.as_ref();
                validate_output(
                    &self.registry,
                    &message,
                    output.and_then(|o| o.format.as_deref()),
                    output.and_then(|o| o.schema.as_ref()),
                    response.finish_reason(),
                )?;
            }
            return Ok(TurnOutcome::Done(finish(request, response, message)));
        }
        // Exit B: the loop guard, before any tool runs.
        if let Some(error) = self.limits.turn_limit_error(raw.max_turns, state.turn) {
            let response = finish(request, response, message);
            let request_json = serde_json::to_value(&response.request).unwrap_or(Value::Null);
            return Err(error.with_details(json!({
                "response": serde_json::to_value(&response).unwrap_or(Value::Null),
                "request": request_json,
            })));
        }
        match resolve_tool_requests(self, &raw, &message, tools_by_name, ctx).await? {
            // Exit C: a tool interrupted.
            ToolRun::Interrupted(revised) => {
                let mut response = finish(request, response, revised);
                response.finish_reason = Some(FinishReason::Interrupted);
                response.finish_message =
                    Some("One or more tool calls resulted in interrupts.".into());
                Ok(TurnOutcome::Done(response))
            }
            ToolRun::Completed(tool_message) => {
                if let (Some(tm), true) = (&tool_message, ctx.on_chunk.is_some()) {
                    self.emit(
                        ctx,
                        Role::Tool,
                        GenerateResponseChunk::new(tm.content.clone()),
                    );
                }
                // The history comes back from the request (copied only if
                // something still shares it).
                let mut next = raw;
                next.messages =
                    Arc::try_unwrap(request.messages).unwrap_or_else(|shared| (*shared).clone());
                next.messages.push(message);
                if let Some(tm) = tool_message {
                    next.messages.push(tm);
                }
                // A tool forced once: the model may answer from here on.
                if self.tool_choice_once && next.tool_choice == Some(ToolChoice::Required) {
                    next.tool_choice = Some(ToolChoice::Auto);
                }
                Ok(TurnOutcome::Next {
                    request: next,
                    state: state.next_turn(),
                })
            }
        }
    }

    /// The model and tools the options name (plus the tools middleware
    /// contributes, and the tools by the name models call them), looked up
    /// once per call and reused by later turns that name the same ones.
    /// Overlapping tool names are refused here, before the model is called.
    async fn resolve_model_and_tools(&self, raw: &GenerateActionOptions) -> Result<Arc<Resolved>> {
        let names = raw.tools.as_deref().unwrap_or_default();
        if let Some(r) = self.resolved.lock().as_ref()
            && r.model_name == raw.model
            && r.tool_names == names
        {
            return Ok(r.clone());
        }
        let model = self.resolve_model(raw.model.as_deref()).await?;
        let mut tools = resolve_tools(&self.registry, names).await?;
        for m in self.middleware.iter() {
            tools.extend(m.tools());
        }
        let resolved = Arc::new(Resolved {
            model_name: raw.model.clone(),
            tool_names: names.to_vec(),
            model,
            tools_by_name: tool_map(&tools)?,
            tools,
        });
        *self.resolved.lock() = Some(resolved.clone());
        Ok(resolved)
    }

    async fn resolve_model(&self, name: Option<&str>) -> Result<DynAction> {
        let name = match name {
            Some(n) => n.to_owned(),
            None => self
                .registry
                .lookup_value("defaultModel", "defaultModel")
                .and_then(|v| v.as_str().map(str::to_owned))
                .ok_or_else(|| {
                    Error::invalid_argument("Must supply a `model` to `generate()` calls.")
                })?,
        };
        match lookup_model(&self.registry, &name).await {
            Err(e) if e.status() == StatusCode::NotFound => {
                Err(missing_model_error(&self.registry, &name, self.limits.wire_messages()).await)
            }
            found => found,
        }
    }

    /// Genkit's `actionToGenerateRequest`: the request takes the options'
    /// history (the turn hands it back to the next turn's options).
    fn to_model_request(
        &self,
        raw: &mut GenerateActionOptions,
        tools: &[DynAction],
    ) -> GenerateRequest {
        let output = match &raw.output {
            Some(o) => OutputConfig {
                format: o.format.clone(),
                schema: o.json_schema.clone(),
                constrained: o.constrained,
                content_type: o.content_type.clone(),
            },
            None => OutputConfig::default(),
        };
        GenerateRequest {
            messages: Arc::new(std::mem::take(&mut raw.messages)),
            config: raw.config.clone(),
            tools: Some(tool_definitions(tools)),
            tool_choice: raw.tool_choice,
            output: Some(output),
            docs: raw.docs.clone(),
            candidates: None,
        }
    }

    /// The model chain: generate middleware's model hooks, then the model
    /// action (which applies its own middleware inside its span).
    async fn dispatch_model(
        self: &Arc<Self>,
        model: &DynAction,
        request: GenerateRequest,
        ctx: &GenerateCallCtx,
        span_input: Option<SpanJson>,
    ) -> Result<GenerateResponse> {
        // Taken by the (single) call of the tail.
        let span_input = Arc::new(Mutex::new(span_input));
        // Model chunks are stamped with the model message's index and role.
        let on_chunk = ctx.on_chunk.clone().map(|cb| {
            let engine = self.clone();
            Arc::new(move |mut chunk: GenerateResponseChunk| {
                engine.indexer.stamp(Role::Model, &mut chunk);
                cb(chunk)
            }) as genkit_core::action::ChunkCallback<GenerateResponseChunk>
        });
        let mctx = ModelCallCtx {
            on_chunk,
            context: ctx.context.clone(),
            cancel: ctx.cancel.clone(),
        };
        let model = model.clone();
        let is_background = model.desc().kind == ActionKind::BackgroundModel;
        let tail: ModelFn = Arc::new(move |req, mctx: ModelCallCtx| {
            let model = model.clone();
            let span_input = span_input.lock().take();
            Box::pin(async move {
                if is_background {
                    let out = model
                        .run_json(
                            serde_json::to_value(&req)?,
                            RunOptions {
                                context: Some(mctx.context),
                                cancel: mctx.cancel.into_option(),
                                ..RunOptions::default()
                            },
                        )
                        .await?;
                    let operation = serde_json::from_value(out.output).map_err(|e| {
                        Error::internal(format!(
                            "background model returned an invalid operation: {e}"
                        ))
                        .with_source(e)
                    })?;
                    return Ok(GenerateResponse {
                        operation: Some(Box::new(operation)),
                        request: Some(Box::new(redacted(req))),
                        ..GenerateResponse::default()
                    });
                }
                call_model_recorded(&model, req, &mctx, span_input).await
            })
        });
        ModelNext::new(self.model_hooks.clone(), tail)
            .run(request, mctx)
            .await
    }
}

/// Genkit warns (and goes on) when a request uses what the model says it
/// cannot do.
fn warn_about_capabilities(raw: &GenerateActionOptions, tools: &[DynAction], model: &DynAction) {
    // The model's info is parsed from its metadata (about an eighth of a
    // plain call's instructions): only when there is something to check.
    if tools.is_empty() && raw.tool_choice.is_none() {
        return;
    }
    let info = model_info(model);
    let supports = info.as_ref().and_then(|i| i.supports.as_ref());
    if !tools.is_empty() && supports.is_some_and(|s| s.tools != Some(true)) {
        tracing::warn!(
            "The model '{}' does not support tools (you set: {} tools). The model may not behave the way you expect.",
            model.name(),
            tools.len()
        );
    }
    if let Some(choice) = raw.tool_choice
        && supports.is_some_and(|s| s.tool_choice != Some(true))
    {
        tracing::warn!(
            "The model '{}' does not support the 'toolChoice' option (you set: {choice:?}). The model may not behave the way you expect.",
            model.name()
        );
    }
}

/// The parts of a model response that outlive the message.
struct Finished {
    response: GenerateResponse,
    request: GenerateRequest,
}

impl Finished {
    /// The response as Genkit's `GenerateResponse.toJSON()` shapes it:
    /// message, finish reason and message, usage and custom (`{}` when
    /// absent), the request, and the operation if any.
    fn into_response(self, message: Message) -> GenerateResponse {
        let r = self.response;
        GenerateResponse {
            message: Some(message),
            finish_reason: r.finish_reason,
            finish_message: r.finish_message.filter(|m| !m.is_empty()),
            latency_ms: None,
            usage: Some(r.usage.unwrap_or_default()),
            custom: Some(
                r.custom
                    .unwrap_or_else(|| Value::Object(Default::default())),
            ),
            raw: None,
            request: Some(Box::new(redacted(self.request))),
            operation: r.operation,
            candidates: None,
        }
    }
}

/// The request as a response echoes it: a per-request `config.apiKey`
/// reads `[redacted]`, so a key never travels back to callers or logs.
fn redacted(mut request: GenerateRequest) -> GenerateRequest {
    if let Some(key) = request.config.as_mut().and_then(|c| c.get_mut("apiKey"))
        && !key.is_null()
    {
        *key = Value::from("[redacted]");
    }
    request
}

/// A response must carry a message (or an operation) and must not be blocked.
fn assert_valid(response: &GenerateResponse) -> Result<()> {
    if response.finish_reason() == Some(FinishReason::Blocked) {
        let msg = match response.finish_message.as_deref() {
            Some(m) => format!("Generation blocked: {m}"),
            None => "Generation blocked.".to_owned(),
        };
        return Err(Error::failed_precondition(msg).with_details(
            json!({"response": serde_json::to_value(response).unwrap_or(Value::Null)}),
        ));
    }
    if response.message().is_none() && response.operation.is_none() {
        return Err(Error::failed_precondition(format!(
            "Model did not generate a message. Finish reason: '{}': {}",
            response
                .finish_reason()
                .map(|f| f.as_str())
                .unwrap_or("undefined"),
            response.finish_message.as_deref().unwrap_or("undefined"),
        ))
        .with_details(json!({"response": serde_json::to_value(response).unwrap_or(Value::Null)})));
    }
    Ok(())
}

/// Genkit notes the output format on the generated message.
fn annotate_output_format(message: &mut Message, output: Option<&OutputConfig>) {
    let Some(o) = output else { return };
    if o.format.is_none() && o.content_type.is_none() {
        return;
    }
    let mut out = Metadata::new();
    if let Some(ct) = &o.content_type {
        out.insert("contentType".into(), Value::from(ct.clone()));
    }
    if let Some(f) = &o.format {
        out.insert("format".into(), Value::from(f.clone()));
    }
    message
        .metadata
        .get_or_insert_with(Metadata::new)
        .insert("generate".into(), json!({ "output": out }));
}

/// How much of the model's text an output error shows.
const RAW_TEXT_SHOWN: usize = 500;

/// With an output schema, the final message's parsed output must conform.
/// The error shows what the model wrote and why it stopped, since output cut
/// off at the token limit is the usual reason.
fn validate_output(
    formats: &Registry,
    message: &Message,
    format: Option<&str>,
    schema: Option<&Value>,
    finish_reason: Option<FinishReason>,
) -> Result<()> {
    let Some(schema) = schema else { return Ok(()) };
    let checked = match genkit_model::formats::format_handler(formats, format, Some(schema))? {
        Some(h) => h.parse_message(message).map_err(Error::from),
        None => Ok(message.output().unwrap_or(Value::Null)),
    }
    .and_then(|output| SchemaValidator::compile(schema)?.validate(&output));
    checked.map_err(|e| output_error(e, &message.text(), finish_reason))
}

/// An output error with the raw text (truncated) and the finish reason:
/// both always in the details (`finishReason`, `rawText`), and in the
/// message when the model did not stop normally (output cut off at the
/// token limit is the usual cause of output that fails its schema). After a
/// normal stop the message stays Genkit JS's, which shows the parsed data.
fn output_error(error: Error, text: &str, finish_reason: Option<FinishReason>) -> Error {
    let total = text.chars().count();
    let shown: String = text.chars().take(RAW_TEXT_SHOWN).collect();
    let mut details = match error.details() {
        Some(Value::Object(map)) => map.clone(),
        _ => serde_json::Map::new(),
    };
    details.insert(
        "finishReason".into(),
        finish_reason.map_or(Value::Null, |r| Value::from(r.as_str())),
    );
    details.insert("rawText".into(), Value::from(shown.clone()));
    let message = if finish_reason == Some(FinishReason::Stop) {
        error.message().to_owned()
    } else {
        let reason = match finish_reason {
            Some(FinishReason::Length) => "'length' (the model hit its output token limit; \
                 raise `maxOutputTokens` in the config)"
                .to_owned(),
            Some(r) => format!("'{}'", r.as_str()),
            None => "none given".to_owned(),
        };
        let more = if total > RAW_TEXT_SHOWN {
            format!(" … ({} more characters)", total - RAW_TEXT_SHOWN)
        } else {
            String::new()
        };
        format!(
            "{}\nFinish reason: {reason}.\nModel output ({total} characters): {shown:?}{more}",
            error.message()
        )
    };
    Error::new(error.status(), message)
        .with_details(Value::Object(details))
        .with_source(error)
}

/// `Model 'x' not found`, with the models and plugins that are registered
/// (in the details `registeredModels` / `registeredPlugins`, and in the
/// message unless the caller wants Genkit JS's exact messages, as
/// `/util/generate` does) and how to add a provider.
async fn missing_model_error(registry: &Registry, name: &str, wire_messages: bool) -> Error {
    let models: Vec<String> = registry
        .list_resolvable_actions()
        .await
        .into_values()
        .filter(|d| matches!(d.kind, ActionKind::Model | ActionKind::BackgroundModel))
        .map(|d| d.name)
        .collect();
    let plugins = registry.plugin_names();
    let details = json!({"registeredModels": models, "registeredPlugins": plugins});
    if wire_messages {
        return Error::not_found(format!("Model '{name}' not found")).with_details(details);
    }
    let list = |items: &[String]| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            items
                .iter()
                .map(|i| format!("'{i}'"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    Error::not_found(format!(
        "Model '{name}' not found. Registered models: {}. Registered plugins: {}. \
         A provider's models become available once its plugin is registered \
         (`Genkit::builder().plugin(...)`); name them `<plugin>/<model>`.",
        list(&models),
        list(&plugins),
    ))
    .with_details(details)
}
