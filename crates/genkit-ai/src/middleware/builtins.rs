//! Built-in middleware, as Genkit ships them: retry with backoff, fallback to
//! other models, simulated system prompt, context augmentation, simulated
//! constrained generation, media download and capability validation.

use super::{GenerateMiddleware, ModelCallCtx, ModelMiddleware, ModelNext};
use crate::formats::{needs_simulated_constraints, simulate_constrained_generation as simulate};
use crate::types::{
    DocumentData, GenerateRequest, GenerateResponse, Message, ModelSupports, Part, PartKind, Role,
};
use async_trait::async_trait;
use futures::future::BoxFuture;
use genkit_core::{Error, Registry, Result, StatusCode};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Implements [`GenerateMiddleware`] for a [`ModelMiddleware`] by using it as the model hook.
macro_rules! as_generate_middleware {
    ($ty:ty, $name:literal) => {
        #[async_trait]
        impl GenerateMiddleware for $ty {
            fn name(&self) -> &str {
                $name
            }

            async fn model(
                &self,
                req: GenerateRequest,
                ctx: ModelCallCtx,
                next: ModelNext,
            ) -> Result<GenerateResponse> {
                ModelMiddleware::call(self, req, ctx, next).await
            }
        }
    };
}

// ---------------------------------------------------------------- retry

/// Statuses retried by default.
pub const DEFAULT_RETRY_STATUSES: &[StatusCode] = &[
    StatusCode::Unavailable,
    StatusCode::DeadlineExceeded,
    StatusCode::ResourceExhausted,
    StatusCode::Aborted,
    StatusCode::Internal,
];

/// Called with each retried error and its attempt number.
pub type RetryCallback = Arc<dyn Fn(&Error, u32) + Send + Sync>;

/// Called with each error that triggers a fallback.
pub type ErrorCallback = Arc<dyn Fn(&Error) + Send + Sync>;

/// Decides which media parts to download.
pub type PartFilter = Arc<dyn Fn(&Part) -> bool + Send + Sync>;

/// Retries failed model calls with exponential backoff and jitter.
pub struct Retry {
    max_retries: u32,
    statuses: Vec<StatusCode>,
    initial_delay: Duration,
    max_delay: Duration,
    backoff_factor: f64,
    jitter: bool,
    on_error: Option<RetryCallback>,
}

/// Retry middleware with Genkit's defaults: 3 retries of `UNAVAILABLE`,
/// `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`, `ABORTED` and `INTERNAL`, first
/// delay 1 s doubling up to 60 s, with jitter.
pub fn retry() -> Retry {
    Retry {
        max_retries: 3,
        statuses: DEFAULT_RETRY_STATUSES.to_vec(),
        initial_delay: Duration::from_secs(1),
        max_delay: Duration::from_secs(60),
        backoff_factor: 2.0,
        jitter: true,
        on_error: None,
    }
}

impl Retry {
    /// How many times to retry after the first attempt.
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// Which statuses are retried.
    pub fn statuses(mut self, statuses: impl Into<Vec<StatusCode>>) -> Self {
        self.statuses = statuses.into();
        self
    }

    /// The first delay.
    pub fn initial_delay(mut self, d: Duration) -> Self {
        self.initial_delay = d;
        self
    }

    /// The longest delay.
    pub fn max_delay(mut self, d: Duration) -> Self {
        self.max_delay = d;
        self
    }

    /// The factor the delay grows by after each retry.
    pub fn backoff_factor(mut self, f: f64) -> Self {
        self.backoff_factor = f;
        self
    }

    /// Whether to add random jitter to delays (on by default).
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// Called with each retried error and the attempt number (1-based).
    pub fn on_error(mut self, f: impl Fn(&Error, u32) + Send + Sync + 'static) -> Self {
        self.on_error = Some(Arc::new(f));
        self
    }

    /// The delay before retry `attempt` (0-based), given the current base delay.
    fn delay_with_jitter(&self, base: Duration, attempt: u32) -> Duration {
        if !self.jitter {
            return base;
        }
        let spread = self.initial_delay.as_secs_f64() * 2f64.powi(attempt as i32);
        base + Duration::from_secs_f64(spread * rand::random::<f64>())
    }
}

