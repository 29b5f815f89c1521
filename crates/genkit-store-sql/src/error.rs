//! Database errors as Genkit statuses, and corrupt data as `DATA_LOSS`
//! (the contract's own errors are genkit-session's).

use genkit_core::{Error, StatusCode};

/// Stored data that does not decode: `DATA_LOSS`, never a wrong value.
pub(crate) fn data_loss(what: impl std::fmt::Display) -> Error {
    Error::new(
        StatusCode::DataLoss,
        format!("corrupt session data: {what}"),
    )
}

/// A database error as a status:
///
/// - a unique-key violation is `ALREADY_EXISTS`;
/// - lock contention the database gave up on (SQLite `BUSY`/`LOCKED` once
///   the busy timeout ran out, PostgreSQL serialization failures,
///   deadlocks and lock timeouts) is `ABORTED`: nothing was written, retry;
/// - an unreachable database or an exhausted pool is `UNAVAILABLE`;
/// - anything else is `INTERNAL` (its text stays in the server log).
pub(crate) fn db(e: sqlx::Error, doing: &str) -> Error {
    match &e {
        sqlx::Error::Database(d) => {
            if d.is_unique_violation() {
                return Error::user_facing(
                    StatusCode::AlreadyExists,
                    format!("{doing}: the record already exists"),
                );
            }
            let code = d.code().map(|c| c.into_owned()).unwrap_or_default();
            if is_contention(&code) {
                return Error::user_facing(
                    StatusCode::Aborted,
                    format!(
                        "{doing}: the database is busy with another write ({}); nothing was written, retry",
                        d.message()
                    ),
                );
            }
            if is_unavailable(&code) {
                return Error::new(StatusCode::Unavailable, format!("{doing}: {e}"));
            }
            Error::internal(format!("{doing}: {e}"))
        }
        sqlx::Error::PoolTimedOut => Error::new(
            StatusCode::Unavailable,
            format!("{doing}: timed out waiting for a database connection"),
        ),
        sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => {
            Error::new(StatusCode::Unavailable, format!("{doing}: {e}"))
        }
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => {
            data_loss(format!("{doing}: {e}"))
        }
        _ => Error::internal(format!("{doing}: {e}")),
    }
}

/// SQLite's BUSY (5) and LOCKED (6) with their extended codes; PostgreSQL's
/// serialization_failure, deadlock_detected and lock_not_available.
fn is_contention(code: &str) -> bool {
    if code.len() == 5 {
        // A PostgreSQL SQLSTATE (SQLite's codes have at most 4 digits).
        return matches!(code, "40001" | "40P01" | "55P03");
    }
    code.parse::<i64>().is_ok_and(|n| matches!(n & 0xff, 5 | 6))
}

/// PostgreSQL's connection exceptions (08…), shutdowns (57P01–57P03) and
/// too many connections (53300).
fn is_unavailable(code: &str) -> bool {
    (code.len() == 5 && code.starts_with("08"))
        || matches!(code, "57P01" | "57P02" | "57P03" | "53300")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contention_codes() {
        for c in ["5", "6", "517", "261", "262", "40001", "40P01", "55P03"] {
            assert!(is_contention(c), "{c}");
        }
        for c in ["19", "2067", "23505", "42P01", ""] {
            assert!(!is_contention(c), "{c}");
        }
        assert!(is_unavailable("08006"));
        assert!(!is_unavailable("23505"));
    }
}
