//! Bidirectional actions: init, inputs while running, chunks, output; schemas
//! in the descriptor; validation, cancellation, context and tracing.

use futures::StreamExt;
use genkit_core::action::{ActionKind, BidiAction, BidiInputs, as_bidi};
use genkit_core::schema::schema_for;
use genkit_core::tracing::{InMemoryTraceStore, add_span_processor};
use genkit_core::{
    Action, ActionContext, ActionCtx, CancellationToken, Registry, RunOptions, StatusCode,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How a chat-like run starts.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Init {
    /// Prepended to every reply.
    #[schemars(length(min = 1))]
    prefix: String,
}

/// One message of the run.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
struct Input {
    #[schemars(length(min = 1))]
    text: String,
    #[serde(default)]
    times: u32,
}

/// A streamed reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Reply {
    turn: u32,
    text: String,
}

/// The run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Summary {
    turns: u32,
    last: Option<String>,
}

async fn chat_body(
    init: Init,
    mut inputs: BidiInputs<Input>,
    ctx: ActionCtx<Reply>,
) -> genkit_core::Result<Summary> {
    let mut turns = 0;
    let mut last = None;
    while let Some(input) = inputs.next().await {
        let input = input?;
        turns += 1;
        for _ in 0..input.times.max(1) {
            ctx.send_chunk(Reply {
                turn: turns,
                text: format!("{}{}", init.prefix, input.text),
            });
        }
        last = Some(input.text);
    }
    Ok(Summary { turns, last })
}

fn chat() -> BidiAction<Init, Input, Summary, Reply> {
    BidiAction::new(ActionKind::Custom, "chat", chat_body)
}

fn input(text: &str) -> Input {
    Input {
        text: text.into(),
        times: 1,
    }
}

