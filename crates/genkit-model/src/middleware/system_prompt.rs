//! Simulated system prompt: for models without a system role, the system
//! message becomes a user message plus a model acknowledgement.

use super::{ModelCallCtx, ModelMiddleware, ModelNext};
use crate::types::{GenerateRequest, GenerateResponse, Message, Part, Role};
use async_trait::async_trait;
use genkit_core::Result;
use std::sync::Arc;

/// Turns the system message into a user message plus a model acknowledgement,
/// for models without a system role.
pub struct SimulateSystemPrompt {
    preface: String,
    acknowledgement: String,
}

/// Simulated system prompt with Genkit's defaults (`SYSTEM INSTRUCTIONS:\n`, `Understood.`).
pub fn simulate_system_prompt() -> SimulateSystemPrompt {
    SimulateSystemPrompt {
        preface: "SYSTEM INSTRUCTIONS:\n".into(),
        acknowledgement: "Understood.".into(),
    }
}

impl SimulateSystemPrompt {
    /// The text put before the system instructions.
    pub fn preface(mut self, s: impl Into<String>) -> Self {
        self.preface = s.into();
        self
    }

    /// The model's reply to the instructions.
    pub fn acknowledgement(mut self, s: impl Into<String>) -> Self {
        self.acknowledgement = s.into();
        self
    }
}

#[async_trait]
impl ModelMiddleware for SimulateSystemPrompt {
    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        if let Some(i) = req.messages.iter().position(|m| m.role == Role::System) {
            let messages = Arc::make_mut(&mut req.messages);
            let system = messages.remove(i);
            let mut content = vec![Part::text(self.preface.clone())];
            content.extend(system.content);
            messages.insert(i, Message::new(Role::User, content));
            messages.insert(
                i + 1,
                Message::new(Role::Model, Part::text(self.acknowledgement.clone())),
            );
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(SimulateSystemPrompt, "simulateSystemPrompt");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedTail, request, run_layer};

    #[tokio::test]
    async fn the_system_message_becomes_a_user_turn_and_an_acknowledgement() {
        let tail = ScriptedTail::default();
        let req = request(vec![
            Message::new(Role::System, "be brief"),
            Message::user("hi"),
        ]);
        run_layer(simulate_system_prompt(), &tail, req)
            .await
            .unwrap();
        let seen: Vec<(Role, String)> = tail
            .last()
            .messages
            .iter()
            .map(|m| (m.role, m.text()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (Role::User, "SYSTEM INSTRUCTIONS:\nbe brief".to_owned()),
                (Role::Model, "Understood.".to_owned()),
                (Role::User, "hi".to_owned()),
            ]
        );
    }
}
