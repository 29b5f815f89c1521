//! A session's counter document: its version and its leaves, kept by every
//! append, so that an operation reads one small document instead of
//! querying every snapshot of the session.
//!
//! Genkit JS does not know the counter: its appends move the session's
//! pointer (`currentSnapshotId`) without touching it. The counter records
//! the pointer it was written with; when the pointer has moved since (or
//! there is no counter, a session written before it existed), the session
//! is read with the query over its snapshots, as before, and the next
//! append writes a counter that agrees again.
//!
//! Statuses are not kept (a heartbeat or a detached turn's end rewrites a
//! snapshot, not the counter): [`SessionView::latest`] reads the leaves'
//! documents when there is more than one.

use std::collections::HashMap;

use genkit_core::Result;
use genkit_session::store::branching_error;
use genkit_session::types::SnapshotStatus;
use serde::{Deserialize, Serialize};

use crate::layout::{self, Paths, PointerDoc, SnapshotDoc};
use crate::tx::{SessionIndex, Tx};

/// `<collection>-counters/<prefix>/counters/<sessionId>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CounterDoc {
    pub session_id: String,
    /// How many snapshot documents the session has: its version.
    pub version: u64,
    /// The pointer's `currentSnapshotId` this counter agrees with.
    pub pointer: String,
    /// The snapshots no other continues, in append order, but for failed
    /// or aborted ones a newer sibling replaced (they can never be the
    /// latest again).
    #[serde(default)]
    pub leaves: Vec<Leaf>,
}

/// One leaf of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Leaf {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// A sibling (same parent) was appended after it: should it fail or
    /// be aborted, it drops out of the candidates for the latest.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
}

fn is_dead(status: Option<SnapshotStatus>) -> bool {
    matches!(
        status,
        Some(SnapshotStatus::Failed | SnapshotStatus::Aborted)
    )
}

/// What an operation knows of a session: from its counter, or from the
/// query when the counter is missing or behind.
pub(crate) enum SessionView {
    Counted(CounterDoc),
    Indexed(SessionIndex),
}

impl SessionView {
    /// The session's version (its number of snapshots).
    pub(crate) fn version(&self) -> u64 {
        match self {
            Self::Counted(c) => c.version,
            Self::Indexed(i) => i.version(),
        }
    }

    /// Whether another snapshot continues `id` (a snapshot of this session).
    pub(crate) fn is_continued(&self, id: &str) -> bool {
        match self {
            Self::Counted(c) => !c.leaves.iter().any(|l| l.id == id),
            Self::Indexed(i) => i.parents.contains(id),
        }
    }

    /// Whether `id` may be a snapshot of this session (the counter keeps
    /// only leaves: the caller checks the snapshot document's session).
    pub(crate) fn may_hold(&self, id: &str) -> bool {
        match self {
            Self::Counted(_) => true,
            Self::Indexed(i) => i.ids.contains(id),
        }
    }

    /// The session's latest snapshot by the shared rule
    /// ([`latest_leaf`](genkit_session::store::latest_leaf)); `None` when
    /// it has none.
    pub(crate) async fn latest(
        &self,
        tx: &Tx<'_>,
        paths: &Paths,
        session_id: &str,
    ) -> Result<Option<String>> {
        let counter = match self {
            Self::Indexed(i) => return i.latest(session_id),
            Self::Counted(c) => c,
        };
        match counter.leaves.as_slice() {
            [] => return Ok(None),
            [only] => return Ok(Some(only.id.clone())),
            _ => {}
        }
        let names = counter
            .leaves
            .iter()
            .map(|l| paths.snapshot(&l.id))
            .collect();
        let docs = tx.get_all(names).await?;
        let mut candidates = Vec::new();
        for leaf in &counter.leaves {
            let status = match docs.get(&paths.snapshot(&leaf.id)) {
                Some(doc) => layout::decode::<SnapshotDoc>(doc)?.status,
                None => None,
            };
            if !(leaf.superseded && is_dead(status)) {
                candidates.push(leaf.id.clone());
            }
        }
        match candidates.len() {
            0 => Ok(None),
            1 => Ok(candidates.pop()),
            n => Err(branching_error(session_id, n)),
        }
    }

