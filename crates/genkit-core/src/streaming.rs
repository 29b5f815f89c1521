//! Durable streaming, Genkit's `StreamManager`: the events of a streaming
//! run (its chunks, then its output or error) written to a store as they
//! happen, so a client whose connection drops can reconnect, to this
//! process or to another replica on the same store, and read them again.
//!
//! A server opens a stream per streaming request and hands its id to the
//! client (the flow server's `x-genkit-stream-id` response header, as in
//! Genkit JS's Express handler); [`subscribe`] replays a stream from any
//! index and then follows it live until its last event.
//!
//! [`InMemoryStreamManager`] keeps streams in this process (one replica, or
//! tests); `genkit-store-sql` keeps them in PostgreSQL and
//! `genkit-store-firestore` in Firestore (Genkit JS's layout), for many replicas.
//!
//! Every stream has an owner, a string the server derives from the caller's
//! credentials: a reader must name the same owner, so a stream id that leaks
//! to another user reads as unknown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::time::Instant as TokioInstant;

use async_trait::async_trait;
use futures::Stream;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

use crate::{Error, Result, StatusCode};

/// One event of a durable stream, in the shape Genkit JS's Firestore stream
/// manager stores (`{"type": "chunk", "chunk": ...}`, `{"type": "done",
/// "output": ...}`, `{"type": "error", "err": ...}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum StreamEvent {
    /// A stream chunk.
    Chunk {
        /// The chunk as the action streamed it.
        chunk: Value,
    },
    /// The run's output; always the last event.
    Done {
        /// The output.
        output: Value,
    },
    /// The run's error in its public form ([`Error::to_public_json`]);
    /// always the last event.
    Error {
        /// `{"status": ..., "message": ...}`.
        err: Value,
    },
}

impl StreamEvent {
    /// Whether this event ends its stream.
    pub fn is_last(&self) -> bool {
        !matches!(self, Self::Chunk { .. })
    }
}

/// What [`StreamManager::read`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamPage {
    /// The stream's owner, as given to [`StreamManager::open`].
    pub owner: String,
    /// Its events from the index asked for, in order.
    pub events: Vec<StreamEvent>,
}

/// Where durable streams are kept.
///
/// Contract: a stream is created once ([`open`](Self::open) of an existing
/// id is `ALREADY_EXISTS`); events are appended in order by its one writer,
/// each append naming the index it starts at, and an append at any other
/// index, or after the last event, is refused with `ABORTED` and writes
/// nothing (a second writer cannot fork a stream); appended events never
/// change; unknown ids are `NOT_FOUND`.
#[async_trait]
pub trait StreamManager: Send + Sync + 'static {
    /// Creates stream `stream_id`, owned by `owner`, with no events.
    async fn open(&self, stream_id: &str, owner: &str) -> Result<()>;

    /// Appends `events` at index `at` (the number of events the stream
    /// holds), atomically.
    async fn append(&self, stream_id: &str, at: u64, events: &[StreamEvent]) -> Result<()>;

    /// The stream's owner and its events from index `from`.
    async fn read(&self, stream_id: &str, from: u64) -> Result<StreamPage>;

    /// Waits until stream `stream_id` may hold more than `len` events. May
    /// return early (a reader then reads again); the default sleeps
    /// [`poll_interval`](Self::poll_interval).
    async fn changed(&self, stream_id: &str, len: u64) {
        let _ = (stream_id, len);
        tokio::time::sleep(self.poll_interval()).await;
    }

    /// How often a follower reads a stream that has not ended.
    fn poll_interval(&self) -> Duration {
        Duration::from_millis(100)
    }
}

/// How long a follower waits for a stream's next event before giving up with
/// `DEADLINE_EXCEEDED` (its writer may have died): Genkit JS's Firestore
/// stream manager's default, 60 s.
pub const DEFAULT_FOLLOW_TIMEOUT: Duration = Duration::from_secs(60);

