//! [`LocalModel`]: a GGUF chat model loaded once, decoding on the CPU.
//!
//! Concurrency: for Llama-architecture files each request decodes with its
//! own KV cache over shared weights (the llama.cpp-exact forward pass,
//! [`genkit_local_model_exact`], for Q4_1/Q8_0 files; otherwise its own copy
//! of candle's model *structure* whose weight tensors are reference-counted),
//! so concurrent requests run side by side and memory grows by their KV
//! caches only. candle's quantized Qwen2 model cannot be
//! copied that way, so Qwen2 requests take turns on the one model (a
//! mutex, fair enough for a queue of a few requests).

use crate::config::LocalModelConfig;
use crate::constrained::{Constraints, Grammar, Step, mask_logits};
use crate::gguf::{Architecture, GgufFile, metadata_str, metadata_u32};
use crate::stop::StopScanner;
use crate::template::ChatTemplate;
use crate::tokenizer::GgufTokenizer;
use candle_core::{DType, Device, Tensor};
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use genkit_core::{Error, Result};
use genkit_local_model_exact as exact;
use genkit_model::types::{FinishReason, Message, ToolDefinition};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// candle's quantized Llama precomputes rotary embeddings for this many
/// positions: a longer sequence cannot be decoded.
const LLAMA_MAX_POSITIONS: usize = 4096;

enum Weights {
    /// Llama with Q4_1/Q8_0 matrices: llama.cpp's numerics (see
    /// [`genkit_local_model_exact`]); each request has its own KV cache.
    Exact(exact::Model),
    /// Copied per request (weights shared), see the module docs.
    Llama(quantized_llama::ModelWeights),
    /// One at a time.
    Qwen2(Mutex<quantized_qwen2::ModelWeights>),
}

/// One request's model state: its own KV cache.
enum Session<'a> {
    Exact(&'a exact::Model, exact::Cache),
    Llama(Box<quantized_llama::ModelWeights>),
    Qwen2(std::sync::MutexGuard<'a, quantized_qwen2::ModelWeights>),
}

impl Session<'_> {
    /// The logits after `ids`, which follow `position` earlier tokens.
    fn forward(&mut self, ids: &[u32], position: usize) -> candle_core::Result<Tensor> {
        let input = || Tensor::new(ids, &Device::Cpu).and_then(|t| t.unsqueeze(0));
        let logits = match self {
            Session::Exact(model, cache) => {
                debug_assert_eq!(cache.len(), position);
                return Tensor::new(model.forward(cache, ids), &Device::Cpu);
            }
            Session::Llama(m) => m.forward(&input()?, position)?,
            Session::Qwen2(m) => m.forward(&input()?, position)?,
        };
        logits.squeeze(0)?.to_dtype(DType::F32)
    }
}

/// How one decoding run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The generated ids, the end-of-turn token excluded.
    pub ids: Vec<u32>,
    /// Why decoding stopped.
    pub finish_reason: FinishReason,
}

/// How a text generation ended (see [`LocalModel::generate_text`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The answer, stop sequence excluded.
    pub text: String,
    /// Why generation stopped.
    pub finish_reason: FinishReason,
    /// Prompt tokens read.
    pub input_tokens: usize,
    /// Tokens generated (the end-of-turn token excluded).
    pub output_tokens: usize,
}

/// Sampling and length settings for one run, from a [`LocalModelConfig`].
#[derive(Debug, Clone)]
pub struct DecodeOptions {
    /// The sampler.
    pub sampling: Sampling,
    /// The sampler's seed.
    pub seed: u64,
    /// Most tokens to generate.
    pub max_tokens: Option<usize>,
}

impl DecodeOptions {
    /// Greedy decoding of at most `max_tokens` tokens.
    pub fn greedy(max_tokens: usize) -> Self {
        Self {
            sampling: Sampling::ArgMax,
            seed: 0,
            max_tokens: Some(max_tokens),
        }
    }

    /// The options a request's config asks for (a random seed unless set).
    pub fn from_config(config: &LocalModelConfig) -> Self {
        Self {
            sampling: config.sampling(),
            seed: config.seed.unwrap_or_else(rand::random),
            max_tokens: config.max_output_tokens.map(|n| n as usize),
        }
    }
}

/// A GGUF chat model in memory: weights, tokenizer and chat template, all
/// from the one file. Load it once ([`LocalModel::load`]) and share it (it
/// is `Send + Sync`; wrap it in an `Arc`).
pub struct LocalModel {
    path: PathBuf,
    name: Option<String>,
    architecture: Architecture,
    context_length: usize,
    weights: Weights,
    tokenizer: Arc<GgufTokenizer>,
    template: ChatTemplate,
    /// The vocabulary as the grammar engine sees it, built on the first
    /// constrained request (an error is kept: it would recur).
    constraints: OnceLock<std::result::Result<Constraints, Error>>,
    positions_computed: AtomicU64,
    active: AtomicUsize,
    /// Constrained tokens decoded, and the time their masks took (ns).
    constrained_tokens: AtomicU64,
    constraint_nanos: AtomicU64,
    constraint_setup_nanos: AtomicU64,
}

