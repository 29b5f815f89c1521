//! The [`SessionStore`] contract on any [`Backend`], written once: version
//! checks, chains of checkpoints and diffs, validation, in one transaction
//! per write.

use genkit_core::{Error, Result, StatusCode};
use genkit_session::clock::now_rfc3339;
use genkit_session::clock::rfc3339_at;
use genkit_session::json_patch;
use genkit_session::store::lease::LeaseRenewal;
use genkit_session::store::update::{
    UpdateTarget, check_revision, check_state_rewrite, check_update, revision_conflict,
};
use genkit_session::store::{
    SnapshotLink, StoredSnapshot, latest_leaf, parent_in_other_session, session_conflict,
    session_not_found, snapshot_exists, snapshot_not_found, snapshot_session_id,
};
use genkit_session::types::{SessionSnapshot, SnapshotStatus};
use serde_json::Value;

use crate::backend::{Backend, Loaded, Row, Tx};
use crate::codec::{self, Kind};
use crate::error::data_loss;
use crate::tenant::Tenant;

/// The store's logic over a backend, for the tenant of each operation.
pub(crate) struct Core<B> {
    pub backend: B,
    pub tenant: Tenant,
}

fn status_str(snapshot: &SessionSnapshot) -> Option<&'static str> {
    snapshot.status.map(|s| s.as_str())
}

fn stored(loaded: &Loaded) -> Result<StoredSnapshot> {
    let state = codec::reconstruct(&loaded.chain)?;
    let mut snapshot = codec::decode(&loaded.meta, state)?;
    // A renewal writes only the lease columns: they are the lease's truth.
    if loaded.lease.owner.is_some() {
        snapshot.lease_owner = loaded.lease.owner.clone();
        snapshot.lease_expires_at = loaded.lease.expires_at.clone();
        snapshot.heartbeat_at = loaded.lease.heartbeat_at.clone();
    }
    Ok(StoredSnapshot {
        snapshot,
        revision: loaded.revision,
        session_version: loaded.session_version,
    })
}

/// The parse of a status column.
fn parse_status(id: &str, status: Option<&str>) -> Result<Option<SnapshotStatus>> {
    status
        .map(str::parse)
        .transpose()
        .map_err(|_| data_loss(format!("snapshot {id} has an unknown status {status:?}")))
}

impl<B: Backend> Core<B> {
    /// Applies the crate's migrations (in one write transaction).
    pub async fn migrate(&self) -> Result<()> {
        // Migrations span every tenant; the tenant is unused.
        let mut tx = self.backend.write(String::new()).await?;
        tx.migrate().await?;
        tx.commit().await
    }

    pub async fn get(&self, snapshot_id: &str) -> Result<StoredSnapshot> {
        let mut tx = self.backend.read(self.tenant.current()?).await?;
        let loaded = tx
            .load(snapshot_id)
            .await?
            .ok_or_else(|| snapshot_not_found(snapshot_id))?;
        drop(tx);
        stored(&loaded)
    }

    pub async fn latest(&self, session_id: &str) -> Result<StoredSnapshot> {
        let mut tx = self.backend.read(self.tenant.current()?).await?;
        let session = tx
            .session(session_id)
            .await?
            .ok_or_else(|| session_not_found(session_id))?;
        // The newest snapshot is always a counted leaf: with one, it is it.
        // With more (a branch, or a failed leaf the count could not pass
        // over), the shared rule decides from the whole session.
        let chosen;
        let leaf = if session.leaves == 1 {
            session.latest_id.as_str()
        } else {
            let rows = tx.links(session_id).await?;
            let mut links = Vec::with_capacity(rows.len());
            for (id, parent, status) in &rows {
                links.push(SnapshotLink {
                    snapshot_id: id,
                    parent_id: parent.as_deref(),
                    status: parse_status(id, status.as_deref())?,
                });
            }
            chosen = latest_leaf(session_id, &links)?.to_owned();
            chosen.as_str()
        };
        let loaded = tx.load(leaf).await?.ok_or_else(|| {
            Error::internal(format!("leaf {leaf} of session {session_id} vanished"))
        })?;
        drop(tx);
        stored(&loaded)
    }

