//! Action behaviour: validation, typed and erased runs, streaming, context,
//! cancellation.

use futures::StreamExt;
use genkit_core::action::stream_json;
use genkit_core::tracing::current_context;
use genkit_core::{
    Action, ActionContext, ActionDesc, ActionKind, CancellationToken, Error, Registry, RunOptions,
    StatusCode,
    flow::{define_flow, define_streaming_flow},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Person {
    name: String,
    age: u8,
}

#[tokio::test]
async fn schema_violations_are_rejected_with_the_path() {
    let reg = Registry::new();
    define_flow(&reg, "greet", |p: Person, _| async move {
        Ok(format!("{} is {}", p.name, p.age))
    })
    .unwrap();
    let action = reg.require_action("/flow/greet").await.unwrap();

    let ok = action
        .run_json(json!({"name": "Ada", "age": 36}), RunOptions::default())
        .await
        .unwrap();
    assert_eq!(ok.output, json!("Ada is 36"));

    let err = action
        .run_json(json!({"name": 7, "age": 36}), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("- name:"), "{}", err.message());
    // The root caller's bad input is theirs to see.
    assert!(err.is_user_facing());

    let err = action
        .run_json(json!({"name": "Ada"}), RunOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("age"), "{}", err.message());
}

#[tokio::test]
async fn body_does_not_run_on_invalid_input() {
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    let desc = ActionDesc::new(ActionKind::Custom, "strict")
        .with_input_schema(json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}));
    let action = Action::<Value, Value>::from_desc(desc, move |v, _| {
        r.store(true, std::sync::atomic::Ordering::SeqCst);
        async move { Ok(v) }
    })
    .unwrap();
    let err = action.run(json!({"n": 0})).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("- n:"), "{}", err.message());
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[tokio::test]
async fn output_is_validated() {
    let desc =
        ActionDesc::new(ActionKind::Custom, "liar").with_output_schema(json!({"type": "string"}));
    let action =
        Action::<Value, Value>::from_desc(desc, |_v, _| async move { Ok(json!(42)) }).unwrap();
    let err = action.run(json!(null)).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(err.message().contains("(root)"), "{}", err.message());
}

