//! The model's tokenizer, built in memory from the GGUF metadata (no
//! `tokenizer.json` needed): a byte-level BPE with the file's vocabulary and
//! merges, the pre-tokenizer llama.cpp uses for the file's `tokenizer.ggml.pre`,
//! and the control tokens (`<|im_start|>`, …) as special tokens matched whole.

use crate::gguf::{metadata_array, metadata_bool, metadata_str, metadata_u32};
use candle_core::quantized::gguf_file::Content;
use genkit_core::{Error, Result};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

/// GGUF token types (llama.cpp's `llama_token_type`).
const TOKEN_TYPE_CONTROL: i32 = 3;
const TOKEN_TYPE_USER_DEFINED: i32 = 4;

/// Qwen2's pre-tokenizer split (as in its `tokenizer.json` and llama.cpp).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Llama 3's pre-tokenizer split (numbers in groups of up to three).
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// A GGUF model's tokenizer and the ids generation needs.
pub(crate) struct GgufTokenizer {
    pub tokenizer: Tokenizer,
    /// Tokens that end a turn: `eos` and, when present, `eot`/`eom`.
    pub stop_ids: Vec<u32>,
    /// Prepended to the prompt when the file says so.
    pub bos: Option<u32>,
    /// The beginning and end of sequence tokens' text, for chat templates.
    pub bos_text: String,
    pub eos_text: String,
    /// Each token's GGUF type (1 = normal, 3 = control, 4 = user-defined).
    types: Vec<i32>,
}

impl GgufTokenizer {
    /// Builds the tokenizer from `content`'s `tokenizer.ggml.*` fields.
    pub fn from_gguf(content: &Content) -> Result<Self> {
        let model = metadata_str(content, "tokenizer.ggml.model").unwrap_or("");
        if model != "gpt2" {
            return Err(Error::invalid_argument(format!(
                "unsupported tokenizer `{model}` (supported: gpt2-style byte-level BPE)"
            )));
        }
        let tokens = string_array(content, "tokenizer.ggml.tokens")?;
        let merges = string_array(content, "tokenizer.ggml.merges")?
            .into_iter()
            .map(|m| {
                m.split_once(' ')
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .ok_or_else(|| Error::invalid_argument(format!("malformed BPE merge `{m}`")))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut types: Vec<i32> = metadata_array(content, "tokenizer.ggml.token_type")
            .map(|a| a.iter().map(|v| v.to_i32().unwrap_or(1)).collect())
            .unwrap_or_default();
        types.resize(tokens.len(), 1);
        let vocab: Vocab = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let bpe = BPE::builder()
            .vocab_and_merges(vocab, merges)
            .build()
            .map_err(|e| Error::invalid_argument(format!("building the BPE tokenizer: {e}")))?;
        let mut tokenizer = Tokenizer::new(bpe);
        let pre = metadata_str(content, "tokenizer.ggml.pre").unwrap_or("default");
        tokenizer.with_pre_tokenizer(Some(pre_tokenizer(pre)?));
        tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

        let added: Vec<AddedToken> = tokens
            .iter()
            .zip(types.iter().copied())
            .filter(|(_, t)| *t == TOKEN_TYPE_CONTROL || *t == TOKEN_TYPE_USER_DEFINED)
            .map(|(text, t)| AddedToken::from(text.clone(), t == TOKEN_TYPE_CONTROL))
            .collect();
        tokenizer
            .add_special_tokens(added)
            .map_err(|e| Error::invalid_argument(format!("adding the control tokens: {e}")))?;

        let id = |key: &str| metadata_u32(content, key).filter(|&i| (i as usize) < tokens.len());
        let eos = id("tokenizer.ggml.eos_token_id");
        let mut stop_ids: Vec<u32> = [
            eos,
            id("tokenizer.ggml.eot_token_id"),
            id("tokenizer.ggml.eom_token_id"),
        ]
        .into_iter()
        .flatten()
        .collect();
        stop_ids.dedup();
        if stop_ids.is_empty() {
            return Err(Error::invalid_argument(
                "the GGUF metadata names no end-of-sequence token",
            ));
        }
        let bos_id = id("tokenizer.ggml.bos_token_id");
        let text_of = |id: Option<u32>| {
            id.and_then(|i| tokens.get(i as usize))
                .cloned()
                .unwrap_or_default()
        };
        Ok(Self {
            tokenizer,
            stop_ids,
            bos: bos_id
                .filter(|_| metadata_bool(content, "tokenizer.ggml.add_bos_token") == Some(true)),
            bos_text: text_of(bos_id),
            eos_text: text_of(eos),
            types,
        })
    }

    /// How many tokens the vocabulary has.
    pub fn vocab_size(&self) -> usize {
        self.types.len()
    }

    /// Whether `id` is a control token (`<|im_start|>`, …): never text.
    pub fn is_control(&self, id: u32) -> bool {
        self.types.get(id as usize) == Some(&TOKEN_TYPE_CONTROL)
    }

    /// Whether `id` is a user-defined token, spelled as is rather than in
    /// the byte-level alphabet.
    pub fn is_literal(&self, id: u32) -> bool {
        self.types.get(id as usize) == Some(&TOKEN_TYPE_USER_DEFINED)
    }

    /// The ids of `text`, control tokens included, with BOS when the model
    /// wants one.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::internal(format!("tokenizing the prompt: {e}")))?;
        let mut ids = Vec::with_capacity(encoding.len() + 1);
        ids.extend(self.bos);
        ids.extend_from_slice(encoding.get_ids());
        Ok(ids)
    }
}

fn string_array(content: &Content, key: &str) -> Result<Vec<String>> {
    let values = metadata_array(content, key)
        .ok_or_else(|| Error::invalid_argument(format!("the GGUF metadata has no {key}")))?;
    values
        .iter()
        .map(|v| {
            v.to_string()
                .cloned()
                .map_err(|_| Error::invalid_argument(format!("{key} holds a non-string")))
        })
        .collect()
}

/// The pre-tokenizer llama.cpp uses for a GGUF `tokenizer.ggml.pre` name.
/// An unknown name is an error: a wrong split gives different ids, and a
/// model fed ids it was not trained on answers badly without saying why.
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper> {
    let byte_level =
        |use_regex: bool| PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, use_regex));
    let split = |pattern: &str| -> Result<PreTokenizerWrapper> {
        Split::new(
            SplitPattern::Regex(pattern.to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map(PreTokenizerWrapper::Split)
        .map_err(|e| Error::internal(format!("pre-tokenizer regex: {e}")))
    };
    Ok(match pre {
        // GPT-2's split, digits one by one (SmolLM, SmolLM2).
        "smollm" => PreTokenizerWrapper::Sequence(Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            byte_level(true),
        ])),
        "gpt-2" | "default" => byte_level(true),
        "qwen2" => PreTokenizerWrapper::Sequence(Sequence::new(vec![
            split(QWEN2_SPLIT)?,
            byte_level(false),
        ])),
        "llama-bpe" | "llama3" => PreTokenizerWrapper::Sequence(Sequence::new(vec![
            split(LLAMA3_SPLIT)?,
            byte_level(false),
        ])),
        other => {
            return Err(Error::invalid_argument(format!(
                "unsupported pre-tokenizer `{other}` (supported: smollm, gpt-2, qwen2, llama-bpe)"
            )));
        }
    })
}
