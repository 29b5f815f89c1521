//! Genkit JS's test models (`genkit/testing`, 1.40): [`mock_model`], a model
//! whose answers a test scripts and whose requests it inspects, and
//! [`echo_model`], which answers with the request it was given rendered as
//! text. Names, defaults and rendering follow Genkit JS, so a test ported
//! from JS asserts the same strings (checked against recorded Genkit JS
//! answers in `tests/test_models.rs`).

use crate::model::{Model, ModelCtx, ModelOptions, define_model};
use crate::types::{
    ConstrainedSupport, FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk,
    GenerationUsage, Message, ModelSupports, Part, PartKind, Role, ToolRequest, ToolResponse,
};
use genkit_core::{Error, Registry, Result};
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;

/// What a mock model answers for one call (Genkit JS's `MockResponse`).
#[derive(Debug, Clone, PartialEq)]
pub struct MockResponse(Answer);

#[derive(Debug, Clone, PartialEq)]
enum Answer {
    /// Assembled: `content` parts, then the text, then the tool requests.
    Parts {
        content: Vec<Part>,
        text: Option<String>,
        tool_requests: Vec<ToolRequest>,
        finish_reason: Option<FinishReason>,
        usage: Option<Box<GenerationUsage>>,
    },
    /// Used as is (its finish reason defaults to `stop`).
    Full(Box<GenerateResponse>),
}

impl Default for MockResponse {
    fn default() -> Self {
        Self(Answer::Parts {
            content: Vec::new(),
            text: None,
            tool_requests: Vec::new(),
            finish_reason: None,
            usage: None,
        })
    }
}

impl MockResponse {
    /// An empty answer, to build on.
    pub fn new() -> Self {
        Self::default()
    }

    /// A text answer (`finishReason: stop`).
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A full response, used as is.
    pub fn full(response: GenerateResponse) -> Self {
        Self(Answer::Full(Box::new(response)))
    }

    /// Sets the answer's text (after any raw parts, before tool requests).
    pub fn with_text(mut self, value: impl Into<String>) -> Self {
        if let Answer::Parts { text, .. } = &mut self.0 {
            *text = Some(value.into());
        }
        self
    }

    /// Adds a tool request (without a `ref`).
    pub fn with_tool_request(self, name: impl Into<String>, input: Value) -> Self {
        self.with_tool_request_parts(ToolRequest::new(name, input))
    }

    /// Adds a tool request as given (e.g. with a `ref`).
    pub fn with_tool_request_parts(mut self, request: ToolRequest) -> Self {
        if let Answer::Parts { tool_requests, .. } = &mut self.0 {
            tool_requests.push(request);
        }
        self
    }

    /// Adds raw parts, placed before the text and the tool requests.
    pub fn with_content(mut self, parts: impl IntoIterator<Item = Part>) -> Self {
        if let Answer::Parts { content, .. } = &mut self.0 {
            content.extend(parts);
        }
        self
    }

    /// Sets the finish reason (`stop` by default).
    pub fn with_finish_reason(mut self, reason: FinishReason) -> Self {
        if let Answer::Parts { finish_reason, .. } = &mut self.0 {
            *finish_reason = Some(reason);
        }
        self
    }

    /// Sets the reported usage.
    pub fn with_usage(mut self, value: GenerationUsage) -> Self {
        if let Answer::Parts { usage, .. } = &mut self.0 {
            *usage = Some(Box::new(value));
        }
        self
    }

    fn into_response(self) -> GenerateResponse {
        match self.0 {
            Answer::Full(mut response) => {
                response.finish_reason.get_or_insert(FinishReason::Stop);
                *response
            }
            Answer::Parts {
                mut content,
                text,
                tool_requests,
                finish_reason,
                usage,
            } => {
                content.extend(text.map(Part::text));
                content.extend(tool_requests.into_iter().map(Part::tool_request));
                let mut response = GenerateResponse::new(
                    Message::new(Role::Model, content),
                    finish_reason.unwrap_or(FinishReason::Stop),
                );
                response.usage = usage;
                response
            }
        }
    }
}

