//! [`open`]: a store from a location, SQLite or PostgreSQL.

use std::sync::Arc;

use genkit_core::{Error, Result, StatusCode};
use genkit_session::store::SessionStore;

/// Opens the session store at `location`:
///
/// - `postgres://…` or `postgresql://…`: a [`PostgresSessionStore`](crate::PostgresSessionStore)
///   (feature `postgres`);
/// - `sqlite:<path>` or `sqlite://<path>`, or any other string as a file
///   path: a [`SqliteSessionStore`](crate::SqliteSessionStore) in that file,
///   created if missing (feature `sqlite`, the default).
///
/// A location whose store was not compiled in is `FAILED_PRECONDITION`
/// naming the feature; an empty one `INVALID_ARGUMENT`.
pub async fn open(location: &str) -> Result<Arc<dyn SessionStore>> {
    let location = location.trim();
    if location.is_empty() {
        return Err(Error::invalid_argument(
            "a session store location is empty; give a file path, sqlite:<path> or postgres://…",
        ));
    }
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        return open_postgres(location).await;
    }
    let path = location
        .strip_prefix("sqlite://")
        .or_else(|| location.strip_prefix("sqlite:"))
        .unwrap_or(location);
    if path.is_empty() {
        return Err(Error::invalid_argument(format!(
            "the SQLite location {location:?} names no file"
        )));
    }
    open_sqlite(path).await
}

#[cfg(feature = "postgres")]
async fn open_postgres(url: &str) -> Result<Arc<dyn SessionStore>> {
    Ok(Arc::new(crate::PostgresSessionStore::connect(url).await?))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(_url: &str) -> Result<Arc<dyn SessionStore>> {
    Err(missing("postgres", "a PostgreSQL URL"))
}

#[cfg(feature = "sqlite")]
async fn open_sqlite(path: &str) -> Result<Arc<dyn SessionStore>> {
    Ok(Arc::new(crate::SqliteSessionStore::open(path).await?))
}

#[cfg(not(feature = "sqlite"))]
async fn open_sqlite(_path: &str) -> Result<Arc<dyn SessionStore>> {
    Err(missing("sqlite", "a SQLite file"))
}

#[allow(dead_code)] // one of the two backends is always compiled in by default
fn missing(feature: &str, what: &str) -> Error {
    Error::user_facing(
        StatusCode::FailedPrecondition,
        format!("{what} needs genkit-store-sql's `{feature}` feature, which this build lacks"),
    )
}
