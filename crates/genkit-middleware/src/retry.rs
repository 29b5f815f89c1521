//! Retry: retries failed model calls with exponential backoff and jitter
//! (Genkit's `retry` middleware).
//!
//! A provider's `Retry-After` (carried in the error's details as
//! `retryAfterMs`, which the provider plugins fill from the header or the
//! body) is honoured as Genkit JS 1.35 does: the wait is at least that long.
//! Unlike Genkit JS, a suggested wait longer than [`Retry::max_delay`] ends
//! the retries there and then: a server must not be able to stall a call past
//! the longest delay its caller allowed, and retrying sooner than it asked
//! would only be refused again.

use async_trait::async_trait;
use genkit_core::{Error, Result, StatusCode};
use genkit_model::as_generate_middleware;
use genkit_model::middleware::{ModelCallCtx, ModelMiddleware, ModelNext};
use genkit_model::types::{GenerateRequest, GenerateResponse};
use std::sync::Arc;
use std::time::Duration;

/// Statuses retried by default.
pub const DEFAULT_RETRY_STATUSES: &[StatusCode] = &[
    StatusCode::Unavailable,
    StatusCode::DeadlineExceeded,
    StatusCode::ResourceExhausted,
    StatusCode::Aborted,
    StatusCode::Internal,
];

/// Called with each retried error and its attempt number.
pub type RetryCallback = Arc<dyn Fn(&Error, u32) + Send + Sync>;

/// Retries failed model calls with exponential backoff and jitter.
pub struct Retry {
    max_retries: u32,
    statuses: Vec<StatusCode>,
    initial_delay: Duration,
    max_delay: Duration,
    backoff_factor: f64,
    jitter: bool,
    on_error: Option<RetryCallback>,
}

/// Retry middleware with Genkit's defaults: 3 retries of `UNAVAILABLE`,
/// `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `ABORTED` and `INTERNAL`, first
/// delay 1 s doubling up to 60 s, with jitter.
pub fn retry() -> Retry {
    Retry {
        max_retries: 3,
        statuses: DEFAULT_RETRY_STATUSES.to_vec(),
        initial_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(60),
        backoff_factor: 2.0,
        jitter: true,
        on_error: None,
    }
}

impl Retry {
    /// How many times to retry after the first attempt.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Which statuses are retried.
    pub fn statuses(mut self, statuses: impl Into<Vec<StatusCode>>) -> Self {
        self.statuses = statuses.into();
        self
    }

    /// The first delay.
    pub fn initial_delay(mut self, d: Duration) -> Self {
        self.initial_delay = d;
        self
    }

    /// The longest delay.
    pub fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// The factor the delay grows by after each retry.
    pub fn backoff_factor(mut self, f: f64) -> Self {
        self.backoff_factor = f;
        self
    }

    /// Whether to add random jitter to delays (on by default).
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// Called with each retried error and the attempt number (1-based).
    pub fn on_error(mut self, f: impl Fn(&Error, u32) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }

    /// The delay before retry `attempt` (0-based), given the current base delay.
    fn delay_with_jitter(&self, base: Duration, attempt: u32) -> Duration {
        if !self.jitter {
            return base;
        }
        let doubling = 2f64.powi(i32::try_from(attempt).unwrap_or(i32::MAX));
        let spread = self.initial_delay.as_secs_f64() * doubling;
        base.saturating_add(saturating_secs(spread * rand::random::<f64>()))
    }

    /// The base delay after `delay`: grown by the backoff factor, at most
    /// the longest delay.
    fn next_delay(&self, delay: Duration) -> Duration {
        saturating_secs(delay.as_secs_f64() * self.backoff_factor).min(self.max_delay)
    }
}

/// The wait a provider asked for (`retryAfterMs` in the error's details,
/// as Genkit JS's `responseMetadata.retryAfterMs`), if it is a sane number.
fn retry_after(err: &Error) -> Option<Duration> {
    let ms = err.details()?.get("retryAfterMs")?.as_f64()?;
    (ms.is_finite() && ms > 0.0).then(|| saturating_secs(ms / 1000.0))
}

/// `secs` seconds as a duration that never panics: negative or NaN is
/// zero, too large (or infinite) is [`Duration::MAX`]. Settings such as a
/// huge `max_delay` or an odd `backoff_factor` must not crash a call.
fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

