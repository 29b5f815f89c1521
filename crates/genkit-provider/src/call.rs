//! Cancellation of a provider call.

use genkit_core::CancellationToken;
use std::future::Future;

/// Runs `call` unless `cancel` fires first, converting its error into a
/// [`genkit_core::Error`]. On cancellation the call — and with it its HTTP
/// request and connection — is dropped at once, and the result is
/// `CANCELLED`.
pub async fn until_cancelled<T, E: Into<genkit_core::Error>>(
    cancel: &CancellationToken,
    call: impl Future<Output = Result<T, E>>,
) -> genkit_core::Result<T> {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(genkit_core::Error::cancelled()),
        result = call => result.map_err(Into::into),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_core::StatusCode;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct DropFlag(Arc<AtomicBool>);

    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn results_pass_and_errors_convert() {
        let cancel = CancellationToken::new();
        let ok = until_cancelled(&cancel, async { Ok::<_, genkit_core::Error>(7) }).await;
        assert_eq!(ok.unwrap(), 7);
        let err = until_cancelled(&cancel, async {
            Err::<(), _>(genkit_core::Error::internal("boom"))
        })
        .await
        .unwrap_err();
        assert_eq!(err.status(), StatusCode::Internal);
    }

    #[tokio::test]
    async fn cancelling_drops_the_call() {
        let cancel = CancellationToken::new();
        let dropped = Arc::new(AtomicBool::new(false));
        let flag = DropFlag(dropped.clone());
        let call = async move {
            let _flag = flag;
            std::future::pending::<Result<(), genkit_core::Error>>().await
        };
        let canceller = cancel.clone();
        tokio::spawn(async move { canceller.cancel() });
        let err = until_cancelled(&cancel, call).await.unwrap_err();
        assert_eq!(err.status(), StatusCode::Cancelled);
        assert!(dropped.load(Ordering::SeqCst));
    }
}
