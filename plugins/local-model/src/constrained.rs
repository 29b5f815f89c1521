//! Constrained decoding: a grammar (a JSON Schema, an enum, JSON lines, or
//! "text or a tool call") turned into a token mask at every step, so the
//! sampler only ever picks tokens that keep the answer valid.
//!
//! The grammar engine is [`llguidance`]: it compiles JSON Schemas and
//! Lark-like grammars to an Earley parser over a lexer of regular
//! expressions, and walks a trie of the model's vocabulary ([`toktrie`]) to
//! find the tokens whose bytes the parser accepts next. The trie is built
//! once per model from the GGUF tokenizer (byte-level tokens decoded to
//! their bytes; control tokens marked so that no grammar can produce them
//! by accident, the end-of-turn tokens standing for "the answer may end
//! here").
//!
//! Cost per token (SmolLM2's 49,152-token vocabulary, llguidance
//! optimised as the workspace's dev profile builds it): about 0.9 ms for
//! the JSON schemas of the tests on a loaded 2-core machine (most of the
//! vocabulary is rejected on its first byte by the trie walk), plus one
//! pass over the logits to mask them; the forward pass takes tens to
//! hundreds of milliseconds. Once per request the grammar is compiled
//! (milliseconds); once per model the trie is built (about 0.25 s). The
//! `constrained` test prints the measured figures
//! ([`LocalModel::constraint_cost`](crate::LocalModel::constraint_cost)).

use crate::tokenizer::GgufTokenizer;
use genkit_core::{Error, Result};
use genkit_model::types::OutputConfig;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::{Value, json};
use std::sync::Arc;
use toktrie::{
    InferenceCapabilities, SimpleVob, TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv,
};

/// How JSON is laid out under a constraint: one space after `:` and `,`,
/// no other whitespace. Free whitespace would let a small model pad the
/// answer with newlines until it runs out of tokens.
const JSON_LAYOUT: &str = r#"{"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": ", "lenient": true, "coerce_one_of": true}"#;

/// A grammar for one answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Grammar {
    /// One JSON value valid for the schema (`{}`: any JSON value).
    Json(Value),
    /// Exactly one of the values, as bare text (Genkit's `enum` format).
    Enum(Vec<String>),
    /// JSON objects valid for `item`, one per line (`jsonl`), as many as
    /// the array schema's `minItems`/`maxItems` allow.
    JsonLines {
        item: Value,
        min: usize,
        max: Option<usize>,
    },
    /// Free text (or `answer`, when set), or a call of one of the tools.
    Tools {
        /// `(name, input schema)` of each tool.
        tools: Vec<(String, Value)>,
        /// The answer's grammar when not calling a tool (`None`: any text
        /// not starting with the call's first character).
        answer: Option<Box<Grammar>>,
        /// Whether a call is the only choice (`toolChoice: required`).
        required: bool,
        /// How a call is written.
        syntax: CallSyntax,
    },
}

/// How the model writes a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallSyntax {
    /// A bare JSON object `{"name": …, "arguments": …}` (for chat templates
    /// without a tool section; the system prompt teaches it).
    Json,
    /// The same object between `<tool_call>` and `</tool_call>` lines, as
    /// the Hermes/Qwen2.5 templates' tool sections teach.
    Tagged,
}

/// Opening and closing text of a tagged call.
pub(crate) const CALL_OPEN: &str = "<tool_call>\n";
pub(crate) const CALL_CLOSE: &str = "\n</tool_call>";

