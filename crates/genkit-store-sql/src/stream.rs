//! Durable streams in PostgreSQL ([`PostgresStreamManager`]): the
//! [`StreamManager`] for many replicas behind a load balancer, so a client
//! whose connection drops can reconnect to any of them
//! (`FlowServer::stream_manager` in genkit-server).
//!
//! # Layout
//!
//! Created on first use (`CREATE TABLE IF NOT EXISTS`, servers starting at
//! once one after the other), apart from the session tables' migrations:
//!
//! - `genkit_streams(stream_id, owner, length, ended, updated_at)`: one
//!   row per stream; `length` counts its events, `ended` is set by its last.
//! - `genkit_stream_events(stream_id, idx, event)`: the events, `idx` from
//!   0, `event` the JSON Genkit JS's Firestore stream manager stores
//!   (`{"type": "chunk", "chunk": …}`, `{"type": "done", "output": …}`,
//!   `{"type": "error", "err": …}`).
//!
//! An append is one transaction: it advances the stream's row from the
//! length the writer names (`UPDATE … WHERE length = $at AND NOT ended`) and
//! inserts the events, so a second writer is refused (`ABORTED`) and
//! writes nothing. Readers poll ([`poll_interval`](PostgresStreamManager::poll_interval),
//! 50 ms by default) while a stream is open. Ended streams are deleted
//! [`ttl`](PostgresStreamManager::ttl) after their last event (5 minutes by
//! default, as Genkit JS's in-memory manager), when a stream is opened.

use std::time::Duration;

use async_trait::async_trait;
use genkit_core::streaming::{
    StreamEvent, StreamManager, StreamPage, check_append, stale_append, stream_exists,
    stream_not_found,
};
use genkit_core::{Error, Result};
use sqlx::PgPool;
use sqlx::postgres::PgPoolOptions;

use crate::error::{data_loss, db};

/// Durable streams in a PostgreSQL database (feature `postgres`).
///
/// ```no_run
/// # async fn demo(registry: genkit_core::Registry) -> genkit_core::Result<()> {
/// use std::sync::Arc;
/// use genkit_store_sql::{PostgresSessionStore, PostgresStreamManager};
///
/// let sessions = PostgresSessionStore::connect("postgres://app@db/app").await?;
/// // The streams on the same database, through the session store's pool.
/// let streams = PostgresStreamManager::from_pool(sessions.pool().clone()).await?;
/// let server = genkit_server::FlowServer::new(&registry).stream_manager(Arc::new(streams));
/// # let _ = server; Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStreamManager {
    pool: PgPool,
    poll: Duration,
    ttl: Duration,
}

const CREATE: &str = "\
CREATE TABLE IF NOT EXISTS genkit_streams (
    stream_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    length BIGINT NOT NULL DEFAULT 0,
    ended BOOLEAN NOT NULL DEFAULT FALSE,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS genkit_stream_events (
    stream_id TEXT NOT NULL REFERENCES genkit_streams (stream_id) ON DELETE CASCADE,
    idx BIGINT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (stream_id, idx)
);
CREATE INDEX IF NOT EXISTS genkit_streams_ended_at ON genkit_streams (updated_at) WHERE ended;";

impl PostgresStreamManager {
    /// Connects to the database at `url` (a pool of
    /// [`DEFAULT_MAX_CONNECTIONS`](crate::DEFAULT_MAX_CONNECTIONS)) and
    /// creates the stream tables if they are missing.
    pub async fn connect(url: &str) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(crate::DEFAULT_MAX_CONNECTIONS)
            .acquire_timeout(Duration::from_secs(60))
            .connect(url)
            .await
            .map_err(|e| db(e, "connecting to PostgreSQL"))?;
        Self::from_pool(pool).await
    }

    /// The manager on an existing pool (for example the session store's,
    /// [`PostgresSessionStore::pool`](crate::PostgresSessionStore::pool));
    /// creates the stream tables if they are missing.
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        let fail = |e| db(e, "creating the stream tables");
        let mut tx = pool.begin().await.map_err(fail)?;
        // Servers starting at once create the tables one after the other
        // (the key is arbitrary but fixed: "genkit-store-sql streams").
        sqlx::query("SELECT pg_advisory_xact_lock(7160375306254591089)")
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        sqlx::raw_sql(CREATE)
            .execute(&mut *tx)
            .await
            .map_err(fail)?;
        tx.commit().await.map_err(fail)?;
        Ok(Self {
            pool,
            poll: Duration::from_millis(50),
            ttl: Duration::from_secs(5 * 60),
        })
    }

    /// How often a reader looks for new events of an open stream.
    pub fn poll_interval(mut self, every: Duration) -> Self {
        self.poll = every.max(Duration::from_millis(1));
        self
    }

    /// How long an ended stream stays readable.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
}