/// The events of stream `stream_id` from index `from`, then as they are
/// appended, ending after its last event. The first item is an error
/// (`NOT_FOUND`) if the stream is unknown or owned by someone other than
/// `owner`; the stream ends with a `DEADLINE_EXCEEDED` error if no event
/// comes for `timeout`.
pub fn subscribe(
    manager: Arc<dyn StreamManager>,
    stream_id: String,
    owner: String,
    from: u64,
    timeout: Duration,
) -> impl Stream<Item = Result<StreamEvent>> + Send + 'static {
    struct Follow {
        manager: Arc<dyn StreamManager>,
        stream_id: String,
        owner: String,
        next: u64,
        ready: std::collections::VecDeque<StreamEvent>,
        last_event: TokioInstant,
        ended: bool,
    }
    let state = Follow {
        manager,
        stream_id,
        owner,
        next: from,
        ready: Default::default(),
        last_event: TokioInstant::now(),
        ended: false,
    };
    futures::stream::unfold(state, move |mut s| async move {
        loop {
            if let Some(event) = s.ready.pop_front() {
                s.ended = event.is_last();
                return Some((Ok(event), s));
            }
            if s.ended {
                return None;
            }
            let page = match s.manager.read(&s.stream_id, s.next).await {
                Ok(page) if page.owner == s.owner => page,
                // Someone else's stream reads as unknown.
                Ok(_) => {
                    s.ended = true;
                    return Some((Err(stream_not_found(&s.stream_id)), s));
                }
                Err(e) => {
                    s.ended = true;
                    return Some((Err(e), s));
                }
            };
            if !page.events.is_empty() {
                s.next += page.events.len() as u64;
                s.ready.extend(page.events);
                s.last_event = TokioInstant::now();
                continue;
            }
            let waited = s.last_event.elapsed();
            if waited >= timeout {
                s.ended = true;
                let e = Error::user_facing(
                    StatusCode::DeadlineExceeded,
                    format!("stream `{}` had no new event for {timeout:?}", s.stream_id),
                );
                return Some((Err(e), s));
            }
            let _ = tokio::time::timeout(timeout - waited, s.manager.changed(&s.stream_id, s.next))
                .await;
        }
    })
}

// The errors every `StreamManager` gives, worded alike whatever the store.

/// `NOT_FOUND`: stream `stream_id` is unknown (or gone after its time to
/// live). User-facing: a server answers it as Genkit JS's
/// `StreamNotFoundError`.
pub fn stream_not_found(stream_id: &str) -> Error {
    Error::user_facing(
        StatusCode::NotFound,
        format!("stream `{stream_id}` not found"),
    )
}

/// `ALREADY_EXISTS`: [`open`](StreamManager::open) of an existing stream.
pub fn stream_exists(stream_id: &str) -> Error {
    Error::new(
        StatusCode::AlreadyExists,
        format!("stream `{stream_id}` already exists"),
    )
}

/// `ABORTED`: an append at index `at` to a stream holding `length` events
/// (or one that has `ended`); nothing was written.
pub fn stale_append(stream_id: &str, at: u64, length: u64, ended: bool) -> Error {
    Error::new(
        StatusCode::Aborted,
        format!(
            "stream `{stream_id}`: an append at {at} to a stream of {length} events{}",
            if ended { " that has ended" } else { "" }
        ),
    )
}

/// Checks events about to be appended: an output or error may only be the
/// last of them (`INVALID_ARGUMENT` otherwise).
pub fn check_append(events: &[StreamEvent]) -> Result<()> {
    match events.iter().position(StreamEvent::is_last) {
        Some(i) if i + 1 != events.len() => Err(Error::invalid_argument(
            "a stream's output or error must be its last event",
        )),
        _ => Ok(()),
    }
}

/// Durable streams in this process's memory, as Genkit JS's
/// `InMemoryStreamManager`: enough for one replica (a client reconnecting
/// to the same process) and for tests. Ended streams are forgotten
/// [`ttl`](Self::ttl) after their last event (5 minutes by default).
#[derive(Clone)]
pub struct InMemoryStreamManager {
    streams: Arc<Mutex<HashMap<String, Entry>>>,
    ttl: Duration,
}

struct Entry {
    owner: String,
    events: Vec<StreamEvent>,
    touched: Instant,
    changed: Arc<Notify>,
}

