//! The one onion chain every hook uses: [`Next<H>`] runs the layers not yet
//! run, outermost first, then the chain's tail (the model, the turn, the
//! tool). A [`Hook`] says what a chain carries and which method of a layer
//! it calls; [`ModelCall`], [`GenerateTurn`] and [`ToolCall`] are the three.

use super::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, ModelCallCtx, ModelMiddleware,
    ToolCallCtx,
};
use crate::types::{GenerateRequest, GenerateResponse, Part};
use futures::future::BoxFuture;
use genkit_core::Result;
use std::sync::Arc;

/// One kind of chain: its layers, what goes in, what comes out.
pub trait Hook: 'static {
    /// The middleware a layer of this chain is.
    type Layer: ?Sized + Send + Sync + 'static;
    /// What goes inward.
    type Request: Send + 'static;
    /// What travels beside the request.
    type Context: Send + 'static;
    /// What comes back out.
    type Response: Send + 'static;

    /// Calls `layer`'s hook of this kind.
    fn call(
        layer: Arc<Self::Layer>,
        request: Self::Request,
        ctx: Self::Context,
        next: Next<Self>,
    ) -> BoxFuture<'static, Result<Self::Response>>;
}

/// The end of a chain: what runs after every layer.
pub type Tail<H> = Arc<
    dyn Fn(
            <H as Hook>::Request,
            <H as Hook>::Context,
        ) -> BoxFuture<'static, Result<<H as Hook>::Response>>
        + Send
        + Sync,
>;

/// The inner layers of a chain, ending in its tail. Cloneable, so a layer
/// may call it more than once (retry) or not at all (cache, fallback).
pub struct Next<H: Hook + ?Sized> {
    chain: Arc<[Arc<H::Layer>]>,
    index: usize,
    tail: Tail<H>,
}

impl<H: Hook> Clone for Next<H> {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            index: self.index,
            tail: self.tail.clone(),
        }
    }
}

impl<H: Hook> Next<H> {
    /// A chain of `layers` (outermost first) ending in `tail`.
    pub fn new(layers: Arc<[Arc<H::Layer>]>, tail: Tail<H>) -> Self {
        Self {
            chain: layers,
            index: 0,
            tail,
        }
    }

    /// Runs the remaining layers, then the tail.
    pub fn run(
        self,
        request: H::Request,
        ctx: H::Context,
    ) -> BoxFuture<'static, Result<H::Response>> {
        match self.chain.get(self.index).cloned() {
            None => (self.tail)(request, ctx),
            Some(layer) => {
                let next = Next {
                    chain: self.chain,
                    index: self.index + 1,
                    tail: self.tail,
                };
                H::call(layer, request, ctx, next)
            }
        }
    }
}

/// The model chain: [`ModelMiddleware::call`] around one model call.
pub enum ModelCall {}

impl Hook for ModelCall {
    type Layer = dyn ModelMiddleware;
    type Request = GenerateRequest;
    type Context = ModelCallCtx;
    type Response = GenerateResponse;

    fn call(
        layer: Arc<dyn ModelMiddleware>,
        request: GenerateRequest,
        ctx: ModelCallCtx,
        next: Next<Self>,
    ) -> BoxFuture<'static, Result<GenerateResponse>> {
        Box::pin(async move { layer.call(request, ctx, next).await })
    }
}

/// The generate chain: [`GenerateMiddleware::generate`] around a turn of
/// the tool loop (and the turns after it).
pub enum GenerateTurn {}

impl Hook for GenerateTurn {
    type Layer = dyn GenerateMiddleware;
    type Request = GenerateEnvelope;
    type Context = GenerateCallCtx;
    type Response = GenerateResponse;

    fn call(
        layer: Arc<dyn GenerateMiddleware>,
        request: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: Next<Self>,
    ) -> BoxFuture<'static, Result<GenerateResponse>> {
        Box::pin(async move { layer.generate(request, ctx, next).await })
    }
}

/// The tool chain: [`GenerateMiddleware::tool`] around one tool execution.
/// Its response is the tool response part, or `None` if a layer decided
/// there is none.
pub enum ToolCall {}

impl Hook for ToolCall {
    type Layer = dyn GenerateMiddleware;
    type Request = Part;
    type Context = ToolCallCtx;
    type Response = Option<Part>;

    fn call(
        layer: Arc<dyn GenerateMiddleware>,
        request: Part,
        ctx: ToolCallCtx,
        next: Next<Self>,
    ) -> BoxFuture<'static, Result<Option<Part>>> {
        Box::pin(async move { layer.tool(request, ctx, next).await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{FinishReason, Message};

    /// Appends its tag to the request's first message on the way in.
    struct Tag(&'static str);

    #[async_trait::async_trait]
    impl ModelMiddleware for Tag {
        async fn call(
            &self,
            mut req: GenerateRequest,
            ctx: ModelCallCtx,
            next: Next<ModelCall>,
        ) -> Result<GenerateResponse> {
            let mut messages = (*req.messages).clone();
            if let Some(m) = messages.first_mut() {
                m.content.push(Part::text(self.0));
            }
            req.messages = Arc::new(messages);
            next.run(req, ctx).await
        }
    }

    fn echo_tail() -> Tail<ModelCall> {
        Arc::new(|req: GenerateRequest, _ctx| {
            Box::pin(async move {
                let text = req.messages.first().map(|m| m.text()).unwrap_or_default();
                Ok(GenerateResponse::new(
                    Message::model(text),
                    FinishReason::Stop,
                ))
            })
        })
    }

    fn request() -> GenerateRequest {
        GenerateRequest {
            messages: Arc::new(vec![Message::user("x")]),
            ..GenerateRequest::default()
        }
    }

    #[tokio::test]
    async fn layers_run_outermost_first_then_the_tail() {
        let layers: Arc<[Arc<dyn ModelMiddleware>]> = Arc::from(vec![
            Arc::new(Tag("a")) as Arc<dyn ModelMiddleware>,
            Arc::new(Tag("b")),
        ]);
        let out = Next::<ModelCall>::new(layers, echo_tail())
            .run(request(), ModelCallCtx::default())
            .await
            .unwrap();
        assert_eq!(out.text(), "xab");
    }

    #[tokio::test]
    async fn an_empty_chain_is_the_tail_and_next_can_run_twice() {
        let next = Next::<ModelCall>::new(Arc::from(Vec::new()), echo_tail());
        let first = next.clone().run(request(), ModelCallCtx::default()).await;
        let second = next.run(request(), ModelCallCtx::default()).await;
        assert_eq!(first.unwrap().text(), "x");
        assert_eq!(second.unwrap().text(), "x");
    }
}
