//! The sentence-transformers pipeline of all-MiniLM-L6-v2 on candle: BERT
//! WordPiece tokens truncated to the model's `max_seq_length`, the BERT
//! encoder, mean pooling over the real (unpadded) tokens and L2
//! normalisation.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use genkit_core::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use tokenizers::{Encoding, Tokenizer, TruncationParams};

/// How many texts go through the encoder together unless told otherwise
/// (sentence-transformers' default `batch_size`).
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// The files a model directory holds.
const CONFIG: &str = "config.json";
const WEIGHTS: &str = "model.safetensors";
const TOKENIZER: &str = "tokenizer.json";
/// sentence-transformers' own settings (`max_seq_length`); optional.
const SENTENCE_CONFIG: &str = "sentence_bert_config.json";

/// all-MiniLM-L6-v2's `max_seq_length`, used when the directory has no
/// `sentence_bert_config.json`.
const DEFAULT_MAX_SEQ_LENGTH: usize = 256;

#[derive(Deserialize)]
struct SentenceConfig {
    max_seq_length: Option<usize>,
}

/// A loaded sentence-embedding model: tokenizer plus BERT encoder, on the
/// CPU. Embedding is blocking, CPU-bound work (run it off the async
/// runtime's threads).
pub struct SentenceEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dimensions: usize,
    max_seq_length: usize,
    batch_size: usize,
}

impl std::fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("dimensions", &self.dimensions)
            .field("max_seq_length", &self.max_seq_length)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

fn read(dir: &Path, file: &str) -> Result<Vec<u8>> {
    let path = dir.join(file);
    std::fs::read(&path).map_err(|e| {
        Error::failed_precondition(format!("reading the model file {}: {e}", path.display()))
            .with_source(e)
    })
}

fn model_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::internal(format!("{what}: {e}"))
}

