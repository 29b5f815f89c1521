//! Fallback: on a failing model call, tries other models in order
//! (Genkit's `fallback` middleware).

use async_trait::async_trait;
use genkit_core::{Error, Registry, Result, StatusCode};
use genkit_model::as_generate_middleware;
use genkit_model::middleware::{ModelCallCtx, ModelMiddleware, ModelNext};
use genkit_model::types::{GenerateRequest, GenerateResponse};
use std::sync::Arc;

/// Called with each error that triggers a fallback.
pub type ErrorCallback = Arc<dyn Fn(&Error) + Send + Sync>;

/// Statuses that trigger a fallback by default.
pub const DEFAULT_FALLBACK_STATUSES: &[StatusCode] = &[
    StatusCode::Unavailable,
    StatusCode::DeadlineExceeded,
    StatusCode::ResourceExhausted,
    StatusCode::Aborted,
    StatusCode::Internal,
    StatusCode::NotFound,
    StatusCode::Unimplemented,
];

/// On a failing model call, tries other models in order.
pub struct Fallback {
    registry: Registry,
    models: Vec<String>,
    /// Per-model config, parallel to `models` (Genkit JS's `{name, config}`).
    configs: Vec<Option<serde_json::Value>>,
    isolate_config: bool,
    statuses: Vec<StatusCode>,
    on_error: Option<ErrorCallback>,
}

/// Fallback middleware: on an error with a fallback status, the same request
/// goes to each of `models` (names such as `openai/gpt-4o-mini`) in turn.
pub fn fallback<S: Into<String>>(
    registry: &Registry,
    models: impl IntoIterator<Item = S>,
) -> Fallback {
    let models: Vec<String> = models.into_iter().map(Into::into).collect();
    Fallback {
        registry: registry.clone(),
        configs: vec![None; models.len()],
        models,
        isolate_config: false,
        statuses: DEFAULT_FALLBACK_STATUSES.to_vec(),
        on_error: None,
    }
}

impl Fallback {
    /// Which statuses trigger a fallback.
    pub fn statuses(mut self, statuses: impl Into<Vec<StatusCode>>) -> Self {
        self.statuses = statuses.into();
        self
    }

    /// Adds a fallback model that inherits the request's config (unless
    /// [`isolate_config`](Self::isolate_config)).
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.models.push(name.into());
        self.configs.push(None);
        self
    }

    /// Adds a fallback model with its own config (Genkit JS's
    /// `{name, config}`), which replaces the request's config for it.
    pub fn model_with_config(mut self, name: impl Into<String>, config: serde_json::Value) -> Self {
        self.models.push(name.into());
        self.configs.push(Some(config));
        self
    }

    /// Whether a fallback model without its own config gets none (Genkit
    /// JS's `isolateConfig`), rather than the original request's.
    pub fn isolate_config(mut self, on: bool) -> Self {
        self.isolate_config = on;
        self
    }

    /// Called with each error that triggers a fallback.
    pub fn on_error(mut self, f: impl Fn(&Error) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }
}

#[async_trait]
impl ModelMiddleware for Fallback {
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        let first = match next.run(req.clone(), ctx.clone()).await {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        if !self.statuses.contains(&first.status()) {
            return Err(first);
        }
        let mut last = first;
        for (name, config) in self.models.iter().zip(&self.configs) {
            if let Some(f) = &self.on_error {
                f(&last);
            }
            tracing::warn!("falling back to model {name} due to error {last}");
            let mut req = req.clone();
            if config.is_some() || self.isolate_config {
                req.config = config.clone();
            }
            let result = async {
                let model = genkit_model::model::lookup_model(&self.registry, name).await?;
                genkit_model::model::call_model(&model, req, &ctx).await
            }
            .await;
            match result {
                Ok(r) => return Ok(r),
                Err(e) if self.statuses.contains(&e.status()) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}
as_generate_middleware!(Fallback, "fallback");

#[cfg(test)]
mod tests {
    use super::*;
    use genkit_model::testing::ProgrammableModel;
    use genkit_model::testing::{ScriptedTail, request, run_layer};
    use genkit_model::types::Message;

    #[tokio::test]
    async fn a_fallback_status_sends_the_request_to_the_next_model() {
        let reg = Registry::new();
        let backup = ProgrammableModel::define(&reg, "backup").respond_text("from backup");
        let tail = ScriptedTail::default().then_fail(Error::new(StatusCode::Unavailable, "down"));
        let out = run_layer(
            fallback(&reg, ["backup"]),
            &tail,
            request(vec![Message::user("x")]),
        );
        assert_eq!(out.await.unwrap().text(), "from backup");
        assert_eq!(backup.requests()[0].messages[0].text(), "x");
    }

    #[tokio::test]
    async fn other_statuses_fail_without_a_fallback() {
        let reg = Registry::new();
        let backup = ProgrammableModel::define(&reg, "backup").respond_text("unused");
        let tail = ScriptedTail::default().then_fail(Error::invalid_argument("bad"));
        let out = run_layer(
            fallback(&reg, ["backup"]),
            &tail,
            request(vec![Message::user("x")]),
        );
        assert_eq!(out.await.unwrap_err().status(), StatusCode::InvalidArgument);
        assert_eq!(backup.call_count(), 0);
    }
}
