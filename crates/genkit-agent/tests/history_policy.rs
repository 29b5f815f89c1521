//! History policies: tool pairs never split (a property over random
//! histories), system and important messages always kept, the token budget
//! respected, summaries written once per dropped prefix and kept in the
//! agent's session.

use genkit_agent::{AgentOptions, define_prompt_agent_with};
use genkit_core::Registry;
use genkit_generate::{GenerateOptions, generate};
use genkit_middleware::{
    CharEstimator, HISTORY_SUMMARY_ARTIFACT, HISTORY_SUMMARY_KEY, HistoryPolicy, SUMMARY_PREFACE,
    TokenEstimator, history_policy, important, is_important,
};
use genkit_model::testing::ProgrammableModel;
use genkit_model::types::{Message, Part, PartKind, Role, ToolRequest, ToolResponse};
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeSet;

/// One step of a random conversation.
#[derive(Debug, Clone)]
enum Step {
    User(usize, bool),
    ModelText(usize, bool),
    /// A model message calling `n` tools, answered by one tool message
    /// (or `n` tool messages when `split`).
    Tools {
        n: usize,
        split: bool,
        important: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (1usize..200, any::<bool>()).prop_map(|(len, imp)| Step::User(len, imp)),
        (1usize..300, any::<bool>()).prop_map(|(len, imp)| Step::ModelText(len, imp)),
        (1usize..4, any::<bool>(), any::<bool>()).prop_map(|(n, split, imp)| Step::Tools {
            n,
            split,
            important: imp && n == 1,
        }),
    ]
}

fn mark(message: Message, imp: bool) -> Message {
    if imp { important(message) } else { message }
}

/// A history from steps: an optional system prompt, then the steps; every
/// tool request has a unique ref.
fn history(system: bool, steps: &[Step], important_rate: u8) -> Vec<Message> {
    let mut out = Vec::new();
    if system {
        out.push(Message::system("You are an ops assistant."));
    }
    let mut refs = 0;
    for (i, s) in steps.iter().enumerate() {
        // Only some of the random `important` flags are used, so most
        // histories have few important messages.
        let imp = |flag: bool| flag && (i as u8).wrapping_mul(37) % 100 < important_rate;
        match s {
            Step::User(len, f) => out.push(mark(Message::user("u".repeat(*len)), imp(*f))),
            Step::ModelText(len, f) => out.push(mark(Message::model("m".repeat(*len)), imp(*f))),
            Step::Tools {
                n,
                split,
                important,
            } => {
                let reqs: Vec<ToolRequest> = (0..*n)
                    .map(|_| {
                        refs += 1;
                        ToolRequest::new("status", json!({"service": "api"}))
                            .with_ref(format!("r{refs}"))
                    })
                    .collect();
                let responses: Vec<Part> = reqs
                    .iter()
                    .map(|r| Part::tool_response(ToolResponse::for_request(r, json!({"up": true}))))
                    .collect();
                let request = Message::new(
                    Role::Model,
                    reqs.into_iter().map(Part::tool_request).collect::<Vec<_>>(),
                );
                out.push(mark(request, imp(*important)));
                if *split {
                    for r in responses {
                        out.push(Message::new(Role::Tool, vec![r]));
                    }
                } else {
                    out.push(Message::new(Role::Tool, responses));
                }
            }
        }
    }
    out
}

fn request_refs(messages: &[Message]) -> BTreeSet<String> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match &p.kind {
            PartKind::ToolRequest(r) => r.reference.clone(),
            _ => None,
        })
        .collect()
}

fn response_refs(messages: &[Message]) -> BTreeSet<String> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|p| match &p.kind {
            PartKind::ToolResponse(r) => r.reference.clone(),
            _ => None,
        })
        .collect()
}

/// Every tool message directly follows its model message (or another tool
/// message of the same answer).
fn tool_messages_follow_their_requests(messages: &[Message]) -> bool {
    messages.iter().enumerate().all(|(i, m)| {
        m.role != Role::Tool
            || i.checked_sub(1).is_some_and(|p| {
                let prev = &messages[p];
                prev.role == Role::Tool
                    || (prev.role == Role::Model && prev.content.iter().any(Part::is_tool_request))
            })
    })
}

fn tokens(messages: &[Message]) -> usize {
    let e = CharEstimator::default();
    messages.iter().map(|m| e.message_tokens(m)).sum()
}

/// Whether `sub` is `all` with some messages left out (order kept).
fn is_subsequence(sub: &[Message], all: &[Message]) -> bool {
    let mut it = all.iter();
    sub.iter().all(|m| it.any(|a| a == m))
}