#[async_trait]
impl ModelMiddleware for Retry {
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        let mut delay = self.initial_delay;
        let mut attempt = 0;
        loop {
            let err = match next.clone().run(req.clone(), ctx.clone()).await {
                Ok(r) => return Ok(r),
                Err(e) => e,
            };
            let retryable = self.statuses.contains(&err.status())
                && !genkit_model::tool::is_interrupt(&err)
                && err.status() != StatusCode::Cancelled;
            if attempt >= self.max_retries || !retryable {
                if retryable {
                    tracing::warn!(
                        "retry attempts exhausted ({}); last error: {err}",
                        self.max_retries
                    );
                }
                return Err(err);
            }
            attempt += 1;
            if let Some(f) = &self.on_error {
                f(&err, attempt);
            }
            let mut wait = self.delay_with_jitter(delay, attempt - 1);
            if let Some(after) = retry_after(&err) {
                if after > self.max_delay {
                    tracing::warn!(
                        "not retrying: the model asks to wait {}ms, longer than the longest delay \
                         allowed ({}ms); error: {err}",
                        after.as_millis(),
                        self.max_delay.as_millis()
                    );
                    return Err(err);
                }
                wait = wait.max(after);
            }
            tracing::warn!(
                "retry {attempt} of {} in {}ms due to error: {err}",
                self.max_retries,
                wait.as_millis()
            );
            tokio::select! {
                _ = ctx.cancel.cancelled() => return Err(Error::cancelled()),
                _ = tokio::time::sleep(wait) => {}
            }
            delay = self.next_delay(delay);
        }
    }
}
as_generate_middleware!(Retry, "retry");

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::testing::{ScriptedTail, request, run_layer};
    use genkit_model::types::Message;

    fn quick() -> Retry {
        retry()
            .initial_delay(Duration::from_millis(1))
            .jitter(false)
    }

    #[tokio::test]
    async fn retries_retryable_errors_until_the_model_answers() {
        let tail = ScriptedTail::default()
            .then_fail(Error::new(StatusCode::Unavailable, "busy"))
            .then_fail(Error::new(StatusCode::Unavailable, "busy"));
        let out = run_layer(quick(), &tail, request(vec![Message::user("x")])).await;
        assert_eq!(out.unwrap().text(), "ok");
        assert_eq!(tail.calls(), 3);
    }

    #[tokio::test]
    async fn other_errors_and_exhausted_retries_fail() {
        let tail = ScriptedTail::default().then_fail(Error::invalid_argument("bad"));
        let err = run_layer(quick(), &tail, request(vec![Message::user("x")])).await;
        assert_eq!(err.unwrap_err().status(), StatusCode::InvalidArgument);
        assert_eq!(tail.calls(), 1);

        let tail = ScriptedTail::default()
            .then_fail(Error::new(StatusCode::Unavailable, "1"))
            .then_fail(Error::new(StatusCode::Unavailable, "2"));
        let err = run_layer(
            quick().max_retries(1),
            &tail,
            request(vec![Message::user("x")]),
        )
        .await;
        assert_eq!(err.unwrap_err().message(), "2");
        assert_eq!(tail.calls(), 2);
    }

    fn rate_limited(retry_after_ms: serde_json::Value) -> Error {
        Error::new(StatusCode::ResourceExhausted, "slow down")
            .with_details(serde_json::json!({"httpStatus": 429, "retryAfterMs": retry_after_ms}))
    }

    #[tokio::test(start_paused = true)]
    async fn waits_at_least_as_long_as_the_provider_asks() {
        let tail = ScriptedTail::default().then_fail(rate_limited(serde_json::json!(5000)));
        let started = tokio::time::Instant::now();
        let out = run_layer(quick(), &tail, request(vec![Message::user("x")])).await;
        assert_eq!(out.unwrap().text(), "ok");
        assert_eq!(tail.calls(), 2);
        let waited = started.elapsed();
        assert!(waited >= Duration::from_secs(5), "{waited:?}");
        assert!(waited < Duration::from_secs(6), "{waited:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_longest_delay_ends_the_retries() {
        let tail = ScriptedTail::default().then_fail(rate_limited(serde_json::json!(120_000)));
        let started = tokio::time::Instant::now();
        let err = run_layer(
            quick().max_delay(Duration::from_secs(60)),
            &tail,
            request(vec![Message::user("x")]),
        )
        .await
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::ResourceExhausted);
        assert_eq!(tail.calls(), 1);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn odd_retry_after_values_are_ignored() {
        for odd in [
            serde_json::json!(-5),
            serde_json::json!(0),
            serde_json::json!("5000"),
            serde_json::json!(null),
        ] {
            assert_eq!(retry_after(&rate_limited(odd.clone())), None, "{odd}");
        }
        assert_eq!(
            retry_after(&rate_limited(serde_json::json!(1e300))),
            Some(Duration::MAX)
        );
        assert_eq!(retry_after(&Error::new(StatusCode::Unavailable, "x")), None);
    }

    #[test]
    fn absurd_delays_and_factors_never_panic() {
        let huge = retry()
            .initial_delay(Duration::MAX)
            .max_delay(Duration::MAX);
        for factor in [2.0, f64::INFINITY, f64::NAN, -1.0, 1e300] {
            let r = retry()
                .initial_delay(Duration::MAX)
                .max_delay(Duration::MAX)
                .backoff_factor(factor);
            let next = r.next_delay(Duration::MAX);
            assert!(next == Duration::MAX || next == Duration::ZERO, "{factor}");
        }
        assert_eq!(huge.delay_with_jitter(Duration::MAX, 5000), Duration::MAX);
        assert_eq!(
            quick()
                .max_delay(Duration::from_secs(3))
                .next_delay(Duration::from_secs(2)),
            Duration::from_secs(3)
        );
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        assert_eq!(saturating_secs(1e300), Duration::MAX);
        assert_eq!(saturating_secs(1.5), Duration::from_millis(1500));
    }
}
