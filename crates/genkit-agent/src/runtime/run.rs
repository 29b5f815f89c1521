//! A run of an agent: one turn per input on the session, each ending with
//! a `turnEnd` chunk (and a stored snapshot); a failed turn ends the run.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::future::{Either, select};
use futures::{FutureExt, StreamExt};
use genkit_core::Result;
use genkit_core::action::{ActionCtx, BidiInputs};
use genkit_core::tracing::{with_cancellation_scope, with_extension};
use genkit_model::middleware::{ConversationArtifactsRef, ConversationScope};

use super::TurnFuture;
use super::agent::Shared;
use super::detach::detach;
use super::snapshots::snapshot_of;
use super::turn_failure::report_failed_turn;
use crate::input_check::admit;
use crate::session::AgentSession;
use crate::types::{
    AgentFinishReason, AgentInit, AgentInput, AgentOutput, AgentStreamChunk, RuntimeError,
    SnapshotStatus, TurnEnd,
};

/// The turn function's future, with the session in the context of
/// everything it calls.
fn start_turn(shared: &Shared, session: &AgentSession, mut input: AgentInput) -> TurnFuture {
    session.begin_turn();
    if let Some(message) = &input.message {
        session.add_messages([message.clone()]);
    }
    input.detach = None;
    let fut = (shared.turn)(session.clone(), input);
    // Middleware that remembers results (the tool cache) keeps them per
    // session. (The inner extension is added once the outer one is in
    // place: `with_extension` starts from the frame current when called.)
    // The history policy keeps its summaries with the session, as
    // artifacts.
    let scope = ConversationScope::new(session.session_id());
    let artifacts = ConversationArtifactsRef(Arc::new(session.clone()));
    with_extension(session.clone(), async move {
        with_extension(scope, async move { with_extension(artifacts, fut).await }).await
    })
    .boxed()
}

pub(super) struct Progress {
    pub(super) parent: Option<String>,
    /// The session version `parent` was read at (or appended as).
    pub(super) version: u64,
    pub(super) message: Option<genkit_model::types::Message>,
    pub(super) artifacts: Option<Vec<crate::types::Artifact>>,
    pub(super) finish_reason: Option<AgentFinishReason>,
    /// Who the run speaks for: the owner of a session it creates.
    pub(super) principal: Option<String>,
}

/// The turn function's future for `input`, built so that the model calls,
/// tools and flows it runs see the session's abort signal as their
/// cancellation (`ActionCtx::is_cancelled`): an abort or a detached turn's
/// deadline stops them, not only the turn function.
fn cancellable_turn(shared: &Shared, session: &AgentSession, input: AgentInput) -> TurnFuture {
    with_cancellation_scope(session.abort_token(), || start_turn(shared, session, input))
}

