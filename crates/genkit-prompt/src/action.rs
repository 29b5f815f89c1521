//! The two actions of a prompt: `/prompt/<name>` renders the model request
//! (`GenerateRequest`) and `/executable-prompt/<name>` the generate options
//! (`GenerateActionOptions`). Their input is the prompt's input.
//!
//! A prompt's input schema may name schemas defined after the prompt, so
//! each action builds its description (with the input schema) on first use;
//! until the names resolve it is listed without schemas.

use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use genkit_core::schema::schema_for;
use genkit_core::{
    Action, ActionCtx, ActionDesc, ActionKind, ActionResult, DynAction, ErasedAction, Result,
    RunOptions,
};
use serde_json::{Map, Value};

use super::core::{PromptCore, Resolved};
use super::metadata::action_metadata;
use genkit_generate::GenerateOptions;
use genkit_model::types::{GenerateActionOptions, GenerateRequest};

/// Object kind under which prompts are stored for [`prompt`](super::prompt).
pub(crate) const PROMPT_OBJECT_KIND: &str = "prompt";

/// Registers `/prompt/<key>` and `/executable-prompt/<key>`, and the prompt
/// itself for lookups. A key already taken is `ALREADY_EXISTS`.
pub(crate) fn register(core: &Arc<PromptCore>) -> Result<()> {
    for kind in [ActionKind::Prompt, ActionKind::ExecutablePrompt] {
        let action: DynAction = Arc::new(PromptAction::new(kind, Arc::clone(core)));
        core.registry.register(action)?;
    }
    core.registry
        .register_object(PROMPT_OBJECT_KIND, &core.key, Arc::clone(core));
    Ok(())
}

/// One of a prompt's actions.
struct PromptAction {
    kind: ActionKind,
    core: Arc<PromptCore>,
    /// Listed while the prompt's schemas cannot be resolved.
    fallback: ActionDesc,
    built: OnceLock<Built>,
}

/// The action once the prompt's schemas are resolved.
struct Built {
    /// The listed description, with the input schema.
    desc: ActionDesc,
    /// The action that runs (traced), on input already checked.
    action: DynAction,
    resolved: Arc<Resolved>,
}

impl PromptAction {
    fn new(kind: ActionKind, core: Arc<PromptCore>) -> Self {
        let fallback = describe(kind, &core, None);
        Self {
            kind,
            core,
            fallback,
            built: OnceLock::new(),
        }
    }

    fn built(&self) -> Result<&Built> {
        if let Some(built) = self.built.get() {
            return Ok(built);
        }
        let resolved = self.core.resolved()?;
        let desc = describe(self.kind, &self.core, Some(&resolved));
        // The input is checked (with defaults applied) before the run, and
        // the output is ours: the running action validates neither.
        let inner = ActionDesc {
            input_schema: None,
            output_schema: None,
            ..desc.clone()
        };
        let core = Arc::clone(&self.core);
        let action = match self.kind {
            ActionKind::Prompt => Action::from_desc(
                inner,
                move |variables: Map<String, Value>, _ctx: ActionCtx<()>| {
                    let core = Arc::clone(&core);
                    async move { render_request(&core, variables).await }
                },
            )?
            .to_dyn(),
            _ => Action::from_desc(
                inner,
                move |variables: Map<String, Value>, _ctx: ActionCtx<()>| {
                    let core = Arc::clone(&core);
                    async move { render_action_options(&core, variables).await }
                },
            )?
            .to_dyn(),
        };
        let built = Built {
            desc,
            action,
            resolved,
        };
        Ok(self.built.get_or_init(|| built))
    }
}

async fn render_request(
    core: &PromptCore,
    variables: Map<String, Value>,
) -> Result<GenerateRequest> {
    let resolved = core.resolved()?;
    let rendered = core
        .render(variables, &resolved, GenerateOptions::default())
        .await?;
    core.request(rendered).await
}

async fn render_action_options(
    core: &PromptCore,
    variables: Map<String, Value>,
) -> Result<GenerateActionOptions> {
    let resolved = core.resolved()?;
    let rendered = core
        .render(variables, &resolved, GenerateOptions::default())
        .await?;
    core.action_options(rendered)
}

/// The listed description of a prompt action.
fn describe(kind: ActionKind, core: &PromptCore, resolved: Option<&Resolved>) -> ActionDesc {
    let mut desc = ActionDesc::new(kind, core.key.clone());
    desc.description = core.def.description.clone();
    desc.input_schema = resolved.and_then(|r| r.input_schema.clone());
    if kind == ActionKind::ExecutablePrompt {
        desc.output_schema = Some(schema_for::<GenerateActionOptions>());
    }
    desc.metadata = action_metadata(&core.def, resolved, kind);
    desc
}

impl ErasedAction for PromptAction {
    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }

    fn desc(&self) -> &ActionDesc {
        match self.built() {
            Ok(built) => &built.desc,
            Err(_) => &self.fallback,
        }
    }

    fn run_json(
        &self,
        input: Value,
        opts: RunOptions<Value>,
    ) -> BoxFuture<'_, Result<ActionResult<Value>>> {
        Box::pin(async move {
            let built = self.built()?;
            let variables = self.core.prepare_input(input, &built.resolved)?;
            built.action.run_json(Value::Object(variables), opts).await
        })
    }
}
