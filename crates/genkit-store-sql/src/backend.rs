//! What a database supplies to the store: transactions, and in them the few
//! statements the store runs. The SQL is shared (SQLite and PostgreSQL both
//! take `$n` parameters, `ON CONFLICT`, partial indexes and recursive CTEs);
//! each backend adds only how it begins transactions, how it locks a
//! session row, and its connection setup ([`crate::sqlite`],
//! [`crate::postgres`]).

use async_trait::async_trait;
use genkit_core::Result;

use crate::codec::Link;

/// A database the store runs on.
#[async_trait]
pub(crate) trait Backend: Send + Sync + 'static {
    /// Its transactions.
    type Tx: Tx;
    /// A read-only transaction that sees one consistent state, its
    /// statements scoped to `tenant`.
    async fn read(&self, tenant: String) -> Result<Self::Tx>;
    /// A write transaction scoped to `tenant` (on SQLite it holds the write
    /// lock from the start).
    async fn write(&self, tenant: String) -> Result<Self::Tx>;
}

/// A snapshot as read, with the chain its state is stored in.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    pub session_id: String,
    pub parent_id: Option<String>,
    pub revision: u64,
    pub is_leaf: bool,
    /// Its status column.
    pub status: Option<String>,
    pub meta: String,
    /// The session's version.
    pub session_version: u64,
    /// Its checkpoint, then the diffs down to it (its own row last).
    pub chain: Vec<Link>,
    /// Its lease columns.
    pub lease: LeaseColumns,
}

/// A snapshot's lease columns (RFC 3339 times), authoritative over its
/// metadata's copies when `owner` is set: a renewal writes only these.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaseColumns {
    pub owner: Option<String>,
    pub expires_at: Option<String>,
    pub heartbeat_at: Option<String>,
}

/// A session's row.
#[derive(Debug, Clone)]
pub(crate) struct SessionRow {
    pub leaves: u64,
    pub latest_id: String,
}

/// A new or rewritten snapshot row.
pub(crate) struct Row<'a> {
    pub snapshot_id: &'a str,
    pub session_id: &'a str,
    pub parent_id: Option<&'a str>,
    pub seq: u64,
    pub revision: u64,
    pub kind: &'static str,
    pub status: Option<&'static str>,
    pub meta: &'a str,
    pub body: &'a str,
    pub lease_owner: Option<&'a str>,
    pub lease_expires_at: Option<&'a str>,
    pub heartbeat_at: Option<&'a str>,
}

/// The statements of the store, in one transaction. Dropping it without
/// [`commit`](Tx::commit) rolls it back.
#[async_trait]
pub(crate) trait Tx: Send {
    /// The snapshot and its chain, if it exists.
    async fn load(&mut self, snapshot_id: &str) -> Result<Option<Loaded>>;
    /// The session's row, if it exists.
    async fn session(&mut self, session_id: &str) -> Result<Option<SessionRow>>;
    /// The session's version, if it exists.
    async fn session_version(&mut self, session_id: &str) -> Result<Option<u64>>;
    /// The session's version, its row locked until the transaction ends.
    async fn lock_session(&mut self, session_id: &str) -> Result<Option<u64>>;
    /// Creates the session at version 1 with `latest` its only snapshot;
    /// false if it exists.
    async fn create_session(&mut self, session_id: &str, latest: &str) -> Result<bool>;
    /// Bumps the session's version from `base`; false if it is not at `base`.
    async fn bump_session(&mut self, session_id: &str, base: u64) -> Result<bool>;
    /// Records the session's newest snapshot, with `leaves_added` (0 or 1)
    /// more counted leaves.
    async fn set_latest(&mut self, session_id: &str, latest: &str, leaves_added: u64)
    -> Result<()>;
    /// Whether the newest snapshot continuing `parent` is a failed or
    /// aborted leaf (false when nothing continues it).
    async fn newest_child_is_dead_leaf(&mut self, parent: &str) -> Result<bool>;
    /// Every snapshot of the session, oldest append first: (id, parent,
    /// status).
    async fn links(
        &mut self,
        session_id: &str,
    ) -> Result<Vec<(String, Option<String>, Option<String>)>>;
    /// The session of a snapshot, if the snapshot exists.
    async fn snapshot_session(&mut self, snapshot_id: &str) -> Result<Option<String>>;
    /// Inserts a snapshot row.
    async fn insert_snapshot(&mut self, row: &Row<'_>) -> Result<()>;
    /// Rewrites a snapshot still at revision `base`; false if it is not.
    async fn rewrite_snapshot(&mut self, row: &Row<'_>, base: u64) -> Result<bool>;
    /// Renews the lease `owner` holds on a pending snapshot (a new revision,
    /// heartbeat and expiry); false if it is not pending or not `owner`'s.
    async fn renew_lease(
        &mut self,
        snapshot_id: &str,
        owner: &str,
        heartbeat_at: &str,
        expires_at: &str,
    ) -> Result<bool>;
    /// A snapshot's status column (`None` inside: no status), if the
    /// snapshot exists.
    async fn snapshot_status(&mut self, snapshot_id: &str) -> Result<Option<Option<String>>>;
    /// Records an effect unless one is recorded under the key.
    async fn insert_effect(
        &mut self,
        session_id: &str,
        key: &str,
        result: &str,
        at: &str,
    ) -> Result<()>;
    /// The effect recorded under the key.
    async fn effect(&mut self, session_id: &str, key: &str) -> Result<Option<String>>;
    /// Applies the migrations this store has not applied yet.
    async fn migrate(&mut self) -> Result<()>;
    /// Commits.
    async fn commit(self) -> Result<()>;
}

pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| crate::error::data_loss(format!("negative {what} {v}")))
}