impl SentenceEmbedder {
    /// Loads the model in `dir`: `config.json`, `model.safetensors` and
    /// `tokenizer.json` (and `sentence_bert_config.json` for the token
    /// limit, 256 without it). A missing or unreadable file is
    /// `FAILED_PRECONDITION`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let config: Config = serde_json::from_slice(&read(dir, CONFIG)?).map_err(|e| {
            Error::failed_precondition(format!("{}: {e}", dir.join(CONFIG).display()))
                .with_source(e)
        })?;
        let max_seq_length = match std::fs::read(dir.join(SENTENCE_CONFIG)) {
            Ok(bytes) => serde_json::from_slice::<SentenceConfig>(&bytes)
                .map_err(|e| {
                    Error::failed_precondition(format!(
                        "{}: {e}",
                        dir.join(SENTENCE_CONFIG).display()
                    ))
                    .with_source(e)
                })?
                .max_seq_length
                .unwrap_or(DEFAULT_MAX_SEQ_LENGTH),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => DEFAULT_MAX_SEQ_LENGTH,
            Err(e) => {
                return Err(Error::failed_precondition(format!(
                    "reading {}: {e}",
                    dir.join(SENTENCE_CONFIG).display()
                )));
            }
        }
        // Never past the position embeddings.
        .min(config.max_position_embeddings);

        let mut tokenizer = Tokenizer::from_bytes(read(dir, TOKENIZER)?).map_err(|e| {
            Error::failed_precondition(format!("{}: {e}", dir.join(TOKENIZER).display()))
                .with_source(e)
        })?;
        // The file's own settings (fixed padding to 128, truncation at 128)
        // are not sentence-transformers': it truncates at max_seq_length
        // and pads each batch to its longest text (done here).
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: max_seq_length,
                ..TruncationParams::default()
            }))
            .map_err(|e| model_error("setting the tokenizer's truncation", e))?;
        tokenizer.with_padding(None);

        let device = Device::Cpu;
        let weights = read(dir, WEIGHTS)?;
        let vb =
            VarBuilder::from_buffered_safetensors(weights, DType::F32, &device).map_err(|e| {
                Error::failed_precondition(format!("{}: {e}", dir.join(WEIGHTS).display()))
                    .with_source(e)
            })?;
        let model = BertModel::load(vb, &config).map_err(|e| {
            Error::failed_precondition(format!(
                "{} does not hold a BERT model matching {CONFIG}: {e}",
                dir.join(WEIGHTS).display()
            ))
            .with_source(e)
        })?;
        Ok(Self {
            model,
            tokenizer,
            device,
            dimensions: config.hidden_size,
            max_seq_length,
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Sets how many texts the encoder runs at once (at least 1).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The length of every vector.
    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// The most tokens of a text the model reads (special tokens included);
    /// the rest is cut off, as sentence-transformers does.
    pub fn max_seq_length(&self) -> usize {
        self.max_seq_length
    }

    /// How many tokens of `text` the model reads: its WordPiece tokens
    /// plus `[CLS]` and `[SEP]`, at most [`max_seq_length`](Self::max_seq_length).
    pub fn token_count(&self, text: &str) -> Result<usize> {
        let encoding = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| model_error("tokenizing", e))?;
        Ok(encoding.len())
    }

    /// One unit-length vector per text, in order.
    pub fn embed<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>> {
        self.embed_until(texts, &|| false)
    }

    /// [`embed`](Self::embed), giving up with `CANCELLED` when `stop`
    /// says so (asked before each batch).
    pub fn embed_until<S: AsRef<str>>(
        &self,
        texts: &[S],
        stop: &dyn Fn() -> bool,
    ) -> Result<Vec<Vec<f32>>> {
        let inputs: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| model_error("tokenizing", e))?;
        // Texts of similar length share a batch, so little is padding
        // (sentence-transformers sorts the same way).
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));
        let mut out = vec![Vec::new(); encodings.len()];
        for batch in order.chunks(self.batch_size) {
            if stop() {
                return Err(Error::cancelled());
            }
            let group: Vec<&Encoding> = batch.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(&group)?) {
                out[i] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, encodings: &[&Encoding]) -> Result<Vec<Vec<f32>>> {
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let rows = encodings.len();
        let mut ids = Vec::with_capacity(rows * len);
        let mut types = Vec::with_capacity(rows * len);
        let mut mask = Vec::with_capacity(rows * len);
        for e in encodings {
            let pad = len - e.len();
            ids.extend(
                e.get_ids()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, pad)),
            );
            types.extend(
                e.get_type_ids()
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, pad)),
            );
            mask.extend(std::iter::repeat_n(1u32, e.len()).chain(std::iter::repeat_n(0, pad)));
        }
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, (rows, len), &self.device)?;
            let types = Tensor::from_vec(types, (rows, len), &self.device)?;
            let mask = Tensor::from_vec(mask, (rows, len), &self.device)?;
            let hidden = self.model.forward(&ids, &types, Some(&mask))?;
            // Mean over the real tokens: padding contributes nothing.
            let mask = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&mask)?.sum(1)?;
            let counts = mask.sum(1)?.clamp(1e-9f32, f32::MAX)?;
            let mean = summed.broadcast_div(&counts)?;
            let norms = mean
                .sqr()?
                .sum_keepdim(1)?
                .sqrt()?
                .clamp(1e-12f32, f32::MAX)?;
            mean.broadcast_div(&norms)?.to_vec2::<f32>()
        };
        run().map_err(|e| model_error("running the model", e))
    }
}

/// Where `tests-support/local-embedder/install.sh` puts the model by
/// default: `~/.cache/genkit-rs/all-minilm-l6-v2/model`. `None` without
/// `HOME`.
pub fn default_model_dir() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty())?;
    Some(
        PathBuf::from(home)
            .join(".cache")
            .join("genkit-rs")
            .join("all-minilm-l6-v2")
            .join("model"),
    )
}