#[async_trait]
impl ModelMiddleware for Retry {
    async fn call(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        let mut delay = self.initial_delay;
        let mut attempt = 0;
        loop {
            let err = match next.clone().run(req.clone(), ctx.clone()).await {
                Ok(r) => return Ok(r),
                Err(e) => e,
            };
            let retryable = self.statuses.contains(&err.status())
                && !crate::tool::is_interrupt(&err)
                && err.status() != StatusCode::Cancelled;
            if attempt >= self.max_retries || !retryable {
                if retryable {
                    tracing::warn!(
                        "retry attempts exhausted ({}); last error: {err}",
                        self.max_retries
                    );
                }
                return Err(err);
            }
            attempt += 1;
            if let Some(f) = &self.on_error {
                f(&err, attempt);
            }
            let wait = self.delay_with_jitter(delay, attempt - 1);
            tracing::warn!(
                "retry {attempt} of {} in {}ms due to error: {err}",
                self.max_retries,
                wait.as_millis()
            );
            tokio::select! {
                _ = ctx.cancel.cancelled() => return Err(Error::cancelled()),
                _ = tokio::time::sleep(wait) => {}
            }
            delay = Duration::from_secs_f64(
                (delay.as_secs_f64() * self.backoff_factor).min(self.max_delay.as_secs_f64()),
            );
        }
    }
}
as_generate_middleware!(Retry, "retry");

// ---------------------------------------------------------------- fallback

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
    statuses: Vec<StatusCode>,
    on_error: Option<ErrorCallback>,
}

