//! The agent runtime: an agent is the bidirectional action `/agent/<name>`
//! with its companions `/agent-snapshot/<name>` and `/agent-abort/<name>`,
//! registered and described as Genkit JS 1.42 does.
//!
//! A run resolves its init to a session (fresh, the client's state, or a
//! stored snapshot), then runs one turn per input: the user's message is
//! added, the agent's turn function runs on the session, and the turn ends
//! with a `turnEnd` chunk (and, with a store, a snapshot chained to the
//! previous one). A failed turn ends the run gracefully (`finishReason:
//! failed`, the error in the output and snapshot) and leaves the state as it
//! was. A `detach` input hands the running turn to a background task that
//! records its outcome in a pending snapshot.
//!
//! Server-managed sessions belong to the principal that created them (see
//! [`ownership`](super::ownership)); their ids are minted here unless the
//! agent lets clients name them; a resume continues a session and never
//! branches it (forks are [`Agent::fork`], or opted into); detached turns
//! run under a deadline and a per-agent limit, and an abort cancels the
//! model calls and tools they run.
//!
//! One module per job:
//!
//! - `options`: [`AgentOptions`], what an agent is defined with.
//! - `agent`: [`define_agent`] and [`Agent`], the three actions and the
//!   state they share.
//! - `start`: the session a run starts from (fresh, the client's state, or
//!   a stored snapshot), forks refused, expired turns closed.
//! - `run`: a run's turns, one per input, and their outcome.
//! - `detach`: detached turns: the hand-off, heartbeat, deadline and abort.
//! - `detach_limits`: how long a detached turn may run, and how many at once.
//! - `replica`: the lease a detached turn holds in the store, so replicas
//!   sharing it can take over a dead one's sessions and abort its turns.
//! - `snapshots`: reading, forking and appending snapshots.
//! - `turn_failure`: what a failed turn tells the client, the log and the
//!   trace.

mod agent;
mod detach;
mod detach_limits;
mod options;
mod replica;
mod run;
mod snapshots;
mod start;
mod turn_failure;

use futures::future::BoxFuture;
use genkit_core::Result;
use genkit_core::action::BidiAction;

use crate::session::AgentSession;
use crate::types::{AgentInit, AgentInput, AgentOutput, AgentResult, AgentStreamChunk};

pub use agent::{Agent, agent_metadata, define_agent};
pub use detach_limits::{DEFAULT_DETACHED_TIMEOUT, DEFAULT_MAX_DETACHED};
pub use options::AgentOptions;
pub use replica::{DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_LEASE_TIME, process_replica_id};
pub(crate) use turn_failure::FailedTurnSlot;

/// The bidirectional action of an agent.
pub type AgentAction = BidiAction<AgentInit, AgentInput, AgentOutput, AgentStreamChunk>;

/// What a turn function returns.
pub type TurnFuture = BoxFuture<'static, Result<AgentResult>>;

type TurnFn = dyn Fn(AgentSession, AgentInput) -> TurnFuture + Send + Sync;
