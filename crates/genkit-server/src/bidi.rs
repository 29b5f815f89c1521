//! Running bidirectional actions (agents) over one HTTP request, as Genkit
//! JS's Express handler and Reflection API do: the request carries the
//! `init` payload beside the input (`{"data": <input>, "init": <init>}` on
//! the flow server, `{"key", "input", "init"}` on the Reflection API); the
//! run gets that init, the input as its only input, then its input side
//! closes. Chunks and the output go out as for any other action.
//!
//! A request without `init` runs with a JSON `null` init, which an action
//! whose init schema wants an object refuses (`INVALID_ARGUMENT`), as Genkit
//! JS refuses it; Genkit's `remoteAgent` always sends `init` (`{}` at first).

use crate::run::Source;
use genkit_core::RunOptions;
use genkit_core::action::ErasedBidiAction;
use serde_json::Value;

/// The run of `action` on one request: `init`, then `input` as the only
/// input. Streaming runs yield chunks as they come; others only the output.
pub(crate) fn source(
    action: &dyn ErasedBidiAction,
    init: Option<Value>,
    input: Value,
    opts: RunOptions<Value>,
    streaming: bool,
) -> Source {
    let mut run = action.start_json(init.unwrap_or(Value::Null), opts);
    // An input the schema rejects reaches the body in its place, which
    // decides the outcome (as in Genkit JS); `send` reports it again here.
    let _ = run.send(input);
    run.close();
    if streaming {
        Source::Bidi(run)
    } else {
        Source::Once(Box::pin(run.output()))
    }
}

/// The flow server's request body: `{"data": <input>, "init": <init>}`,
/// either member optional; `None` for a body that is not a JSON object.
pub(crate) fn split_request(body: Value) -> Option<(Value, Option<Value>)> {
    let Value::Object(mut m) = body else {
        return None;
    };
    let data = m.remove("data").unwrap_or(Value::Null);
    Some((data, m.remove("init")))
}

/// The request paths under which the flow server serves agent `name`
/// (below its path prefix), and the action each one runs: the agent itself,
/// its snapshot reader and its abort action, where `remoteAgent({url})`
/// finds them (`<url>`, `<url>/getSnapshot`, `<url>/abort`).
pub(crate) fn agent_paths(name: &str) -> [(String, genkit_core::ActionKind); 3] {
    use genkit_core::ActionKind;
    [
        (format!("/{name}"), ActionKind::Agent),
        (format!("/{name}/getSnapshot"), ActionKind::AgentSnapshot),
        (format!("/{name}/abort"), ActionKind::AgentAbort),
    ]
}

/// The routes of agent `name`: each path of [`agent_paths`] whose action is
/// registered. The agent itself must be; its companions are optional.
pub(crate) async fn agent_routes(
    registry: &genkit_core::Registry,
    name: &str,
) -> Result<Vec<(String, genkit_core::DynAction)>, genkit_core::Error> {
    let mut routes = Vec::with_capacity(3);
    for (path, kind) in agent_paths(name) {
        match registry.lookup(kind, name).await? {
            Some(action) => routes.push((path, action)),
            None if kind == genkit_core::ActionKind::Agent => {
                return Err(genkit_core::Error::not_found(format!(
                    "agent `{name}` is not registered"
                )));
            }
            None => {}
        }
    }
    Ok(routes)
}

/// Drives a started agent turn to its end whether or not the client stays,
/// as Genkit JS does (a closed request does not stop an attached turn: it
/// completes and records its snapshot). The returned stream yields the
/// run's events while the client reads them; once it is dropped, the run
/// goes on in its own task and its remaining events are discarded. To stop
/// a turn, use the agent's abort action.
pub(crate) fn outliving_the_client(
    mut events: crate::run::Events,
) -> impl futures::Stream<Item = crate::run::Event> + Send + 'static {
    use futures::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = events.next().await {
            // A closed channel means the client left; the run goes on.
            let _ = tx.send(event);
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
}
