//! Persistent session stores for agents (feature `sql-store`; PostgreSQL
//! with `sql-store-postgres`): the stores of `genkit-store-sql`, and
//! [`open_store`], the way to get the default persistent store without
//! naming one.
//!
//! ```no_run
//! # async fn demo() -> genkit::Result<()> {
//! use genkit::agent::AgentOptions;
//!
//! // A SQLite file by default; `postgres://…` when the app shares sessions
//! // between servers.
//! let location = std::env::var("SESSIONS").unwrap_or_else(|_| {
//!     genkit::stores::default_sqlite_path("my-app")
//!         .map(|p| p.display().to_string())
//!         .unwrap_or_else(|| "sessions.db".into())
//! });
//! let options = AgentOptions::new().store(genkit::stores::open_store(&location).await?);
//! # let _ = options; Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::store::SessionStore;

#[cfg(feature = "sql-store-postgres")]
pub use genkit_store_sql::PostgresSessionStore;
pub use genkit_store_sql::SqliteSessionStore;

/// Opens the session store at `location`: PostgreSQL for `postgres://…`
/// (feature `sql-store-postgres`), else SQLite in the file it names (a path,
/// or `sqlite:<path>`; created if missing). See [`genkit_store_sql::open`].
pub async fn open_store(location: &str) -> crate::Result<Arc<dyn SessionStore>> {
    genkit_store_sql::open(location).await
}

/// Where an app's SQLite sessions live by default: `sessions.db` in the
/// app's directory under the platform's data directory
/// (`$XDG_DATA_HOME` or `~/.local/share` on Linux and other Unixes,
/// `~/Library/Application Support` on macOS, `%APPDATA%` on Windows).
/// `None` when the environment names no home. [`open_store`] creates the
/// directory and the file.
pub fn default_sqlite_path(app: &str) -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let base = if cfg!(windows) {
        env("APPDATA")
    } else if cfg!(target_os = "macos") {
        env("HOME").map(|h| h.join("Library/Application Support"))
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))
    };
    Some(base?.join(app).join("sessions.db"))
}