impl From<&str> for MockResponse {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for MockResponse {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<GenerateResponse> for MockResponse {
    fn from(response: GenerateResponse) -> Self {
        Self::full(response)
    }
}

/// Streams chunks from a [`MockRespond::from_fn`] callback (Genkit JS's
/// `MockContext`): a no-op unless the caller streams.
pub struct MockContext {
    ctx: ModelCtx,
}

impl MockContext {
    /// Streams a chunk of text.
    pub fn send_text(&self, text: impl Into<String>) {
        self.send_chunk(GenerateResponseChunk::new(vec![Part::text(text)]));
    }

    /// Streams a chunk.
    pub fn send_chunk(&self, chunk: GenerateResponseChunk) {
        self.ctx.send_chunk(chunk);
    }

    /// Whether the caller streams.
    pub fn is_streaming(&self) -> bool {
        self.ctx.is_streaming()
    }
}

type RespondFn = dyn Fn(&GenerateRequest, &MockContext) -> Result<MockResponse> + Send + Sync;

/// How a mock model answers (Genkit JS's `MockRespond`): the same answer
/// every call, a queue consumed one per call whose last item repeats (an
/// `Err` in it fails that call), or a function of the request.
#[derive(Clone)]
pub struct MockRespond(Respond);

#[derive(Clone)]
enum Respond {
    Queue(Arc<[Result<MockResponse>]>),
    Fn(Arc<RespondFn>),
}

impl MockRespond {
    /// A queue: call `n` gets item `n`, the last item repeats once the queue
    /// is used up; an `Err` item fails its call with that error.
    pub fn queue(items: impl IntoIterator<Item = Result<MockResponse>>) -> Self {
        Self(Respond::Queue(items.into_iter().collect()))
    }

    /// Answers with `f(request, context)` on every call; `context` streams.
    pub fn from_fn(
        f: impl Fn(&GenerateRequest, &MockContext) -> Result<MockResponse> + Send + Sync + 'static,
    ) -> Self {
        Self(Respond::Fn(Arc::new(f)))
    }
}

impl Default for MockRespond {
    /// An empty text answer, as Genkit JS's default.
    fn default() -> Self {
        Self::queue([Ok(MockResponse::text(""))])
    }
}

impl<T: Into<MockResponse>> From<T> for MockRespond {
    fn from(response: T) -> Self {
        Self::queue([Ok(response.into())])
    }
}

impl<T: Into<MockResponse>, const N: usize> From<[T; N]> for MockRespond {
    fn from(responses: [T; N]) -> Self {
        Self::queue(responses.into_iter().map(|r| Ok(r.into())))
    }
}

impl<T: Into<MockResponse>> From<Vec<T>> for MockRespond {
    fn from(responses: Vec<T>) -> Self {
        Self::queue(responses.into_iter().map(|r| Ok(r.into())))
    }
}

/// Options of [`mock_model`] (Genkit JS's `MockModelOptions`).
#[derive(Clone)]
pub struct MockModelOptions {
    name: String,
    label: Option<String>,
    versions: Vec<String>,
    supports: ModelSupports,
    respond: MockRespond,
}

impl Default for MockModelOptions {
    fn default() -> Self {
        Self {
            name: "mockModel".to_owned(),
            label: None,
            versions: Vec::new(),
            supports: ModelSupports::default(),
            respond: MockRespond::default(),
        }
    }
}

impl MockModelOptions {
    /// Defaults: named `mockModel`, answering an empty text.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registered name (`/model/<name>`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// A label for tools such as the Dev UI.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Versions the model accepts.
    pub fn versions<S: Into<String>>(mut self, versions: impl IntoIterator<Item = S>) -> Self {
        self.versions = versions.into_iter().map(Into::into).collect();
        self
    }

    /// What the model declares it supports. `constrained` is `all` unless
    /// set here (as Genkit JS), so a request's output schema reaches the
    /// model instead of being written into the prompt; set it to `none` to
    /// test that path.
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }

