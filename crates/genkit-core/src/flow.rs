//! Flows: user workflows as typed, traced, servable actions of kind `flow`.
//! Inside a flow, [`run`](crate::tracing::run) records a named step as a child span.

use crate::action::{Action, ActionCtx, ActionKind, Payload};
use crate::error::Result;
use crate::registry::Registry;
use schemars::JsonSchema;
use serde::Serialize;
use std::future::Future;

/// The context a flow body receives: the one [`ActionCtx`] (request data,
/// chunk sender, cancellation, trace ids, registry, typed extensions). `S` is
/// the stream chunk type (`()` for a non-streaming flow).
pub type FlowContext<S = ()> = ActionCtx<S>;

/// Defines a (non-streaming) flow and registers it as `/flow/<name>`. Input
/// and output schemas come from the types. Fails if the name is taken
/// (`ALREADY_EXISTS`) or invalid (`INVALID_ARGUMENT`).
pub fn define_flow<I, O, F, Fut>(registry: &Registry, name: &str, body: F) -> Result<Action<I, O>>
where
    I: Payload + JsonSchema,
    O: Payload + JsonSchema,
    F: Fn(I, FlowContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O>> + Send + 'static,
{
    define_streaming_flow(registry, name, body)
}

/// Defines a flow that streams chunks of type `S` (sent with
/// [`FlowContext::send_chunk`](crate::ActionCtx::send_chunk)) and registers it
/// as `/flow/<name>`. Fails if the name is taken.
pub fn define_streaming_flow<I, O, S, F, Fut>(
    registry: &Registry,
    name: &str,
    body: F,
) -> Result<Action<I, O, S>>
where
    I: Payload + JsonSchema,
    O: Payload + JsonSchema,
    S: Payload + Serialize + JsonSchema,
    F: Fn(I, FlowContext<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O>> + Send + 'static,
{
    let flow = Action::new(ActionKind::Flow, name, body);
    registry.register(&flow)?;
    Ok(flow)
}
