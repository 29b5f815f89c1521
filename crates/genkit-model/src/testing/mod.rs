//! Test models for your own tests: Genkit JS's [`mock_model`] and
//! [`echo_model`] (`genkit/testing`), a programmable model that plays back
//! scripted responses (and stream chunks) and records requests, and an echo
//! model; and, for a middleware layer alone, a scripted model tail
//! ([`ScriptedTail`], [`run_layer`]).

mod chain;
mod mock;
pub use chain::{ScriptedTail, request, run_layer};
pub use mock::{
    EchoModelOptions, MockContext, MockModel, MockModelOptions, MockRespond, MockResponse,
    echo_model, mock_model, render_request_text,
};

use crate::model::{Model, ModelCtx, ModelOptions, define_model};
use crate::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, Message, ModelSupports,
    Part, Role, ToolRequest,
};
use genkit_core::{Error, Registry, Result, StatusCode};
use parking_lot::Mutex;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

enum Scripted {
    Response {
        chunks: Vec<GenerateResponseChunk>,
        response: Box<GenerateResponse>,
    },
    Error(Error),
}

#[derive(Default)]
struct State {
    script: VecDeque<Scripted>,
    requests: Vec<GenerateRequest>,
}

/// A model that returns scripted responses in order, streaming each one's
/// chunks first, and records every request it receives.
///
/// ```
/// # use genkit_model::testing::ProgrammableModel;
/// # use genkit_core::Registry;
/// # use serde_json::json;
/// let registry = Registry::new();
/// let model = ProgrammableModel::define(&registry, "scripted")
///     .respond_tool_call("getWeather", json!({"city": "Beijing"}))
///     .respond_text("Yes, go out.");
/// assert_eq!(model.name(), "scripted");
/// ```
#[derive(Clone)]
pub struct ProgrammableModel {
    model: Model,
    state: Arc<Mutex<State>>,
}

impl ProgrammableModel {
    /// Defines and registers `/model/<name>`, supporting tools, multi-turn,
    /// system role, media and tool choice.
    ///
    /// # Panics
    /// If a model with this name is already registered.
    pub fn define(registry: &Registry, name: &str) -> Self {
        Self::try_define(registry, name).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Like [`define`](Self::define), returning the registration error.
    pub fn try_define(registry: &Registry, name: &str) -> Result<Self> {
        Self::try_define_with(registry, ModelOptions::new(name).supports(all_supported()))
    }

    /// Defines it with custom options (e.g. other `supports` flags).
    pub fn try_define_with(registry: &Registry, opts: ModelOptions) -> Result<Self> {
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        let model = define_model(
            registry,
            opts,
            move |req: GenerateRequest, ctx: ModelCtx| {
                let next = {
                    let mut st = s.lock();
                    st.requests.push(req);
                    st.script.pop_front()
                };
                async move {
                    match next {
                        Some(Scripted::Response { chunks, response }) => {
                            for c in chunks {
                                ctx.send_chunk(c);
                            }
                            Ok(*response)
                        }
                        Some(Scripted::Error(e)) => Err(e),
                        None => Err(Error::new(
                            StatusCode::FailedPrecondition,
                            "the programmable model has no scripted response left",
                        )),
                    }
                }
            },
        )?;
        Ok(Self { model, state })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        self.model.name()
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// Queues a response.
    pub fn respond(self, response: GenerateResponse) -> Self {
        self.respond_with_chunks(Vec::new(), response)
    }

    /// Queues a response preceded by stream chunks.
    pub fn respond_with_chunks(
        self,
        chunks: Vec<GenerateResponseChunk>,
        response: GenerateResponse,
    ) -> Self {
        self.state.lock().script.push_back(Scripted::Response {
            chunks,
            response: Box::new(response),
        });
        self
    }

    /// Queues a text answer (`finishReason: stop`).
    pub fn respond_text(self, text: &str) -> Self {
        self.respond(GenerateResponse::new(
            Message::new(Role::Model, text),
            FinishReason::Stop,
        ))
    }

    /// Queues a single tool call.
    pub fn respond_tool_call(self, tool: &str, input: Value) -> Self {
        let n = self.state.lock().script.len();
        self.respond_tool_calls(vec![
            ToolRequest::new(tool, input).with_ref(format!("call-{n}")),
        ])
    }

    /// Queues a message requesting several tool calls at once.
    pub fn respond_tool_calls(self, requests: Vec<ToolRequest>) -> Self {
        let parts: Vec<Part> = requests.into_iter().map(Part::tool_request).collect();
        self.respond(GenerateResponse::new(
            Message::new(Role::Model, parts),
            FinishReason::Stop,
        ))
    }

    /// Queues an error.
    pub fn respond_error(self, error: Error) -> Self {
        self.state.lock().script.push_back(Scripted::Error(error));
        self
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<GenerateRequest> {
        self.state.lock().requests.clone()
    }

    /// How many times the model was called.
    pub fn call_count(&self) -> usize {
        self.state.lock().requests.len()
    }

    /// How many scripted responses are left.
    pub fn remaining(&self) -> usize {
        self.state.lock().script.len()
    }
}

fn all_supported() -> ModelSupports {
    ModelSupports {
        multiturn: Some(true),
        media: Some(true),
        tools: Some(true),
        system_role: Some(true),
        tool_choice: Some(true),
        ..ModelSupports::default()
    }
}

/// Defines `/model/<name>`: a model that answers with the text of the
/// request's messages (`role: text` lines), streaming it word by word when
/// asked to stream, and reporting basic usage. Handy to see exactly what a
/// model receives.
pub fn define_echo_model(registry: &Registry, name: &str) -> Result<Model> {
    define_model(
        registry,
        ModelOptions::new(name)
            .label("Echo model")
            .supports(all_supported()),
        |req: GenerateRequest, ctx: ModelCtx| async move {
            let text = req
                .messages
                .iter()
                .map(|m| format!("{}: {}", m.role.as_str(), m.text()))
                .collect::<Vec<_>>()
                .join("\n");
            if ctx.is_streaming() {
                for word in text.split_inclusive(' ') {
                    ctx.send_chunk(GenerateResponseChunk::new(vec![Part::text(word)]));
                }
            }
            let message = Message::new(Role::Model, text);
            let usage = crate::model::basic_usage_stats(&req.messages, &message);
            let mut response = GenerateResponse::new(message, FinishReason::Stop);
            response.usage = Some(Box::new(usage));
            Ok(response)
        },
    )
}