impl Grammar {
    /// The grammar a request's output options ask for: `None` unless they
    /// ask for constrained output (`constrained: true`, which Genkit's
    /// `json`, `array` and `enum` formats set) in a structured format.
    ///
    /// - `json` (or no format): one JSON value valid for the schema (any
    ///   JSON value without one);
    /// - `array`: the same, the schema being an array's;
    /// - `enum`: one of the schema's `enum` values, bare (no quotes);
    /// - `jsonl`: one object valid for the schema's `items` per line;
    /// - `text` and other formats: unconstrained.
    pub fn for_output(output: Option<&OutputConfig>) -> Result<Option<Self>> {
        let Some(output) = output.filter(|o| o.constrained == Some(true)) else {
            return Ok(None);
        };
        let schema = output.schema.clone();
        Ok(match output.format.as_deref() {
            None | Some("json") => Some(Grammar::Json(schema.unwrap_or_else(|| json!({})))),
            Some("array") => Some(Grammar::Json(
                schema.unwrap_or_else(|| json!({"type": "array"})),
            )),
            Some("enum") => {
                let values = schema
                    .as_ref()
                    .and_then(|s| s.get("enum"))
                    .and_then(Value::as_array)
                    .ok_or_else(|| {
                        Error::invalid_argument("the enum format needs a schema with `enum` values")
                    })?;
                Some(Grammar::Enum(
                    values
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        })
                        .collect(),
                ))
            }
            Some("jsonl") => {
                let bound = |key: &str| {
                    schema
                        .as_ref()
                        .and_then(|s| s.get(key))
                        .and_then(Value::as_u64)
                };
                Some(Grammar::JsonLines {
                    item: schema
                        .as_ref()
                        .and_then(|s| s.get("items"))
                        .cloned()
                        .unwrap_or_else(|| json!({"type": "object"})),
                    min: bound("minItems").unwrap_or(0) as usize,
                    max: bound("maxItems").map(|n| n as usize),
                })
            }
            Some(_) => None,
        })
    }

    /// This grammar in llguidance's Lark syntax, `start` its top rule.
    /// `tags_are_tokens`: the vocabulary has `<tool_call>` and
    /// `</tool_call>` as control tokens, which the model writes as such.
    fn lark(&self, tags_are_tokens: bool) -> Result<String> {
        self.rules("start", tags_are_tokens)
    }

    /// Lark rules whose top rule is `name` (helper rules are prefixed with
    /// it, so that grammars nest).
    fn rules(&self, name: &str, tags_are_tokens: bool) -> Result<String> {
        Ok(match self {
            Grammar::Json(schema) => format!("{name}: {}\n", json_rule(schema)?),
            Grammar::Enum(values) => {
                if values.is_empty() {
                    return Err(Error::invalid_argument("the enum schema lists no values"));
                }
                let alternatives: Vec<String> = values.iter().map(|v| lark_string(v)).collect();
                format!("{name}: {}\n", alternatives.join(" | "))
            }
            Grammar::JsonLines { item, min, max } => {
                // At least one line: an empty answer is no JSON lines.
                let more = match max {
                    Some(0) => {
                        return Err(Error::invalid_argument(
                            "the jsonl schema allows no items (maxItems: 0)",
                        ));
                    }
                    Some(max) => format!("{{{},{}}}", min.saturating_sub(1), max - 1),
                    None if *min > 1 => format!("{{{},}}", min - 1),
                    None => "*".to_owned(),
                };
                format!(
                    "{name}: {name}_item (\"\\n\" {name}_item){more} \"\\n\"?\n{name}_item: {}\n",
                    json_rule(item)?
                )
            }
            Grammar::Tools {
                tools,
                answer,
                required,
                syntax,
            } => {
                if tools.is_empty() {
                    return Err(Error::invalid_argument("no tools to call"));
                }
                let calls: Vec<Value> = tools
                    .iter()
                    .map(|(tool, input)| {
                        json!({
                            "type": "object",
                            "properties": { "name": { "const": tool }, "arguments": input },
                            "required": ["name", "arguments"],
                            "additionalProperties": false,
                        })
                    })
                    .collect();
                let call_json = json_rule(&json!({ "anyOf": calls }))?;
                let call = match syntax {
                    CallSyntax::Json => call_json,
                    // Control tokens are named in angle brackets in Lark.
                    CallSyntax::Tagged if tags_are_tokens => format!(
                        "{} \"\\n\" {call_json} \"\\n\" {}",
                        CALL_OPEN.trim(),
                        CALL_CLOSE.trim()
                    ),
                    CallSyntax::Tagged => format!(
                        "{} {} {}",
                        lark_string(CALL_OPEN),
                        call_json,
                        lark_string(CALL_CLOSE)
                    ),
                };
                if *required {
                    return Ok(format!("{name}: {name}_call\n{name}_call: {call}\n"));
                }
                let answer = match answer {
                    Some(answer) => answer.rules(&format!("{name}_answer"), tags_are_tokens)?,
                    None => {
                        // Text may not begin like a call: the first
                        // character decides which one the model writes.
                        let first = match syntax {
                            CallSyntax::Json => "{",
                            CallSyntax::Tagged => "<",
                        };
                        format!("{name}_answer: /[^{first}\\s](.|\\n)*/\n")
                    }
                };
                format!("{name}: {name}_answer | {name}_call\n{name}_call: {call}\n{answer}")
            }
        })
    }
}