    /// How the model answers: a response, an array or `Vec` of them (a
    /// queue), or a [`MockRespond`].
    pub fn respond(mut self, respond: impl Into<MockRespond>) -> Self {
        self.respond = respond.into();
        self
    }
}

struct MockState {
    requests: Vec<GenerateRequest>,
    respond: MockRespond,
    /// Calls answered since the behaviour was (re)set: the queue position.
    answered: usize,
}

/// A model a test scripts and inspects (Genkit JS's `MockModel`), made by
/// [`mock_model`] or [`echo_model`]. Clones share the recorded calls.
#[derive(Clone)]
pub struct MockModel {
    model: Model,
    state: Arc<Mutex<MockState>>,
    initial: MockRespond,
}

impl MockModel {
    /// The model (pass it, or its name, to `generate`).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        self.model.name()
    }

    /// Every request received, oldest first.
    pub fn requests(&self) -> Vec<GenerateRequest> {
        self.state.lock().requests.clone()
    }

    /// How many times the model was called.
    pub fn request_count(&self) -> usize {
        self.state.lock().requests.len()
    }

    /// The latest request.
    pub fn last_request(&self) -> Option<GenerateRequest> {
        self.state.lock().requests.last().cloned()
    }

    /// The last message of the latest request.
    pub fn last_request_message(&self) -> Option<Message> {
        self.state
            .lock()
            .requests
            .last()
            .and_then(|r| r.messages.last().cloned())
    }

    /// The latest request's messages as one string, as Genkit JS renders it
    /// (`system: ` / `tool: ` before those roles' messages, a line each,
    /// non-text parts as `[media …]`, `[toolRequest name(input)]`, …).
    pub fn last_request_text(&self) -> Option<String> {
        self.state.lock().requests.last().map(render_request_text)
    }

    /// The tool responses in the latest request, in order.
    pub fn tool_responses(&self) -> Vec<ToolResponse> {
        let state = self.state.lock();
        let Some(last) = state.requests.last() else {
            return Vec::new();
        };
        last.messages
            .iter()
            .flat_map(|m| m.content.iter())
            .filter_map(|p| p.as_tool_response().cloned())
            .collect()
    }

    /// Replaces how later calls are answered (a queue starts again from its
    /// first item); the recorded calls stay.
    pub fn respond_with(&self, respond: impl Into<MockRespond>) {
        let mut state = self.state.lock();
        state.respond = respond.into();
        state.answered = 0;
    }

    /// Forgets the recorded calls and restores the answers given when the
    /// model was defined (a queue from its first item).
    pub fn reset(&self) {
        let mut state = self.state.lock();
        state.requests.clear();
        state.respond = self.initial.clone();
        state.answered = 0;
    }
}

/// Defines and registers a mock model (Genkit JS's `mockModel`).
///
/// ```
/// # use genkit_model::testing::{MockModelOptions, MockRespond, mock_model};
/// # use genkit_core::{Error, Registry, StatusCode};
/// let registry = Registry::new();
/// let model = mock_model(
///     &registry,
///     MockModelOptions::new().respond(MockRespond::queue([
///         Ok("ok".into()),
///         Err(Error::new(StatusCode::Unavailable, "rate limited")),
///     ])),
/// )
/// .unwrap();
/// assert_eq!(model.name(), "mockModel");
/// ```
pub fn mock_model(registry: &Registry, options: MockModelOptions) -> Result<MockModel> {
    let mut supports = options.supports;
    supports.constrained.get_or_insert(ConstrainedSupport::All);
    let mut model_options = ModelOptions::new(options.name)
        .versions(options.versions)
        .supports(supports);
    if let Some(label) = options.label {
        model_options = model_options.label(label);
    }
    let state = Arc::new(Mutex::new(MockState {
        requests: Vec::new(),
        respond: options.respond.clone(),
        answered: 0,
    }));
    let shared = state.clone();
    let model = define_model(registry, model_options, move |req: GenerateRequest, ctx| {
        let (respond, position) = {
            let mut state = shared.lock();
            state.requests.push(req.clone());
            state.answered += 1;
            (state.respond.clone(), state.answered - 1)
        };
        let answer = match respond.0 {
            Respond::Queue(items) => match items.get(position).or(items.last()) {
                Some(Ok(response)) => Ok(response.clone()),
                Some(Err(e)) => Err(e.clone()),
                None => Ok(MockResponse::text("")),
            },
            Respond::Fn(f) => f(&req, &MockContext { ctx }),
        };
        std::future::ready(answer.map(MockResponse::into_response))
    })?;
    Ok(MockModel {
        model,
        state,
        initial: options.respond,
    })
}

