//! Prompt-backed agents (Genkit's `definePromptAgent`): each turn renders
//! the prompt, continues the session's conversation with `generate_stream`
//! (streaming model chunks), and keeps the resulting history. Interrupts end
//! the turn (`finishReason: interrupted`); the next turn resumes them with
//! `resume.respond` / `resume.restart`, which the runtime checked against
//! the interrupts pending in the stored history (see
//! [`input_check`](super::input_check)).

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use genkit_core::{Registry, Result};

use super::runtime::{Agent, AgentOptions, define_agent};
use super::session::AgentSession;
use super::types::{AgentInput, AgentResult, AgentStreamChunk};
use genkit_generate::{GenerateOptions, conversation_from, generate_stream, take_conversation};
use genkit_model::types::{GenerateResponseChunk, Message, Part, Role};
use genkit_prompt::ExecutablePrompt;
use serde_json::Value;

/// The metadata key marking the messages a prompt contributes to a turn
/// (history policies always keep them; clients may not send it).
pub(crate) use genkit_middleware::PREAMBLE_KEY as PREAMBLE;

/// Defines an agent whose turns generate with `prompt` (defined in code or
/// loaded from a `.prompt` file) rendered on an empty input object, and
/// registers its actions.
pub fn define_prompt_agent<I, O>(
    registry: &Registry,
    name: impl Into<String>,
    prompt: &ExecutablePrompt<I, O>,
    options: AgentOptions,
) -> Result<Agent> {
    let prompt = prompt.typed::<serde_json::Value, serde_json::Value>();
    define_prompt_agent_with(registry, name, options, move || {
        let prompt = prompt.clone();
        async move {
            prompt
                .render(serde_json::Value::Object(Default::default()))
                .await
        }
    })
}

/// Defines a prompt-backed agent whose per-turn generate options come from
/// `render` (the prompt's model, system text, tools, config and messages).
pub fn define_prompt_agent_with<R, Fut>(
    registry: &Registry,
    name: impl Into<String>,
    options: AgentOptions,
    render: R,
) -> Result<Agent>
where
    R: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<GenerateOptions>> + Send + 'static,
{
    let render = Arc::new(render);
    let fallback = registry.clone();
    define_agent(registry, name, options, move |session, input| {
        let render = render.clone();
        let registry = session
            .registry()
            .cloned()
            .unwrap_or_else(|| fallback.clone());
        async move {
            let options = render().await?;
            prompt_turn(&registry, &session, input, options).await
        }
    })
}

async fn prompt_turn(
    registry: &Registry,
    session: &AgentSession,
    input: AgentInput,
    mut options: GenerateOptions,
) -> Result<AgentResult> {
    // `input.resume` was checked by the runtime against the interrupts the
    // stored session has pending, and its restarts rebuilt from them
    // (`input_check::check_resume`), before the message was added.
    //
    // The prompt's system text and messages open every request, marked so
    // history policies always keep them (as Genkit JS tags its preamble);
    // they never enter the session.
    let system = options.system.take().map(Message::system);
    let mut messages: Vec<Message> = system
        .into_iter()
        .chain(std::mem::take(&mut options.messages))
        .map(|m| m.with_metadata(PREAMBLE, Value::Bool(true)))
        .collect();
    let preamble = messages.len();
    // The conversation follows, copied into the request's list itself.
    session.copy_messages_into(&mut messages);
    // The turn may change only the last message it is given (the user's,
    // with retrieved context; or the model's, its interrupts resolved) and
    // appends the rest: the session keeps everything before that message
    // and appends what the call reports from there on.
    let keep = (messages.len() - preamble).saturating_sub(1);
    let from = preamble + keep;
    options.messages = messages;
    if let Some(resume) = input.resume {
        if let Some(respond) = resume.respond.filter(|r| !r.is_empty()) {
            options = options.resume_respond(respond);
        }
        if let Some(restart) = resume.restart.filter(|r| !r.is_empty()) {
            options = options.resume_restart(restart);
        }
    }
    let mut stream = generate_stream(registry, options);
    while let Some(chunk) = stream.next().await {
        session.send_chunk(AgentStreamChunk::model_chunk(chunk?.into_chunk()));
    }
    let mut response = stream.response().await?;
    if let Some(conversation) = take_conversation(&mut response) {
        // The call's copy of the history becomes the session's when the
        // call left it as it was (it may change only the last message);
        // otherwise the session keeps its own and appends the call's tail.
        if let Some(conversation) = session.adopt_messages(keep, preamble, conversation) {
            session.replace_messages_from(keep, conversation_from(conversation, from));
        }
    }
    let interrupts: Vec<Part> = response.interrupts().into_iter().cloned().collect();
    if !interrupts.is_empty() {
        // The interrupted requests reach the client as a tool chunk, as in
        // Genkit JS.
        let chunk = GenerateResponseChunk {
            role: Some(Role::Tool),
            content: interrupts,
            ..GenerateResponseChunk::default()
        };
        session.send_chunk(AgentStreamChunk::model_chunk(chunk));
    }
    // The session's artifacts are the turn's (as Genkit JS's prompt agents
    // return them), so a caller of the action, such as the `agents`
    // middleware running a sub-agent, sees what its tools produced.
    let artifacts = session.artifacts();
    Ok(AgentResult {
        message: response.message().cloned(),
        artifacts: (!artifacts.is_empty()).then_some(artifacts),
        finish_reason: response.finish_reason().map(Into::into),
    })
}
