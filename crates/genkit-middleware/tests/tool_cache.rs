//! Tool result cache: a repeated call (same tool, same input, in any key
//! order) is answered from the cache until the tool's time to live passes;
//! side-effecting tools are never cached.

use genkit_core::tracing::with_extension;
use genkit_core::{ActionContext, Error, Registry};
use genkit_generate::{GenerateOptions, generate};
use genkit_middleware::{Clock, ToolCache, tool_cache};
use genkit_model::middleware::ConversationScope;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::Tool;
use genkit_model::types::{Role, ToolRequest};
use parking_lot::Mutex;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// A clock the test moves by hand.
#[derive(Clone)]
struct ManualClock(Arc<Mutex<Instant>>);

impl ManualClock {
    fn new() -> Self {
        Self(Arc::new(Mutex::new(Instant::now())))
    }
    fn advance(&self, by: Duration) {
        *self.0.lock() += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        *self.0.lock()
    }
}

/// A tool named `name` answering `<name> call <n>`, counting its runs.
fn counted(name: &str) -> (Tool<Value, Value>, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let label = name.to_owned();
    let tool = Tool::from_json_schema(name, "A tool.", None, None, move |_input, _ctx| {
        let n = r.fetch_add(1, Ordering::SeqCst) + 1;
        let label = label.clone();
        async move { Ok(json!(format!("{label} call {n}"))) }
    })
    .unwrap();
    (tool, runs)
}

/// Runs one generate call in which the model calls `tool` with `input`
/// (ref `id`), through `cache`; returns the output the model got back.
async fn call_through(
    cache: &Arc<ToolCache>,
    tool: &Tool<Value, Value>,
    input: Value,
    id: &str,
) -> (Value, Option<String>) {
    call_as(cache, tool, input, id, None, ActionContext::new()).await
}

/// [`call_through`] in conversation `scope` (an agent session), with
/// `context` (the caller's auth).
async fn call_as(
    cache: &Arc<ToolCache>,
    tool: &Tool<Value, Value>,
    input: Value,
    id: &str,
    scope: Option<&str>,
    context: ActionContext,
) -> (Value, Option<String>) {
    let reg = Registry::new();
    let model = ProgrammableModel::define(&reg, "m")
        .respond_tool_calls(vec![ToolRequest::new(tool.name(), input).with_ref(id)])
        .respond_text("done");
    let call = generate(
        &reg,
        GenerateOptions::prompt("go")
            .model("m")
            .tool(tool)
            .context(context)
            .use_middleware(cache.clone()),
    );
    match scope {
        Some(scope) => with_extension(ConversationScope::new(scope), call).await,
        None => call.await,
    }
    .unwrap();
    let seen = model.requests()[1].messages.clone();
    let tool_message = seen.last().unwrap().clone();
    assert_eq!(tool_message.role, Role::Tool);
    let response = tool_message.content[0].as_tool_response().unwrap().clone();
    (response.output.unwrap(), response.reference)
}