/// The cost of constrained decoding since a model was loaded (see
/// [`LocalModel::constraint_cost`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConstraintCost {
    /// Tokens chosen under a grammar.
    pub tokens: u64,
    /// Time spent on their masks: computing the allowed set, masking the
    /// logits and advancing the grammar.
    pub time: std::time::Duration,
    /// Time spent compiling grammars (one per request) and, once per
    /// model, building the vocabulary trie.
    pub setup: std::time::Duration,
}

impl ConstraintCost {
    /// The mean cost per constrained token.
    pub fn per_token(&self) -> std::time::Duration {
        self.time
            .checked_div(self.tokens.max(1) as u32)
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.path)
            .field("architecture", &self.architecture)
            .field("context_length", &self.context_length)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads a GGUF file (blocking: run it off the async threads). Errors:
    /// `FAILED_PRECONDITION` when the file does not exist,
    /// `INVALID_ARGUMENT` when it is not a readable GGUF (damaged,
    /// truncated) or holds an unsupported architecture, tokenizer or chat
    /// template.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let GgufFile {
            content,
            mut reader,
            architecture,
        } = GgufFile::open(path)?;
        let tokenizer = GgufTokenizer::from_gguf(&content).map_err(|e| in_file(path, e))?;
        let template = ChatTemplate::new(
            metadata_str(&content, "tokenizer.chat_template"),
            tokenizer.bos_text.clone(),
            tokenizer.eos_text.clone(),
        )
        .map_err(|e| in_file(path, e))?;
        let declared = metadata_u32(
            &content,
            &format!("{}.context_length", architecture.as_str()),
        )
        .map(|n| n as usize);
        let name = metadata_str(&content, "general.name").map(str::to_owned);
        let device = Device::Cpu;
        let load_error = |e: candle_core::Error| {
            in_file(
                path,
                Error::invalid_argument(format!("loading the weights: {e}")),
            )
        };
        let exact = match architecture {
            Architecture::Llama => match exact::Model::from_gguf(&content, &mut reader) {
                Ok(model) => Some(model),
                Err(why) => {
                    tracing::debug!("{}: candle's quantized Llama ({why})", path.display());
                    None
                }
            },
            Architecture::Qwen2 => None,
        };
        let (weights, context_length) = match (architecture, exact) {
            (Architecture::Llama, Some(model)) => (
                Weights::Exact(model),
                declared
                    .unwrap_or(LLAMA_MAX_POSITIONS)
                    .min(LLAMA_MAX_POSITIONS),
            ),
            (Architecture::Llama, None) => (
                Weights::Llama(
                    quantized_llama::ModelWeights::from_gguf(content, &mut reader, &device)
                        .map_err(load_error)?,
                ),
                declared
                    .unwrap_or(LLAMA_MAX_POSITIONS)
                    .min(LLAMA_MAX_POSITIONS),
            ),
            (Architecture::Qwen2, _) => (
                Weights::Qwen2(Mutex::new(
                    quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &device)
                        .map_err(load_error)?,
                )),
                declared.unwrap_or(LLAMA_MAX_POSITIONS),
            ),
        };
        Ok(Self {
            path: path.to_owned(),
            name,
            architecture,
            context_length,
            weights,
            tokenizer: Arc::new(tokenizer),
            template,
            constraints: OnceLock::new(),
            positions_computed: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            constrained_tokens: AtomicU64::new(0),
            constraint_nanos: AtomicU64::new(0),
            constraint_setup_nanos: AtomicU64::new(0),
        })
    }

    /// The file the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model's name in the file's metadata (`general.name`), if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The file's architecture.
    pub fn architecture(&self) -> Architecture {
        self.architecture
    }

    /// The most tokens (prompt and answer) one request can hold.
    pub fn context_length(&self) -> usize {
        self.context_length
    }

    /// Token positions computed since loading, prompts included: a
    /// progress counter (e.g. to see that a cancelled request stopped).
    pub fn positions_computed(&self) -> u64 {
        self.positions_computed.load(Ordering::SeqCst)
    }

    /// What constrained decoding has cost since loading.
    pub fn constraint_cost(&self) -> ConstraintCost {
        ConstraintCost {
            tokens: self.constrained_tokens.load(Ordering::SeqCst),
            time: std::time::Duration::from_nanos(self.constraint_nanos.load(Ordering::SeqCst)),
            setup: std::time::Duration::from_nanos(
                self.constraint_setup_nanos.load(Ordering::SeqCst),
            ),
        }
    }

    fn charge_constraint(&self, started: std::time::Instant, tokens: u64) {
        self.constraint_nanos
            .fetch_add(nanos_since(started), Ordering::SeqCst);
        self.constrained_tokens.fetch_add(tokens, Ordering::SeqCst);
    }

    /// Requests decoding right now.
    pub fn active_requests(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// The prompt text for a conversation: the file's chat template
    /// applied, ending where the model's answer starts.
    pub fn render_prompt(&self, messages: &[Message]) -> Result<String> {
        self.template.render(messages, None)
    }

    /// How this model writes tool calls (from its chat template).
    pub(crate) fn call_syntax(&self) -> crate::constrained::CallSyntax {
        self.template.call_syntax()
    }

    /// A grammar state for one answer.
    pub(crate) fn constrain(&self, grammar: &Grammar) -> Result<Step> {
        let started = std::time::Instant::now();
        let step = self
            .constraints
            .get_or_init(|| Constraints::new(&self.tokenizer))
            .as_ref()
            .map_err(Clone::clone)?
            .matcher(grammar);
        self.constraint_setup_nanos
            .fetch_add(nanos_since(started), Ordering::SeqCst);
        step
    }

    /// The token ids of `text`, control tokens (`<|im_start|>`, …) included.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(text)
    }

    /// The text of `ids` (special tokens left out).
    pub fn detokenize(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer
            .tokenizer
            .decode(ids, true)
            .map_err(|e| Error::internal(format!("decoding tokens: {e}")))
    }

    fn session(&self) -> Session<'_> {
        match &self.weights {
            Weights::Exact(m) => Session::Exact(m, m.cache()),
            // A fresh structure over the same weight tensors: its KV cache
            // is this request's alone.
            Weights::Llama(m) => {
                let mut m = Box::new(m.clone());
                m.clear_kv_cache();
                Session::Llama(m)
            }
            Weights::Qwen2(m) => {
                // A panic in another request leaves a model whose cache is
                // cleared below anyway.
                let mut guard = m.lock().unwrap_or_else(|p| p.into_inner());
                guard.clear_kv_cache();
                Session::Qwen2(guard)
            }
        }
    }

    /// Decodes after `prompt` (token ids) until an end-of-turn token, the
    /// token limit or the context length, calling `on_token` with each new
    /// id; `on_token` returning `Break` stops decoding at once (before the
    /// next token is computed). Blocking: run it off the async threads.
    pub fn decode(
        &self,
        prompt: &[u32],
        options: &DecodeOptions,
        on_token: impl FnMut(u32) -> ControlFlow<()>,
    ) -> Result<Decoded> {
        self.decode_with(prompt, options, None, on_token)
    }

    /// [`decode`](Self::decode), each token chosen among those `constraint`
    /// allows (the end-of-turn token only where the grammar is complete;
    /// decoding ends when it allows nothing more).
    pub(crate) fn decode_with(
        &self,
        prompt: &[u32],
        options: &DecodeOptions,
        mut constraint: Option<&mut Step>,
        mut on_token: impl FnMut(u32) -> ControlFlow<()>,
    ) -> Result<Decoded> {
        if prompt.is_empty() {
            return Err(Error::invalid_argument("the prompt has no tokens"));
        }
        if prompt.len() >= self.context_length {
            return Err(Error::invalid_argument(format!(
                "the prompt has {} tokens; the model's context holds {}",
                prompt.len(),
                self.context_length
            )));
        }
        let room = self.context_length - prompt.len();
        let max_tokens = options.max_tokens.map_or(room, |m| m.min(room));
        let _active = ActiveGuard::new(&self.active);
        let mut session = self.session();
        let mut sampler = LogitsProcessor::from_sampling(options.seed, options.sampling.clone());
        let mut ids = Vec::new();
        if max_tokens == 0 {
            return Ok(Decoded {
                ids,
                finish_reason: FinishReason::Length,
            });
        }
        let mut logits = self.forward(&mut session, prompt, 0)?;
        loop {
            if let Some(step) = constraint.as_deref_mut() {
                let started = std::time::Instant::now();
                let Some(allowed) = step.allowed()? else {
                    // The grammar is complete and nothing may follow.
                    return Ok(Decoded {
                        ids,
                        finish_reason: FinishReason::Stop,
                    });
                };
                let mut values: Vec<f32> = logits.to_vec1().map_err(candle_error)?;
                mask_logits(&mut values, &allowed);
                logits = Tensor::new(values, &Device::Cpu).map_err(candle_error)?;
                self.charge_constraint(started, 0);
            }
            let next = sampler.sample(&logits).map_err(candle_error)?;
            if self.tokenizer.stop_ids.contains(&next) {
                return Ok(Decoded {
                    ids,
                    finish_reason: FinishReason::Stop,
                });
            }
            if let Some(step) = constraint.as_deref_mut() {
                // Sampling is not the constraint's cost: restart the clock.
                let accepting = std::time::Instant::now();
                step.accept(next)?;
                self.charge_constraint(accepting, 1);
            }
            ids.push(next);
            if on_token(next).is_break() {
                return Ok(Decoded {
                    ids,
                    finish_reason: FinishReason::Aborted,
                });
            }
            if constraint.as_ref().is_some_and(|s| s.is_done()) {
                // The grammar is complete and nothing may follow: no need
                // to compute another token only to end the turn.
                return Ok(Decoded {
                    ids,
                    finish_reason: FinishReason::Stop,
                });
            }
            if ids.len() >= max_tokens {
                return Ok(Decoded {
                    ids,
                    finish_reason: FinishReason::Length,
                });
            }
            logits = self.forward(&mut session, &[next], prompt.len() + ids.len() - 1)?;
        }
    }

    /// The next-token logits after `ids` (one forward pass from an empty
    /// cache): for inspecting the model, e.g. comparing with another runtime.
    pub fn next_logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() || ids.len() > self.context_length {
            return Err(Error::invalid_argument(format!(
                "{} tokens: need 1 to {}",
                ids.len(),
                self.context_length
            )));
        }
        let mut session = self.session();
        self.forward(&mut session, ids, 0)?
            .to_vec1()
            .map_err(candle_error)
    }

    fn forward(&self, session: &mut Session<'_>, ids: &[u32], position: usize) -> Result<Tensor> {
        let logits = session.forward(ids, position).map_err(candle_error)?;
        self.positions_computed
            .fetch_add(ids.len() as u64, Ordering::SeqCst);
        Ok(logits)
    }

    /// Answers a conversation: renders the chat template, decodes, and
    /// applies the config's stop sequences, calling `on_text` with each
    /// piece of answer text as soon as it is final (never a part of a stop
    /// sequence). `on_text` returning `Break` stops decoding. Blocking.
    pub fn generate_text(
        &self,
        messages: &[Message],
        config: &LocalModelConfig,
        on_text: impl FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Generated> {
        self.generate(messages, None, None, config, on_text)
    }

    /// [`generate_text`](Self::generate_text) with tools shown to templates
    /// that have a tool section, and the answer kept to `grammar`.
    pub(crate) fn generate(
        &self,
        messages: &[Message],
        tools: Option<&[ToolDefinition]>,
        grammar: Option<&Grammar>,
        config: &LocalModelConfig,
        mut on_text: impl FnMut(&str) -> ControlFlow<()>,
    ) -> Result<Generated> {
        let text = self.template.render(messages, tools)?;
        let prompt = self.tokenize(&text)?;
        // What the model reads, for whoever tunes a prompt for it.
        tracing::trace!(target: "genkit_local_model::prompt", tokens = prompt.len(), "{text}");
        let mut constraint = grammar.map(|g| self.constrain(g)).transpose()?;
        let options = DecodeOptions::from_config(config);
        let mut scanner = StopScanner::new(config.stops());
        let mut stream = self.tokenizer.tokenizer.decode_stream(true);
        let mut stopped = false;
        let mut decode_error = None;
        let decoded = self.decode_with(&prompt, &options, constraint.as_mut(), |id| {
            let piece = match stream.step(id) {
                Ok(piece) => piece.unwrap_or_default(),
                Err(e) => {
                    decode_error = Some(Error::internal(format!("decoding token {id}: {e}")));
                    return ControlFlow::Break(());
                }
            };
            let released = scanner.push(&piece);
            if !released.text.is_empty() && on_text(&released.text).is_break() {
                return ControlFlow::Break(());
            }
            if released.stopped {
                stopped = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })?;
        if let Some(e) = decode_error {
            return Err(e);
        }
        let finish_reason = if stopped {
            FinishReason::Stop
        } else {
            let rest = scanner.finish();
            if !rest.is_empty() && decoded.finish_reason != FinishReason::Aborted {
                // The caller may have gone; what it answers no longer matters.
                let _ = on_text(&rest);
            }
            decoded.finish_reason
        };
        Ok(Generated {
            text: scanner.text().to_owned(),
            finish_reason,
            input_tokens: prompt.len(),
            output_tokens: decoded.ids.len(),
        })
    }
}

/// Counts a request as active while it decodes (a panic included).
struct ActiveGuard<'a>(&'a AtomicUsize);

impl<'a> ActiveGuard<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter)
    }
}

impl Drop for ActiveGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn nanos_since(started: std::time::Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn candle_error(e: candle_core::Error) -> Error {
    Error::internal(format!("local model: {e}"))
}

fn in_file(path: &Path, e: Error) -> Error {
    Error::new(e.status(), format!("{}: {}", path.display(), e.message()))
}
