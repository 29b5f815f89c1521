//! Bounds on an agent's detached turns: how long one may run and how many
//! may run at once in this process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use genkit_core::{Error, StatusCode};

/// How long a detached turn may run by default before it is cancelled and
/// its snapshot marked failed (`DEADLINE_EXCEEDED`).
pub const DEFAULT_DETACHED_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// How many detached turns of one agent may run at once in a process by
/// default; a detach over it is refused (`RESOURCE_EXHAUSTED`).
pub const DEFAULT_MAX_DETACHED: usize = 64;

/// The running detached turns of one agent, counted against its limit.
#[derive(Debug)]
pub(crate) struct DetachedLimit {
    max: usize,
    running: Arc<AtomicUsize>,
}

/// One detached turn's place under the limit, given back when dropped.
#[derive(Debug)]
pub(crate) struct DetachedSlot(Arc<AtomicUsize>);

impl Drop for DetachedSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl DetachedLimit {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max,
            running: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// A place for one more detached turn of `agent`, or
    /// `RESOURCE_EXHAUSTED` when `max` are running.
    pub(crate) fn acquire(&self, agent: &str) -> Result<DetachedSlot, Error> {
        let max = self.max;
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map(|_| DetachedSlot(self.running.clone()))
            .map_err(|_| {
                Error::user_facing(
                    StatusCode::ResourceExhausted,
                    format!(
                        "Agent '{agent}' already runs {max} detached turns (its limit); wait for one to finish, or run this turn attached."
                    ),
                )
            })
    }
}

/// The error a detached turn that ran past its deadline ends with.
pub(crate) fn deadline_exceeded(timeout: Duration) -> Error {
    Error::user_facing(
        StatusCode::DeadlineExceeded,
        format!(
            "The detached turn ran longer than its deadline ({}s) and was cancelled.",
            timeout.as_secs_f64()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_and_given_back() {
        let limit = DetachedLimit::new(2);
        let a = limit.acquire("x").unwrap();
        let _b = limit.acquire("x").unwrap();
        let refused = limit.acquire("x").unwrap_err();
        assert_eq!(refused.status(), StatusCode::ResourceExhausted);
        drop(a);
        assert!(limit.acquire("x").is_ok());
    }
}