/// A `%json` rule with the compact layout.
fn json_rule(schema: &Value) -> Result<String> {
    let mut schema = schema.clone();
    let Value::Object(map) = &mut schema else {
        // `true` (anything) and `false` (nothing) are schemas too.
        return match schema {
            Value::Bool(true) => json_rule(&json!({})),
            _ => Err(Error::invalid_argument(
                "the output schema must be a JSON object",
            )),
        };
    };
    // A schema's `$schema` names its dialect; llguidance reads drafts 4 to
    // 2020-12 the same way, and rejects some dialect URLs it does not know.
    map.remove("$schema");
    map.insert(
        "x-guidance".into(),
        serde_json::from_str(JSON_LAYOUT).unwrap_or_default(),
    );
    let text = serde_json::to_string(&schema)
        .map_err(|e| Error::internal(format!("serialising a schema: {e}")))?;
    Ok(format!("%json {text}"))
}

/// A Lark string literal (JSON's escapes are Lark's).
fn lark_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// The model's vocabulary as the grammar engine sees it, built once.
pub(crate) struct Constraints {
    factory: ParserFactory,
    /// Whether `<tool_call>` and `</tool_call>` are control tokens.
    tags_are_tokens: bool,
}

impl std::fmt::Debug for Constraints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Constraints").finish_non_exhaustive()
    }
}

impl Constraints {
    /// Builds the token trie from the tokenizer (about 0.1 s for 49k
    /// tokens).
    pub fn new(tokenizer: &Arc<GgufTokenizer>) -> Result<Self> {
        let env = VocabularyEnv::new(tokenizer.clone())?;
        let env: TokEnv = Arc::new(env);
        let mut factory = ParserFactory::new(
            &env,
            InferenceCapabilities::default(),
            &llguidance::earley::SlicedBiasComputer::general_slices(),
        )
        .map_err(|e| Error::internal(format!("building the grammar engine: {e}")))?;
        factory.quiet();
        let trie = env.tok_trie();
        let tags_are_tokens = trie.get_special_token(CALL_OPEN.trim()).is_some()
            && trie.get_special_token(CALL_CLOSE.trim()).is_some();
        Ok(Self {
            factory,
            tags_are_tokens,
        })
    }

    /// A fresh matcher for one answer. An invalid grammar (a schema the
    /// engine cannot express) is `INVALID_ARGUMENT`.
    pub fn matcher(&self, grammar: &Grammar) -> Result<Step> {
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_lark(
                grammar.lark(self.tags_are_tokens)?,
            ))
            .map_err(|e| {
                Error::invalid_argument(format!("the output constraint cannot be compiled: {e}"))
            })?;
        let mut matcher = Matcher::new(Ok(parser));
        for warning in matcher.grammar_warnings() {
            tracing::warn!("constrained decoding: {warning}");
        }
        if let Some(e) = matcher.get_error() {
            return Err(Error::invalid_argument(format!(
                "the output constraint cannot be compiled: {e}"
            )));
        }
        Ok(Step { matcher })
    }
}