fn check(policy: &HistoryPolicy, messages: &[Message], budget: Option<usize>) {
    let trimmed = policy.trim(messages);
    let kept = &trimmed.kept;
    assert_eq!(kept.len() + trimmed.dropped.len(), messages.len());
    assert!(is_subsequence(kept, messages));
    // Pairs are never split: every kept request has its kept response and
    // the other way round, and tool messages follow their requests.
    assert_eq!(
        request_refs(kept),
        response_refs(kept),
        "split pair in {kept:#?}"
    );
    assert!(tool_messages_follow_their_requests(kept));
    // The system prompt, important messages and the newest message stay.
    for m in messages {
        if m.role == Role::System || is_important(m) {
            assert!(kept.contains(m), "dropped a pinned message {m:?}");
        }
    }
    assert_eq!(kept.last(), messages.last());
    // So does the current turn, from the last user message on.
    let current = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(messages.len());
    assert!(
        kept.ends_with(&messages[current..]),
        "the current turn was cut"
    );
    // The budget holds, unless the messages that must stay (what a zero
    // budget keeps) exceed it alone; then only they are kept.
    if let Some(budget) = budget {
        let minimal = history_policy().max_tokens(0).trim(messages).kept;
        if tokens(&minimal) <= budget {
            assert!(
                tokens(kept) <= budget,
                "over budget: {} > {budget}",
                tokens(kept)
            );
        } else {
            assert_eq!(kept, &minimal);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn tool_pairs_are_never_split_and_pinned_messages_stay(
        system in any::<bool>(),
        steps in prop::collection::vec(step(), 0..40),
        turns in 1usize..6,
        budget in 20usize..2_000,
        important_rate in 0u8..60,
    ) {
        let messages = history(system, &steps, important_rate);
        check(&history_policy().last_turns(turns), &messages, None);
        check(&history_policy().max_tokens(budget), &messages, Some(budget));
        check(&history_policy().last_turns(turns).max_tokens(budget), &messages, Some(budget));
    }
}

#[test]
fn the_budget_is_exact_when_nothing_is_pinned() {
    // 10 turns of a user and a model message of 40 chars each: 14 tokens
    // per message, 28 per turn.
    let mut messages = Vec::new();
    for _ in 0..10 {
        messages.push(Message::user("u".repeat(40)));
        messages.push(Message::model("m".repeat(40)));
    }
    messages.push(Message::user("u".repeat(40)));
    for budget in [14, 27, 28, 42, 100, 1000] {
        let kept = history_policy().max_tokens(budget).trim(&messages).kept;
        assert!(tokens(&kept) <= budget.max(14), "{budget}");
        // Nothing more would have fitted.
        assert!(kept.len() == messages.len() || tokens(&kept) + 14 > budget);
    }
}

#[test]
fn last_turns_keeps_whole_turns_with_their_tool_calls() {
    let req = ToolRequest::new("status", json!({})).with_ref("a");
    let messages = vec![
        Message::system("sys"),
        Message::user("one"),
        Message::model("1"),
        Message::user("two"),
        Message::new(Role::Model, vec![Part::tool_request(req.clone())]),
        Message::new(
            Role::Tool,
            vec![Part::tool_response(ToolResponse::for_request(
                &req,
                json!(1),
            ))],
        ),
        Message::model("2"),
        Message::user("three"),
    ];
    let kept = history_policy().last_turns(2).trim(&messages).kept;
    let texts: Vec<String> = kept
        .iter()
        .map(|m| format!("{}:{}", m.role, m.text()))
        .collect();
    assert_eq!(
        texts,
        [
            "system:sys",
            "user:two",
            "model:",
            "tool:",
            "model:2",
            "user:three"
        ]
    );
}

#[test]
fn a_custom_estimator_is_used() {
    struct PerMessage;
    impl TokenEstimator for PerMessage {
        fn message_tokens(&self, _m: &Message) -> usize {
            1
        }
        fn text_tokens(&self, _t: &str) -> usize {
            1
        }
    }
    let messages: Vec<Message> = (0..10).map(|i| Message::user(format!("{i}"))).collect();
    let kept = history_policy()
        .estimator(PerMessage)
        .max_tokens(3)
        .trim(&messages)
        .kept;
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[0].text(), "7");
}

/// A 6-turn conversation whose first turns fall out of a 2-turn window.
fn long_conversation(turns: usize) -> Vec<Message> {
    let mut messages = vec![Message::system("You are an ops assistant.")];
    for i in 0..turns {
        messages.push(Message::user(format!("question {i}")));
        messages.push(Message::model(format!("answer {i}")));
    }
    messages.push(Message::user("latest question"));
    messages
}

#[tokio::test]
async fn generate_sends_the_trimmed_history_and_keeps_the_whole_one() {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m").respond_text("ok");
    let history = long_conversation(5);
    let response = generate(
        &reg,
        GenerateOptions::messages(history.clone())
            .model("m")
            .use_middleware(history_policy().last_turns(2)),
    )
    .await
    .unwrap();
    let seen = &model.requests()[0].messages;
    // The system prompt, then the last two turns.
    assert_eq!(seen.len(), 1 + 2 + 1);
    assert_eq!(seen[0].role, Role::System);
    assert_eq!(seen[1].text(), "question 4");
    // The conversation itself is whole.
    assert_eq!(response.messages().unwrap().len(), history.len() + 1);
}

#[tokio::test]
async fn summaries_replace_what_was_dropped_and_are_written_once() {
    let reg = Registry::new();
    let summarizer = ProgrammableModel::define(&reg, "summarizer")
        .respond_text("The user asked questions 0 to 2.")
        .respond_text("unused");
    let model = ProgrammableModel::define(&reg, "m")
        .respond_text("a")
        .respond_text("b");
    let policy = history_policy()
        .last_turns(2)
        .max_tokens(400)
        .summarize_with(&reg, "summarizer");
    let history = long_conversation(4);
    for _ in 0..2 {
        generate(
            &reg,
            GenerateOptions::messages(history.clone())
                .model("m")
                .use_middleware(policy.clone()),
        )
        .await
        .unwrap();
    }
    // Same dropped prefix twice: one summary.
    assert_eq!(summarizer.call_count(), 1);
    let asked = &summarizer.requests()[0].messages;
    assert!(asked[1].text().contains("question 0"));
    assert!(asked[1].text().contains("answer 2"));
    assert!(!asked[1].text().contains("question 3"));
    for request in model.requests() {
        let seen = &request.messages;
        assert_eq!(seen[0].role, Role::System);
        assert_eq!(
            seen[1].text(),
            format!("{SUMMARY_PREFACE}The user asked questions 0 to 2.")
        );
        assert_eq!(
            seen[1].metadata_value(HISTORY_SUMMARY_KEY),
            Some(&json!(true))
        );
        assert_eq!(seen[2].text(), "question 3");
        assert!(tokens(seen) <= 400);
    }
}

#[tokio::test]
async fn a_growing_conversation_extends_the_cached_summary() {
    let reg = Registry::new();
    let summarizer = ProgrammableModel::define(&reg, "summarizer")
        .respond_text("S1")
        .respond_text("S2");
    ProgrammableModel::define(&reg, "m")
        .respond_text("a")
        .respond_text("b");
    let policy = history_policy()
        .last_turns(1)
        .summarize_with(&reg, "summarizer");
    for turns in [2, 3] {
        generate(
            &reg,
            GenerateOptions::messages(long_conversation(turns))
                .model("m")
                .use_middleware(policy.clone()),
        )
        .await
        .unwrap();
    }
    assert_eq!(summarizer.call_count(), 2);
    let second = summarizer.requests()[1].messages[1].text();
    assert!(second.starts_with("Summary so far: S1"), "{second}");
    assert!(second.contains("question 2") && !second.contains("question 0"));
}

#[tokio::test]
async fn an_agent_keeps_its_summary_in_the_session() {
    let reg = Registry::new();
    let summarizer = ProgrammableModel::define(&reg, "summarizer")
        .respond_text("Earlier: greetings.")
        .respond_text("unused");
    let model = ProgrammableModel::define(&reg, "m");
    let model = (0..4).fold(model, |m, i| m.respond_text(&format!("reply {i}")));
    let policy = history_policy()
        .last_turns(1)
        .summarize_with(&reg, "summarizer");
    let agent = define_prompt_agent_with(&reg, "ops", AgentOptions::new(), move || {
        let policy = policy.clone();
        async move {
            Ok(GenerateOptions::new()
                .model("m")
                .system("You are an ops assistant.")
                .use_middleware(policy))
        }
    })
    .unwrap();
    let chat = agent.chat();
    chat.send(Message::user("hello")).await.unwrap();
    chat.send(Message::user("status?")).await.unwrap();
    // Turn 2 drops turn 1 and summarises it, once.
    assert_eq!(summarizer.call_count(), 1);
    let state = chat.state().unwrap();
    let artifact = state
        .artifacts()
        .iter()
        .find(|a| a.name.as_deref() == Some(HISTORY_SUMMARY_ARTIFACT))
        .expect("the summary is kept in the session");
    assert_eq!(artifact.parts[0].as_text(), Some("Earlier: greetings."));
    // The session keeps the whole conversation.
    assert_eq!(state.messages().len(), 4);
    let seen = &model.requests()[1].messages;
    assert_eq!(seen[0].role, Role::System);
    assert!(seen[1].text().starts_with(SUMMARY_PREFACE));
    assert_eq!(seen.last().unwrap().text(), "status?");
}

#[test]
fn the_current_turn_stays_whole_even_over_budget() {
    let req = ToolRequest::new("queryLogs", json!({})).with_ref("q");
    let messages = vec![
        Message::user("old question"),
        Message::model("old answer"),
        Message::user("why is the api slow?"),
        Message::new(Role::Model, vec![Part::tool_request(req.clone())]),
        Message::new(
            Role::Tool,
            vec![Part::tool_response(ToolResponse::for_request(
                &req,
                json!("x".repeat(400)),
            ))],
        ),
    ];
    let kept = history_policy().max_tokens(10).trim(&messages).kept;
    assert_eq!(kept, messages[2..].to_vec());
}