    /// The counter after appending `id` (continuing `parent`).
    /// `read_status` gives the status of a leaf of [`siblings_of`](Self::siblings_of)
    /// from its document (a queried session has them already).
    pub(crate) fn appended(
        &self,
        session_id: &str,
        id: &str,
        parent: Option<&str>,
        read_status: impl Fn(&str) -> Option<SnapshotStatus>,
    ) -> CounterDoc {
        let (version, mut leaves) = match self {
            Self::Counted(c) => (c.version, c.leaves.clone()),
            Self::Indexed(i) => (i.version(), leaves_of(i)),
        };
        let status = |leaf: &str| match self {
            Self::Counted(_) => read_status(leaf),
            Self::Indexed(i) => i
                .entries
                .iter()
                .find(|e| e.id == leaf)
                .and_then(|e| e.status),
        };
        leaves.retain(|l| Some(l.id.as_str()) != parent);
        leaves.retain_mut(|l| {
            if l.parent.as_deref() == parent {
                l.superseded = true;
            }
            !(l.superseded && is_dead(status(&l.id)))
        });
        leaves.push(Leaf {
            id: id.to_owned(),
            parent: parent.map(str::to_owned),
            superseded: false,
        });
        CounterDoc {
            session_id: session_id.to_owned(),
            version: version + 1,
            pointer: id.to_owned(),
            leaves,
        }
    }

    /// The leaves that share `parent` (whose statuses
    /// [`appended`](Self::appended) needs).
    pub(crate) fn siblings_of(&self, parent: Option<&str>) -> Vec<String> {
        match self {
            Self::Counted(c) => c
                .leaves
                .iter()
                .filter(|l| l.parent.as_deref() == parent)
                .map(|l| l.id.clone())
                .collect(),
            // The index has every status already.
            Self::Indexed(_) => Vec::new(),
        }
    }
}

/// The leaves of a queried session, as its counter keeps them: the
/// snapshots no other continues, each superseded when it is not its
/// parent's newest child, without the dead superseded ones.
fn leaves_of(index: &SessionIndex) -> Vec<Leaf> {
    // Entries are in append order: the last child seen is the newest.
    let mut newest_child: HashMap<Option<&str>, usize> = HashMap::new();
    for (i, entry) in index.entries.iter().enumerate() {
        newest_child.insert(entry.parent.as_deref(), i);
    }
    index
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !index.parents.contains(&e.id))
        .map(|(i, e)| {
            let superseded = newest_child.get(&e.parent.as_deref()) != Some(&i);
            (e, superseded)
        })
        .filter(|(e, superseded)| !(*superseded && is_dead(e.status)))
        .map(|(e, superseded)| Leaf {
            id: e.id.clone(),
            parent: e.parent.clone(),
            superseded,
        })
        .collect()
}

impl Tx<'_> {
    /// The session as its counter tells it when the counter agrees with the
    /// pointer, else as the query over its snapshots tells it; and its
    /// pointer document.
    pub(crate) async fn session_view(
        &self,
        paths: &Paths,
        session_id: &str,
    ) -> Result<(SessionView, Option<PointerDoc>)> {
        let (counter_name, pointer_name) = (paths.counter(session_id), paths.pointer(session_id));
        let docs = self
            .get_all(vec![counter_name.clone(), pointer_name.clone()])
            .await?;
        let pointer: Option<PointerDoc> =
            docs.get(&pointer_name).map(layout::decode).transpose()?;
        let counter: Option<CounterDoc> =
            docs.get(&counter_name).map(layout::decode).transpose()?;
        if let (Some(c), Some(p)) = (counter, &pointer)
            && c.pointer == p.current_snapshot_id
            && c.session_id == session_id
        {
            return Ok((SessionView::Counted(c), pointer));
        }
        let index = self.session_index(paths, session_id).await?;
        Ok((SessionView::Indexed(index), pointer))
    }
}
