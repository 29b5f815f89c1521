//! Side effects that happen once: [`run_once`] claims an effect in the
//! session store *before* acting, so concurrent or retried callers never
//! carry it out twice.
//!
//! A tool that changes the world (restarts a service, charges a card) and
//! that a turn may run again — a turn that failed after the tool ran is
//! retried from the same snapshot; two clients approve the same interrupt at
//! once — calls [`run_once`] with a key naming *this* request for the effect.
//! For a tool that needs a person's approval that key is the server-minted
//! interrupt id the agent runtime hands the restarted call
//! (`metadata.resumed.interruptId`, read with [`interrupt_id`] or
//! [`approved_effect_key`]), so a later approval of the same kind of call
//! (another interrupt) is never confused with an earlier one.
//!
//! # How it works
//!
//! It is built on [`SessionStore::record_effect`] (first writer wins, in
//! every store), under keys in the reserved `genkit:` namespace (app keys
//! must not start with [`RESERVED_KEY_PREFIX`]; the runtime keeps its own
//! records there too, such as the session's owner):
//!
//! 1. `genkit:result/<key>` holds the outcome once there is one; a caller
//!    that finds it gets it back without acting.
//! 2. Otherwise the caller claims attempt `n` (from 1) by recording a fresh
//!    random claim id under `genkit:claim/<key>/<n>`. Only the caller whose
//!    id won runs `act`.
//! 3. A caller that finds attempt `n` claimed by someone else, with no
//!    outcome and not released, gets `ABORTED`: the effect is being carried
//!    out right now, or its claimant died before recording what happened.
//!    It is never run a second time on a guess.
//!
//! # When `act` fails
//!
//! `act` says whether the effect happened ([`EffectError`]):
//!
//! - [`EffectError::NotApplied`]: nothing happened (a check before acting
//!   failed, the target refused the request). The claim is released
//!   (`genkit:released/<key>/<n>`) and the error returned: a retry claims
//!   attempt `n + 1` and may run it.
//! - [`EffectError::MaybeApplied`] (what `?` on a [`genkit_core::Error`]
//!   gives): the effect may have happened. The failure is recorded as the
//!   outcome, so every later caller gets the same error and the effect is
//!   not tried again.

use std::future::Future;

