//! Process termination signals, shared by every server of the process.
//!
//! The first SIGINT (Ctrl-C) or SIGTERM resolves every [`signal`] future: flow
//! servers stop accepting and finish what is in flight, the dev tooling
//! removes its runtime file. A second signal exits at once. Installing a
//! handler takes the default "terminate" action away, so when no server of
//! this crate is serving (see [`crate::FlowServer::serve`]) the dev tooling ends the process itself
//! after cleaning up (see [`crate::DevToolingOptions::exit_on_signal`]).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::watch;

/// Which signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
}

impl Signal {
    /// The conventional exit status of a process ended by this signal.
    pub fn exit_code(self) -> i32 {
        match self {
            Self::Interrupt => 130,
            Self::Terminate => 143,
        }
    }
}

static SIGNALS: OnceLock<watch::Sender<Option<Signal>>> = OnceLock::new();
static PARTICIPANTS: AtomicUsize = AtomicUsize::new(0);

fn sender() -> &'static watch::Sender<Option<Signal>> {
    SIGNALS.get_or_init(|| {
        let (tx, _) = watch::channel(None);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(listen());
        } else {
            ::tracing::warn!("no tokio runtime: termination signals are not handled");
        }
        tx
    })
}

async fn listen() {
    let mut signals = match Signals::new() {
        Ok(s) => s,
        Err(e) => {
            ::tracing::warn!("cannot listen for termination signals: {e}");
            return;
        }
    };
    let mut count = 0u32;
    while let Some(sig) = signals.next().await {
        count += 1;
        if count > 1 {
            ::tracing::warn!("second termination signal: exiting now");
            std::process::exit(sig.exit_code());
        }
        if let Some(tx) = SIGNALS.get() {
            tx.send_replace(Some(sig));
        }
    }
}

#[cfg(unix)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
        })
    }

    async fn next(&mut self) -> Option<Signal> {
        tokio::select! {
            r = self.int.recv() => r.map(|_| Signal::Interrupt),
            r = self.term.recv() => r.map(|_| Signal::Terminate),
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn next(&mut self) -> Option<Signal> {
        tokio::signal::ctrl_c()
            .await
            .ok()
            .map(|_| Signal::Interrupt)
    }
}

/// Resolves on the first SIGINT or SIGTERM received after the first call of
/// [`signal`] or [`received`] in this process. Call it inside a tokio runtime.
pub async fn signal() {
    received().await;
}

/// Like [`signal`], telling which signal arrived.
pub async fn received() -> Signal {
    let mut rx = sender().subscribe();
    loop {
        if let Some(sig) = *rx.borrow_and_update() {
            return sig;
        }
        if rx.changed().await.is_err() {
            // The sender is static and never dropped; wait forever to be safe.
            futures::future::pending::<()>().await;
        }
    }
}

/// Starts listening for signals now (idempotent).
pub(crate) fn install() {
    sender();
}

/// Marks the process as running a server that shuts down gracefully on a
/// signal (so the dev tooling must not end the process itself).
pub(crate) struct Participant(());

impl Participant {
    pub(crate) fn enter() -> Self {
        install();
        PARTICIPANTS.fetch_add(1, Ordering::SeqCst);
        Self(())
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        PARTICIPANTS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Whether a server of this crate is handling signals gracefully.
pub(crate) fn has_participants() -> bool {
    PARTICIPANTS.load(Ordering::SeqCst) > 0
}