#[tokio::test]
async fn repeated_calls_are_answered_from_the_cache_until_the_ttl_passes() {
    let clock = ManualClock::new();
    let cache = Arc::new(
        tool_cache()
            .ttl("getServiceStatus", Duration::from_secs(30))
            .clock(clock.clone()),
    );
    let (tool, runs) = counted("getServiceStatus");
    let input = json!({"service": "api", "level": "error"});
    let (first, _) = call_through(&cache, &tool, input.clone(), "a").await;
    assert_eq!(first, json!("getServiceStatus call 1"));

    // Same input in another key order, 29 s later: from the cache, with
    // this call's ref.
    clock.advance(Duration::from_secs(29));
    let reordered = json!({"level": "error", "service": "api"});
    let (second, reference) = call_through(&cache, &tool, reordered, "b").await;
    assert_eq!(second, first);
    assert_eq!(reference.as_deref(), Some("b"));
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Another input is another call.
    let (other, _) = call_through(&cache, &tool, json!({"service": "db"}), "c").await;
    assert_eq!(other, json!("getServiceStatus call 2"));

    // Past the time to live the tool runs again.
    clock.advance(Duration::from_secs(2));
    let (third, _) = call_through(&cache, &tool, input, "d").await;
    assert_eq!(third, json!("getServiceStatus call 3"));
    assert_eq!(runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn side_effecting_tools_are_never_cached() {
    let cache = Arc::new(
        tool_cache()
            .default_ttl(Duration::from_secs(3600))
            .clock(ManualClock::new()),
    );
    let (tool, runs) = counted("restartService");
    let tool = tool.side_effecting();
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        let (out, _) = call_through(&cache, &tool, json!({"service": "api"}), id).await;
        assert_eq!(out, json!(format!("restartService call {}", i + 1)));
    }
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(cache.is_empty());

    // Nor are tools that need approval (each call is asked for).
    let (tool, runs) = counted("deploy");
    let tool = tool.needs_approval();
    for id in ["a", "b"] {
        call_through(&cache, &tool, json!({"version": "v2"}), id).await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    assert!(cache.is_empty());
}

#[tokio::test]
async fn tools_without_a_ttl_and_failures_are_not_cached() {
    let cache = Arc::new(
        tool_cache()
            .ttl("getServiceStatus", Duration::from_secs(60))
            .clock(ManualClock::new()),
    );
    let (tool, runs) = counted("queryLogs");
    call_through(&cache, &tool, json!({}), "a").await;
    call_through(&cache, &tool, json!({}), "b").await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    let fails = Arc::new(AtomicUsize::new(0));
    let f = fails.clone();
    let failing = Tool::from_json_schema(
        "getServiceStatus",
        "Fails.",
        None,
        None,
        move |_input: Value, _ctx| {
            f.fetch_add(1, Ordering::SeqCst);
            async move { Err::<Value, _>(Error::internal("monitoring is down")) }
        },
    )
    .unwrap();
    for _ in 0..2 {
        let reg = Registry::new();
        ProgrammableModel::define(&reg, "m")
            .respond_tool_call("getServiceStatus", json!({}))
            .respond_text("done");
        let out = generate(
            &reg,
            GenerateOptions::prompt("go")
                .model("m")
                .tool(&failing)
                .use_middleware(cache.clone()),
        )
        .await;
        assert!(out.is_err());
    }
    assert_eq!(fails.load(Ordering::SeqCst), 2);
    assert!(cache.is_empty());
}

#[tokio::test]
async fn the_cache_keeps_at_most_max_entries() {
    let cache = Arc::new(
        tool_cache()
            .default_ttl(Duration::from_secs(60))
            .max_entries(2)
            .clock(ManualClock::new()),
    );
    let (tool, runs) = counted("t");
    for i in 0..5 {
        call_through(&cache, &tool, json!(i), "r").await;
    }
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    assert_eq!(cache.len(), 2);
}

#[tokio::test]
async fn results_stay_in_their_session_and_with_their_caller() {
    let cache = Arc::new(
        tool_cache()
            .ttl("queryLogs", Duration::from_secs(60))
            .clock(ManualClock::new()),
    );
    let (tool, runs) = counted("queryLogs");
    let input = json!({"service": "api"});
    let alice = ActionContext::new().with_auth(json!({"uid": "alice"}));
    let bob = ActionContext::new().with_auth(json!({"uid": "bob"}));
    let call =
        |scope, who: &ActionContext| call_as(&cache, &tool, input.clone(), "r", scope, who.clone());

    let (first, _) = call(Some("s1"), &alice).await;
    // The same session and caller: from the cache.
    assert_eq!(call(Some("s1"), &alice).await.0, first);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Another session of the same caller, another caller in the same
    // session, and no session at all: the tool runs for each.
    assert_eq!(call(Some("s2"), &alice).await.0, json!("queryLogs call 2"));
    assert_eq!(call(Some("s1"), &bob).await.0, json!("queryLogs call 3"));
    assert_eq!(call(None, &alice).await.0, json!("queryLogs call 4"));
    assert_eq!(runs.load(Ordering::SeqCst), 4);

    // A cache shared on purpose serves everyone one result.
    let shared = Arc::new(
        tool_cache()
            .ttl("queryLogs", Duration::from_secs(60))
            .shared_across_sessions()
            .clock(ManualClock::new()),
    );
    let (tool, runs) = counted("queryLogs");
    let (one, _) = call_as(
        &shared,
        &tool,
        input.clone(),
        "a",
        Some("s1"),
        alice.clone(),
    )
    .await;
    let (two, _) = call_as(&shared, &tool, input.clone(), "b", Some("s2"), bob.clone()).await;
    assert_eq!(one, two);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}