use genkit_core::action::ActionCtx;
use genkit_core::{Error, Result, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::clock::now_rfc3339;
use super::store::{SessionStore, new_snapshot_id};

/// The key of the server-minted interrupt id in a restarted tool call's
/// `resumed` metadata (`"<snapshotId>/<n>"`): the agent runtime sets it on
/// every restart it accepted after checking it against the interrupt stored
/// in the session.
pub const INTERRUPT_ID_KEY: &str = "interruptId";

/// Side-effect keys starting with this are the framework's: [`run_once`]'s
/// claims and outcomes, the session's owner. Apps use other keys.
pub const RESERVED_KEY_PREFIX: &str = "genkit:";

/// How many released attempts one effect may go through before a caller is
/// refused (`RESOURCE_EXHAUSTED`): each release is a failed try that did
/// nothing, so this bounds retries of an effect that keeps failing.
pub const MAX_EFFECT_ATTEMPTS: u32 = 16;

/// Why `act` failed, and whether its effect happened.
#[derive(Debug)]
pub enum EffectError {
    /// The effect did not happen: the claim is released and a later call
    /// may run it.
    NotApplied(Error),
    /// The effect may have happened: the failure is recorded as the
    /// outcome, and no later call runs it again.
    MaybeApplied(Error),
}

impl From<Error> for EffectError {
    /// An error of unknown consequence: [`EffectError::MaybeApplied`], the
    /// safe choice for an effect that must not happen twice.
    fn from(error: Error) -> Self {
        EffectError::MaybeApplied(error)
    }
}

impl From<serde_json::Error> for EffectError {
    fn from(error: serde_json::Error) -> Self {
        EffectError::MaybeApplied(error.into())
    }
}

/// The server-minted interrupt id this tool call was restarted with
/// (`metadata.resumed.interruptId`), if it was restarted through an agent
/// that checked the restart against a stored interrupt.
pub fn interrupt_id<S>(ctx: &ActionCtx<S>) -> Option<&str> {
    ctx.resumed()?
        .get(INTERRUPT_ID_KEY)?
        .as_str()
        .filter(|id| !id.is_empty())
}

/// The [`run_once`] key of an approved call of `tool`: `<tool>/<interrupt
/// id>`. `FAILED_PRECONDITION` when the call carries no interrupt id: it was
/// not restarted from an approved interrupt of an agent session, so it must
/// not act.
pub fn approved_effect_key<S>(ctx: &ActionCtx<S>, tool: &str) -> Result<String> {
    let id = interrupt_id(ctx).ok_or_else(|| {
        Error::user_facing(
            StatusCode::FailedPrecondition,
            format!(
                "{tool} needs a person's approval: it runs only when an agent resumes its \
                 interrupt (the call carries no resumed.{INTERRUPT_ID_KEY})"
            ),
        )
    })?;
    Ok(format!("{tool}/{id}"))
}

/// How long a caller that finds the effect claimed by another waits for
/// that claimant's outcome before giving up with `ABORTED`.
pub const CLAIM_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs `act` at most once for `key` in the session: the first caller
/// claims the effect, runs it and records its outcome; every other caller,
/// concurrent or later, gets that outcome (a concurrent one waits for it up
/// to [`CLAIM_WAIT`]; `ABORTED` past that, or when the claimant died before
/// recording it). See the
/// [module docs](self) for the records and what happens when `act` fails.
///
/// `INVALID_ARGUMENT` for an empty session id or key, or a key in the
/// reserved `genkit:` namespace.
pub async fn run_once<T, F, Fut>(
    store: &dyn SessionStore,
    session_id: &str,
    key: &str,
    act: F,
) -> Result<T>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<T, EffectError>>,
{
    if session_id.trim().is_empty() || key.is_empty() {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            "a side effect run once needs a session id and a key",
        ));
    }
    if key.starts_with(RESERVED_KEY_PREFIX) {
        return Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!(
                "side-effect key {key:?}: keys starting with {RESERVED_KEY_PREFIX:?} are reserved"
            ),
        ));
    }
    let result_key = format!("{RESERVED_KEY_PREFIX}result/{key}");
    if let Some(outcome) = store.effect(session_id, &result_key).await? {
        return outcome_of(key, outcome);
    }
    let claim_id = new_snapshot_id();
    let mut attempt = 1;
    loop {
        if attempt > MAX_EFFECT_ATTEMPTS {
            return Err(Error::user_facing(
                StatusCode::ResourceExhausted,
                format!(
                    "the side effect {key} failed {MAX_EFFECT_ATTEMPTS} times without happening; \
                     it will not be tried again"
                ),
            ));
        }
        let claim_key = format!("{RESERVED_KEY_PREFIX}claim/{key}/{attempt}");
        let released_key = format!("{RESERVED_KEY_PREFIX}released/{key}/{attempt}");
        let claim = json!({"claimId": claim_id, "claimedAt": now_rfc3339()});
        let winner = store.record_effect(session_id, &claim_key, claim).await?;
        if winner.get("claimId").and_then(Value::as_str) == Some(claim_id.as_str()) {
            return act_and_record(store, session_id, &result_key, &released_key, act).await;
        }
        // Someone else holds this attempt: wait a while for its outcome (a
        // concurrent approval then reports the one restart that happened
        // instead of failing), or for it to give up.
        let deadline = tokio::time::Instant::now() + CLAIM_WAIT;
        let mut pause = std::time::Duration::from_millis(10);
        let released = loop {
            if let Some(outcome) = store.effect(session_id, &result_key).await? {
                return outcome_of(key, outcome);
            }
            if store.effect(session_id, &released_key).await?.is_some() {
                break true;
            }
            if tokio::time::Instant::now() >= deadline {
                break false;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(std::time::Duration::from_millis(250));
        };
        if !released {
            return Err(Error::user_facing(
                StatusCode::Aborted,
                format!(
                    "the side effect {key} is already being carried out, or was interrupted \
                     before its outcome was recorded; it will not be run twice"
                ),
            ));
        }
        attempt += 1;
    }
}

