//! The facade's agent definitions (Genkit's `definePromptAgent` and
//! `defineCustomAgent`).

use std::future::Future;

use crate::agent::types::{AgentInput, AgentResult};
use crate::agent::{Agent, AgentOptions, AgentSession};
use crate::prompt::ExecutablePrompt;
use genkit_core::Result;

use crate::genkit::{Genkit, registered};

impl Genkit {
    /// Defines an agent backed by `prompt` (defined in code or loaded from a
    /// `.prompt` file): each turn continues the session's conversation with
    /// the prompt's model, tools and config. Registers `/agent/<name>`,
    /// `/agent-snapshot/<name>` and `/agent-abort/<name>`.
    ///
    /// # Panics
    /// If one of the three keys is taken or the name is invalid. The fallible
    /// path is
    /// [`genkit::agent::define_prompt_agent`](crate::agent::define_prompt_agent),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_prompt_agent<I, O>(
        &self,
        name: &str,
        prompt: &ExecutablePrompt<I, O>,
        options: AgentOptions,
    ) -> Agent {
        registered(
            "agent",
            name,
            crate::agent::define_prompt_agent(self.as_ref(), name, prompt, options),
        )
    }

    /// Defines an agent whose turns run `turn` on the session (its
    /// messages, custom state and artifacts; the input's message is already
    /// in the history when `turn` starts).
    ///
    /// # Panics
    /// If one of the three keys is taken or the name is invalid. The fallible
    /// path is [`genkit::agent::define_agent`](crate::agent::define_agent),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_custom_agent<F, Fut>(&self, name: &str, options: AgentOptions, turn: F) -> Agent
    where
        F: Fn(AgentSession, AgentInput) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<AgentResult>> + Send + 'static,
    {
        registered(
            "agent",
            name,
            crate::agent::define_agent(self.as_ref(), name, options, turn),
        )
    }
}