#[async_trait]
impl StreamManager for PostgresStreamManager {
    async fn open(&self, stream_id: &str, owner: &str) -> Result<()> {
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        sqlx::query(
            "DELETE FROM genkit_streams \
             WHERE ended AND updated_at < now() - make_interval(secs => $1::double precision / 1000)",
        )
        .bind(ttl_ms)
        .execute(&self.pool)
        .await
        .map_err(|e| db(e, "deleting expired streams"))?;
        let created = sqlx::query(
            "INSERT INTO genkit_streams (stream_id, owner) VALUES ($1, $2) \
             ON CONFLICT (stream_id) DO NOTHING",
        )
        .bind(stream_id)
        .bind(owner)
        .execute(&self.pool)
        .await
        .map_err(|e| db(e, "opening a stream"))?;
        if created.rows_affected() == 0 {
            return Err(stream_exists(stream_id));
        }
        Ok(())
    }

    async fn append(&self, stream_id: &str, at: u64, events: &[StreamEvent]) -> Result<()> {
        check_append(events)?;
        let encoded = events
            .iter()
            .map(serde_json::to_string)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let at_i =
            i64::try_from(at).map_err(|_| Error::invalid_argument("stream index too large"))?;
        let n = i64::try_from(events.len()).unwrap_or(i64::MAX);
        let ends = events.last().is_some_and(StreamEvent::is_last);
        let fail = |e| db(e, "appending to a stream");
        let mut tx = self.pool.begin().await.map_err(fail)?;
        let advanced = sqlx::query(
            "UPDATE genkit_streams SET length = length + $3, ended = $4, updated_at = now() \
             WHERE stream_id = $1 AND length = $2 AND NOT ended",
        )
        .bind(stream_id)
        .bind(at_i)
        .bind(n)
        .bind(ends)
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        if advanced.rows_affected() == 0 {
            let row: Option<(i64, bool)> =
                sqlx::query_as("SELECT length, ended FROM genkit_streams WHERE stream_id = $1")
                    .bind(stream_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(fail)?;
            return Err(match row {
                None => stream_not_found(stream_id),
                Some((length, ended)) => {
                    stale_append(stream_id, at, u64::try_from(length).unwrap_or(0), ended)
                }
            });
        }
        sqlx::query(
            "INSERT INTO genkit_stream_events (stream_id, idx, event) \
             SELECT $1, $2 + t.ord - 1, t.event \
             FROM UNNEST($3::text[]) WITH ORDINALITY AS t(event, ord)",
        )
        .bind(stream_id)
        .bind(at_i)
        .bind(&encoded)
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        tx.commit().await.map_err(fail)
    }

    async fn read(&self, stream_id: &str, from: u64) -> Result<StreamPage> {
        let fail = |e| db(e, "reading a stream");
        let owner: Option<String> =
            sqlx::query_scalar("SELECT owner FROM genkit_streams WHERE stream_id = $1")
                .bind(stream_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(fail)?;
        let owner = owner.ok_or_else(|| stream_not_found(stream_id))?;
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        // Events never change once written, so no transaction is needed
        // beside the owner's read.
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT idx, event FROM genkit_stream_events \
             WHERE stream_id = $1 AND idx >= $2 ORDER BY idx",
        )
        .bind(stream_id)
        .bind(from)
        .fetch_all(&self.pool)
        .await
        .map_err(fail)?;
        let mut events = Vec::with_capacity(rows.len());
        for (offset, (idx, event)) in rows.into_iter().enumerate() {
            if idx != from.saturating_add(offset as i64) {
                return Err(data_loss(format!(
                    "stream `{stream_id}` has no event {}",
                    from + offset as i64
                )));
            }
            let event = serde_json::from_str(&event)
                .map_err(|e| data_loss(format!("stream `{stream_id}` event {idx}: {e}")))?;
            events.push(event);
        }
        Ok(StreamPage { owner, events })
    }

    fn poll_interval(&self) -> Duration {
        self.poll
    }
}
