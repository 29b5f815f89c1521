//! [`FirestoreSessionStoreBuilder`]: options, defaults (Genkit JS's), and
//! where the store connects.

use std::sync::Arc;
use std::time::Duration;

use genkit_core::context::ActionContext;
use genkit_core::{Error, Result};

use crate::client::{Auth, Client, TokenSource};
use crate::layout;
use crate::store::FirestoreSessionStore;

/// Genkit JS's default: a full checkpoint every 25 turns.
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 25;
/// Genkit JS's default shard / diff size limit: 512 KiB.
pub const DEFAULT_SHARD_SIZE: usize = 512 * 1024;
/// How long one request may take by default.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Genkit JS's default collection.
pub const DEFAULT_COLLECTION: &str = "genkit-sessions";
/// Genkit JS's prefix when none is configured.
pub const DEFAULT_PREFIX: &str = "global";

pub(crate) type PrefixFn = Arc<dyn Fn(&ActionContext) -> String + Send + Sync>;

/// Builds a [`FirestoreSessionStore`].
#[must_use]
pub struct FirestoreSessionStoreBuilder {
    project_id: Option<String>,
    database_id: String,
    collection: String,
    checkpoint_interval: u64,
    shard_size: usize,
    prefix: Option<PrefixFn>,
    emulator_host: Option<String>,
    token_source: Option<Arc<dyn TokenSource>>,
    timeout: Duration,
}

impl FirestoreSessionStoreBuilder {
    /// The Google Cloud project (default: `GOOGLE_CLOUD_PROJECT`, then
    /// `GCLOUD_PROJECT`).
    pub fn project_id(mut self, id: impl Into<String>) -> Self {
        self.project_id = Some(id.into());
        self
    }

    /// The database (default `(default)`).
    pub fn database_id(mut self, id: impl Into<String>) -> Self {
        self.database_id = id.into();
        self
    }

    /// The snapshots collection (default `genkit-sessions`); `-pointers`,
    /// `-shards`, `-effects` and `-markers` collections are derived from it.
    pub fn collection(mut self, name: impl Into<String>) -> Self {
        self.collection = name.into();
        self
    }

    /// Turns between full-state checkpoints (default 25, as Genkit JS).
    pub fn checkpoint_interval(mut self, turns: u64) -> Self {
        self.checkpoint_interval = turns;
        self
    }

    /// The largest shard or diff document, in bytes (default 512 KiB).
    pub fn shard_size(mut self, bytes: usize) -> Self {
        self.shard_size = bytes;
        self
    }

    /// A fixed tenant prefix (default `global`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.prefix = Some(Arc::new(move |_| prefix.clone()));
        self
    }

    /// A per-tenant prefix derived from the running action's context (e.g.
    /// the authenticated user), as Genkit JS's `snapshotPathPrefix`.
    pub fn prefix_fn(
        mut self,
        prefix: impl Fn(&ActionContext) -> String + Send + Sync + 'static,
    ) -> Self {
        self.prefix = Some(Arc::new(prefix));
        self
    }

    /// Talk to an emulator at `host:port` (default: `FIRESTORE_EMULATOR_HOST`).
    pub fn emulator_host(mut self, host: impl Into<String>) -> Self {
        self.emulator_host = Some(host.into());
        self
    }

    /// How long one Firestore request (or connecting) may take before it
    /// fails (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Access tokens for real Firestore.
    pub fn token_source(mut self, source: impl TokenSource) -> Self {
        self.token_source = Some(Arc::new(source));
        self
    }

    /// The store. Connects lazily; call it inside a Tokio runtime.
    /// `INVALID_ARGUMENT` without a project id, with a bad option, or with
    /// neither an emulator nor a token source.
    pub fn build(self) -> Result<FirestoreSessionStore> {
        if self.checkpoint_interval == 0 || self.shard_size == 0 {
            return Err(Error::invalid_argument(
                "checkpoint_interval and shard_size must be positive",
            ));
        }
        if !layout::is_valid_doc_id(&self.collection) {
            return Err(Error::invalid_argument(format!(
                "{:?} is not a Firestore collection id",
                self.collection
            )));
        }
        let client = connect(
            "FirestoreSessionStore",
            self.project_id,
            &self.database_id,
            self.emulator_host,
            self.token_source,
            self.timeout,
        )?;
        Ok(FirestoreSessionStore::new(
            client,
            self.collection,
            self.checkpoint_interval,
            self.shard_size,
            self.prefix,
        ))
    }
}

impl FirestoreSessionStore {
    /// A builder with Genkit JS's defaults.
    pub fn builder() -> FirestoreSessionStoreBuilder {
        FirestoreSessionStoreBuilder {
            project_id: None,
            database_id: "(default)".to_owned(),
            collection: DEFAULT_COLLECTION.to_owned(),
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            shard_size: DEFAULT_SHARD_SIZE,
            prefix: None,
            emulator_host: None,
            token_source: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

/// A client for `database_id` of `project_id` (default: `GOOGLE_CLOUD_PROJECT`,
/// then `GCLOUD_PROJECT`), on the emulator at `emulator_host` (default:
/// `FIRESTORE_EMULATOR_HOST`) or real Firestore with `token_source`;
/// `who` names the caller in errors.
pub(crate) fn connect(
    who: &str,
    project_id: Option<String>,
    database_id: &str,
    emulator_host: Option<String>,
    token_source: Option<Arc<dyn TokenSource>>,
    timeout: Duration,
) -> Result<Client> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let project = project_id
        .or_else(|| env("GOOGLE_CLOUD_PROJECT"))
        .or_else(|| env("GCLOUD_PROJECT"))
        .ok_or_else(|| {
            Error::invalid_argument(format!(
                "{who} needs a project id (project_id, GOOGLE_CLOUD_PROJECT or GCLOUD_PROJECT)"
            ))
        })?;
    let emulator = emulator_host.or_else(|| env("FIRESTORE_EMULATOR_HOST"));
    let auth = match (&emulator, token_source) {
        (Some(_), _) => Auth::Emulator,
        (None, Some(source)) => Auth::Token(source),
        (None, None) => {
            return Err(Error::invalid_argument(format!(
                "{who} needs a token source for real Firestore (or FIRESTORE_EMULATOR_HOST)"
            )));
        }
    };
    let database = format!("projects/{project}/databases/{database_id}");
    Client::new(emulator.as_deref(), auth, database, timeout)
}