    pub async fn append(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.as_str();
        if id.trim().is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a snapshot needs a non-empty snapshotId",
            ));
        }
        let session_id = snapshot_session_id(&snapshot)?;
        let encoded = codec::encode(&snapshot)?;
        let mut tx = self.backend.write(self.tenant.current()?).await?;
        // The version check first: it takes the session's row lock, so the
        // reads below see the session as this append extends it.
        let advanced = if base == 0 {
            tx.create_session(&session_id, id).await?
        } else {
            tx.bump_session(&session_id, base).await?
        };
        if !advanced {
            let current = tx.session_version(&session_id).await?.unwrap_or(0);
            return Err(session_conflict(&session_id, base, current));
        }
        if tx.snapshot_session(id).await?.is_some() {
            return Err(snapshot_exists(id));
        }
        let (kind, body) = match &snapshot.parent_id {
            None => {
                if base > 0 {
                    // A second root: one more leaf.
                    tx.set_latest(&session_id, id, 1).await?;
                }
                codec::place(None, &encoded.state)?
            }
            Some(parent) => {
                let loaded = tx
                    .load(parent)
                    .await?
                    .ok_or_else(|| snapshot_not_found(parent))?;
                if loaded.session_id != session_id {
                    return Err(parent_in_other_session(
                        parent,
                        &loaded.session_id,
                        &session_id,
                    ));
                }
                let parent_state = codec::reconstruct(&loaded.chain)?;
                if base > 0 {
                    // Continuing a leaf keeps the count; continuing an
                    // inner snapshot adds a leaf, unless it continues past a
                    // failed or aborted leaf (the retry of a failed turn),
                    // which the count then drops (`latest_leaf`'s rule 2).
                    // A failed or aborted parent may have been dropped so:
                    // count its continuation, as over-counting only sends
                    // `latest` to the exact rule.
                    let dead_parent =
                        matches!(loaded.status.as_deref(), Some("failed" | "aborted"));
                    let added = dead_parent
                        || (!loaded.is_leaf && !tx.newest_child_is_dead_leaf(parent).await?);
                    tx.set_latest(&session_id, id, u64::from(added)).await?;
                }
                codec::place(Some((&loaded.chain, &parent_state)), &encoded.state)?
            }
        };
        let row = Row {
            snapshot_id: id,
            session_id: &session_id,
            parent_id: snapshot.parent_id.as_deref(),
            seq: base + 1,
            revision: 1,
            kind: kind.as_str(),
            status: status_str(&snapshot),
            meta: &encoded.meta,
            body: &body,
            lease_owner: snapshot.lease_owner.as_deref(),
            lease_expires_at: snapshot.lease_expires_at.as_deref(),
            heartbeat_at: snapshot.heartbeat_at.as_deref(),
        };
        match tx.insert_snapshot(&row).await {
            // Another session's append took the id meanwhile.
            Err(e) if e.status() == StatusCode::AlreadyExists => return Err(snapshot_exists(id)),
            r => r?,
        }
        tx.commit().await?;
        Ok(StoredSnapshot {
            snapshot,
            revision: 1,
            session_version: base + 1,
        })
    }

    pub async fn update(&self, snapshot: SessionSnapshot, base: u64) -> Result<StoredSnapshot> {
        let id = snapshot.snapshot_id.as_str();
        let encoded = codec::encode(&snapshot)?;
        let mut tx = self.backend.write(self.tenant.current()?).await?;
        let session_id = tx
            .snapshot_session(id)
            .await?
            .ok_or_else(|| snapshot_not_found(id))?;
        // Every write of a session locks its row first: this rewrite and the
        // session's appends (which may continue this snapshot) serialize.
        tx.lock_session(&session_id).await?;
        let loaded = tx.load(id).await?.ok_or_else(|| snapshot_not_found(id))?;
        // Unlike the other stores, the revision is a column, read without
        // decoding the row: a stale write is refused (`ABORTED`) before a
        // corrupt row is found out (`DATA_LOSS`), and `check_update` below
        // finds the revision checked already.
        check_revision(id, base, loaded.revision)?;
        let old_state = codec::reconstruct(&loaded.chain)?;
        let old = codec::decode(&loaded.meta, Value::Null)?;
        check_update(
            &UpdateTarget::of(&old, &session_id, loaded.revision),
            &snapshot,
            base,
        )?;
        let own = loaded
            .chain
            .last()
            .ok_or_else(|| data_loss(format!("snapshot {id} has no stored state")))?;
        let state_changes = !json_patch::json_equal(&old_state, &encoded.state);
        // Its children's diffs assume its state.
        check_state_rewrite(id, state_changes, !loaded.is_leaf)?;
        let (kind, body) = if !state_changes {
            // Only metadata changes: the stored state stays as it is.
            (own.kind, own.body.clone())
        } else {
            let parent_state = match (&loaded.parent_id, own.kind) {
                (Some(parent), Kind::Diff) => {
                    let parent = tx.load(parent).await?.ok_or_else(|| {
                        data_loss(format!("the parent {parent} of {id} is missing"))
                    })?;
                    Some(codec::reconstruct(&parent.chain)?)
                }
                _ => None,
            };
            codec::rewrite(own.kind, parent_state.as_ref(), &encoded.state)?
        };
        let row = Row {
            snapshot_id: id,
            session_id: &session_id,
            parent_id: snapshot.parent_id.as_deref(),
            seq: 0,
            revision: base + 1,
            kind: kind.as_str(),
            status: status_str(&snapshot),
            meta: &encoded.meta,
            body: &body,
            lease_owner: snapshot.lease_owner.as_deref(),
            lease_expires_at: snapshot.lease_expires_at.as_deref(),
            heartbeat_at: snapshot.heartbeat_at.as_deref(),
        };
        if !tx.rewrite_snapshot(&row, base).await? {
            return Err(revision_conflict(id, base, loaded.revision));
        }
        tx.commit().await?;
        Ok(StoredSnapshot {
            snapshot,
            revision: base + 1,
            session_version: loaded.session_version,
        })
    }

    /// Renews a lease in one conditional `UPDATE` of its columns (and the
    /// revision), leaving the snapshot's metadata and state as they are.
    pub async fn renew_lease(
        &self,
        snapshot_id: &str,
        owner: &str,
        ttl: std::time::Duration,
    ) -> Result<LeaseRenewal> {
        let now = std::time::SystemTime::now();
        let mut tx = self.backend.write(self.tenant.current()?).await?;
        if tx
            .renew_lease(snapshot_id, owner, &rfc3339_at(now), &rfc3339_at(now + ttl))
            .await?
        {
            tx.commit().await?;
            return Ok(LeaseRenewal::Renewed);
        }
        let status = tx
            .snapshot_status(snapshot_id)
            .await?
            .ok_or_else(|| snapshot_not_found(snapshot_id))?;
        drop(tx);
        Ok(LeaseRenewal::Lost(parse_status(
            snapshot_id,
            status.as_deref(),
        )?))
    }

    pub async fn record_effect(&self, session_id: &str, key: &str, result: Value) -> Result<Value> {
        if session_id.trim().is_empty() || key.is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "a side-effect record needs a session id and a key",
            ));
        }
        let text = result.to_string();
        // Its own transaction, outside any turn's: the first record wins.
        let mut tx = self.backend.write(self.tenant.current()?).await?;
        tx.insert_effect(session_id, key, &text, &now_rfc3339())
            .await?;
        let recorded = tx.effect(session_id, key).await?;
        tx.commit().await?;
        match recorded {
            Some(t) if t == text => Ok(result),
            Some(t) => parse_effect(&t),
            None => Err(Error::internal(format!(
                "the side effect {key} of session {session_id} vanished"
            ))),
        }
    }

    pub async fn effect(&self, session_id: &str, key: &str) -> Result<Option<Value>> {
        let mut tx = self.backend.read(self.tenant.current()?).await?;
        let recorded = tx.effect(session_id, key).await?;
        drop(tx);
        recorded.as_deref().map(parse_effect).transpose()
    }
}