impl Entry {
    fn ended(&self) -> bool {
        self.events.last().is_some_and(StreamEvent::is_last)
    }
}

impl Default for InMemoryStreamManager {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryStreamManager {
    /// An empty manager.
    pub fn new() -> Self {
        Self {
            streams: Arc::default(),
            ttl: Duration::from_secs(5 * 60),
        }
    }

    /// How long an ended stream stays readable.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How many streams are held (ended ones until their time to live
    /// passes).
    pub fn len(&self) -> usize {
        self.streams.lock().len()
    }

    /// Whether no stream is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl StreamManager for InMemoryStreamManager {
    async fn open(&self, stream_id: &str, owner: &str) -> Result<()> {
        let mut streams = self.streams.lock();
        let ttl = self.ttl;
        streams.retain(|_, e| !e.ended() || e.touched.elapsed() < ttl);
        if streams.contains_key(stream_id) {
            return Err(stream_exists(stream_id));
        }
        streams.insert(
            stream_id.to_owned(),
            Entry {
                owner: owner.to_owned(),
                events: Vec::new(),
                touched: Instant::now(),
                changed: Arc::new(Notify::new()),
            },
        );
        Ok(())
    }

    async fn append(&self, stream_id: &str, at: u64, events: &[StreamEvent]) -> Result<()> {
        let mut streams = self.streams.lock();
        let entry = streams
            .get_mut(stream_id)
            .ok_or_else(|| stream_not_found(stream_id))?;
        if entry.ended() || entry.events.len() as u64 != at {
            return Err(stale_append(
                stream_id,
                at,
                entry.events.len() as u64,
                entry.ended(),
            ));
        }
        check_append(events)?;
        entry.events.extend_from_slice(events);
        entry.touched = Instant::now();
        entry.changed.notify_waiters();
        Ok(())
    }

    async fn read(&self, stream_id: &str, from: u64) -> Result<StreamPage> {
        let streams = self.streams.lock();
        let entry = streams
            .get(stream_id)
            .ok_or_else(|| stream_not_found(stream_id))?;
        let from = usize::try_from(from)
            .unwrap_or(usize::MAX)
            .min(entry.events.len());
        Ok(StreamPage {
            owner: entry.owner.clone(),
            events: entry.events[from..].to_vec(),
        })
    }

    async fn changed(&self, stream_id: &str, len: u64) {
        let notify = match self.streams.lock().get(stream_id) {
            Some(e) if e.events.len() as u64 > len || e.ended() => return,
            Some(e) => e.changed.clone(),
            None => return,
        };
        let mut notified = std::pin::pin!(notify.notified());
        // Registered before the second look, so an append in between wakes it.
        notified.as_mut().enable();
        if self
            .streams
            .lock()
            .get(stream_id)
            .is_none_or(|e| e.events.len() as u64 > len)
        {
            return;
        }
        notified.await;
    }