/// Fallback middleware: on an error with a fallback status, the same request
/// goes to each of `models` (names such as `openai/gpt-4o-mini`) in turn.
pub fn fallback<S: Into<String>>(
    registry: &Registry,
    models: impl IntoIterator<Item = S>,
) -> Fallback {
    Fallback {
        registry: registry.clone(),
        models: models.into_iter().map(Into::into).collect(),
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
        for name in &self.models {
            if let Some(f) = &self.on_error {
                f(&last);
            }
            tracing::warn!("falling back to model {name} due to error {last}");
            let result = async {
                let model = crate::model::lookup_model(&self.registry, name).await?;
                crate::model::call_model(&model, req.clone(), &ctx).await
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

// ---------------------------------------------------------------- system prompt

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

// ---------------------------------------------------------------- context

/// Genkit's preface for documents added to the prompt.
pub const CONTEXT_PREFACE: &str = "\n\nUse the following information to complete your task:\n\n";

type ItemTemplate = Arc<dyn Fn(&DocumentData, usize) -> String + Send + Sync>;

/// Adds the request's documents (`docs`) to the last user message, for
/// models that do not take documents natively.
pub struct AugmentWithContext {
    preface: Option<String>,
    citation_key: Option<Option<String>>,
    item_template: Option<ItemTemplate>,
}

/// Context augmentation with Genkit's defaults: the preface, then one
/// `- [ref]: text` line per document.
pub fn augment_with_context() -> AugmentWithContext {
    AugmentWithContext {
        preface: Some(CONTEXT_PREFACE.into()),
        citation_key: None,
        item_template: None,
    }
}

impl AugmentWithContext {
    /// Replaces the preface (`None` for no preface).
    pub fn preface(mut self, preface: Option<String>) -> Self {
        self.preface = preface;
        self
    }

    /// Cites each document by this metadata key (`None` for no citation).
    /// By default documents are cited by `ref`, `id`, or their index.
    pub fn citation_key(mut self, key: Option<String>) -> Self {
        self.citation_key = Some(key);
        self
    }

    /// Renders each document with a custom template.
    pub fn item_template(
        mut self,
        f: impl Fn(&DocumentData, usize) -> String + Send + Sync + 'static,
    ) -> Self {
        self.item_template = Some(Arc::new(f));
        self
    }

    fn render_item(&self, doc: &DocumentData, index: usize) -> String {
        if let Some(t) = &self.item_template {
            return t(doc, index);
        }
        let meta = |k: &str| doc.metadata.as_ref().and_then(|m| m.get(k));
        let show = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut out = String::from("- ");
        match &self.citation_key {
            Some(Some(key)) => {
                let cite = meta(key).map(show).unwrap_or_else(|| "undefined".into());
                out.push_str(&format!("[{cite}]: "));
            }
            Some(None) => {}
            None => {
                let cite = meta("ref")
                    .filter(|v| crate::types::is_truthy(v))
                    .or_else(|| meta("id").filter(|v| crate::types::is_truthy(v)))
                    .map(show)
                    .unwrap_or_else(|| index.to_string());
                out.push_str(&format!("[{cite}]: "));
            }
        }
        out.push_str(&doc.text());
        out.push('\n');
        out
    }
}

fn purpose_is(part: &Part, purpose: &str) -> bool {
    part.metadata_value("purpose").and_then(Value::as_str) == Some(purpose)
}

#[async_trait]
impl ModelMiddleware for AugmentWithContext {
    /// Only when there are documents the messages lack (`generate` has
    /// usually added them to the history already).
    fn applies(&self, req: &GenerateRequest) -> bool {
        req.docs.as_ref().is_some_and(|d| !d.is_empty()) && self.needs_context(&req.messages)
    }

    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        // Checked before `make_mut`, which copies a shared history.
        if self.applies(&req)
            && let Some(docs) = req.docs.as_deref()
        {
            self.augment(Arc::make_mut(&mut req.messages).as_mut_slice(), docs);
        }
        next.run(req, ctx).await
    }
}

impl AugmentWithContext {
    /// Whether the last user message of `messages` lacks the documents (has
    /// no context part, or only a pending one).
    fn needs_context(&self, messages: &[Message]) -> bool {
        let Some(user) = messages.iter().rev().find(|m| m.role == Role::User) else {
            return false;
        };
        match user.content.iter().find(|p| purpose_is(p, "context")) {
            Some(part) => part
                .metadata_value("pending")
                .is_some_and(crate::types::is_truthy),
            None => true,
        }
    }

    /// Adds `docs` to the last user message of `messages` as a `context`
    /// part (replacing a pending one), unless it already has them.
    pub fn augment(&self, messages: &mut [Message], docs: &[DocumentData]) {
        if docs.is_empty() || !self.needs_context(messages) {
            return;
        }
        let Some(user) = messages.iter_mut().rev().find(|m| m.role == Role::User) else {
            return;
        };
        let mut text = self.preface.clone().unwrap_or_default();
        for (i, d) in docs.iter().enumerate() {
            text.push_str(&self.render_item(d, i));
        }
        text.push('\n');
        let part = Part::text(text).with_metadata("purpose", Value::from("context"));
        match user.content.iter().position(|p| purpose_is(p, "context")) {
            Some(i) => user.content[i] = part,
            None => user.content.push(part),
        }
    }
}
as_generate_middleware!(AugmentWithContext, "augmentWithContext");

// ---------------------------------------------------------------- constrained

/// For models without native constrained output: puts the output schema into
/// the prompt as instructions and clears the output constraints.
pub struct SimulateConstrainedGeneration {
    supports: Option<ModelSupports>,
}

/// Simulates constrained generation when the model's `supports.constrained`
/// says it cannot do it natively (always, if `supports` is `None`).
pub fn simulate_constrained_generation(
    supports: Option<ModelSupports>,
) -> SimulateConstrainedGeneration {
    SimulateConstrainedGeneration { supports }
}

#[async_trait]
impl ModelMiddleware for SimulateConstrainedGeneration {
    fn applies(&self, req: &GenerateRequest) -> bool {
        req.output
            .as_ref()
            .is_some_and(|o| o.constrained == Some(true) && o.schema.is_some())
            && needs_simulated_constraints(self.supports.as_ref(), req)
    }

    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        if needs_simulated_constraints(self.supports.as_ref(), &req) {
            simulate(&mut req);
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(
    SimulateConstrainedGeneration,
    "simulateConstrainedGeneration"
);

// ---------------------------------------------------------------- validate support

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

// ---------------------------------------------------------------- media download

/// Fetches a URL's bytes and content type for [`DownloadMedia`].
pub type MediaFetcher = Arc<
    dyn Fn(String, Option<usize>) -> BoxFuture<'static, Result<(Vec<u8>, Option<String>)>>
        + Send
        + Sync,
>;

/// Replaces `http(s)` media URLs in the request with `data:` URLs, for models
/// that cannot fetch media themselves.
pub struct DownloadMedia {
    fetcher: MediaFetcher,
    max_bytes: Option<usize>,
    filter: Option<PartFilter>,
}

/// Media download using `fetcher` to get each URL's bytes and content type
/// (`download_request_media_http()` gives an HTTP fetcher when the
/// `download-media` feature is on).
pub fn download_request_media(fetcher: MediaFetcher) -> DownloadMedia {
    DownloadMedia {
        fetcher,
        max_bytes: None,
        filter: None,
    }
}

impl DownloadMedia {
    /// Refuse media larger than this.
    pub fn max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = Some(n);
        self
    }

    /// Only download parts for which `f` is true.
    pub fn filter(mut self, f: impl Fn(&Part) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(f));
        self
    }
}

/// Media download over HTTP with `reqwest` (feature `download-media`).
#[cfg(feature = "download-media")]
pub fn download_request_media_http() -> DownloadMedia {
    let client = reqwest::Client::new();
    download_request_media(Arc::new(move |url, max| {
        let client = client.clone();
        Box::pin(async move {
            let resp = client.get(&url).send().await.map_err(|e| {
                Error::new(
                    StatusCode::Unavailable,
                    format!("downloading media '{url}': {e}"),
                )
            })?;
            let status = resp.status().as_u16();
            if status != 200 {
                let body = resp.text().await.unwrap_or_default();
                return Err(Error::new(
                    StatusCode::from_http_status(status),
                    format!("HTTP error downloading media '{url}': {body}"),
                ));
            }
            let content_type = resp
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let (Some(max), Some(len)) = (max, resp.content_length())
                && len as usize > max
            {
                return Err(Error::invalid_argument(format!(
                    "media '{url}' is {len} bytes, more than the {max} allowed"
                )));
            }
            let bytes = resp.bytes().await.map_err(|e| {
                Error::new(
                    StatusCode::Unavailable,
                    format!("downloading media '{url}': {e}"),
                )
            })?;
            Ok((bytes.to_vec(), content_type))
        })
    }))
}

#[async_trait]
impl ModelMiddleware for DownloadMedia {
    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        use base64::Engine;
        let wanted = |part: &Part| match &part.kind {
            PartKind::Media(media) => {
                media.url.starts_with("http") && self.filter.as_ref().is_none_or(|f| f(part))
            }
            _ => false,
        };
        // Copy-on-write: the history is copied only when something is fetched.
        if !req.messages.iter().any(|m| m.content.iter().any(wanted)) {
            return next.run(req, ctx).await;
        }
        for message in Arc::make_mut(&mut req.messages) {
            for part in &mut message.content {
                if !wanted(part) {
                    continue;
                }
                let PartKind::Media(media) = &part.kind else {
                    continue;
                };
                let (bytes, sniffed) = (self.fetcher)(media.url.clone(), self.max_bytes).await?;
                if let Some(max) = self.max_bytes
                    && bytes.len() > max
                {
                    return Err(Error::invalid_argument(format!(
                        "media '{}' is {} bytes, more than the {max} allowed",
                        media.url,
                        bytes.len()
                    )));
                }
                let content_type = media.content_type.clone().or(sniffed).unwrap_or_default();
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                *part = Part::media(
                    format!("data:{content_type};base64,{data}"),
                    Some(&content_type),
                );
            }
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(DownloadMedia, "downloadRequestMedia");