fn parse_effect(text: &str) -> Result<Value> {
    serde_json::from_str(text)
        .map_err(|e| data_loss(format!("side-effect result: {e}")).with_source(e))
}

/// Implements [`SessionStore`](genkit_session::store::SessionStore) for a
/// public store type by delegating to its `core`.
macro_rules! delegate_session_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl genkit_session::store::SessionStore for $store {
            async fn get(
                &self,
                snapshot_id: &str,
            ) -> genkit_core::Result<genkit_session::store::StoredSnapshot> {
                self.core.get(snapshot_id).await
            }
            async fn latest(
                &self,
                session_id: &str,
            ) -> genkit_core::Result<genkit_session::store::StoredSnapshot> {
                self.core.latest(session_id).await
            }
            async fn append(
                &self,
                snapshot: genkit_session::types::SessionSnapshot,
                base: u64,
            ) -> genkit_core::Result<genkit_session::store::StoredSnapshot> {
                self.core.append(snapshot, base).await
            }
            async fn update(
                &self,
                snapshot: genkit_session::types::SessionSnapshot,
                base: u64,
            ) -> genkit_core::Result<genkit_session::store::StoredSnapshot> {
                self.core.update(snapshot, base).await
            }
            async fn record_effect(
                &self,
                session_id: &str,
                key: &str,
                result: serde_json::Value,
            ) -> genkit_core::Result<serde_json::Value> {
                self.core.record_effect(session_id, key, result).await
            }
            async fn effect(
                &self,
                session_id: &str,
                key: &str,
            ) -> genkit_core::Result<Option<serde_json::Value>> {
                self.core.effect(session_id, key).await
            }
            async fn renew_lease(
                &self,
                snapshot_id: &str,
                owner: &str,
                ttl: std::time::Duration,
            ) -> genkit_core::Result<genkit_session::store::lease::LeaseRenewal> {
                self.core.renew_lease(snapshot_id, owner, ttl).await
            }
        }
    };
}

pub(crate) use delegate_session_store;
