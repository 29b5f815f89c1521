//! Support validation: rejects requests a model cannot handle before it is
//! called.

use super::{ModelCallCtx, ModelMiddleware, ModelNext};
use crate::types::{GenerateRequest, GenerateResponse, ModelSupports, Part};
use async_trait::async_trait;
use genkit_core::{Error, Result};

/// Rejects requests a model cannot handle (media, tools, several messages)
/// with `INVALID_ARGUMENT` before the model is called.
pub struct ValidateSupport {
    name: String,
    supports: ModelSupports,
}

/// Validates requests against a model's `supports`.
pub fn validate_support(name: impl Into<String>, supports: ModelSupports) -> ValidateSupport {
    ValidateSupport {
        name: name.into(),
        supports,
    }
}

#[async_trait]
impl ModelMiddleware for ValidateSupport {
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        let invalid = |what: String| {
            Err(Error::invalid_argument(format!(
                "Model '{}' does not support {what}.",
                self.name
            )))
        };
        let s = &self.supports;
        if s.media == Some(false)
            && req
                .messages
                .iter()
                .any(|m| m.content.iter().any(Part::is_media))
        {
            return invalid("media, but media was provided".into());
        }
        if s.tools == Some(false) && !req.tools().is_empty() {
            return invalid("tool use, but tools were provided".into());
        }
        if s.multiturn == Some(false) && req.messages.len() > 1 {
            return invalid(format!(
                "multiple messages, but {} were provided",
                req.messages.len()
            ));
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(ValidateSupport, "validateSupport");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedTail, request, run_layer};
    use crate::types::Message;

    #[tokio::test]
    async fn unsupported_features_are_refused_before_the_model() {
        let tail = ScriptedTail::default();
        let supports = ModelSupports {
            multiturn: Some(false),
            ..ModelSupports::default()
        };
        let req = request(vec![Message::user("a"), Message::user("b")]);
        let err = run_layer(validate_support("m", supports.clone()), &tail, req).await;
        assert_eq!(
            err.unwrap_err().message(),
            "Model 'm' does not support multiple messages, but 2 were provided."
        );
        assert_eq!(tail.calls(), 0);
        let ok = run_layer(
            validate_support("m", supports),
            &tail,
            request(vec![Message::user("a")]),
        );
        assert_eq!(ok.await.unwrap().text(), "ok");
    }
}
