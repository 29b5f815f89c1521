//! [`PostgresSessionStore`]: sessions in a PostgreSQL database.

use std::time::Duration;

use async_trait::async_trait;
use genkit_core::Result;
use sqlx::postgres::{PgPool, PgPoolOptions};

use crate::backend::{Backend, shared_sql_tx};
use crate::error::db;
use crate::store::{Core, delegate_session_store};
use crate::tenant::tenant_options;

/// Connections in the pool [`PostgresSessionStore::connect`] opens.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 10;

/// A [`SessionStore`](genkit_session::store::SessionStore) in PostgreSQL,
/// for apps that run more than one server on the same sessions. See the
/// [crate docs](crate) for what it guarantees.
///
/// ```no_run
/// # async fn demo() -> genkit_core::Result<()> {
/// use std::sync::Arc;
/// use genkit_store_sql::PostgresSessionStore;
///
/// let store = Arc::new(PostgresSessionStore::connect("postgres://app@localhost/app").await?);
/// // AgentOptions::new().store(store)
/// # Ok(()) }
/// ```
pub struct PostgresSessionStore {
    core: Core<Postgres>,
}

impl std::fmt::Debug for PostgresSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSessionStore")
            .finish_non_exhaustive()
    }
}

pub(crate) struct Postgres {
    pool: PgPool,
}

/// A transaction on a pooled connection, and the tenant its statements
/// are scoped by.
pub(crate) struct PgTx(sqlx::Transaction<'static, sqlx::Postgres>, String);

shared_sql_tx!(
    PgTx,
    sqlx::Postgres,
    lock_session: "SELECT version FROM genkit_sessions WHERE tenant = $1 AND session_id = $2 FOR UPDATE",
    // Servers starting at once migrate one after the other (the key is
    // arbitrary but fixed: "genkit-store-sql").
    migration_lock: Some("SELECT pg_advisory_xact_lock(7160375306254591088)")
);

#[async_trait]
impl Backend for Postgres {
    type Tx = PgTx;

    async fn read(&self, tenant: String) -> Result<PgTx> {
        // One snapshot of the database for all of a read's statements.
        let tx = self
            .pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .await
            .map_err(|e| db(e, "starting a read"))?;
        Ok(PgTx(tx, tenant))
    }

    async fn write(&self, tenant: String) -> Result<PgTx> {
        // READ COMMITTED: a write first locks its session's row (the
        // version bump or `FOR UPDATE`), so what it reads afterwards is the
        // session as it extends it; a concurrent write of the session
        // waits, then finds the version moved on (`ABORTED`).
        let tx = self
            .pool
            .begin()
            .await
            .map_err(|e| db(e, "starting a write"))?;
        Ok(PgTx(tx, tenant))
    }
}

impl PostgresSessionStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`,
    /// or `?host=/socket/dir`) with a pool of [`DEFAULT_MAX_CONNECTIONS`]
    /// and applies the crate's migrations.
    pub async fn connect(url: &str) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(DEFAULT_MAX_CONNECTIONS)
            .acquire_timeout(Duration::from_secs(60))
            .connect(url)
            .await
            .map_err(|e| db(e, "connecting to PostgreSQL"))?;
        Self::from_pool(pool).await
    }

    /// The store on an existing pool (its size and timeouts as configured);
    /// applies the crate's migrations.
    pub async fn from_pool(pool: PgPool) -> Result<Self> {
        let core = Core {
            backend: Postgres { pool },
            tenant: Default::default(),
        };
        core.migrate().await?;
        Ok(Self { core })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.core.backend.pool
    }
}

delegate_session_store!(PostgresSessionStore);
tenant_options!(PostgresSessionStore);