#[tokio::test]
async fn invalid_raw_schema_is_rejected_at_definition() {
    let desc = ActionDesc::new(ActionKind::Tool, "bad").with_input_schema(json!({"type": 5}));
    let err = Action::<Value, Value>::from_desc(desc, |v, _| async move { Ok(v) }).unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[tokio::test]
async fn streaming_flow_delivers_every_chunk_in_order() {
    let reg = Registry::new();
    let counter = define_streaming_flow(
        &reg,
        "count",
        |n: u32, ctx: genkit_core::flow::FlowContext<u32>| async move {
            for i in 0..n {
                ctx.send_chunk(i);
                if i % 7 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            Ok(format!("done {n}"))
        },
    )
    .unwrap();

    let mut stream = counter.stream(100);
    let mut seen = Vec::new();
    while let Some(chunk) = stream.next().await {
        seen.push(chunk.unwrap());
    }
    assert_eq!(seen, (0..100).collect::<Vec<_>>());
    assert_eq!(stream.output().await.unwrap(), "done 100");

    // Erased: chunks are JSON.
    let erased = reg.require_action("/flow/count").await.unwrap();
    let mut stream = stream_json(erased, json!(3), RunOptions::default());
    let mut seen = Vec::new();
    while let Some(c) = stream.next().await {
        seen.push(c.unwrap());
    }
    assert_eq!(seen, vec![json!(0), json!(1), json!(2)]);
    assert_eq!(stream.output().await.unwrap(), json!("done 3"));
    assert!(
        reg.require_action("/flow/count")
            .await
            .unwrap()
            .desc()
            .stream_schema
            .is_some()
    );
}

/// Bursts of chunks sent with no await between them (several queue blocks
/// each, the last one partly filled), then more after the consumer read the
/// first burst (its emptied blocks are reused): all arrive, in order.
#[tokio::test]
async fn bursts_of_chunks_arrive_in_order() {
    let reg = Registry::new();
    let flow = define_streaming_flow(
        &reg,
        "bursts",
        |bursts: Vec<u32>, ctx: genkit_core::flow::FlowContext<u32>| async move {
            let mut next = 0;
            for size in bursts {
                for _ in 0..size {
                    ctx.send_chunk(next);
                    next += 1;
                }
                tokio::task::yield_now().await;
            }
            Ok(next)
        },
    )
    .unwrap();
    let mut stream = flow.stream(vec![1000, 1, 0, 37, 16, 250]);
    let mut next = 0;
    while let Some(c) = stream.next().await {
        assert_eq!(c.unwrap(), next);
        next += 1;
    }
    assert_eq!(next, 1304);
    assert_eq!(stream.output().await.unwrap(), 1304);
}

/// Chunks pushed from another thread while the consumer is waiting (and
/// while it is taking earlier ones) all arrive, in order, with no lost wakeup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_sent_from_another_thread_all_arrive_in_order() {
    let reg = Registry::new();
    let flow = define_streaming_flow(
        &reg,
        "threaded",
        |n: u32, ctx: genkit_core::flow::FlowContext<u32>| async move {
            let sender = ctx.chunks.clone();
            tokio::task::spawn_blocking(move || {
                for i in 0..n {
                    sender.send(i);
                    if i % 97 == 0 {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
            })
            .await
            .map_err(|e| Error::internal(e.to_string()))?;
            Ok(n)
        },
    )
    .unwrap();
    let all = async {
        for _ in 0..20 {
            let mut stream = flow.stream(2000);
            let mut next = 0;
            while let Some(c) = stream.next().await {
                assert_eq!(c.unwrap(), next);
                next += 1;
            }
            assert_eq!(next, 2000);
            assert_eq!(stream.output().await.unwrap(), 2000);
        }
    };
    // A lost wakeup would hang; make it a failure instead.
    tokio::time::timeout(Duration::from_secs(60), all)
        .await
        .expect("every stream finishes");
}

#[tokio::test]
async fn chunks_sent_from_another_task_arrive() {
    let reg = Registry::new();
    let flow = define_streaming_flow(
        &reg,
        "spawned",
        |n: u32, ctx: genkit_core::flow::FlowContext<u32>| async move {
            let sender = ctx.chunks.clone();
            tokio::spawn(async move {
                for i in 0..n {
                    sender.send(i);
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            })
            .await
            .map_err(|e| Error::internal(e.to_string()))?;
            Ok(n)
        },
    )
    .unwrap();
    let mut stream = flow.stream(5);
    let mut seen = Vec::new();
    while let Some(c) = stream.next().await {
        seen.push(c.unwrap());
    }
    assert_eq!(seen, vec![0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn failing_stream_ends_with_the_error() {
    let reg = Registry::new();
    let flow = define_streaming_flow(
        &reg,
        "fails",
        |_: (), ctx: genkit_core::flow::FlowContext<String>| async move {
            ctx.send_chunk("one".into());
            Err::<(), _>(Error::new(StatusCode::Unavailable, "backend down"))
        },
    )
    .unwrap();
    let mut stream = flow.stream(());
    assert_eq!(stream.next().await.unwrap().unwrap(), "one");
    let err = stream.next().await.unwrap().unwrap_err();
    assert_eq!(err.status(), StatusCode::Unavailable);
    assert!(stream.next().await.is_none());
    assert_eq!(
        stream.output().await.unwrap_err().status(),
        StatusCode::Unavailable
    );
}

#[tokio::test]
async fn cancellation_ends_with_cancelled() {
    let reg = Registry::new();
    let slow = define_flow(&reg, "slow", |_: (), _| async move {
        tokio::time::sleep(Duration::from_secs(30)).await;
        Ok(())
    })
    .unwrap();
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        t.cancel();
    });
    let started = std::time::Instant::now();
    let err = slow
        .run_with((), RunOptions::new().cancel(token))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Cancelled);
    assert_eq!(err.message(), "Action was cancelled");
    assert!(started.elapsed() < Duration::from_secs(5));

    // A token cancelled up front never runs the body.
    let token = CancellationToken::new();
    token.cancel();
    let err = slow
        .run_with((), RunOptions::new().cancel(token))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Cancelled);
}

#[tokio::test]
async fn nested_actions_inherit_the_cancellation_token() {
    let reg = Registry::new();
    let inner = define_flow(
        &reg,
        "inner",
        |_: (), ctx: genkit_core::flow::FlowContext| async move {
            // The inner body observes the outer caller's token.
            ctx.cancel.cancelled().await;
            Ok(())
        },
    )
    .unwrap();
    let outer = define_flow(&reg, "outer", move |_: (), _| {
        let inner = inner.clone();
        async move { inner.run(()).await }
    })
    .unwrap();
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        t.cancel();
    });
    let err = outer
        .run_with((), RunOptions::new().cancel(token))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Cancelled);
}