/// Options of [`echo_model`] (Genkit JS's `EchoModelOptions`).
#[derive(Clone)]
pub struct EchoModelOptions {
    name: String,
    supports: ModelSupports,
}

impl Default for EchoModelOptions {
    fn default() -> Self {
        Self {
            name: "echoModel".to_owned(),
            supports: ModelSupports::default(),
        }
    }
}

impl EchoModelOptions {
    /// Defaults: named `echoModel`.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registered name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the model declares it supports (`constrained` is always `all`).
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }
}

/// Defines a model answering with the request it received as text (Genkit
/// JS's `echoModel`): `Echo: <the rendered request>` then `; config: <the
/// request's config as JSON>`, for asserting what a prompt or a flow sends a
/// model. A request with an output schema is refused: text cannot satisfy
/// it (script a [`mock_model`] with a conforming answer instead).
///
/// Unlike [`define_echo_model`](super::define_echo_model) (ours, older),
/// it renders Genkit JS's way and does not stream.
pub fn echo_model(registry: &Registry, options: EchoModelOptions) -> Result<MockModel> {
    let mut supports = options.supports;
    supports.constrained = Some(ConstrainedSupport::All);
    let respond = MockRespond::from_fn(|req, _| {
        if req.output.as_ref().is_some_and(|o| o.schema.is_some()) {
            return Err(Error::invalid_argument(
                "echoModel returns text and can't satisfy an output schema: this request asks \
                 for structured output. Either move the output schema to the generate or flow \
                 call so the prompt stays text-only, or use mock_model with a conforming \
                 response and assert what the model received with last_request_text or \
                 last_request.",
            ));
        }
        // Genkit JS always sends a config object (`{}` when none is set).
        let config = req
            .config
            .as_ref()
            .map_or_else(|| "{}".to_owned(), |c| c.to_string());
        Ok(MockResponse::new().with_content([
            Part::text(format!("Echo: {}", render_request_text(req))),
            Part::text(format!("; config: {config}")),
        ]))
    });
    mock_model(
        registry,
        MockModelOptions::new()
            .name(options.name)
            .supports(supports)
            .respond(respond),
    )
}

/// A request's messages as Genkit JS's test models render them.
pub fn render_request_text(request: &GenerateRequest) -> String {
    request
        .messages
        .iter()
        .map(|m| {
            let prefix = match m.role {
                Role::User | Role::Model => String::new(),
                _ => format!("{}: ", m.role.as_str()),
            };
            let parts: String = m.content.iter().map(render_part).collect();
            prefix + &parts
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `JSON.stringify` of an optional value (`undefined` when absent).
fn json_or_undefined(value: Option<&Value>) -> String {
    value.map_or_else(|| "undefined".to_owned(), Value::to_string)
}

fn render_part(part: &Part) -> String {
    match &part.kind {
        PartKind::Text(text) => text.clone(),
        PartKind::Media(media) => {
            let kind = media
                .content_type
                .as_ref()
                .map(|t| format!(" {t}"))
                .unwrap_or_default();
            format!("[media{kind}: {}]", media.url)
        }
        PartKind::ToolRequest(r) => {
            format!(
                "[toolRequest {}({})]",
                r.name,
                json_or_undefined(r.input.as_ref())
            )
        }
        PartKind::ToolResponse(r) => {
            format!(
                "[toolResponse {}: {}]",
                r.name,
                json_or_undefined(r.output.as_ref())
            )
        }
        PartKind::Reasoning(text) => format!("[reasoning: {text}]"),
        PartKind::Resource(r) => format!("[resource: {}]", r.uri),
        PartKind::Data(data) => format!("[data: {data}]"),
        PartKind::Custom(custom) => format!("[custom: {}]", Value::Object(custom.clone())),
        _ => String::new(),
    }
}
