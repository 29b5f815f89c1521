//! Progress reports routed to the call that asked for them, including the
//! reports that arrive before the call subscribed.
//!
//! rmcp picks a call's progress token when it queues the request, so a call
//! can only subscribe once the request may already be on its way. On a busy
//! machine the server's first reports can be read before the subscription
//! exists; rmcp's own dispatcher drops them. This router keeps reports for
//! tokens nobody has subscribed to yet (a bounded number, oldest dropped) and
//! hands them to the call when it subscribes.

use parking_lot::Mutex;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Reports kept for tokens no call has subscribed to yet; a server that
/// reports on tokens no call uses cannot make this grow past it.
const EARLY_MAX: usize = 256;
/// Reports queued per subscribed call before the transport waits for it.
const CHANNEL_SIZE: usize = 16;

#[derive(Default)]
struct Routes {
    subscribers: HashMap<ProgressToken, mpsc::Sender<ProgressNotificationParam>>,
    early: VecDeque<ProgressNotificationParam>,
}

/// Routes `notifications/progress` by token; cloned handles share the routes.
#[derive(Clone, Default)]
pub(super) struct ProgressRouter {
    routes: Arc<Mutex<Routes>>,
}

impl ProgressRouter {
    /// Passes `report` to its call, or keeps it until the call subscribes.
    /// Waits while the call's queue is full (the call reads it until its
    /// answer resolves, which is only read after this returns).
    pub(super) async fn dispatch(&self, report: ProgressNotificationParam) {
        let sender = {
            let mut routes = self.routes.lock();
            match routes.subscribers.get(&report.progress_token) {
                Some(sender) => sender.clone(),
                None => {
                    if routes.early.len() == EARLY_MAX {
                        routes.early.pop_front();
                    }
                    routes.early.push_back(report);
                    return;
                }
            }
        };
        // A send fails only when the call has ended: nobody to tell.
        let _ = sender.send(report).await;
    }

    /// The reports for `token`: those that came before this call, then the
    /// rest as they arrive. Dropping the subscription ends the route.
    pub(super) fn subscribe(&self, token: ProgressToken) -> ProgressSubscription {
        let (sender, receiver) = mpsc::channel(CHANNEL_SIZE);
        let mut routes = self.routes.lock();
        let (early, others) = std::mem::take(&mut routes.early)
            .into_iter()
            .partition(|r| r.progress_token == token);
        routes.early = others;
        routes.subscribers.insert(token.clone(), sender);
        ProgressSubscription {
            token,
            early,
            receiver,
            router: self.clone(),
        }
    }
}

/// One call's progress reports, in the order the server sent them.
pub(super) struct ProgressSubscription {
    token: ProgressToken,
    early: VecDeque<ProgressNotificationParam>,
    receiver: mpsc::Receiver<ProgressNotificationParam>,
    router: ProgressRouter,
}

impl ProgressSubscription {
    /// The next report; waits for one.
    pub(super) async fn next(&mut self) -> Option<ProgressNotificationParam> {
        match self.early.pop_front() {
            Some(report) => Some(report),
            None => self.receiver.recv().await,
        }
    }

    /// The next report already queued, without waiting.
    pub(super) fn try_next(&mut self) -> Option<ProgressNotificationParam> {
        self.early
            .pop_front()
            .or_else(|| self.receiver.try_recv().ok())
    }
}

impl Drop for ProgressSubscription {
    fn drop(&mut self) {
        self.router.routes.lock().subscribers.remove(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(token: &str, n: u32) -> ProgressNotificationParam {
        serde_json::from_value(json!({"progressToken": token, "progress": n})).expect("a report")
    }

    fn token(t: &str) -> ProgressToken {
        serde_json::from_value(json!(t)).expect("a token")
    }

    #[tokio::test]
    async fn reports_before_the_subscription_reach_the_call_first_and_in_order() {
        let router = ProgressRouter::default();
        router.dispatch(report("a", 1)).await;
        router.dispatch(report("b", 9)).await;
        router.dispatch(report("a", 2)).await;
        let mut a = router.subscribe(token("a"));
        router.dispatch(report("a", 3)).await;
        let mut seen = Vec::new();
        while let Some(r) = a.try_next() {
            seen.push(r.progress);
        }
        assert_eq!(seen, [1.0, 2.0, 3.0]);
        // The other token's report stays for its own call.
        let mut b = router.subscribe(token("b"));
        assert_eq!(b.next().await.map(|r| r.progress), Some(9.0));
        drop(a);
        router.dispatch(report("a", 4)).await;
        assert!(b.try_next().is_none());
    }

    #[tokio::test]
    async fn reports_nobody_subscribes_to_are_bounded() {
        let router = ProgressRouter::default();
        for n in 0..(EARLY_MAX as u32 + 10) {
            router.dispatch(report("never", n)).await;
        }
        let mut late = router.subscribe(token("never"));
        let first = late.try_next().map(|r| r.progress);
        assert_eq!(first, Some(10.0), "the oldest were dropped");
        let mut count = 1;
        while late.try_next().is_some() {
            count += 1;
        }
        assert_eq!(count, EARLY_MAX);
    }
}