/// The claimant's part: act, then record the outcome (or release).
async fn act_and_record<T, F, Fut>(
    store: &dyn SessionStore,
    session_id: &str,
    result_key: &str,
    released_key: &str,
    act: F,
) -> Result<T>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce() -> Fut,
    Fut: Future<Output = std::result::Result<T, EffectError>>,
{
    match act().await {
        Ok(value) => {
            let recorded = json!({"ok": serde_json::to_value(&value)?});
            store
                .record_effect(session_id, result_key, recorded)
                .await?;
            Ok(value)
        }
        Err(EffectError::NotApplied(error)) => {
            let note = json!({"releasedAt": now_rfc3339(), "status": error.status().name()});
            store.record_effect(session_id, released_key, note).await?;
            Err(error)
        }
        Err(EffectError::MaybeApplied(error)) => {
            let recorded = json!({"failed": {
                "status": error.status().name(),
                "message": error.message(),
                "userFacing": error.is_user_facing(),
            }});
            store
                .record_effect(session_id, result_key, recorded)
                .await?;
            Err(error)
        }
    }
}

/// What a recorded outcome says: the value, or the recorded failure again.
fn outcome_of<T: DeserializeOwned>(key: &str, outcome: Value) -> Result<T> {
    if let Some(value) = outcome.get("ok") {
        return serde_json::from_value(value.clone()).map_err(|e| {
            Error::internal(format!(
                "the recorded outcome of side effect {key} does not decode: {e}"
            ))
            .with_source(e)
        });
    }
    let failed = outcome.get("failed").ok_or_else(|| {
        Error::internal(format!(
            "the recorded outcome of side effect {key} is malformed"
        ))
    })?;
    let status = failed
        .get("status")
        .and_then(Value::as_str)
        .and_then(StatusCode::from_name)
        .unwrap_or(StatusCode::Internal);
    let message = format!(
        "the side effect {key} failed earlier and will not be run again: {}",
        failed.get("message").and_then(Value::as_str).unwrap_or("")
    );
    Err(
        if failed.get("userFacing").and_then(Value::as_bool) == Some(true) {
            Error::user_facing(status, message)
        } else {
            Error::new(status, message)
        },
    )
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use genkit_core::action::Cancellation;
    use genkit_core::context::ActionContext;
    use genkit_core::tracing::{SpanId, TraceId, TraceInfo};

    use super::*;
    use crate::store::InMemorySessionStore;

    async fn counting_act(count: &AtomicUsize) -> std::result::Result<u32, EffectError> {
        let n = count.fetch_add(1, Ordering::SeqCst) as u32 + 1;
        tokio::task::yield_now().await;
        Ok(n)
    }

    #[tokio::test]
    async fn runs_once_and_returns_the_recorded_result_to_retries() -> Result<()> {
        let store = InMemorySessionStore::new();
        let count = AtomicUsize::new(0);
        let first: u32 = run_once(&store, "s", "charge/1", || counting_act(&count)).await?;
        let again: u32 = run_once(&store, "s", "charge/1", || counting_act(&count)).await?;
        assert_eq!((first, again, count.load(Ordering::SeqCst)), (1, 1, 1));
        // Another key, or the same key in another session, is another effect.
        let other: u32 = run_once(&store, "s", "charge/2", || counting_act(&count)).await?;
        let elsewhere: u32 = run_once(&store, "t", "charge/1", || counting_act(&count)).await?;
        assert_eq!((other, elsewhere), (2, 3));
        Ok(())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_callers_run_it_once() -> Result<()> {
        let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
        let count = Arc::new(AtomicUsize::new(0));
        let barrier = Arc::new(tokio::sync::Barrier::new(8));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (store, count, barrier) = (store.clone(), count.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    run_once(&*store, "s", "restart/x", || async {
                        count.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                        Ok::<_, EffectError>("done".to_owned())
                    })
                    .await
                })
            })
            .collect();
        // The callers that lost the claim wait for the winner's outcome.
        for task in tasks {
            let v = task
                .await
                .map_err(|e| Error::internal(e.to_string()).with_source(e))??;
            assert_eq!(v, "done");
        }
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "the effect ran more than once"
        );
        // Once recorded, everyone gets the result.
        let later: String = run_once(&*store, "s", "restart/x", || async {
            Err::<String, _>(EffectError::NotApplied(Error::internal("must not run")))
        })
        .await?;
        assert_eq!(later, "done");
        Ok(())
    }

    // The paused clock runs the claim wait out at once.
    #[tokio::test(start_paused = true)]
    async fn a_claim_without_an_outcome_is_never_run_again() -> Result<()> {
        let store = InMemorySessionStore::new();
        // A claimant that died mid-effect: its claim, no outcome.
        store
            .record_effect("s", "genkit:claim/restart/x/1", json!({"claimId": "dead"}))
            .await?;
        let ran = AtomicUsize::new(0);
        let err = run_once(&store, "s", "restart/x", || async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, EffectError>(())
        })
        .await
        .err()
        .ok_or_else(|| Error::internal("ran over a dangling claim"))?;
        assert_eq!(err.status(), StatusCode::Aborted);
        assert_eq!(
            err.message(),
            "the side effect restart/x is already being carried out, or was \
             interrupted before its outcome was recorded; it will not be run twice"
        );
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        Ok(())
    }

    #[tokio::test]
    async fn not_applied_releases_the_claim_and_maybe_applied_keeps_it() -> Result<()> {
        let store = InMemorySessionStore::new();
        let err = run_once(&store, "s", "k", || async {
            Err::<u32, _>(EffectError::NotApplied(Error::user_facing(
                StatusCode::Unavailable,
                "the fleet API is down",
            )))
        })
        .await
        .err()
        .ok_or_else(|| Error::internal("expected the failure"))?;
        assert_eq!(err.message(), "the fleet API is down");
        // Released: a retry runs it.
        let v: u32 = run_once(&store, "s", "k", || async { Ok::<_, EffectError>(7) }).await?;
        assert_eq!(v, 7);

        // A failure after acting is the outcome: not run again, same error.
        let err = run_once(&store, "s", "m", || async {
            Err::<u32, _>(Error::user_facing(StatusCode::Internal, "lost the answer").into())
        })
        .await
        .err()
        .ok_or_else(|| Error::internal("expected the failure"))?;
        assert_eq!(err.message(), "lost the answer");
        let ran = AtomicUsize::new(0);
        let err = run_once(&store, "s", "m", || async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, EffectError>(1u32)
        })
        .await
        .err()
        .ok_or_else(|| Error::internal("ran again after a possible effect"))?;
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        assert_eq!(err.status(), StatusCode::Internal);
        assert!(err.is_user_facing());
        assert_eq!(
            err.message(),
            "the side effect m failed earlier and will not be run again: lost the answer"
        );
        Ok(())
    }

    #[tokio::test]
    async fn attempts_are_bounded() -> Result<()> {
        let store = InMemorySessionStore::new();
        for _ in 0..MAX_EFFECT_ATTEMPTS {
            let r = run_once(&store, "s", "k", || async {
                Err::<u32, _>(EffectError::NotApplied(Error::internal("no")))
            })
            .await;
            assert!(r.is_err());
        }
        let err = run_once(&store, "s", "k", || async { Ok::<_, EffectError>(1u32) })
            .await
            .err()
            .ok_or_else(|| Error::internal("expected the bound"))?;
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        Ok(())
    }

    #[tokio::test]
    async fn bad_keys_are_refused() {
        let store = InMemorySessionStore::new();
        for (session, key) in [("", "k"), ("s", ""), ("s", "genkit:owner")] {
            let r = run_once(&store, session, key, || async { Ok::<_, EffectError>(()) }).await;
            assert_eq!(
                r.err().map(|e| e.status()),
                Some(StatusCode::InvalidArgument),
                "{session:?} {key:?}"
            );
        }
    }

    #[test]
    fn the_interrupt_id_comes_from_the_resumed_metadata() {
        let mut ctx: ActionCtx = ActionCtx::new(
            ActionContext::default(),
            Cancellation::default(),
            TraceInfo {
                trace_id: TraceId::random(),
                span_id: SpanId::random(),
            },
        );
        assert_eq!(interrupt_id(&ctx), None);
        let refused = approved_effect_key(&ctx, "restartService").err();
        assert_eq!(
            refused
                .as_ref()
                .map(|e| (e.status(), e.message().to_owned())),
            Some((
                StatusCode::FailedPrecondition,
                "restartService needs a person's approval: it runs only when an agent resumes \
                 its interrupt (the call carries no resumed.interruptId)"
                    .to_owned()
            ))
        );
        ctx.metadata = Some(json!({"resumed": {"toolApproved": true}}));
        assert_eq!(interrupt_id(&ctx), None);
        ctx.metadata = Some(json!({"resumed": {"toolApproved": true, "interruptId": "snap-1/0"}}));
        assert_eq!(interrupt_id(&ctx), Some("snap-1/0"));
        assert_eq!(
            approved_effect_key(&ctx, "restartService").ok().as_deref(),
            Some("restartService/snap-1/0")
        );
    }
}