    fn poll_interval(&self) -> Duration {
        // `changed` is exact here; this only bounds a missed wake-up.
        Duration::from_secs(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use serde_json::json;

    fn chunk(n: i64) -> StreamEvent {
        StreamEvent::Chunk { chunk: json!(n) }
    }

    #[test]
    fn events_serialize_as_genkit_js_stores_them() {
        assert_eq!(
            serde_json::to_value(chunk(1)).unwrap(),
            json!({"type": "chunk", "chunk": 1})
        );
        assert_eq!(
            serde_json::to_value(StreamEvent::Done { output: json!("x") }).unwrap(),
            json!({"type": "done", "output": "x"})
        );
        let err = StreamEvent::Error {
            err: json!({"status": "INTERNAL", "message": "Internal Error"}),
        };
        assert_eq!(
            serde_json::to_value(&err).unwrap(),
            json!({"type": "error", "err": {"status": "INTERNAL", "message": "Internal Error"}})
        );
    }

    #[tokio::test]
    async fn appends_are_ordered_and_never_fork() {
        let m = InMemoryStreamManager::new();
        m.open("s", "alice").await.unwrap();
        let again = m.open("s", "alice").await.unwrap_err();
        assert_eq!(again.status(), StatusCode::AlreadyExists);
        m.append("s", 0, &[chunk(0), chunk(1)]).await.unwrap();
        // A second writer that believes the stream is shorter is refused.
        let stale = m.append("s", 1, &[chunk(9)]).await.unwrap_err();
        assert_eq!(stale.status(), StatusCode::Aborted);
        m.append("s", 2, &[StreamEvent::Done { output: json!(2) }])
            .await
            .unwrap();
        let after_end = m.append("s", 3, &[chunk(3)]).await.unwrap_err();
        assert_eq!(after_end.status(), StatusCode::Aborted);
        let page = m.read("s", 1).await.unwrap();
        assert_eq!(page.owner, "alice");
        assert_eq!(
            page.events,
            vec![chunk(1), StreamEvent::Done { output: json!(2) }]
        );
        assert_eq!(
            m.read("nope", 0).await.unwrap_err().status(),
            StatusCode::NotFound
        );
        let bad = m.append("s", 3, &[]).await.unwrap_err();
        assert_eq!(bad.status(), StatusCode::Aborted);
    }

    #[tokio::test]
    async fn an_output_must_be_last() {
        let m = InMemoryStreamManager::new();
        m.open("s", "").await.unwrap();
        let e = m
            .append("s", 0, &[StreamEvent::Done { output: json!(1) }, chunk(1)])
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::InvalidArgument);
        assert!(m.read("s", 0).await.unwrap().events.is_empty());
    }

    #[tokio::test]
    async fn a_follower_replays_then_follows_live() {
        let m = InMemoryStreamManager::new();
        m.open("s", "alice").await.unwrap();
        m.append("s", 0, &[chunk(0), chunk(1)]).await.unwrap();
        let dyn_m: Arc<dyn StreamManager> = Arc::new(m.clone());
        let follower = subscribe(dyn_m, "s".into(), "alice".into(), 1, Duration::from_secs(5));
        let writer = async {
            for i in 2..5u64 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                m.append("s", i, &[chunk(i as i64)]).await.unwrap();
            }
            m.append(
                "s",
                5,
                &[StreamEvent::Done {
                    output: json!("end"),
                }],
            )
            .await
            .unwrap();
        };
        let (events, ()) = tokio::join!(follower.collect::<Vec<_>>(), writer);
        let events: Vec<StreamEvent> = events.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            events,
            vec![
                chunk(1),
                chunk(2),
                chunk(3),
                chunk(4),
                StreamEvent::Done {
                    output: json!("end")
                }
            ]
        );
    }

    #[tokio::test]
    async fn another_owner_reads_nothing() {
        let m = Arc::new(InMemoryStreamManager::new());
        m.open("s", "alice").await.unwrap();
        m.append("s", 0, &[chunk(0)]).await.unwrap();
        let mut f = Box::pin(subscribe(
            m.clone(),
            "s".into(),
            "mallory".into(),
            0,
            Duration::from_secs(1),
        ));
        let first = f.next().await.unwrap().unwrap_err();
        assert_eq!(first.status(), StatusCode::NotFound);
        assert!(f.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_whose_writer_died_times_out() {
        let m = Arc::new(InMemoryStreamManager::new());
        m.open("s", "").await.unwrap();
        m.append("s", 0, &[chunk(0)]).await.unwrap();
        let events: Vec<_> = subscribe(m, "s".into(), String::new(), 0, Duration::from_secs(60))
            .collect()
            .await;
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].as_ref().unwrap(), &chunk(0));
        let e = events[1].as_ref().unwrap_err();
        assert_eq!(e.status(), StatusCode::DeadlineExceeded);
    }

    #[tokio::test]
    async fn ended_streams_are_forgotten_after_their_ttl() {
        let m = InMemoryStreamManager::new().ttl(Duration::ZERO);
        m.open("a", "").await.unwrap();
        m.append("a", 0, &[StreamEvent::Done { output: json!(1) }])
            .await
            .unwrap();
        m.open("b", "").await.unwrap();
        // `a` ended and its time to live passed; `b` is open.
        assert_eq!(m.len(), 1);
        assert!(m.read("a", 0).await.is_err());
    }
}
