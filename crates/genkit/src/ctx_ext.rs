//! The Genkit instance from inside an action body.

use crate::Genkit;
use genkit_core::{ActionCtx, Result};

/// Reaches the [`Genkit`] instance from an action's context, so flow, tool
/// and model bodies call `generate` (or anything else) without cloning a
/// handle into their closure:
///
/// ```
/// use genkit::prelude::*;
/// use genkit::testing::ProgrammableModel;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> genkit::Result<()> {
/// let ai = Genkit::builder().default_model("scripted").build()?;
/// ProgrammableModel::define(ai.registry(), "scripted").respond_text("a haiku");
/// let poem = ai.define_flow("poem", |topic: String, ctx| async move {
///     let reply = ctx.genkit()?.generate(GenerateOptions::prompt(topic)).await?;
///     Ok(reply.text())
/// });
/// assert_eq!(poem.run("autumn".into()).await?, "a haiku");
/// # Ok(()) }
/// ```
///
/// Tool contexts ([`ToolCtx`](crate::tool::ToolCtx)) reach it too, through `Deref`.
pub trait ActionCtxExt {
    /// The instance the running action belongs to (the registry it is
    /// registered in, else its caller's). `FAILED_PRECONDITION` for an action
    /// that was never registered and runs outside any registered action.
    fn genkit(&self) -> Result<Genkit>;
}

impl<S> ActionCtxExt for ActionCtx<S> {
    fn genkit(&self) -> Result<Genkit> {
        self.require_registry()
            .map(|registry| Genkit::from_registry(registry.clone()))
    }
}
