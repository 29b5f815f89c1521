//! Progress reports delivered in the order the server sent them.
//!
//! rmcp hands each notification to the client handler on a task of its own,
//! while it resolves a response directly in its receive loop. A tool call's
//! last progress reports can therefore reach the handler after the call's
//! answer, or overtake one another. This transport wrapper passes every
//! `notifications/progress` to the [`ProgressRouter`] inside `receive`,
//! before the message after it (the answer, say) is read: when a call's
//! response resolves, every report the server sent before it is already
//! queued for the caller, in order.

use super::progress_router::ProgressRouter;
use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::future::Future;

/// A client transport that dispatches progress notifications as it reads them.
pub(super) struct ProgressTap<T> {
    inner: T,
    progress: ProgressRouter,
}

impl<T> ProgressTap<T> {
    /// Wraps `inner`; reports go to `progress`'s subscribers.
    pub(super) fn new(inner: T, progress: ProgressRouter) -> Self {
        ProgressTap { inner, progress }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        if let Some(JsonRpcMessage::Notification(n)) = &message
            && let ServerNotification::ProgressNotification(p) = &n.notification
        {
            // A subscriber reads its channel until its call's answer has
            // resolved, and the answer is only read after this returns, so
            // waiting for channel room here cannot deadlock.
            self.progress.dispatch(p.params.clone()).await;
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ProgressToken;
    use serde_json::json;
    use std::collections::VecDeque;

    /// Hands out scripted server messages, one per `receive`.
    struct Script(VecDeque<RxJsonRpcMessage<RoleClient>>);

    impl Transport<RoleClient> for Script {
        type Error = std::io::Error;

        fn send(
            &mut self,
            _item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            std::future::ready(Ok(()))
        }

        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            self.0.pop_front()
        }

        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    fn message(value: serde_json::Value) -> RxJsonRpcMessage<RoleClient> {
        serde_json::from_value(value).expect("a server message")
    }

    fn progress(token: &str, n: u32) -> RxJsonRpcMessage<RoleClient> {
        message(json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n}}))
    }

    #[tokio::test]
    async fn every_report_is_queued_before_the_message_after_it_is_read() {
        let answer = message(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}));
        let dispatcher = ProgressRouter::default();
        let token: ProgressToken = serde_json::from_value(json!("call-7")).expect("token");
        let mut reports = dispatcher.subscribe(token);
        let script = [
            progress("call-7", 1),
            progress("other", 5),
            progress("call-7", 2),
        ];
        let mut tap = ProgressTap::new(
            Script(script.into_iter().chain([answer]).collect()),
            dispatcher,
        );
        for _ in 0..3 {
            assert!(matches!(
                tap.receive().await,
                Some(JsonRpcMessage::Notification(_))
            ));
        }
        // The answer comes next; both reports of this call are already
        // queued, in order, and the other call's report is not among them.
        assert!(matches!(
            tap.receive().await,
            Some(JsonRpcMessage::Response(_))
        ));
        let mut seen = Vec::new();
        while let Some(p) = reports.try_next() {
            seen.push(p.progress);
        }
        assert_eq!(seen, [1.0, 2.0]);
        assert!(tap.receive().await.is_none());
    }
}
