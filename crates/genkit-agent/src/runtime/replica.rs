//! How a detached turn holds its session when several replicas share one
//! store: the lease its pending snapshot carries (whose, for how long) and
//! how often its heartbeat renews it, which is also how soon an abort sent
//! to another replica reaches it. See
//! [`store::lease`](crate::store::lease) for the protocol.

use std::sync::OnceLock;
use std::time::Duration;

use genkit_core::{Error, Result, StatusCode};

use crate::store::new_snapshot_id;

/// How long a detached turn's lease lasts by default: a replica that dies
/// mid-turn leaves its session blocked for at most this long, after which
/// any replica may resume it.
pub const DEFAULT_LEASE_TIME: Duration = Duration::from_secs(30);

/// How often a detached turn's heartbeat renews its lease by default; it is
/// also the longest an abort written by another replica takes to stop the
/// turn.
pub const DEFAULT_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(10);

/// This process's replica id, minted once: the owner of the leases its
/// detached turns hold unless [`AgentOptions::replica_id`] names one.
///
/// [`AgentOptions::replica_id`]: super::AgentOptions::replica_id
pub fn process_replica_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| format!("replica-{}", new_snapshot_id()))
}

/// An agent's lease settings, checked.
#[derive(Debug, Clone)]
pub(super) struct LeaseConfig {
    /// Who holds the leases of this agent's detached turns.
    pub(super) owner: String,
    /// How long a lease lasts from its last renewal.
    pub(super) ttl: Duration,
    /// How often it is renewed (and the store polled for an abort).
    pub(super) heartbeat: Duration,
}

impl LeaseConfig {
    /// The settings, or `INVALID_ARGUMENT` when a heartbeat could not keep
    /// the lease alive (an interval of zero, or not shorter than the lease).
    pub(super) fn new(
        owner: Option<String>,
        ttl: Option<Duration>,
        heartbeat: Option<Duration>,
    ) -> Result<Self> {
        let ttl = ttl.unwrap_or(DEFAULT_LEASE_TIME);
        let heartbeat = heartbeat.unwrap_or_else(|| DEFAULT_HEARTBEAT_INTERVAL.min(ttl / 3));
        if heartbeat.is_zero() || heartbeat >= ttl {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                format!(
                    "an agent's heartbeat interval ({heartbeat:?}) must be above zero and shorter \
                     than its lease time ({ttl:?}), or every lease lapses before it is renewed"
                ),
            ));
        }
        let owner = owner.unwrap_or_else(|| process_replica_id().to_owned());
        if owner.trim().is_empty() {
            return Err(Error::user_facing(
                StatusCode::InvalidArgument,
                "an agent's replica id must not be empty",
            ));
        }
        Ok(Self {
            owner,
            ttl,
            heartbeat,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_checks() {
        let c = LeaseConfig::new(None, None, None).expect("defaults");
        assert_eq!(
            (c.ttl, c.heartbeat),
            (DEFAULT_LEASE_TIME, DEFAULT_HEARTBEAT_INTERVAL)
        );
        assert_eq!(c.owner, process_replica_id());
        let short = LeaseConfig::new(None, Some(Duration::from_millis(300)), None).expect("short");
        assert_eq!(
            short.heartbeat,
            Duration::from_millis(100),
            "a third of a short lease"
        );
        for (ttl, beat) in [(1, 1), (1, 2), (1, 0)] {
            let err = LeaseConfig::new(
                None,
                Some(Duration::from_secs(ttl)),
                Some(Duration::from_secs(beat)),
            )
            .expect_err("a heartbeat that cannot keep up");
            assert_eq!(err.status(), StatusCode::InvalidArgument);
        }
        let err = LeaseConfig::new(Some(" ".into()), None, None).expect_err("empty owner");
        assert_eq!(err.status(), StatusCode::InvalidArgument);
    }
}
