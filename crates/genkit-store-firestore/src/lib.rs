//! A Firestore [`SessionStore`](genkit_session::store::SessionStore) for
//! Genkit agents, wire-compatible with Genkit JS's `FirestoreSessionStore`
//! (`@genkit-ai/firebase/beta`, 1.42): a session written by a Genkit JS app
//! is resumed by a Rust app and the other way round; and a Firestore
//! [`StreamManager`](genkit_core::streaming::StreamManager) for durable
//! streams, [`FirestoreStreamManager`], wire-compatible with Genkit JS's
//! (see [Durable streams](#durable-streams)).
//!
//! ```no_run
//! # async fn demo() -> genkit_core::Result<()> {
//! use std::sync::Arc;
//! use genkit_store_firestore::{FirestoreSessionStore, StaticToken};
//!
//! // FIRESTORE_EMULATOR_HOST set: the emulator, no token needed.
//! // Otherwise real Firestore with an OAuth access token.
//! let store = FirestoreSessionStore::builder()
//!     .project_id("my-project")
//!     .token_source(StaticToken(std::env::var("ACCESS_TOKEN").unwrap_or_default()))
//!     .build()?;
//! let store = Arc::new(store); // AgentOptions::new().store(store)
//! # Ok(()) }
//! ```
//!
//! # Layout (Genkit JS's)
//!
//! With collection `C` (default `genkit-sessions`) and tenant prefix `P`
//! (default `global`, or [`prefix_fn`](FirestoreSessionStoreBuilder::prefix_fn)
//! of the running action's context, as JS's `snapshotPathPrefix`):
//!
//! - `C/P/snapshots/<snapshotId>`: one document per snapshot: `snapshotId`,
//!   `sessionId`, `parentId?`, `createdAt`, `updatedAt` (`createdAt` when
//!   unset), `status?`, `heartbeatAt?`, `finishReason?`, `error?`, and its
//!   place in the chain: `kind` (`checkpoint` | `diff`), `checkpointId` (the
//!   nearest checkpoint, itself for a checkpoint), `checkpointShardCount`,
//!   `segmentPath` (the diff ids from that checkpoint down to this one) and,
//!   for a diff, `statePatch` (the JSON Patch from the parent's state,
//!   computed with the same `diff` as Genkit JS).
//! - `C-shards/P/shards/<checkpointId>_<i>`: `{chunk: bytes}`, the UTF-8
//!   JSON of a checkpoint's state cut into `shard_size` pieces (512 KiB),
//!   so no document nears Firestore's 1 MiB limit.
//! - `C-pointers/P/pointers/<sessionId>`: the session's current leaf
//!   (`currentSnapshotId`) and its chain metadata, for Genkit JS's lookups
//!   by session id.
//!
//! A new snapshot is a checkpoint when it is a session's root, when its
//! parent's segment would reach `checkpoint_interval` (25) diffs, or when
//! its patch is larger than `shard_size`; otherwise a diff. Reading one
//! reads its document, then its checkpoint's shards and segment in one
//! batch. The tests check that the documents equal, field for field and
//! shard byte for shard byte, what Genkit JS writes for the same turns.
//!
//! # Versions, and what this store adds
//!
//! Genkit JS's store has no versions; the Rust
//! [`SessionStore`](genkit_session::store::SessionStore) contract does.
//! They are kept where Genkit JS neither looks nor is disturbed:
//!
//! - the **session version** is the number of the session's snapshot
//!   documents. Each append keeps it, with the session's leaves, in a
//!   counter document `C-counters/P/counters/<sessionId>`, so `append`,
//!   `get` and `latest` read that one document (and the pointer) instead of
//!   every snapshot of the session; `latest` applies the shared
//!   [`latest_leaf`](genkit_session::store::latest_leaf) rule to the
//!   leaves (a branched session has no latest, `FAILED_PRECONDITION`, where
//!   Genkit JS returns the pointer's leaf). The counter records the pointer
//!   it agrees with: when Genkit JS appended meanwhile (it moves the
//!   pointer, not the counter), or for a session from before the counter,
//!   the session is read with a `sessionId ==` query over its snapshots
//!   (their parents, statuses and creation times), so turns appended by
//!   Genkit JS count too, and the next append writes an agreeing counter.
//! - each append also creates a marker `C-markers/P/markers/s:<session>:<n>`
//!   (create-only); an update creates `r:<snapshot>:<revision>:<update
//!   time>` for the version it read. Two writers based on the same version
//!   both try to create the same marker: one is refused (`ABORTED`), before
//!   anything else of its commit is applied.
//! - a snapshot's **revision** is `rsRevision` in its document (written only
//!   above 1), and `rsUnset` lists `sessionId` / `updatedAt` / `state` when
//!   the snapshot had none (Genkit JS's shape always fills them), so every
//!   snapshot reads back exactly as written. Genkit JS ignores both fields;
//!   when Genkit JS rewrites a document (its detached-turn upserts) they are
//!   dropped, so its rewrites do not count as revisions.
//! - a detached turn's lease (see [`genkit_session::store::lease`]) is
//!   `rsLeaseOwner` and `rsLeaseExpiresAt` in its pending snapshot's
//!   document. Renewals and takeovers are updates (the trait's default
//!   `renew_lease` and `take_over`), so each is one transaction refused on a
//!   stale revision like any update (the revision marker settles races,
//!   even on the emulator). A pending snapshot Genkit JS rewrote has no
//!   lease and expires by its heartbeat, as in Genkit JS.
//! - side-effect records (`record_effect`) live in
//!   `C-effects/P/effects/e:<session>:<key>`, each its own create-only
//!   commit outside any turn: the first record wins.
//!
//! A snapshot's state is not rewritten once another snapshot continues it
//! (their diffs or its shards depend on it): `FAILED_PRECONDITION`.
//!
//! As with Genkit JS, JSON Patch values are stored as Firestore values, so
//! Firestore's own rules apply to them: no array directly inside an array,
//! and integers beyond 2^53 become doubles (checkpoints, stored as JSON
//! text, keep them exactly).
//!
//! # Guarantees
//!
//! Every write (`append`, `update`) is one Firestore transaction: its reads
//! (the session query, the pointer, the parent) and its commit (snapshot,
//! shards, pointer, marker) are atomic, so a failed or refused turn leaves
//! the session exactly as it was, and a stale write is refused with
//! `ABORTED`, never merged. On real Firestore this rests on its serializable
//! read-write transactions (a transaction whose reads another commit changed
//! is aborted, which the store reports as `ABORTED`), the create-only
//! markers and snapshot documents, and an update-time precondition on
//! rewrites; it holds against Genkit JS writers too, whose transactions read
//! and write the same pointer document. Reads run in read-only transactions,
//! so a checkpoint is never stitched from shards of two writes.
//!
//! The tests run on `@firestore-emulator/server`, which neither isolates
//! transactions nor checks update-time preconditions (it does check
//! create-only ones, so the markers still refuse racing writes there), and
//! applies a commit's writes one by one (so the marker goes first). It also
//! merges a replacing write into the old document, so on an emulator a
//! rewrite deletes the document first, in the same commit. The emulator
//! tests prove the layout and wire compatibility; the concurrency
//! guarantees of the trait are proven on SQLite and PostgreSQL.
//!
//! # Transport
//!
//! gRPC (`tonic`, with the few `google.firestore.v1` messages declared by
//! hand in [`proto`], no `protoc`): the emulator speaks only gRPC, and it is
//! the protocol Genkit JS's client uses. With `FIRESTORE_EMULATOR_HOST` (or
//! [`emulator_host`](FirestoreSessionStoreBuilder::emulator_host)) it
//! connects in plaintext with `Authorization: Bearer owner`; otherwise over
//! TLS to `firestore.googleapis.com` with tokens from a [`TokenSource`] (no
//! Google auth library is bundled: pass the metadata server's or
//! `gcloud`'s tokens, or wrap an auth crate).
//!
//! # Durable streams
//!
//! [`FirestoreStreamManager`] keeps a flow server's durable streams
//! (`FlowServer::stream_manager` in genkit-server) in Genkit JS's
//! `FirestoreStreamManager` layout, so a stream written by either is read
//! by the other. With collection `C` (default `genkit-streams`; Genkit JS's
//! required `collection` option):
//!
//! - `C/<streamId>`: one document per stream, `{createdAt, stream,
//!   updatedAt, rsOwner}`. `createdAt` is the server time of `open`;
//!   `stream` is the array of events, in order: `{type: "chunk", chunk,
//!   uuid}` (a random UUID per chunk, as Genkit JS, so equal chunks stay
//!   distinct under `arrayUnion`), then one `{type: "done", output}` or
//!   `{type: "error", err}`; `updatedAt` is the server time of the last
//!   append. Each append is Genkit JS's write: `update({stream:
//!   arrayUnion(...events), updatedAt: serverTimestamp()})`.
//! - `rsOwner` is this crate's own field: the stream's owner (the flow
//!   server's digest of the caller's credentials). Genkit JS ignores it; a
//!   stream Genkit JS opened has none and reads as owned by `""`, the
//!   anonymous caller's owner.
//! - `C/<streamId>/appends/<at>`: a create-only marker per append, `at`
//!   the index it starts at (`{count}`, how many events it added). Genkit
//!   JS never reads it.
//!
//! `open` creates the document only if it is absent (`ALREADY_EXISTS`
//! otherwise; Genkit JS's `open` overwrites it with `set()`, see
//! [`FirestoreStreamManager`] for why this one refuses). An append is one
//! read-write transaction: it reads the `stream` array, refuses (`ABORTED`)
//! an index other than its length or a stream that has ended, and commits
//! the marker and the update together. On real Firestore the transaction
//! alone refuses a second writer; on the emulator, which does not isolate
//! transactions, two writers appending at the same index race for the same
//! marker, and the one refused writes nothing. Readers poll the document
//! ([`poll_interval`](FirestoreStreamManagerBuilder::poll_interval)); Genkit
//! JS's readers follow it with `onSnapshot`. (The emulator applies only
//! the first transform of a write, so there `updatedAt` is never set, by
//! either side's appends; `createdAt` is.) Streams are not deleted
//! (nor are they by Genkit JS): a Firestore TTL policy on `createdAt`
//! removes old ones.
//!
//! A stream is one Firestore document, so it holds at most about 1 MiB of
//! events, as with Genkit JS.

mod builder;
mod client;
mod counter;
mod layout;
pub mod proto;
mod store;
mod stream;
mod tx;
mod value;

pub use builder::{
    DEFAULT_CHECKPOINT_INTERVAL, DEFAULT_COLLECTION, DEFAULT_PREFIX, DEFAULT_SHARD_SIZE,
    FirestoreSessionStoreBuilder,
};
pub use client::{StaticToken, TokenSource};
pub use store::FirestoreSessionStore;
pub use stream::{
    DEFAULT_STREAM_COLLECTION, FirestoreStreamManager, FirestoreStreamManagerBuilder,
};
