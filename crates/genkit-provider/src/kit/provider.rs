//! [`Provider`]: what one provider plugin declares, and the calls it builds
//! requests for.

use super::*;

/// A request's `config` (or an embed request's `options`) as a provider
/// reads it: any type with defaults, a schema, and serde's `Deserialize`.
/// A per-request `apiKey` is read by the kit from the raw config.
pub trait RequestConfig: DeserializeOwned + JsonSchema + Default + Send + 'static {
    /// Reads a request's `config` (absent or `null` gives the defaults;
    /// `null` members count as absent).
    fn from_value(config: Option<&Value>) -> std::result::Result<Self, serde_json::Error> {
        crate::plugin::parse_options(config)
    }
}

impl<T: DeserializeOwned + JsonSchema + Default + Send + 'static> RequestConfig for T {}

/// The options of a provider without embedders.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
pub struct NoOptions {}

/// One request to send: `POST <base>/<path>` with `body`, a request-scoped
/// key if any, and what the provider needs to read the answer.
#[derive(Debug)]
pub struct WireCall<S> {
    /// The path below the base URL (query included).
    pub path: String,
    /// The JSON body.
    pub body: Value,
    /// The state that reads the answer.
    pub state: S,
}

impl<S> WireCall<S> {
    /// A call to `path` with `body`.
    pub fn new(path: impl Into<String>, body: Value, state: S) -> Self {
        Self {
            path: path.into(),
            body,
            state,
        }
    }

    /// A call to `path` with `body` serialized (`INVALID_ARGUMENT` if it
    /// cannot be).
    pub fn json(path: impl Into<String>, body: &impl Serialize, state: S) -> Result<Self> {
        let body = serde_json::to_value(body).map_err(|e| {
            genkit_core::Error::new(
                genkit_core::StatusCode::InvalidArgument,
                format!("request body: {e}"),
            )
        })?;
        Ok(Self::new(path, body, state))
    }
}

/// One generate call to build a request for.
#[derive(Debug)]
pub struct Chat<'a, P: Provider> {
    /// The model called.
    pub model: &'a P::Model,
    /// The request.
    pub request: &'a GenerateRequest,
    /// Its `config`, parsed.
    pub config: P::Config,
    /// Whether the caller streams.
    pub streaming: bool,
}

/// One embed call to build a request for.
#[derive(Debug)]
pub struct Embed<'a, P: Provider> {
    /// The embedder called.
    pub spec: &'a EmbedderSpec,
    /// The request (with at least one document).
    pub request: &'a EmbedRequest,
    /// Its `options`, parsed.
    pub options: P::EmbedOptions,
}

/// A model a plugin describes: name, label, capabilities.
pub trait ModelDescriptor: Spec + fmt::Debug + Send + Sync + 'static {
    /// A human-readable label, if set.
    fn label(&self) -> Option<&str>;
    /// What the model can do.
    fn supports(&self) -> &ModelSupports;
}

/// What one provider plugin declares; [`ProviderPlugin`] does the rest.
/// The provider value holds the plugin's own settings (e.g. a default
/// `max_tokens`); its builder sets them.
pub trait Provider: fmt::Debug + Default + Clone + Send + Sync + 'static {
    /// Names, defaults, credentials and framing.
    const INFO: ProviderInfo;
    /// A model's description.
    type Model: ModelDescriptor;
    /// A model request's `config`.
    type Config: RequestConfig;
    /// An embed request's `options` ([`NoOptions`] without embedders).
    type EmbedOptions: RequestConfig;
    /// How the API writes its errors.
    type ErrorBody: ErrorBody;
    /// Reads one answer: whole, or streamed frame by frame.
    type Answer: StreamFold<Output = GenerateResponse, Error = ProviderError<Self::ErrorBody>>
        + Send
        + 'static;

    /// The models a new builder lists (default: [`ProviderInfo::models`]).
    fn default_models() -> Vec<Self::Model> {
        Self::INFO
            .models
            .iter()
            .map(|n| Spec::unlisted(n))
            .collect()
    }

    /// The embedders a new builder lists (default:
    /// [`ProviderInfo::embedder_names`]).
    fn default_embedders() -> Vec<EmbedderSpec> {
        Self::INFO
            .embedder_names
            .iter()
            .map(|n| EmbedderSpec::new(*n))
            .collect()
    }

    /// A model's description completed with the provider's defaults for
    /// its name (capabilities, label); listed and unlisted models alike go
    /// through it.
    fn describe_model(&self, spec: Self::Model) -> Self::Model {
        spec
    }

    /// Builds the request for a generate call, and the reader of its answer.
    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<Self::Answer>>;

    /// Reads a whole (non-streamed) answer.
    fn chat_response(&self, answer: Self::Answer, body: &[u8]) -> Result<GenerateResponse>;

    /// What an embedder reports about itself (default: text only).
    fn embedder_info(&self, spec: &EmbedderSpec) -> EmbedderInfo {
        let label = spec
            .label
            .clone()
            .unwrap_or_else(|| format!("{} - {}", Self::INFO.display, spec.name));
        text_embedder_info(label, spec.dimensions)
    }

    /// Builds the request embedding the documents of a request (never empty).
    fn embed_request(&self, embed: Embed<'_, Self>) -> Result<WireCall<()>> {
        Err(genkit_core::Error::new(
            genkit_core::StatusCode::Unimplemented,
            format!(
                "{} has no embedder `{}`",
                Self::INFO.display,
                embed.spec.name
            ),
        ))
    }

    /// Reads the vectors of an embed answer, in document order.
    fn embed_response(&self, body: &[u8]) -> Result<Vec<Vec<f32>>> {
        let _ = body;
        Ok(Vec::new())
    }

    /// Models and embedders the server offers beyond the configured ones
    /// (listed for tools such as the Developer UI).
    fn discover(
        &self,
        client: &ProviderClient,
    ) -> impl Future<Output = Vec<(ActionKind, String)>> + Send {
        let _ = client;
        async { Vec::new() }
    }
}

/// A provider with a builder (as [`provider_plugin!`](crate::provider_plugin)
/// declares it).
pub trait Buildable: Provider {
    /// The plugin's builder, with the provider's defaults.
    type Builder: Default;
}