/// One answer's grammar state.
pub(crate) struct Step {
    matcher: Matcher,
}

impl Step {
    /// The tokens allowed next (`None` once the grammar is complete and
    /// nothing may follow: the answer must end).
    pub fn allowed(&mut self) -> Result<Option<SimpleVob>> {
        if self.matcher.is_stopped() {
            return Ok(None);
        }
        let allowed = self
            .matcher
            .compute_mask()
            .map_err(|e| Error::internal(format!("constrained decoding: {e}")))?;
        if allowed.is_zero() {
            // Sampling from nothing would pick an arbitrary token.
            return Err(Error::internal(
                "constrained decoding: the grammar allows no token here",
            ));
        }
        Ok(Some(allowed))
    }

    /// Whether the answer is complete and nothing may follow.
    pub fn is_done(&self) -> bool {
        self.matcher.is_stopped()
    }

    /// Whether the tokens of `text` are allowed from here and the answer
    /// may end after them (consumes them).
    #[cfg(test)]
    pub fn accepts(&mut self, ids: &[u32]) -> bool {
        matches!(self.matcher.try_consume_tokens(ids), Ok(n) if n == ids.len())
            && (self.is_done() || self.matcher.is_accepting().unwrap_or(false))
    }

    /// Advances past the sampled token.
    pub fn accept(&mut self, token: u32) -> Result<()> {
        self.matcher
            .consume_token(token)
            .map_err(|e| Error::internal(format!("constrained decoding: {e}")))
    }
}

/// Sets every logit the mask forbids to minus infinity (the sampler then
/// never picks it, whatever its temperature or top-k/top-p).
pub(crate) fn mask_logits(logits: &mut [f32], allowed: &SimpleVob) {
    for (id, logit) in logits.iter_mut().enumerate() {
        if id >= allowed.len() || !allowed.is_allowed(id as TokenId) {
            *logit = f32::NEG_INFINITY;
        }
    }
}

/// The tokenizer as llguidance's [`TokenizerEnv`]: each token's bytes in a
/// trie, and the real tokenizer for text the grammar forces.
struct VocabularyEnv {
    tokenizer: Arc<GgufTokenizer>,
    trie: TokTrie,
}

impl VocabularyEnv {
    fn new(tokenizer: Arc<GgufTokenizer>) -> Result<Self> {
        let vocab_size = tokenizer.vocab_size();
        let decode = byte_decoder();
        let words: Vec<Vec<u8>> = (0..vocab_size as u32)
            .map(|id| {
                let text = tokenizer.tokenizer.id_to_token(id).unwrap_or_default();
                if tokenizer.is_control(id) {
                    // llguidance's marker for tokens that are not text.
                    let mut bytes = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    bytes.extend_from_slice(text.as_bytes());
                    bytes
                } else if tokenizer.is_literal(id) {
                    text.into_bytes()
                } else {
                    // Byte-level BPE spells each byte as one character;
                    // a character outside that alphabet stands for itself.
                    let mut bytes = Vec::with_capacity(text.len());
                    for c in text.chars() {
                        match decode(c) {
                            Some(b) => bytes.push(b),
                            None => {
                                let mut buf = [0; 4];
                                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                            }
                        }
                    }
                    bytes
                }
            })
            .collect();
        let eos = *tokenizer
            .stop_ids
            .first()
            .ok_or_else(|| Error::internal("the tokenizer has no end-of-turn token"))?;
        let mut info = TokRxInfo::new(vocab_size as u32, eos);
        info.tok_bos = tokenizer.bos;
        let trie = TokTrie::from(&info, &words).with_eos_tokens(&tokenizer.stop_ids);
        Ok(Self { tokenizer, trie })
    }
}

