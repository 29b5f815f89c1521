//! Testing one model middleware layer without a model or a registry: a model
//! tail that answers from a script and records what reached it, and a
//! one-layer chain runner.

use crate::middleware::{ModelCall, ModelCallCtx, ModelMiddleware, Next, Tail};
use crate::types::{FinishReason, GenerateRequest, GenerateResponse, Message};
use genkit_core::{Error, Result};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;

/// A model tail answering from a script (`Ok(text)` or an error) and
/// recording the requests it got; answers "ok" once the script is empty.
#[derive(Clone, Default)]
pub struct ScriptedTail {
    script: Arc<Mutex<VecDeque<std::result::Result<String, Error>>>>,
    seen: Arc<Mutex<Vec<GenerateRequest>>>,
}

impl ScriptedTail {
    /// Fails the next unanswered call with `error`.
    pub fn then_fail(self, error: Error) -> Self {
        self.script.lock().push_back(Err(error));
        self
    }

    /// The tail of a model chain that answers from this script.
    pub fn tail(&self) -> Tail<ModelCall> {
        let this = self.clone();
        Arc::new(move |req: GenerateRequest, _ctx| {
            this.seen.lock().push(req);
            let next = this.script.lock().pop_front().unwrap_or(Ok("ok".into()));
            Box::pin(async move {
                next.map(|text| GenerateResponse::new(Message::model(text), FinishReason::Stop))
            })
        })
    }

    /// How many calls reached the tail.
    pub fn calls(&self) -> usize {
        self.seen.lock().len()
    }

    /// The last request that reached the tail (a default request if none did).
    pub fn last(&self) -> GenerateRequest {
        self.seen.lock().last().cloned().unwrap_or_default()
    }
}

/// Runs `request` through `layer` and then `tail`.
pub async fn run_layer(
    layer: impl ModelMiddleware,
    tail: &ScriptedTail,
    request: GenerateRequest,
) -> Result<GenerateResponse> {
    let layers: Arc<[Arc<dyn ModelMiddleware>]> =
        Arc::from(vec![Arc::new(layer) as Arc<dyn ModelMiddleware>]);
    Next::<ModelCall>::new(layers, tail.tail())
        .run(request, ModelCallCtx::default())
        .await
}

/// A request with these messages.
pub fn request(messages: Vec<Message>) -> GenerateRequest {
    GenerateRequest::new(messages)
}
