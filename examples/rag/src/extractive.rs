//! An extractive model, so the app answers with no API key and no server:
//! it quotes the sentences of the sources (the request's documents) that
//! share the most content words with the question, each followed by its
//! source's citation, and says so when no sentence shares at least half of
//! them. It takes documents natively (`supports.context`), so it reads
//! them from the request rather than from the prompt text.
//!
//! A real model replaces it with `--model openai/<name>` (any
//! OpenAI-compatible server); see `main.rs`.

use std::collections::HashSet;

use genkit::model::{Model, ModelCtx, ModelOptions};
use genkit::prelude::*;
use genkit::types::DocumentData;
use genkit::types::{
    FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, ModelSupports, Role,
};

use crate::citations::REF_KEY;

/// The extractive model's name.
pub const EXTRACTIVE_MODEL: &str = "offline/extractive";

/// What it answers when no source sentence matches the question.
pub const NO_ANSWER: &str = "The indexed documents do not answer this question.";

/// At most this many sentences are quoted.
const MAX_SENTENCES: usize = 2;

/// Words that say nothing about what a question is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "by", "can", "could", "did",
    "do", "does", "for", "from", "get", "has", "have", "how", "i", "if", "in", "into", "is", "it",
    "its", "me", "my", "of", "on", "or", "should", "tell", "that", "the", "there", "this", "to",
    "what", "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Registers the extractive model.
pub fn define_extractive_model(ai: &Genkit) -> Model {
    ai.define_model(
        ModelOptions::new(EXTRACTIVE_MODEL)
            .label("RAG example extractive model (quotes the best-matching source sentences)")
            .supports(ModelSupports {
                multiturn: Some(true),
                system_role: Some(true),
                context: Some(true),
                ..ModelSupports::default()
            }),
        |req: GenerateRequest, ctx: ModelCtx| async move {
            let question = req
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(Message::text)
                .unwrap_or_default();
            let answer = answer(&question, req.docs.as_deref().unwrap_or_default());
            if ctx.is_streaming() {
                for word in answer.split_inclusive(' ') {
                    ctx.send_chunk(GenerateResponseChunk::new(vec![Part::text(word)]));
                }
            }
            Ok(GenerateResponse::new(
                Message::model(answer),
                FinishReason::Stop,
            ))
        },
    )
}

/// The answer to `question` from `docs`: the best-matching sentences, each
/// with its document's `[ref]`, or [`NO_ANSWER`].
pub fn answer(question: &str, docs: &[DocumentData]) -> String {
    let wanted = content_words(question);
    if wanted.is_empty() {
        return NO_ANSWER.into();
    }
    // (shared words, document rank, sentence position, sentence, citation)
    let mut scored: Vec<(usize, usize, usize, String, String)> = Vec::new();
    for (rank, doc) in docs.iter().enumerate() {
        let cite = doc
            .metadata
            .as_ref()
            .and_then(|m| m.get(REF_KEY))
            .and_then(Value::as_str)
            .map_or_else(|| (rank + 1).to_string(), str::to_owned);
        for (pos, sentence) in sentences(&doc.text()).into_iter().enumerate() {
            let shared = content_words(&sentence).intersection(&wanted).count();
            // At least half the question's content words, so an unrelated
            // question gets no answer rather than a loosely related quote.
            if shared > 0 && shared * 2 >= wanted.len() {
                scored.push((shared, rank, pos, sentence, cite.clone()));
            }
        }
    }
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut seen = HashSet::new();
    let quoted: Vec<String> = scored
        .into_iter()
        .filter(|s| seen.insert(s.3.clone()))
        .take(MAX_SENTENCES)
        .map(|(_, _, _, sentence, cite)| format!("{} [{cite}]", sentence.trim_end_matches('.')))
        .collect();
    if quoted.is_empty() {
        NO_ANSWER.into()
    } else {
        format!("{}.", quoted.join(". "))
    }
}

/// The prose sentences of a Markdown chunk: headings and code fences are
/// left out, lines of a paragraph joined, and each paragraph cut after
/// `.`, `?` or `!` followed by a space.
fn sentences(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_fence = false;
    for paragraph in markdown.split("\n\n") {
        let mut text = String::new();
        for line in paragraph.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence || trimmed.starts_with('#') || trimmed.is_empty() {
                continue;
            }
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(trimmed);
        }
        let mut start = 0;
        let bytes = text.as_bytes();
        for (i, b) in bytes.iter().enumerate() {
            let ends =
                matches!(b, b'.' | b'?' | b'!') && bytes.get(i + 1).is_none_or(|n| *n == b' ');
            if ends {
                push_sentence(&mut out, &text[start..=i]);
                start = i + 1;
            }
        }
        push_sentence(&mut out, &text[start..]);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if !s.is_empty() {
        out.push(s.to_owned());
    }
}

/// The lowercased, crudely stemmed words of `text` that carry meaning.
fn content_words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| stem(&w))
        .collect()
}

/// Folds plural and verb endings so "ports" meets "port" and "changing"
/// meets "change".
fn stem(word: &str) -> String {
    for suffix in ["ing", "ed", "es", "s", "e"] {
        if let Some(root) = word.strip_suffix(suffix)
            && root.chars().count() >= 3
        {
            return root.to_owned();
        }
    }
    word.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit::types::Metadata;

    fn doc(text: &str, cite: &str) -> DocumentData {
        let mut m = Metadata::new();
        m.insert(REF_KEY.into(), Value::from(cite));
        DocumentData::from_text(text).with_metadata(m)
    }

    #[test]
    fn the_best_matching_sentences_are_quoted_with_their_citations() {
        let docs = [
            doc(
                "# Server\n\nQuill is fast. Set `port` under `[server]` to change the port.",
                "1",
            ),
            doc(
                "Backups keep notes safe.\nThe port is 7070 by default.",
                "2",
            ),
        ];
        assert_eq!(
            answer("How do I change the port?", &docs),
            "Set `port` under `[server]` to change the port [1]. The port is 7070 by default [2]."
        );
    }

    #[test]
    fn an_unrelated_question_gets_no_answer() {
        let docs = [doc("Set `port` under `[server]` to change the port.", "1")];
        assert_eq!(answer("What is the capital of France?", &docs), NO_ANSWER);
        assert_eq!(answer("how is it?", &docs), NO_ANSWER);
        assert_eq!(answer("port?", &[]), NO_ANSWER);
    }

    #[test]
    fn sentences_skip_headings_and_code() {
        let s = sentences("# T\n\nOne. Two?\nstill two!\n\n```\nport = 1. x\n```\n\nv1.2 works");
        assert_eq!(s, ["One.", "Two?", "still two!", "v1.2 works"]);
    }
}