impl TokenizerEnv for VocabularyEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        // Text the grammar forces: the real tokenizer when it is text,
        // the trie's greedy split for bytes that are not (yet) UTF-8.
        self.trie.tokenize_with_greedy_fallback(s, |text| {
            self.tokenizer
                .tokenizer
                .encode(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default()
        })
    }
}

/// GPT-2's byte-level alphabet, read backwards: the byte a character of a
/// byte-level token stands for.
fn byte_decoder() -> impl Fn(char) -> Option<u8> {
    // Printable bytes stand for themselves; the others (controls, space,
    // and a few Latin-1 ones) were moved to 256 and up, in byte order.
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut table = std::collections::HashMap::with_capacity(256);
    let mut shifted = 0u32;
    for b in 0..=255u8 {
        let c = if printable(b) {
            char::from(b)
        } else {
            shifted += 1;
            char::from_u32(255 + shifted).unwrap_or(char::REPLACEMENT_CHARACTER)
        };
        table.insert(c, b);
    }
    move |c| table.get(&c).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SmolLM2, when installed (these tests need its tokenizer only).
    fn smollm2() -> Option<crate::LocalModel> {
        let path = std::env::var_os(crate::MODEL_PATH_ENV)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .or_else(crate::default_smollm2_path)
            .filter(|p| p.is_file());
        let Some(path) = path else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "SmolLM2-135M-Instruct is not installed"
            );
            eprintln!("SKIPPED: SmolLM2-135M-Instruct is not installed");
            return None;
        };
        Some(crate::LocalModel::load(path).unwrap())
    }

    #[test]
    fn the_vocabulary_grammar_accepts_valid_answers_only() {
        let Some(model) = smollm2() else { return };
        let accepts = |grammar: &Grammar, text: &str| {
            let ids = model.tokenize(text).unwrap();
            model.constrain(grammar).unwrap().accepts(&ids)
        };
        let add = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": false
        });
        let tools = |required| Grammar::Tools {
            tools: vec![
                ("add".into(), add.clone()),
                (
                    "echo".into(),
                    json!({"type": "object", "properties": {"s": {"type": "string"}}}),
                ),
            ],
            answer: None,
            required,
            syntax: CallSyntax::Json,
        };
        let call = r#"{"name": "add", "arguments": {"a": 1, "b": 22}}"#;
        assert!(accepts(&tools(false), call));
        assert!(accepts(&tools(true), call));
        assert!(accepts(&tools(false), "Hello there."));
        assert!(!accepts(&tools(true), "Hello there."));
        for bad in [
            r#"{"name": "add", "arguments": {"a": "1", "b": 2}}"#,
            r#"{"name": "add", "arguments": {"a": 1}}"#,
            r#"{"name": "sub", "arguments": {"a": 1, "b": 2}}"#,
            r#"{"name": "add", "arguments": {"a": 1, "b": 2}"#,
        ] {
            assert!(!accepts(&tools(false), bad), "{bad}");
        }
        let colors = Grammar::Enum(vec!["red".into(), "green".into()]);
        assert!(accepts(&colors, "green"));
        assert!(!accepts(&colors, "\"green\""));
        assert!(!accepts(&colors, "gre"));
        let lines = Grammar::JsonLines {
            item: add.clone(),
            min: 1,
            max: Some(2),
        };
        assert!(accepts(
            &lines,
            "{\"a\": 1, \"b\": 2}\n{\"a\": 3, \"b\": 4}"
        ));
        assert!(!accepts(
            &lines,
            "{\"a\": 1, \"b\": 2}\n{\"a\": 3, \"b\": 4}\n{\"a\": 5, \"b\": 6}"
        ));
        // Control tokens are never text: no grammar lets them through.
        let im_start = model.tokenize("<|im_start|>").unwrap();
        assert!(!model.constrain(&tools(false)).unwrap().accepts(&im_start));
    }

    #[test]
    fn byte_level_characters_map_back_to_bytes() {
        let decode = byte_decoder();
        assert_eq!(decode('a'), Some(b'a'));
        assert_eq!(decode('Ġ'), Some(b' '));
        assert_eq!(decode('Ċ'), Some(b'\n'));
        assert_eq!(decode('é'), Some(0xE9));
        assert_eq!(decode('中'), None);
    }

    #[test]
    fn output_options_choose_the_grammar() {
        let output = |format: Option<&str>, schema: Option<Value>, constrained: Option<bool>| {
            let config = OutputConfig {
                format: format.map(str::to_owned),
                schema,
                constrained,
                content_type: None,
            };
            Grammar::for_output(Some(&config))
        };
        let object = json!({"type": "object"});
        assert_eq!(
            output(Some("json"), Some(object.clone()), None).unwrap(),
            None
        );
        assert_eq!(
            output(Some("json"), Some(object.clone()), Some(true)).unwrap(),
            Some(Grammar::Json(object.clone()))
        );
        assert_eq!(
            output(None, None, Some(true)).unwrap(),
            Some(Grammar::Json(json!({})))
        );
        assert_eq!(
            output(Some("enum"), Some(json!({"enum": ["a", 1]})), Some(true)).unwrap(),
            Some(Grammar::Enum(vec!["a".into(), "1".into()]))
        );
        assert!(output(Some("enum"), None, Some(true)).is_err());
        assert_eq!(
            output(
                Some("jsonl"),
                Some(json!({"type": "array", "items": object.clone()})),
                Some(true)
            )
            .unwrap(),
            Some(Grammar::JsonLines {
                item: object.clone(),
                min: 0,
                max: None
            })
        );
        let lines = Grammar::JsonLines {
            item: object,
            min: 1,
            max: Some(2),
        }
        .lark(false)
        .unwrap();
        assert!(
            lines.starts_with("start: start_item (\"\\n\" start_item){0,1} \"\\n\"?\n"),
            "{lines}"
        );
        assert_eq!(output(Some("text"), None, Some(true)).unwrap(), None);
        assert_eq!(Grammar::for_output(None).unwrap(), None);
    }

    #[test]
    fn grammars_are_written_in_lark() {
        let schema = json!({"$schema": "x", "type": "integer"});
        let json = Grammar::Json(schema).lark(false).unwrap();
        assert!(json.starts_with("start: %json {"), "{json}");
        assert!(!json.contains("$schema"), "{json}");
        let e = Grammar::Enum(vec!["a\"b".into(), "c".into()])
            .lark(false)
            .unwrap();
        assert_eq!(e, "start: \"a\\\"b\" | \"c\"\n");
        assert!(Grammar::Enum(vec![]).lark(false).is_err());
        let tools = Grammar::Tools {
            tools: vec![("f".into(), json!({"type": "object"}))],
            answer: None,
            required: false,
            syntax: CallSyntax::Json,
        }
        .lark(false)
        .unwrap();
        assert!(
            tools.starts_with("start: start_answer | start_call\n"),
            "{tools}"
        );
        assert!(tools.contains("start_answer: /[^{\\s](.|\\n)*/"), "{tools}");
        let forced = Grammar::Tools {
            tools: vec![("f".into(), json!({"type": "object"}))],
            answer: None,
            required: true,
            syntax: CallSyntax::Tagged,
        }
        .lark(false)
        .unwrap();
        assert!(
            forced.starts_with("start: start_call\nstart_call: \"<tool_call>\\n\" %json"),
            "{forced}"
        );
        let tokens = Grammar::Tools {
            tools: vec![("f".into(), json!({"type": "object"}))],
            answer: None,
            required: true,
            syntax: CallSyntax::Tagged,
        }
        .lark(true)
        .unwrap();
        assert!(
            tokens.starts_with("start: start_call\nstart_call: <tool_call> \"\\n\" %json"),
            "{tokens}"
        );
        assert!(tokens.ends_with("}} \"\\n\" </tool_call>\n"), "{tokens}");
    }
}