/// The failing paths an `INVALID_ARGUMENT` error names.
fn failing_paths(err: &genkit_core::Error) -> Vec<String> {
    err.details()
        .and_then(|d| d["errors"].as_array())
        .map(|errors| {
            errors
                .iter()
                .filter_map(|e| e["path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn traces() -> &'static Arc<InMemoryTraceStore> {
    static STORE: OnceLock<Arc<InMemoryTraceStore>> = OnceLock::new();
    STORE.get_or_init(|| {
        let s = Arc::new(InMemoryTraceStore::default());
        add_span_processor(s.clone());
        s
    })
}

#[tokio::test]
async fn init_then_inputs_give_chunks_then_the_output() {
    let action = chat();
    let mut run = action.start(Init {
        prefix: "> ".into(),
    });
    run.send(input("hi")).unwrap();
    let first = run.next().await.unwrap().unwrap();
    assert_eq!(
        first,
        Reply {
            turn: 1,
            text: "> hi".into()
        }
    );
    // The next input is sent only after the first reply arrived.
    run.send(Input {
        text: "again".into(),
        times: 2,
    })
    .unwrap();
    // And a third from another task.
    let sender = run.sender().unwrap();
    tokio::spawn(async move { sender.send(input("bye")).unwrap() })
        .await
        .unwrap();
    run.close();
    let rest: Vec<Reply> = run.by_ref().map(|c| c.unwrap()).collect().await;
    assert_eq!(
        rest.iter()
            .map(|r| (r.turn, r.text.as_str()))
            .collect::<Vec<_>>(),
        [(2, "> again"), (2, "> again"), (3, "> bye")]
    );
    assert_eq!(
        run.output().await.unwrap(),
        Summary {
            turns: 3,
            last: Some("bye".into())
        }
    );

    // All at once.
    let out = action
        .run(Init { prefix: "-".into() }, [input("a"), input("b")])
        .await
        .unwrap();
    assert_eq!(out.turns, 2);
}

#[tokio::test]
async fn the_body_may_finish_before_the_inputs_do() {
    let first_only = BidiAction::new(
        ActionKind::Custom,
        "firstOnly",
        |_: (), mut inputs: BidiInputs<String>, _ctx: ActionCtx<()>| async move {
            inputs.next().await.transpose()
        },
    );
    let run = first_only.start(());
    run.send("one".into()).unwrap();
    let sender = run.sender().unwrap();
    assert_eq!(run.output().await.unwrap(), Some("one".to_owned()));
    let err = sender.send("two".into()).unwrap_err();
    assert_eq!(err.status(), StatusCode::FailedPrecondition);
    assert!(err.message().contains("no longer reads inputs"), "{err}");
}

#[tokio::test]
async fn cancellation_mid_stream_ends_the_run() {
    let store = traces();
    let action = chat();
    let token = CancellationToken::new();
    let trace_id = Arc::new(parking_lot::Mutex::new(None));
    let t = trace_id.clone();
    let mut run = action.start_with(
        Init { prefix: "-".into() },
        RunOptions::new()
            .cancel(token.clone())
            .on_trace_start(move |info| *t.lock() = Some(info.trace_id.to_string())),
    );
    run.send(input("one")).unwrap();
    assert_eq!(run.next().await.unwrap().unwrap().text, "-one");
    // The body now waits for the next input; cancel instead.
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        t.cancel();
    });
    let started = std::time::Instant::now();
    let err = run.next().await.unwrap().unwrap_err();
    assert_eq!(err.status(), StatusCode::Cancelled);
    assert!(
        run.next().await.is_none(),
        "the stream ends after the error"
    );
    assert_eq!(
        run.output().await.unwrap_err().status(),
        StatusCode::Cancelled
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    let trace_id = trace_id.lock().clone().expect("the span opened");
    let trace = store.get(&trace_id).expect("the trace was recorded");
    let span = trace.spans.values().next().expect("the run's span");
    assert_eq!(span.attributes["genkit:state"], "error");
    assert_eq!(
        span.status.as_ref().and_then(|s| s.message.as_deref()),
        Some("CANCELLED: Action was cancelled")
    );
}

#[tokio::test]
async fn an_input_that_violates_the_schema_fails_the_run_naming_the_field() {
    let action = chat();
    // Typed: the schema says more than the type (a non-empty text).
    let run = action.start(Init {
        prefix: "> ".into(),
    });
    let err = run.send(input("")).unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(failing_paths(&err), ["text"], "{}", err.message());
    let err = run.output().await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(failing_paths(&err), ["text"], "{}", err.message());

    // JSON: the schema, then the type.
    let erased = as_bidi(&action.to_dyn()).expect("a bidi action");
    let run = erased.start_json(json!({"prefix": "> "}), RunOptions::default());
    run.send(json!({"text": "ok"})).unwrap();
    let err = run
        .send(json!({"text": "ok", "times": "twice"}))
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(failing_paths(&err), ["times"], "{}", err.message());
    let err = run.output().await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(
        err.is_user_facing(),
        "a caller's bad input may be shown to them"
    );

    // The init is checked before the run starts.
    let run = action.start(Init { prefix: "".into() });
    let err = run.output().await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert_eq!(failing_paths(&err), ["prefix"], "{}", err.message());
    let run = erased.start_json(json!({"prefix": 3}), RunOptions::default());
    assert!(
        run.send(json!({"text": "x"})).is_err(),
        "a run that never started takes no input"
    );
    let err = run.output().await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[tokio::test]
async fn the_descriptor_carries_all_four_schemas() {
    let action = chat();
    let desc = action.desc();
    assert_eq!(desc.key(), "/custom/chat");
    assert_eq!(desc.init_schema, Some(schema_for::<Init>()));
    assert_eq!(desc.input_schema, Some(schema_for::<Input>()));
    assert_eq!(desc.output_schema, Some(schema_for::<Summary>()));
    assert_eq!(desc.stream_schema, Some(schema_for::<Reply>()));
    assert_eq!(desc.metadata.get("bidi"), Some(&Value::Bool(true)));
    // The Reflection listing, as Genkit JS lists a bidi action: `bidi` in
    // its metadata, no init or stream schema.
    let listed = desc.to_descriptor();
    assert_eq!(listed["metadata"]["bidi"], json!(true));
    assert_eq!(listed["inputSchema"], schema_for::<Input>());
    assert!(listed.get("initSchema").is_none());

    // Registered, found by key, and back to its typed self.
    let registry = Registry::new();
    BidiAction::define(&registry, ActionKind::Custom, "chat", chat_body).unwrap();
    let found = registry.require_action("/custom/chat").await.unwrap();
    assert_eq!(found.desc().init_schema, Some(schema_for::<Init>()));
    assert!(as_bidi(&found).is_some());
    let typed = BidiAction::<Init, Input, Summary, Reply>::downcast(&found).expect("same types");
    assert_eq!(typed.key(), "/custom/chat");
    assert!(BidiAction::<(), Input, Summary, Reply>::downcast(&found).is_none());
    assert!(Action::<Value, Value, Value>::downcast(&found).is_none());
    let plain = Action::new(
        ActionKind::Custom,
        "plain",
        |x: u32, _: ActionCtx| async move { Ok(x) },
    );
    assert!(as_bidi(&plain.to_dyn()).is_none());
    assert!(plain.desc().init_schema.is_none());
}

#[tokio::test]
async fn json_runs_stream_json_and_run_json_takes_one_input() {
    let action = chat();
    let erased = as_bidi(&action.to_dyn()).unwrap();
    let mut run = erased.start_json(json!({"prefix": "~"}), RunOptions::default());
    run.send(json!({"text": "x", "times": 2})).unwrap();
    run.close();
    let chunks: Vec<Value> = run.by_ref().map(|c| c.unwrap()).collect().await;
    assert_eq!(
        chunks,
        [
            json!({"turn": 1, "text": "~x"}),
            json!({"turn": 1, "text": "~x"})
        ]
    );
    assert_eq!(
        run.output().await.unwrap(),
        json!({"turns": 1, "last": "x"})
    );

    // Called like any action: no init, the input as the only input.
    let optional_init = BidiAction::new(
        ActionKind::Custom,
        "count",
        |init: Option<u32>, mut inputs: BidiInputs<String>, ctx: ActionCtx<String>| async move {
            let mut n = init.unwrap_or(0);
            while let Some(s) = inputs.next().await {
                ctx.send_chunk(s?);
                n += 1;
            }
            Ok(n)
        },
    );
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let s = seen.clone();
    let result = optional_init
        .to_dyn()
        .run_json(
            json!("only"),
            RunOptions::new().on_chunk(move |c: Value| s.lock().push(c)),
        )
        .await
        .unwrap();
    assert_eq!(result.output, json!(1));
    assert_eq!(*seen.lock(), [json!("only")]);
    // An init-requiring action called without one refuses the missing init.
    let err = action
        .to_dyn()
        .run_json(json!({"text": "x"}), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[tokio::test]
async fn the_body_sees_the_context_and_its_run_is_one_span() {
    let store = traces();
    let action = BidiAction::new(
        ActionKind::Custom,
        "whoami",
        |init: Init, mut inputs: BidiInputs<Input>, ctx: ActionCtx<String>| async move {
            let auth = genkit_core::tracing::current_context()
                .auth()
                .cloned()
                .unwrap_or(Value::Null);
            while let Some(input) = inputs.next().await {
                ctx.send_chunk(format!("{}{} ({auth})", init.prefix, input?.text));
            }
            Ok(auth)
        },
    );
    let trace_id = Arc::new(parking_lot::Mutex::new(None));
    let t = trace_id.clone();
    let mut run = action.start_with(
        Init { prefix: "@".into() },
        RunOptions::new()
            .context(ActionContext::new().with_auth(json!({"uid": "u1"})))
            .on_trace_start(move |info| *t.lock() = Some(info.trace_id.to_string())),
    );
    run.send(input("me")).unwrap();
    assert_eq!(run.next().await.unwrap().unwrap(), r#"@me ({"uid":"u1"})"#);
    run.close();
    assert_eq!(run.output().await.unwrap(), json!({"uid": "u1"}));

    let trace_id = trace_id.lock().clone().expect("the span opened");
    let trace = store.get(&trace_id).expect("the trace was recorded");
    assert_eq!(trace.spans.len(), 1, "one span for the whole run");
    let span = trace.spans.values().next().unwrap();
    let attrs = &span.attributes;
    assert_eq!(attrs["genkit:name"], "whoami");
    assert_eq!(attrs["genkit:type"], "action");
    assert_eq!(attrs["genkit:metadata:subtype"], "custom");
    assert_eq!(attrs["genkit:key"], "/custom/whoami");
    assert_eq!(attrs["genkit:state"], "success");
    let init: Value = serde_json::from_str(attrs["genkit:init"].as_str().unwrap()).unwrap();
    assert_eq!(init, json!({"prefix": "@"}));
    let output: Value = serde_json::from_str(attrs["genkit:output"].as_str().unwrap()).unwrap();
    assert_eq!(output, json!({"uid": "u1"}));
}

#[tokio::test]
async fn actions_called_by_the_body_are_children_of_its_span() {
    let store = traces();
    let registry = Registry::new();
    let shout = genkit_core::flow::define_flow(&registry, "shout", |s: String, _| async move {
        Ok(s.to_uppercase())
    })
    .unwrap();
    let action = BidiAction::new(
        ActionKind::Custom,
        "shouter",
        move |_: (), mut inputs: BidiInputs<String>, ctx: ActionCtx<String>| {
            let shout = shout.clone();
            async move {
                while let Some(s) = inputs.next().await {
                    ctx.send_chunk(shout.run(s?).await?);
                }
                Ok(())
            }
        },
    );
    let trace_id = Arc::new(parking_lot::Mutex::new(None));
    let t = trace_id.clone();
    let mut run = action.start_with(
        (),
        RunOptions::new().on_trace_start(move |info| *t.lock() = Some(info.trace_id.to_string())),
    );
    run.send("a".into()).unwrap();
    run.send("b".into()).unwrap();
    run.close();
    let chunks: Vec<String> = run.by_ref().map(|c| c.unwrap()).collect().await;
    assert_eq!(chunks, ["A", "B"]);
    run.output().await.unwrap();

    let trace_id = trace_id.lock().clone().expect("the span opened");
    let trace = store.get(&trace_id).expect("the trace was recorded");
    let root = trace
        .spans
        .values()
        .find(|s| s.display_name == "shouter")
        .expect("the bidi span");
    let children: Vec<_> = trace
        .spans
        .values()
        .filter(|s| s.parent_span_id.as_deref() == Some(root.span_id.as_str()))
        .map(|s| s.display_name.as_str())
        .collect();
    assert_eq!(children, ["shout", "shout"]);
}
