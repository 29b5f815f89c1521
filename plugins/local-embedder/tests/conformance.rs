//! The local embedder against sentence-transformers: the 100 texts of
//! `fixtures/minilm_texts.json`, whose reference vectors
//! (`fixtures/minilm_reference.json`) `fixtures/minilm_reference.py`
//! recorded with sentence-transformers and torch, must each come out with
//! cosine similarity >= 0.999; and the plugin's action.
//!
//! The model comes from `tests-support/local-embedder/install.sh` (`test.sh`
//! runs it). Without it these tests say so and pass, except under
//! `CI=true`, where they fail.

use genkit::Genkit;
use genkit::types::DocumentData;
use genkit_core::StatusCode;
use genkit_local_embedder::{DIMENSIONS, EMBEDDER, LocalEmbedder, SentenceEmbedder};
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::OnceLock;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reference {
    max_seq_length: usize,
    tokens: Vec<usize>,
    vectors: Vec<Vec<f32>>,
}

fn texts() -> Vec<String> {
    let text = std::fs::read_to_string(format!("{FIXTURES}/minilm_texts.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn reference() -> Reference {
    let text = std::fs::read_to_string(format!("{FIXTURES}/minilm_reference.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The installed model's folder, or `None` (outside CI) when it is missing.
fn model_dir() -> Option<PathBuf> {
    let dir = LocalEmbedder::new()
        .resolved_model_dir()
        .filter(|d| d.join("model.safetensors").is_file());
    if dir.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "all-MiniLM-L6-v2 is not installed: run tests-support/local-embedder/install.sh \
             and set GENKIT_LOCAL_EMBEDDER_DIR to the folder it prints"
        );
        eprintln!(
            "SKIPPED: all-MiniLM-L6-v2 is not installed (tests-support/local-embedder/install.sh)"
        );
    }
    dir
}

/// One loaded model for all tests of this file (loading takes a while in
/// a debug build).
fn model() -> Option<&'static SentenceEmbedder> {
    static MODEL: OnceLock<Option<SentenceEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| model_dir().map(|d| SentenceEmbedder::load(d).unwrap()))
        .as_ref()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    dot(a, b) / (dot(a, a).sqrt() * dot(b, b).sqrt())
}

#[test]
fn matches_sentence_transformers_on_100_texts() {
    let Some(model) = model() else { return };
    let texts = texts();
    let reference = reference();
    assert_eq!(texts.len(), 100);
    assert_eq!(reference.vectors.len(), texts.len());
    assert_eq!(model.max_seq_length(), reference.max_seq_length);

    let vectors = model.embed(&texts).unwrap();
    let mut worst = (f32::INFINITY, 0);
    for (i, ((text, got), want)) in texts
        .iter()
        .zip(&vectors)
        .zip(&reference.vectors)
        .enumerate()
    {
        assert_eq!(got.len(), DIMENSIONS as usize);
        let tokens = model.token_count(text).unwrap();
        assert_eq!(
            tokens, reference.tokens[i],
            "token count of text {i}: {text:?}"
        );
        let c = cosine(got, want);
        assert!(c >= 0.999, "text {i} ({text:?}): cosine {c} < 0.999");
        if c < worst.0 {
            worst = (c, i);
        }
    }
    eprintln!("lowest cosine {} (text {})", worst.0, worst.1);
}

#[test]
fn the_documented_example_sentence() {
    let Some(model) = model() else { return };
    let v = &model.embed(&["This is an example sentence"]).unwrap()[0];
    let documented = [0.0676568, 0.0634959, 0.0487131, 0.0793050, 0.0374481];
    for (got, want) in v.iter().zip(documented) {
        assert!((got - want).abs() < 1e-5, "{:?} vs {documented:?}", &v[..5]);
    }
    assert!((dot(v, v) - 1.0).abs() < 1e-5, "vectors are unit length");
}

#[test]
fn batching_and_padding_do_not_change_a_vector() {
    let Some(model) = model() else { return };
    let texts = texts();
    // A short text padded next to long ones, and the long ones cut at 256.
    let some: Vec<&str> = [0, 12, 95, 97, 40]
        .iter()
        .map(|&i| texts[i].as_str())
        .collect();
    let together = model.embed(&some).unwrap();
    for (text, v) in some.iter().zip(&together) {
        let alone = &model.embed(&[*text]).unwrap()[0];
        assert!(cosine(alone, v) > 0.99999, "{text:?}");
    }
    assert_eq!(model.token_count(&texts[97]).unwrap(), 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_embeds_documents_in_order() {
    let Some(dir) = model_dir() else { return };
    let ai = Genkit::builder()
        .no_prompt_dir()
        .plugin(LocalEmbedder::new().model_dir(dir).batch_size(2))
        .build()
        .unwrap();
    let texts = [
        "A cat sits on the mat.",
        "A kitten is sleeping on a rug.",
        "The stock market fell sharply on Tuesday.",
    ];
    let docs: Vec<DocumentData> = texts.iter().map(|t| DocumentData::from_text(*t)).collect();
    let out = ai.embed_many(EMBEDDER, docs).await.unwrap();
    assert_eq!(out.len(), 3);
    let reference = reference();
    let all = self::texts();
    for (text, e) in texts.iter().zip(&out) {
        let i = all.iter().position(|t| t == text).unwrap();
        assert!(
            cosine(&e.embedding, &reference.vectors[i]) >= 0.999,
            "{text}"
        );
    }
    // The kitten is nearer the cat than the stock market is.
    assert!(
        cosine(&out[0].embedding, &out[1].embedding)
            > cosine(&out[0].embedding, &out[2].embedding) + 0.3
    );

    let err = ai
        .embed_many(
            EMBEDDER,
            vec![DocumentData::from_text("x"), DocumentData::from_text("")],
        )
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("document 1 has no text"), "{err}");
}

#[tokio::test]
async fn the_action_is_listed_and_a_missing_model_is_a_failed_precondition() {
    let missing = std::env::temp_dir().join("genkit-local-embedder-no-such-model");
    let ai = Genkit::builder()
        .no_prompt_dir()
        .plugin(LocalEmbedder::new().model_dir(&missing))
        .build()
        .unwrap();
    let action = ai
        .registry()
        .lookup_action(&format!("/embedder/{EMBEDDER}"))
        .await
        .unwrap()
        .expect("the embedder is registered");
    let info = &action.desc().metadata["info"];
    assert_eq!(info["dimensions"], DIMENSIONS);
    assert_eq!(info["supports"]["input"], serde_json::json!(["text"]));

    let err = ai.embed(EMBEDDER, "hello").await.unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(err.message().contains("install.sh"), "{err}");
}
