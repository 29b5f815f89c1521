//! Persistent [`SessionStore`]s for Genkit agents on SQL databases:
//! [`SqliteSessionStore`] (feature `sqlite`, on by default: one file, no
//! server; the default wherever an app wants a persistent store without
//! naming one) and [`PostgresSessionStore`] (feature `postgres`: for apps
//! that run more than one server on the same sessions). Both run on
//! [sqlx](https://docs.rs/sqlx) and share everything but their connection
//! setup; [`open`] picks one from a location.
//!
//! ```no_run
//! # async fn demo() -> genkit_core::Result<()> {
//! use genkit::agent::AgentOptions;
//!
//! let store = genkit_store_sql::open("sessions.db").await?; // or "postgres://…"
//! let options = AgentOptions::new().store(store);
//! # let _ = options; Ok(()) }
//! ```
//!
//! # Guarantees (both stores)
//!
//! - **One transaction per write.** An append checks and bumps the
//!   session's version and inserts the snapshot in one transaction; an
//!   update checks the snapshot's revision and rewrites it in one. A write
//!   that fails for any reason (a stale base, a bad snapshot, a database
//!   error, a crash or `SIGKILL` mid-write) is rolled back: the stored
//!   rows stay byte for byte as they were.
//! - **Versions.** A write based on a stale session version or revision is
//!   refused with `ABORTED` and nothing is written, never merged; re-read
//!   and retry (see [`is_conflict`](genkit_session::store::is_conflict)).
//!   Writes of one session are serialized by its row in `genkit_sessions`:
//!   on PostgreSQL a row lock (`UPDATE … WHERE version = base`, `SELECT …
//!   FOR UPDATE`), on SQLite the database's write lock, taken at the start
//!   of every write transaction (`BEGIN IMMEDIATE`) by the store's single
//!   writer connection, so this process's writers queue instead of failing
//!   with "database is locked". Another process's writer is waited for up
//!   to a 10 s busy timeout; if it holds the lock longer the write is
//!   refused with `ABORTED` (retry), never with a raw SQLite error.
//! - **Consistent reads.** A read sees one committed state of the database
//!   (a SQLite read transaction in WAL mode, which never blocks or is
//!   blocked by the writer; a PostgreSQL `REPEATABLE READ, READ ONLY`
//!   transaction), so `latest` never pairs a leaf with a newer version.
//! - **Durability.** SQLite runs with `synchronous = FULL`: a committed turn
//!   survives a power loss. PostgreSQL commits are as durable as the server
//!   is configured.
//! - **Side effects.** [`record_effect`](genkit_session::store::SessionStore::record_effect)
//!   commits its own transaction at once, outside any turn's: the first
//!   record under a key wins, and a turn that fails or is retried after the
//!   tool ran finds it.
//! - A snapshot that another snapshot continues is not given a new state
//!   (`FAILED_PRECONDITION`): its children's diffs are based on it.
//!
//! # Tenants
//!
//! Every row belongs to a tenant, part of every key, and every operation
//! (`get`, `latest`, `append`, `update`, `abort`, `record_effect`,
//! `effect`) is scoped to one: a tenant never sees, continues, rewrites or
//! aborts another's snapshots, sessions or side effects, even under the same
//! ids. By default a store has one tenant, [`DEFAULT_TENANT`] (`global`);
//! [`tenant`](SqliteSessionStore::tenant) fixes another, and
//! [`tenant_fn`](SqliteSessionStore::tenant_fn) derives it from the running
//! action's context (stores run in the caller's task, so this is the agent
//! turn's context, with the request's `auth`), as the Firestore store's
//! `prefix_fn`:
//!
//! ```no_run
//! # async fn demo() -> genkit_core::Result<()> {
//! use genkit_store_sql::SqliteSessionStore;
//!
//! let store = SqliteSessionStore::open("sessions.db")
//!     .await?
//!     .tenant_fn(|ctx| {
//!         ctx.auth()
//!             .and_then(|auth| auth.get("org"))
//!             .and_then(|org| org.as_str())
//!             .unwrap_or_default()
//!             .to_owned()
//!     });
//! # let _ = store; Ok(()) }
//! ```
//!
//! An operation whose tenant comes out empty is refused
//! (`PERMISSION_DENIED`). Databases written before tenants are migrated on
//! open (`0002_tenants`): their rows belong to the default tenant.
//!
//! # Layout
//!
//! Applied on open by the crate's own migrations (`migrations/*.sql`, the
//! same SQL on both databases; applied versions are kept in
//! `genkit_store_migrations`, so an app's own sqlx migrations on the same
//! database are not disturbed; concurrent servers migrate one at a time):
//!
//! Every table's first column is `tenant` (see [Tenants](#tenants)), and
//! ids are unique within a tenant.
//!
//! - `genkit_sessions(session_id, version, leaves, latest_id)`: the
//!   session version (the number of snapshots appended to the session), how
//!   many of its snapshots no other continues (not counting a failed or
//!   aborted leaf once a retry continued its parent; the count may be high,
//!   never low), and its newest snapshot. With one leaf, `latest` is the
//!   newest snapshot; with more it applies
//!   [`latest_leaf`](genkit_session::store::latest_leaf) to the session's
//!   snapshots (a branched session is `FAILED_PRECONDITION`). This row is the
//!   only one an append changes.
//! - `genkit_snapshots(snapshot_id, session_id, parent_id, seq, revision,
//!   kind, status, meta, body, lease_owner, lease_expires_at,
//!   heartbeat_at)`: `seq` is the session version the
//!   snapshot's append produced (unique per session), `revision` 1 plus its
//!   rewrites, `meta` the snapshot without its state as JSON, and `body` its
//!   state: the whole state's JSON for `kind = 'checkpoint'`, else the JSON
//!   Patch from the parent's state (`diff`, computed with the same
//!   [`diff`](genkit_session::json_patch::diff) as Genkit JS). Rows are
//!   inserted once and never changed by later turns (only a pending
//!   snapshot's own rewrites change its row). Reading a snapshot reads its
//!   chain up to its checkpoint in one recursive query and applies the
//!   patches in one pass. The `lease_*` and `heartbeat_at` columns hold a
//!   detached turn's lease (migration `0003_leases`; see
//!   [`genkit_session::store::lease`]): a renewal is one conditional
//!   `UPDATE` of them and the revision, without rewriting `meta` or `body`,
//!   and when `lease_owner` is set they override `meta`'s copies on read.
//! - `genkit_effects(session_id, effect_key, result, recorded_at)`.
//!
//! When a snapshot is stored as a checkpoint and when as a diff (so the
//! bytes stored per turn stay near-linear in the turn's new content, not in
//! the session's size): see [`MAX_DIFF_CHAIN`] and the rules below it.
//!
//! **Checkpoints.** A session's root is a checkpoint; a child is a diff from
//! its parent unless its diff would be as large as its state, the diffs
//! since its checkpoint (its own included) would outweigh that checkpoint,
//! or the chain would exceed [`MAX_DIFF_CHAIN`] diffs. In a session that
//! grows by about the same content per turn, checkpoints fall on turns 1,
//! 2, 4, 8, …, so all checkpoints together stay within about twice the
//! final state.
//!
//! Feature `postgres` also keeps durable streams ([`PostgresStreamManager`],
//! its own tables) so a client reconnects to any replica.
//!
//! The stores are not wire-compatible with anything else (Genkit JS has no
//! SQL session store); the Firestore store (`genkit-store-firestore`) is the
//! one that shares sessions with Genkit JS apps.
//!
//! # PostgreSQL connections
//!
//! Plaintext by default (a private network, `localhost` or a unix socket:
//! `postgres:///db?host=/run/postgresql`); feature `postgres-tls` adds TLS
//! (rustls, webpki roots; `sslmode=require` in the URL).
//!
//! [`SessionStore`]: genkit_session::store::SessionStore

// The crate docs name the PostgreSQL types, which exist only with feature
// `postgres` (docs.rs and the workspace docs build with every feature).
#![cfg_attr(not(feature = "postgres"), allow(rustdoc::broken_intra_doc_links))]

mod backend;
mod codec;
mod error;
mod open;
mod store;
mod tenant;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "postgres")]
mod stream;

pub use codec::MAX_DIFF_CHAIN;
pub use open::open;
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_MAX_CONNECTIONS, PostgresSessionStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSessionStore;
#[cfg(feature = "postgres")]
pub use stream::PostgresStreamManager;
pub use tenant::DEFAULT_TENANT;