/// The migrations, in order: (version, description, SQL).
pub(crate) const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "sessions, snapshots, effects",
        include_str!("../migrations/0001_sessions.sql"),
    ),
    (2, "tenants", include_str!("../migrations/0002_tenants.sql")),
    (
        3,
        "leases of detached turns",
        include_str!("../migrations/0003_leases.sql"),
    ),
];

/// The statement that loads a snapshot of tenant `$1`, its chain and its
/// session's version at once (one statement: one consistent read).
pub(crate) const LOAD: &str = "\
WITH RECURSIVE chain (snapshot_id, parent_id, kind, body, n) AS (
    SELECT snapshot_id, parent_id, kind, body, 0 FROM genkit_snapshots
     WHERE tenant = $1 AND snapshot_id = $2
    UNION ALL
    SELECT s.snapshot_id, s.parent_id, s.kind, s.body, chain.n + 1
      FROM genkit_snapshots s JOIN chain ON s.tenant = $1 AND s.snapshot_id = chain.parent_id
     WHERE chain.kind = 'diff' AND chain.n < 100000
)
SELECT chain.kind, chain.body, t.session_id, t.parent_id, t.revision,
       NOT EXISTS (SELECT 1 FROM genkit_snapshots c
                    WHERE c.tenant = $1 AND c.parent_id = t.snapshot_id), t.meta,
       (SELECT v.version FROM genkit_sessions v
         WHERE v.tenant = $1 AND v.session_id = t.session_id), t.status,
       t.lease_owner, t.lease_expires_at, t.heartbeat_at
  FROM chain JOIN genkit_snapshots t ON t.tenant = $1 AND t.snapshot_id = $2
 ORDER BY chain.n DESC";

