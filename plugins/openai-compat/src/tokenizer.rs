//! OpenAI's tokenizers for history budgets (feature `tiktoken`):
//! [`TiktokenEstimator`] counts a message's tokens with the BPE encoding the
//! model uses (`o200k_base` for GPT-4o, GPT-4.1, GPT-5 and the o-series,
//! `cl100k_base` for GPT-4 and GPT-3.5), from the encodings bundled with
//! the `tiktoken-rs` crate: nothing is downloaded.
//!
//! ```
//! use genkit_middleware::history_policy;
//! use genkit_openai::tokenizer::TiktokenEstimator;
//!
//! let policy = history_policy().max_tokens(8_000);
//! let policy = match TiktokenEstimator::for_model("openai/gpt-4o-mini") {
//!     Some(tokens) => policy.estimator(tokens),
//!     None => policy, // a model without a known tokenizer: 4 characters a token
//! };
//! # let _ = policy;
//! ```

use std::sync::OnceLock;

use genkit_middleware::TokenEstimator;
use genkit_model::types::{Message, PartKind, Role};
use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::{Tokenizer, get_tokenizer};

/// Tokens the Chat Completions format adds around every message (its
/// start, role separator and end), as OpenAI's token-counting guide counts.
const PER_MESSAGE: usize = 3;

/// What an image or other media part is counted as: a 1024×1024 image at
/// high detail (85 base tokens plus 170 for each of 4 tiles). Media is
/// priced by its size, not its bytes, so its data is not tokenized.
const PER_MEDIA: usize = 765;

/// A BPE encoding of OpenAI's models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3, o4-mini.
    O200kBase,
    /// gpt-oss (`o200k_base` plus the harmony chat format's special tokens).
    O200kHarmony,
    /// GPT-4, GPT-3.5 Turbo, the text-embedding-3 and ada-002 embedders.
    Cl100kBase,
}

impl Encoding {
    /// The encoding of `model`, a name with or without its plugin prefix
    /// (`openai/gpt-4o-mini`, `gpt-4-0613`), as OpenAI's `tiktoken` maps
    /// model names; `None` for models it does not know (or older encodings).
    pub fn for_model(model: &str) -> Option<Self> {
        let name = model.rsplit('/').next().unwrap_or(model);
        match get_tokenizer(name)? {
            Tokenizer::O200kBase => Some(Self::O200kBase),
            Tokenizer::O200kHarmony => Some(Self::O200kHarmony),
            Tokenizer::Cl100kBase => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The encoding's name in `tiktoken` (`o200k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::O200kHarmony => "o200k_harmony",
            Self::Cl100kBase => "cl100k_base",
        }
    }

    /// The loaded encoding, built once per process from the bundled data;
    /// `None` if that data does not load (it ships with the crate, so only
    /// a broken build gets here).
    fn bpe(self) -> Option<&'static CoreBPE> {
        static O200K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static O200K_HARMONY: OnceLock<Option<CoreBPE>> = OnceLock::new();
        static CL100K: OnceLock<Option<CoreBPE>> = OnceLock::new();
        let (cell, load): (_, fn() -> Option<CoreBPE>) = match self {
            Self::O200kBase => (&O200K, || tiktoken_rs::o200k_base().ok()),
            Self::O200kHarmony => (&O200K_HARMONY, || tiktoken_rs::o200k_harmony().ok()),
            Self::Cl100kBase => (&CL100K, || tiktoken_rs::cl100k_base().ok()),
        };
        cell.get_or_init(load).as_ref()
    }
}

/// Counts tokens with an OpenAI model's tokenizer: text as the model's
/// encoding splits it, each message's role and framing as the Chat
/// Completions format adds them, tool requests and responses by their JSON
/// (as they are sent), media as a fixed 765 tokens.
#[derive(Clone)]
pub struct TiktokenEstimator {
    encoding: Encoding,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for TiktokenEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenEstimator")
            .field("encoding", &self.encoding.name())
            .finish()
    }
}

impl TiktokenEstimator {
    /// The estimator for `encoding`; `None` only if its bundled data does
    /// not load.
    pub fn new(encoding: Encoding) -> Option<Self> {
        Some(Self {
            encoding,
            bpe: encoding.bpe()?,
        })
    }

    /// The estimator for `model`'s tokenizer (see [`Encoding::for_model`]);
    /// `None` when none is known.
    pub fn for_model(model: &str) -> Option<Self> {
        Self::new(Encoding::for_model(model)?)
    }

    /// The encoding it counts with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The tokens of `text` in the model's encoding (special tokens' text
    /// counted as ordinary text, as a user's message is sent).
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode_ordinary(text).len()
    }

    fn json_tokens(&self, value: &impl serde::Serialize) -> usize {
        serde_json::to_string(value).map_or(0, |s| self.count(&s))
    }
}

impl TokenEstimator for TiktokenEstimator {
    fn message_tokens(&self, message: &Message) -> usize {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Model => "assistant",
            // Tool results and any later role: one token, as `tool` is.
            _ => "tool",
        };
        let content: usize = message
            .content
            .iter()
            .map(|part| match &part.kind {
                PartKind::Text(t) | PartKind::Reasoning(t) => self.count(t),
                PartKind::Media(_) => PER_MEDIA,
                PartKind::ToolRequest(r) => self.count(&r.name) + self.json_tokens(&r.input),
                PartKind::ToolResponse(r) => self.json_tokens(&r.output),
                _ => self.json_tokens(part),
            })
            .sum();
        PER_MESSAGE + self.count(role) + content
    }

    fn text_tokens(&self, text: &str) -> usize {
        self.count(text)
    }
}
