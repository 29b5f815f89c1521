//! OpenAI's tokenizers (feature `tiktoken`): counts equal OpenAI's own
//! `tiktoken`, and a history policy keeps to a budget counted with them.
//!
//! The expected counts were measured with PyPI `tiktoken` 0.14.0
//! (`len(tiktoken.get_encoding(name).encode(text))`), loading the same
//! encoding files this crate bundles, whose SHA-256 matched the hashes
//! `tiktoken` checks for OpenAI's published files.
#![cfg(feature = "tiktoken")]

use genkit_middleware::{CharEstimator, TokenEstimator, history_policy};
use genkit_model::types::{Message, Part, ToolRequest};
use genkit_openai::tokenizer::{Encoding, TiktokenEstimator};
use serde_json::json;

const TEXTS: [&str; 5] = [
    "hello world",
    "The db is online but overloaded: p99 latency 2.3s, 512 connections.",
    "tiktoken is great!",
    "Restart the api service? 🚀 Это тест. 日本語のテキスト",
    "    fn main() {\n        println!(\"{}\", 1 + 2);\n    }\n",
];

fn estimator(encoding: Encoding) -> TiktokenEstimator {
    TiktokenEstimator::new(encoding).expect("the bundled encoding loads")
}

#[test]
fn counts_equal_openai_tiktoken() {
    let o200k = estimator(Encoding::O200kBase);
    let counts: Vec<usize> = TEXTS.iter().map(|t| o200k.count(t)).collect();
    assert_eq!(counts, [2, 20, 6, 16, 16]);
    let cl100k = estimator(Encoding::Cl100kBase);
    let counts: Vec<usize> = TEXTS.iter().map(|t| cl100k.count(t)).collect();
    assert_eq!(counts, [2, 20, 6, 21, 16]);
    assert_eq!(o200k.text_tokens(TEXTS[3]), 16);
}

#[test]
fn the_model_name_picks_the_encoding() {
    let cases = [
        ("openai/gpt-4o-mini", Some(Encoding::O200kBase)),
        ("gpt-4o", Some(Encoding::O200kBase)),
        ("openai/gpt-4.1-nano", Some(Encoding::O200kBase)),
        ("openai/o1", Some(Encoding::O200kBase)),
        ("openai/o3-mini", Some(Encoding::O200kBase)),
        ("openai/gpt-5", Some(Encoding::O200kBase)),
        ("openai/gpt-4", Some(Encoding::Cl100kBase)),
        ("openai/gpt-4-0613", Some(Encoding::Cl100kBase)),
        ("openai/gpt-3.5-turbo", Some(Encoding::Cl100kBase)),
        ("googleai/gemini-2.5-flash", None),
        ("anthropic/claude-haiku-4-5", None),
        ("ollama/llama3.2", None),
    ];
    for (model, want) in cases {
        assert_eq!(Encoding::for_model(model), want, "{model}");
    }
    let picked = TiktokenEstimator::for_model("openai/gpt-4o-mini").expect("known");
    assert_eq!(picked.encoding().name(), "o200k_base");
    assert!(TiktokenEstimator::for_model("offline/rules").is_none());
}

#[test]
fn a_message_counts_its_text_role_and_framing() {
    let o200k = estimator(Encoding::O200kBase);
    // 3 framing + 1 for `user` + 20 for the text.
    assert_eq!(o200k.message_tokens(&Message::user(TEXTS[1])), 24);
    // 3 + 1 (`assistant`) + 3 (`getServiceStatus`) + 5 (`{"service":"db"}`).
    let call = Message::model(vec![Part::tool_request(ToolRequest::new(
        "getServiceStatus",
        json!({"service": "db"}),
    ))]);
    assert_eq!(o200k.message_tokens(&call), 12);
}

/// Japanese text costs far more tokens than its characters suggest: the
/// policy's budget, counted with o200k_base, keeps less than the default
/// 4-characters estimate would.
#[test]
fn the_history_policy_keeps_to_a_budget_counted_with_tiktoken() {
    let history = vec![
        Message::system("You are an ops assistant."), // 3 + 1 + 6 = 10
        Message::user("サーバーの状態を教えてください。"), // 3 + 1 + 10 = 14
        Message::model("すべてのサービスは正常に稼働しています。"), // 3 + 1 + 13 = 17
        Message::user("ログを確認してください。"),    // 3 + 1 + 5 = 9
        Message::model("エラーは見つかりませんでした。"), // 3 + 1 + 10 = 14
        Message::user("データベースを再起動しますか？"), // 3 + 1 + 11 = 15
    ];
    let o200k = estimator(Encoding::O200kBase);
    let tokens: Vec<usize> = history.iter().map(|m| o200k.message_tokens(m)).collect();
    assert_eq!(tokens, [10, 14, 17, 9, 14, 15]);

    let budget = 50;
    let trimmed = history_policy()
        .max_tokens(budget)
        .estimator(o200k.clone())
        .trim(&history);
    let kept: Vec<String> = trimmed.kept.iter().map(Message::text).collect();
    assert_eq!(
        kept,
        [
            "You are an ops assistant.",
            "ログを確認してください。",
            "エラーは見つかりませんでした。",
            "データベースを再起動しますか？"
        ]
    );
    let used: usize = trimmed.kept.iter().map(|m| o200k.message_tokens(m)).sum();
    assert!(
        used <= budget,
        "{used} tokens kept for a budget of {budget}"
    );
    // The next older message would not have fit.
    assert!(used + tokens[2] > budget);

    // The character estimate thinks almost everything fits.
    let by_chars = history_policy().max_tokens(budget).trim(&history);
    let chars: usize = history
        .iter()
        .map(|m| CharEstimator::default().message_tokens(m))
        .sum();
    assert_eq!(chars, 51);
    assert_eq!(by_chars.kept.len(), 5);
}