#[tokio::test]
async fn context_reaches_the_body_and_nested_actions() {
    let reg = Registry::new();
    let inner = define_flow(
        &reg,
        "whoami",
        |_: (), ctx: genkit_core::flow::FlowContext| async move {
            assert_eq!(current_context(), ctx.context);
            Ok(ctx.context.auth().cloned().unwrap_or(Value::Null))
        },
    )
    .unwrap();
    let outer = define_flow(
        &reg,
        "outer",
        move |_: (), ctx: genkit_core::flow::FlowContext| {
            let inner = inner.clone();
            async move {
                let mine = ctx.context.auth().cloned();
                let nested = inner.run(()).await?;
                // An explicit context overrides the inherited one.
                let other = inner
                    .run_with(
                        (),
                        RunOptions::new().context(ActionContext::new().with_auth(json!("other"))),
                    )
                    .await?
                    .output;
                Ok(json!([mine, nested, other]))
            }
        },
    )
    .unwrap();
    let ctx = ActionContext::new().with_auth(json!({"uid": "u1"}));
    let out = outer
        .run_with((), RunOptions::new().context(ctx))
        .await
        .unwrap()
        .output;
    assert_eq!(out, json!([{"uid": "u1"}, {"uid": "u1"}, "other"]));
    // Outside any action the context is empty.
    assert!(current_context().is_empty());
}

#[tokio::test]
async fn results_carry_trace_ids() {
    let reg = Registry::new();
    let flow =
        define_flow(
            &reg,
            "ids",
            |_: (), ctx: genkit_core::flow::FlowContext| async move {
                Ok(ctx.trace.trace_id.to_string())
            },
        )
        .unwrap();
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(None));
    let s = seen.clone();
    let r = flow
        .run_with(
            (),
            RunOptions::new().on_trace_start(move |t| *s.lock() = Some(t)),
        )
        .await
        .unwrap();
    assert_eq!(r.output, r.trace.trace_id.to_string());
    assert_eq!(r.output.len(), 32);
    assert_eq!(r.trace.span_id.to_string().len(), 16);
    assert_eq!(*seen.lock(), Some(r.trace));
}

#[tokio::test]
async fn descriptors_have_the_reflection_shape() {
    let reg = Registry::new();
    define_flow(&reg, "greet", |p: Person, _| async move { Ok(p.name) }).unwrap();
    let a = reg.require_action("/flow/greet").await.unwrap();
    let d = a.desc().to_descriptor();
    assert_eq!(d["key"], "/flow/greet");
    assert_eq!(d["name"], "greet");
    assert_eq!(
        d["inputSchema"]["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert_eq!(d["outputSchema"]["type"], "string");
    assert!(d.get("description").is_none());
    assert!(d.get("streamSchema").is_none());
}