/// Implements [`Tx`] for `$tx` (a wrapper of `sqlx::Transaction<'static,
/// $db>` and the tenant every statement is scoped by) with the shared SQL;
/// `$lock` is the backend's session-locking `SELECT` (tenant `$1`, session
/// `$2`), `$migration_lock` what serializes concurrent migrations.
macro_rules! shared_sql_tx {
    ($tx:ident, $db:ty, lock_session: $lock:expr, migration_lock: $migration_lock:expr) => {
        #[async_trait::async_trait]
        impl $crate::backend::Tx for $tx {
            async fn load(&mut self, snapshot_id: &str) -> genkit_core::Result<Option<$crate::backend::Loaded>> {
                use sqlx::Row as _;
                let rows = sqlx::query($crate::backend::LOAD)
                    .bind(&self.1)
                    .bind(snapshot_id)
                    .fetch_all(&mut *self.0)
                    .await
                    .map_err(|e| $crate::error::db(e, "reading a snapshot"))?;
                let Some(head) = rows.last() else { return Ok(None) };
                let get = |e: sqlx::Error| $crate::error::db(e, "decoding a snapshot row");
                let mut chain = Vec::with_capacity(rows.len());
                for row in &rows {
                    chain.push($crate::codec::Link {
                        kind: $crate::codec::Kind::parse(row.try_get::<&str, _>(0).map_err(get)?)?,
                        body: row.try_get::<String, _>(1).map_err(get)?,
                    });
                }
                let version: Option<i64> = head.try_get(7).map_err(get)?;
                Ok(Some($crate::backend::Loaded {
                    session_id: head.try_get(2).map_err(get)?,
                    parent_id: head.try_get(3).map_err(get)?,
                    revision: $crate::backend::to_u64(head.try_get(4).map_err(get)?, "revision")?,
                    is_leaf: head.try_get(5).map_err(get)?,
                    status: head.try_get(8).map_err(get)?,
                    meta: head.try_get(6).map_err(get)?,
                    session_version: $crate::backend::to_u64(version.unwrap_or(0), "version")?,
                    chain,
                    lease: $crate::backend::LeaseColumns {
                        owner: head.try_get(9).map_err(get)?,
                        expires_at: head.try_get(10).map_err(get)?,
                        heartbeat_at: head.try_get(11).map_err(get)?,
                    },
                }))
            }

            async fn session(&mut self, session_id: &str) -> genkit_core::Result<Option<$crate::backend::SessionRow>> {
                let row: Option<(i64, String)> = sqlx::query_as(
                    "SELECT leaves, latest_id FROM genkit_sessions WHERE tenant = $1 AND session_id = $2",
                )
                .bind(&self.1)
                .bind(session_id)
                .fetch_optional(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "reading a session"))?;
                row.map(|(leaves, latest_id)| {
                    Ok($crate::backend::SessionRow {
                        leaves: $crate::backend::to_u64(leaves, "leaf count")?,
                        latest_id,
                    })
                })
                .transpose()
            }

            async fn session_version(&mut self, session_id: &str) -> genkit_core::Result<Option<u64>> {
                let v: Option<i64> =
                    sqlx::query_scalar("SELECT version FROM genkit_sessions WHERE tenant = $1 AND session_id = $2")
                        .bind(&self.1)
                        .bind(session_id)
                        .fetch_optional(&mut *self.0)
                        .await
                        .map_err(|e| $crate::error::db(e, "reading a session"))?;
                v.map(|v| $crate::backend::to_u64(v, "version")).transpose()
            }

            async fn lock_session(&mut self, session_id: &str) -> genkit_core::Result<Option<u64>> {
                let v: Option<i64> = sqlx::query_scalar($lock)
                    .bind(&self.1)
                    .bind(session_id)
                    .fetch_optional(&mut *self.0)
                    .await
                    .map_err(|e| $crate::error::db(e, "locking a session"))?;
                v.map(|v| $crate::backend::to_u64(v, "version")).transpose()
            }

            async fn create_session(&mut self, session_id: &str, latest: &str) -> genkit_core::Result<bool> {
                let done = sqlx::query(
                    "INSERT INTO genkit_sessions (tenant, session_id, version, leaves, latest_id) \
                     VALUES ($1, $2, 1, 1, $3) ON CONFLICT (tenant, session_id) DO NOTHING",
                )
                .bind(&self.1)
                .bind(session_id)
                .bind(latest)
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "creating a session"))?;
                Ok(done.rows_affected() == 1)
            }

            async fn bump_session(&mut self, session_id: &str, base: u64) -> genkit_core::Result<bool> {
                let done = sqlx::query(
                    "UPDATE genkit_sessions SET version = version + 1 \
                     WHERE tenant = $1 AND session_id = $2 AND version = $3",
                )
                .bind(&self.1)
                .bind(session_id)
                .bind($crate::backend::to_i64(base))
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "advancing a session"))?;
                Ok(done.rows_affected() == 1)
            }

            async fn set_latest(&mut self, session_id: &str, latest: &str, leaves_added: u64) -> genkit_core::Result<()> {
                sqlx::query(
                    "UPDATE genkit_sessions SET latest_id = $3, leaves = leaves + $4 \
                     WHERE tenant = $1 AND session_id = $2",
                )
                .bind(&self.1)
                .bind(session_id)
                .bind(latest)
                .bind($crate::backend::to_i64(leaves_added))
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "advancing a session"))?;
                Ok(())
            }

            async fn newest_child_is_dead_leaf(&mut self, parent: &str) -> genkit_core::Result<bool> {
                let dead: Option<bool> = sqlx::query_scalar(
                    "SELECT s.status IN ('failed', 'aborted') AND NOT EXISTS \
                     (SELECT 1 FROM genkit_snapshots c WHERE c.tenant = $1 AND c.parent_id = s.snapshot_id) \
                     FROM genkit_snapshots s WHERE s.tenant = $1 AND s.parent_id = $2 \
                     ORDER BY s.seq DESC LIMIT 1",
                )
                .bind(&self.1)
                .bind(parent)
                .fetch_optional(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "reading a snapshot's children"))?;
                Ok(dead == Some(true))
            }

            async fn links(
                &mut self,
                session_id: &str,
            ) -> genkit_core::Result<Vec<(String, Option<String>, Option<String>)>> {
                sqlx::query_as(
                    "SELECT snapshot_id, parent_id, status FROM genkit_snapshots \
                     WHERE tenant = $1 AND session_id = $2 ORDER BY seq",
                )
                .bind(&self.1)
                .bind(session_id)
                .fetch_all(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "reading a session's snapshots"))
            }

            async fn snapshot_session(&mut self, snapshot_id: &str) -> genkit_core::Result<Option<String>> {
                sqlx::query_scalar(
                    "SELECT session_id FROM genkit_snapshots WHERE tenant = $1 AND snapshot_id = $2",
                )
                    .bind(&self.1)
                    .bind(snapshot_id)
                    .fetch_optional(&mut *self.0)
                    .await
                    .map_err(|e| $crate::error::db(e, "reading a snapshot"))
            }

            async fn insert_snapshot(&mut self, row: &$crate::backend::Row<'_>) -> genkit_core::Result<()> {
                sqlx::query(
                    "INSERT INTO genkit_snapshots \
                     (tenant, snapshot_id, session_id, parent_id, seq, revision, kind, status, meta, body, \
                      lease_owner, lease_expires_at, heartbeat_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .bind(&self.1)
                .bind(row.snapshot_id)
                .bind(row.session_id)
                .bind(row.parent_id)
                .bind($crate::backend::to_i64(row.seq))
                .bind($crate::backend::to_i64(row.revision))
                .bind(row.kind)
                .bind(row.status)
                .bind(row.meta)
                .bind(row.body)
                .bind(row.lease_owner)
                .bind(row.lease_expires_at)
                .bind(row.heartbeat_at)
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "storing a snapshot"))?;
                Ok(())
            }

            async fn rewrite_snapshot(&mut self, row: &$crate::backend::Row<'_>, base: u64) -> genkit_core::Result<bool> {
                let done = sqlx::query(
                    "UPDATE genkit_snapshots SET revision = $3, kind = $4, status = $5, meta = $6, body = $7, \
                     lease_owner = $9, lease_expires_at = $10, heartbeat_at = $11 \
                     WHERE tenant = $1 AND snapshot_id = $2 AND revision = $8",
                )
                .bind(&self.1)
                .bind(row.snapshot_id)
                .bind($crate::backend::to_i64(row.revision))
                .bind(row.kind)
                .bind(row.status)
                .bind(row.meta)
                .bind(row.body)
                .bind($crate::backend::to_i64(base))
                .bind(row.lease_owner)
                .bind(row.lease_expires_at)
                .bind(row.heartbeat_at)
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "rewriting a snapshot"))?;
                Ok(done.rows_affected() == 1)
            }

            async fn renew_lease(
                &mut self,
                snapshot_id: &str,
                owner: &str,
                heartbeat_at: &str,
                expires_at: &str,
            ) -> genkit_core::Result<bool> {
                let done = sqlx::query(
                    "UPDATE genkit_snapshots SET revision = revision + 1, \
                     heartbeat_at = $4, lease_expires_at = $5 \
                     WHERE tenant = $1 AND snapshot_id = $2 AND status = 'pending' AND lease_owner = $3",
                )
                .bind(&self.1)
                .bind(snapshot_id)
                .bind(owner)
                .bind(heartbeat_at)
                .bind(expires_at)
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "renewing a lease"))?;
                Ok(done.rows_affected() == 1)
            }

            async fn snapshot_status(&mut self, snapshot_id: &str) -> genkit_core::Result<Option<Option<String>>> {
                sqlx::query_scalar(
                    "SELECT status FROM genkit_snapshots WHERE tenant = $1 AND snapshot_id = $2",
                )
                .bind(&self.1)
                .bind(snapshot_id)
                .fetch_optional(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "reading a snapshot's status"))
            }

            async fn insert_effect(&mut self, session_id: &str, key: &str, result: &str, at: &str) -> genkit_core::Result<()> {
                sqlx::query(
                    "INSERT INTO genkit_effects (tenant, session_id, effect_key, result, recorded_at) \
                     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant, session_id, effect_key) DO NOTHING",
                )
                .bind(&self.1)
                .bind(session_id)
                .bind(key)
                .bind(result)
                .bind(at)
                .execute(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "recording a side effect"))?;
                Ok(())
            }

            async fn effect(&mut self, session_id: &str, key: &str) -> genkit_core::Result<Option<String>> {
                sqlx::query_scalar(
                    "SELECT result FROM genkit_effects \
                     WHERE tenant = $1 AND session_id = $2 AND effect_key = $3",
                )
                .bind(&self.1)
                .bind(session_id)
                .bind(key)
                .fetch_optional(&mut *self.0)
                .await
                .map_err(|e| $crate::error::db(e, "reading a side effect"))
            }

            async fn migrate(&mut self) -> genkit_core::Result<()> {
                let fail = |e: sqlx::Error| $crate::error::db(e, "migrating the session tables");
                let lock: Option<&str> = $migration_lock;
                if let Some(lock) = lock {
                    sqlx::query(lock).execute(&mut *self.0).await.map_err(fail)?;
                }
                sqlx::query(
                    "CREATE TABLE IF NOT EXISTS genkit_store_migrations (\
                     version BIGINT PRIMARY KEY, description TEXT NOT NULL, applied_at TEXT NOT NULL)",
                )
                .execute(&mut *self.0)
                .await
                .map_err(fail)?;
                let applied: Option<i64> =
                    sqlx::query_scalar("SELECT MAX(version) FROM genkit_store_migrations")
                        .fetch_one(&mut *self.0)
                        .await
                        .map_err(fail)?;
                let applied = applied.unwrap_or(0);
                let known = $crate::backend::MIGRATIONS.last().map_or(0, |m| m.0);
                if applied > known {
                    return Err(genkit_core::Error::new(
                        genkit_core::StatusCode::FailedPrecondition,
                        format!(
                            "the session tables are at schema version {applied}, newer than this \
                             genkit-store-sql knows ({known}); upgrade it"
                        ),
                    ));
                }
                for &(version, description, sql) in $crate::backend::MIGRATIONS {
                    if version <= applied {
                        continue;
                    }
                    let conn: &mut <$db as sqlx::Database>::Connection = &mut self.0;
                    sqlx::Executor::execute(conn, sql).await.map_err(fail)?;
                    sqlx::query(
                        "INSERT INTO genkit_store_migrations (version, description, applied_at) \
                         VALUES ($1, $2, $3)",
                    )
                    .bind(version)
                    .bind(description)
                    .bind(genkit_session::clock::now_rfc3339())
                    .execute(&mut *self.0)
                    .await
                    .map_err(fail)?;
                }
                Ok(())
            }

            async fn commit(self) -> genkit_core::Result<()> {
                self.0
                    .commit()
                    .await
                    .map_err(|e| $crate::error::db(e, "committing"))
            }
        }
    };
}

pub(crate) use shared_sql_tx;