async fn run(
    shared: Arc<Shared>,
    init: AgentInit,
    mut inputs: BidiInputs<AgentInput>,
    ctx: ActionCtx<AgentStreamChunk>,
) -> Result<AgentOutput> {
    let principal = shared.principal_of(&ctx.context);
    let (state, parent, version) = match shared.resolve(init, principal.as_deref()).await? {
        Ok(start) => start,
        Err(failure) => {
            return Ok(AgentOutput {
                finish_reason: Some(AgentFinishReason::Failed),
                error: Some(RuntimeError::from(&failure.error)),
                state: failure.state,
                ..AgentOutput::default()
            });
        }
    };
    let session = AgentSession::with_transform(
        state,
        Some(ctx.clone()),
        ctx.registry().cloned(),
        shared.transform.clone(),
    );
    let mut progress = Progress {
        parent,
        version,
        message: None,
        artifacts: None,
        finish_reason: None,
        principal,
    };
    let mut queue: VecDeque<AgentInput> = VecDeque::new();
    let mut open = true;
    loop {
        let input = match queue.pop_front() {
            Some(input) => input,
            None if !open => break,
            None => match inputs.next().await {
                Some(input) => input?,
                None => break,
            },
        };
        // A detach-only input detaches the session as it is; any other
        // input is a turn (one with neither message nor resume is refused
        // by `admit`, as a failed turn).
        if input.is_detach() && !input.has_payload() {
            let now = session.state();
            return detach(&shared, &session, &mut progress, None, now).await;
        }
        let before = session.state();
        let mut slot = None;
        if input.is_detach() {
            // Refused before the turn starts: Genkit JS runs the turn (and
            // calls the model) in the background of a failed invocation.
            shared.detach_store()?;
            slot = Some(shared.detached.acquire(&shared.name)?);
        }
        // The client speaks as the user only, within the caps, and resumes
        // only what the stored session has pending; a refused input is a
        // failed turn (as Genkit JS fails a bad resume) that changed nothing,
        // and is not detached.
        let admitted = admit(
            input,
            &before,
            progress.parent.as_deref(),
            &shared.limits,
            &shared.history_sizes,
        );
        let refused = admitted.is_err();
        let mut turn = match admitted {
            Ok(input) => cancellable_turn(&shared, &session, input),
            Err(refused) => futures::future::ready(Err(refused)).boxed(),
        };
        if let Some(slot) = slot.filter(|_| !refused) {
            // Detached as it starts: the pending snapshot is the session
            // before the turn (as Genkit JS writes it).
            let turn = Some((turn, slot));
            return detach(&shared, &session, &mut progress, turn, before).await;
        }
        let outcome = loop {
            if !open {
                break (&mut turn).await;
            }
            match select(&mut turn, inputs.next()).await {
                Either::Left((outcome, _)) => break outcome,
                Either::Right((None, _)) => open = false,
                Either::Right((Some(next), _)) => {
                    let next = next?;
                    if next.is_detach() && !next.has_payload() {
                        // Detached mid-turn: the pending snapshot is the
                        // session as the turn has it so far.
                        let slot = shared.detached.acquire(&shared.name)?;
                        let now = session.state();
                        let turn = Some((turn, slot));
                        return detach(&shared, &session, &mut progress, turn, now).await;
                    }
                    queue.push_back(next);
                }
            }
        };
        // A turn that grew the session past a cap fails, and the session
        // stays as it was before it (its failed snapshot too: it is not
        // stored over the cap).
        let mut over_cap = false;
        let outcome = outcome.and_then(|result| {
            let (grown, origin) = session.state_and_origin();
            shared
                .limits
                .check_state(&grown, &origin, &shared.history_sizes, 0, 0)
                .inspect_err(|_| {
                    over_cap = true;
                })?;
            Ok(result)
        });
        match outcome {
            Ok(result) => {
                let finish = result.finish_reason;
                let snapshot_id = match &shared.store {
                    Some(store) => {
                        let mut snap = snapshot_of(
                            &session,
                            progress.parent.clone(),
                            SnapshotStatus::Completed,
                            session.state(),
                        );
                        snap.finish_reason = finish;
                        let principal = progress.principal.as_deref();
                        let stored = shared
                            .append(store, snap, progress.version, principal)
                            .await?;
                        let id = stored.snapshot.snapshot_id;
                        progress.parent = Some(id.clone());
                        progress.version = stored.session_version;
                        Some(id)
                    }
                    None => None,
                };
                session.send_chunk(AgentStreamChunk::turn_end(TurnEnd {
                    snapshot_id,
                    finish_reason: finish,
                }));
                progress.message = result.message.or(progress.message.take());
                progress.artifacts = result.artifacts;
                progress.finish_reason = finish;
            }
            Err(error) => {
                // The failed snapshot records the state as the turn left it
                // (as Genkit JS does); the run goes on from the state before.
                let left = if over_cap {
                    before.clone()
                } else {
                    session.state()
                };
                session.restore(before);
                let runtime_error = report_failed_turn(&shared.name, &error).await;
                let failed_id = match &shared.store {
                    Some(store) => {
                        let mut snap = snapshot_of(
                            &session,
                            progress.parent.clone(),
                            SnapshotStatus::Failed,
                            left,
                        );
                        snap.finish_reason = Some(AgentFinishReason::Failed);
                        snap.error = Some(runtime_error.clone());
                        let principal = progress.principal.as_deref();
                        let stored = shared
                            .append(store, snap, progress.version, principal)
                            .await?;
                        Some(stored.snapshot.snapshot_id)
                    }
                    None => None,
                };
                session.send_chunk(AgentStreamChunk::turn_end(TurnEnd {
                    snapshot_id: failed_id,
                    finish_reason: Some(AgentFinishReason::Failed),
                }));
                let mut output = output_of(&shared, &session, &progress);
                // No message: the previous turn's reply is not this turn's,
                // and a client showing it would show a stale answer.
                output.message = None;
                output.artifacts = None;
                output.finish_reason = Some(AgentFinishReason::Failed);
                output.error = Some(runtime_error);
                return Ok(output);
            }
        }
    }
    Ok(output_of(&shared, &session, &progress))
}

/// [`run`], with a client-managed agent's state signed on the way out and
/// checked on the way in when the agent signs its states.
pub(super) async fn run_signed(
    shared: Arc<Shared>,
    mut init: AgentInit,
    inputs: BidiInputs<AgentInput>,
    ctx: ActionCtx<AgentStreamChunk>,
) -> Result<AgentOutput> {
    let Some(signer) = shared.signer.clone() else {
        return run(shared, init, inputs, ctx).await;
    };
    if let Some(state) = init.state.take() {
        init.state = Some(signer.verify(state)?);
    }
    let mut output = run(shared, init, inputs, ctx).await?;
    if let Some(state) = output.state.take() {
        output.state = Some(signer.sign(state)?);
    }
    Ok(output)
}

pub(super) fn output_of(
    shared: &Shared,
    session: &AgentSession,
    progress: &Progress,
) -> AgentOutput {
    let server = shared.store.is_some();
    AgentOutput {
        session_id: Some(session.session_id()),
        snapshot_id: if server {
            progress.parent.clone()
        } else {
            None
        },
        state: (!server).then(|| shared.client_state(session.state())),
        message: progress.message.clone(),
        artifacts: progress.artifacts.clone(),
        finish_reason: progress.finish_reason,
        error: None,
    }
}
