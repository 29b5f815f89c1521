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

/// How a turn that outlives its client is bounded.
#[derive(Clone, Default)]
pub(crate) struct Bounds {
    /// Events held for a slow client ([`ServeOptions::event_buffer`](crate::ServeOptions::event_buffer)).
    pub(crate) buffer: usize,
    /// When a turn whose client has left is cancelled.
    pub(crate) deadline: Option<tokio::time::Instant>,
    /// The request's place under the server's concurrency limit, kept
    /// until the turn ends.
    pub(crate) in_flight: Option<crate::serving::InFlight>,
}

/// Drives a started agent turn to its end whether or not the client stays,
/// as Genkit JS does (a closed request does not stop an attached turn: it
/// completes and records its snapshot). The returned stream yields the
/// run's events while the client reads them, through a buffer of
/// `bounds.buffer` events: when it is full the run waits for the client.
/// Once the stream is dropped, the run goes on in its own task and its
/// remaining events are discarded, until `bounds.deadline` (then the run is
/// dropped, which cancels it). Until the run ends the task holds
/// `bounds.in_flight`, so the turn counts against the server's concurrency
/// limit. To stop a turn early, use the agent's abort action.
pub(crate) fn outliving_the_client<S>(
    mut events: S,
    bounds: Bounds,
) -> impl futures::Stream<Item = crate::run::Event> + Send + 'static
where
    S: futures::Stream<Item = crate::run::Event> + Send + Unpin + 'static,
{
    use futures::StreamExt;
    let (tx, rx) = tokio::sync::mpsc::channel(bounds.buffer.max(1));
    tokio::spawn(async move {
        let _in_flight = bounds.in_flight;
        loop {
            tokio::select! {
                event = events.next() => match event {
                    None => return,
                    // Waits while the buffer is full; fails once the client left.
                    Some(event) => if tx.send(event).await.is_err() { break },
                },
                () = tx.closed() => break,
            }
        }
        drop(tx);
        let rest = async { while events.next().await.is_some() {} };
        match bounds.deadline {
            None => rest.await,
            Some(deadline) => {
                if tokio::time::timeout_at(deadline, rest).await.is_err() {
                    ::tracing::warn!(
                        "an agent turn whose client left was still running at the request \
                         deadline: cancelled"
                    );
                }
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|e| (e, rx)) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Event;
    use futures::StreamExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// `n` chunk events (then none), counting how many were taken.
    fn counted(n: usize) -> (Arc<AtomicUsize>, impl futures::Stream<Item = Event> + Unpin) {
        let taken = Arc::new(AtomicUsize::new(0));
        let seen = taken.clone();
        let events = futures::stream::iter(0..n).map(move |i| {
            seen.fetch_add(1, Ordering::SeqCst);
            Event::Chunk(serde_json::json!(i))
        });
        (taken, events)
    }

    /// Lets the driving task run until it waits (single-threaded runtime).
    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_slow_client_holds_the_run_back_and_a_gone_one_does_not() {
        let (taken, events) = counted(1000);
        let bounds = Bounds {
            buffer: 8,
            ..Bounds::default()
        };
        let mut client = Box::pin(outliving_the_client(events, bounds));
        settle().await;
        // The buffer is full and one more event waits to go in.
        assert_eq!(taken.load(Ordering::SeqCst), 9);
        assert!(matches!(client.next().await, Some(Event::Chunk(v)) if v == 0));
        settle().await;
        assert_eq!(taken.load(Ordering::SeqCst), 10);
        drop(client);
        settle().await;
        // Without its client the run goes on to its end, its events dropped.
        assert_eq!(taken.load(Ordering::SeqCst), 1000);
    }

    /// Drops a flag when the run is dropped.
    struct Dropped(Arc<AtomicUsize>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_run_without_its_client_stops_at_the_deadline_and_holds_its_permit_till_then() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = Dropped(dropped.clone());
        // One chunk, then a run that never ends.
        let events = futures::stream::iter([Event::Chunk(serde_json::json!("working"))])
            .chain(futures::stream::pending())
            .map(move |e| {
                let _ = &guard;
                e
            });
        let permits = Arc::new(tokio::sync::Semaphore::new(1));
        let in_flight =
            crate::serving::InFlight::test(permits.clone().try_acquire_owned().unwrap());
        let bounds = Bounds {
            buffer: 4,
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(60)),
            in_flight: Some(in_flight),
        };
        let mut client = Box::pin(outliving_the_client(Box::pin(events), bounds));
        assert!(matches!(client.next().await, Some(Event::Chunk(_))));
        drop(client);
        tokio::time::sleep(Duration::from_secs(59)).await;
        settle().await;
        assert_eq!(dropped.load(Ordering::SeqCst), 0, "still running");
        assert_eq!(permits.available_permits(), 0, "still counted");
        tokio::time::sleep(Duration::from_secs(2)).await;
        settle().await;
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            1,
            "cancelled at the deadline"
        );
        assert_eq!(permits.available_permits(), 1, "no longer counted");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_client_that_stays_is_not_cut_by_the_deadline() {
        let (taken, events) = counted(3);
        let slow = events.then(|e| async move {
            tokio::time::sleep(Duration::from_secs(40)).await;
            e
        });
        let bounds = Bounds {
            buffer: 1,
            deadline: Some(tokio::time::Instant::now() + Duration::from_secs(60)),
            in_flight: None,
        };
        let got: Vec<Event> = outliving_the_client(Box::pin(slow), bounds).collect().await;
        assert_eq!(got.len(), 3);
        assert_eq!(taken.load(Ordering::SeqCst), 3);
    }
}
