//! Genkit's Agent API runtime: agents as bidirectional actions, and the
//! sessions their turns work on. The wire types, snapshots and the store
//! contract are `genkit-session`'s (re-exported here as [`types`],
//! [`store`], [`json_patch`] and [`clock`]), so a store needs none of this.
//!
//! - [`runtime`]: [`define_agent`] registers `/agent/<name>` with its
//!   `/agent-snapshot/<name>` and `/agent-abort/<name>` companions; turns,
//!   snapshots, detach and abort.
//! - [`prompt_agent`]: agents whose turns generate with a prompt.
//! - [`session`]: the [`AgentSession`] a turn works on (also reachable from
//!   the context of tools and flows it calls).
//! - [`middleware`]: the `agents` (sub-agent delegation) and `artifacts`
//!   middleware of Genkit's `@genkit-ai/middleware`.
//! - [`chat`]: an in-process chat client ([`Agent::chat`]).
//! - [`types`]: the agent's init, inputs, stream chunks and output, session
//!   state and snapshots, with exactly Genkit JS's JSON shape (from
//!   `genkit-session`, with [`store`], [`json_patch`] and [`clock`]).
//! - [`input_check`]: what a client may say: it speaks as the user, and
//!   resumes only the interrupts the stored session has pending (with
//!   server-minted interrupt ids).
//! - [`limits`]: per-session caps on messages and bytes, per-message caps.
//! - [`state_signing`]: client-managed agents' trust boundary, and signed
//!   state.
//! - [`transform`]: what clients see of the sessions ([`ClientTransform`]).
//! - [`json_patch`]: JSON Patch (RFC 6902) as agents stream their custom
//!   state (`customPatch` chunks), computed exactly as Genkit JS does.
//! - [`store`]: the [`SessionStore`](store::SessionStore) trait (versioned,
//!   optimistic writes) and the in-memory store.
//! - [`effect`]: side effects that happen once ([`run_once`]), keyed by
//!   the server-minted interrupt id of an approved tool call.
//! - [`clock`]: snapshot timestamps and heartbeat expiry.
//! - [`ownership`]: who a server-managed session belongs to (principals).

pub mod chat;
pub mod effect;
pub mod input_check;
pub mod limits;
pub mod middleware;
pub mod ownership;
pub mod prompt_agent;
pub mod runtime;
pub mod session;
pub mod state_signing;
pub mod transform;

pub use genkit_session::{clock, json_patch, store, types};

pub use chat::{AgentChat, AgentTurnStream};
pub use effect::{EffectError, run_once};
pub use input_check::INTERRUPT_ID_KEY;
pub use prompt_agent::{define_prompt_agent, define_prompt_agent_with};
pub use runtime::{
    Agent, AgentAction, AgentOptions, DEFAULT_HEARTBEAT_INTERVAL, DEFAULT_LEASE_TIME, TurnFuture,
    define_agent, process_replica_id,
};
pub use session::AgentSession;
pub use state_signing::STATE_SIGNATURE_KEY;
pub use transform::ClientTransform;
