//! [`SqliteSessionStore`]: sessions in a SQLite file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use async_trait::async_trait;
use genkit_core::Result;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::backend::{Backend, shared_sql_tx};
use crate::error::db;
use crate::store::{Core, delegate_session_store};
use crate::tenant::tenant_options;

/// How long a connection waits for another process's write lock before the
/// write is refused (`ABORTED`, retry).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a write waits for this process's writer connection.
const WRITER_WAIT: Duration = Duration::from_secs(120);

/// Connections for reads (WAL readers never block the writer or each other).
const READERS: u32 = 4;

/// A [`SessionStore`](genkit_session::store::SessionStore) in one SQLite
/// file: no server, the default persistent store. See the
/// [crate docs](crate) for what it guarantees.
///
/// ```no_run
/// # async fn demo() -> genkit_core::Result<()> {
/// use std::sync::Arc;
/// use genkit_store_sql::SqliteSessionStore;
///
/// let store = Arc::new(SqliteSessionStore::open("sessions.db").await?);
/// // AgentOptions::new().store(store)
/// # Ok(()) }
/// ```
pub struct SqliteSessionStore {
    core: Core<Sqlite>,
    path: PathBuf,
}

impl std::fmt::Debug for SqliteSessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSessionStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Sqlite {
    /// One connection: this process's writes queue here instead of
    /// contending for SQLite's lock.
    writer: SqlitePool,
    readers: SqlitePool,
}

/// A transaction on one of the store's connections, and the tenant its
/// statements are scoped by.
pub(crate) struct SqliteTx(sqlx::Transaction<'static, sqlx::Sqlite>, String);

shared_sql_tx!(
    SqliteTx,
    sqlx::Sqlite,
    // The writer holds SQLite's database-wide write lock already.
    lock_session: "SELECT version FROM genkit_sessions WHERE tenant = $1 AND session_id = $2",
    migration_lock: None
);

#[async_trait]
impl Backend for Sqlite {
    type Tx = SqliteTx;

    async fn read(&self, tenant: String) -> Result<SqliteTx> {
        let tx = self
            .readers
            .begin()
            .await
            .map_err(|e| db(e, "starting a read"))?;
        Ok(SqliteTx(tx, tenant))
    }

    async fn write(&self, tenant: String) -> Result<SqliteTx> {
        // IMMEDIATE: the write lock is taken now (waiting up to the busy
        // timeout for another process), never upgraded from a read lock
        // mid-transaction, where SQLite would fail with SQLITE_BUSY.
        let tx = self
            .writer
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| db(e, "starting a write"))?;
        Ok(SqliteTx(tx, tenant))
    }
}

impl SqliteSessionStore {
    /// Opens (creating it and its directory if needed) the SQLite database
    /// at `path`, in WAL mode, and applies the crate's migrations.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                genkit_core::Error::new(
                    genkit_core::StatusCode::FailedPrecondition,
                    format!("creating the directory of {}: {e}", path.display()),
                )
                .with_source(e)
            })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a committed turn survives a power loss, not only a crash.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let opening = |e| db(e, &format!("opening {}", path.display()));
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(WRITER_WAIT)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await
            .map_err(opening)?;
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(WRITER_WAIT)
            .connect_with(options)
            .await
            .map_err(opening)?;
        let core = Core {
            backend: Sqlite { writer, readers },
            tenant: Default::default(),
        };
        core.migrate().await?;
        Ok(Self { core, path })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Closes the connections (waiting for running operations).
    pub async fn close(&self) {
        self.core.backend.writer.close().await;
        self.core.backend.readers.close().await;
    }
}

delegate_session_store!(SqliteSessionStore);
tenant_options!(SqliteSessionStore);
