//! [`Provider`]: what one provider plugin declares ([`ProviderInfo`], its
//! models' [`ModelSpec`]s), and the calls it builds requests for.

use super::*;

/// The default [`timeout`](PluginSetup::timeout): ten minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// How the API key travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header (e.g. `x-api-key`).
    Named(&'static str),
}

/// How a streamed answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFormat {
    /// Server-Sent Events.
    Sse,
    /// Newline-delimited JSON, lines up to `max_line` bytes.
    Ndjson {
        /// Longest line accepted.
        max_line: usize,
    },
}

/// What a provider is, as data: a `const` built from [`ProviderInfo::new`]
/// with the fields that differ.
#[derive(Debug, Clone, Copy)]
pub struct ProviderInfo {
    /// The plugin's type name in messages and labels (e.g. `Anthropic`).
    pub display: &'static str,
    /// The default plugin name: the namespace of its actions.
    pub default_name: &'static str,
    /// The API's default base URL.
    pub default_base_url: &'static str,
    /// The variable `from_env` reads the base URL from, if any (as the
    /// provider's own SDKs do: `OPENAI_BASE_URL`, `OLLAMA_HOST`, ...).
    pub base_url_env: Option<&'static str>,
    /// A path `from_env` appends to the URL in [`base_url_env`](Self::base_url_env),
    /// for SDK variables that name the server without the API version
    /// (Google's `GOOGLE_GEMINI_BASE_URL`); empty for none.
    pub base_url_env_path: &'static str,
    /// Variables holding the key, in order; read only with the default base
    /// URL or one from [`base_url_env`](Self::base_url_env) (both are the
    /// user's settings for this provider), so a key is never sent to a server
    /// configured in code for something else.
    pub key_env: &'static [&'static str],
    /// How the key is sent.
    pub key_header: KeyHeader,
    /// Whether a call without a key fails (`FAILED_PRECONDITION`) on the
    /// default base URL.
    pub key_required: bool,
    /// Whether a request's `config.apiKey` may replace the key (else it is
    /// refused: request configs are traced).
    pub request_keys: bool,
    /// Headers sent with every request (e.g. an API version).
    pub headers: &'static [(&'static str, &'static str)],
    /// Config keys dropped before parsing (other Genkits' client overrides).
    pub ignored_config_keys: &'static [&'static str],
    /// How streamed answers are framed.
    pub stream: StreamFormat,
    /// The models a new builder lists.
    pub models: &'static [&'static str],
    /// The embedders a new builder lists.
    pub embedder_names: &'static [&'static str],
}

impl ProviderInfo {
    /// A provider without key or extra headers, streaming SSE.
    pub const fn new(
        display: &'static str,
        default_name: &'static str,
        default_base_url: &'static str,
    ) -> Self {
        Self {
            display,
            default_name,
            default_base_url,
            base_url_env: None,
            base_url_env_path: "",
            key_env: &[],
            key_header: KeyHeader::Bearer,
            key_required: false,
            request_keys: false,
            headers: &[],
            ignored_config_keys: &[],
            stream: StreamFormat::Sse,
            models: &[],
            embedder_names: &[],
        }
    }
}

/// A model description: a name, a label, and the capabilities that differ
/// from the provider's defaults for that name.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// The model's name at the provider, without the plugin prefix.
    pub name: String,
    /// A human-readable label.
    pub label: Option<String>,
    /// What the model can do (unset capabilities take the provider's).
    pub supports: ModelSupports,
}

impl ModelSpec {
    /// A model with no capabilities declared (the provider fills them in).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: None,
            supports: ModelSupports::default(),
        }
    }

    /// Sets the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Sets all capabilities.
    pub fn supports(mut self, supports: ModelSupports) -> Self {
        self.supports = supports;
        self
    }

    /// Declares whether the model can call tools.
    pub fn tools(mut self, tools: bool) -> Self {
        self.supports.tools = Some(tools);
        self
    }

    /// Declares whether the model accepts images and other media.
    pub fn media(mut self, media: bool) -> Self {
        self.supports.media = Some(media);
        self
    }

    /// Declares native constrained (schema-enforced) output.
    pub fn constrained(mut self, constrained: genkit_model::types::ConstrainedSupport) -> Self {
        self.supports.constrained = Some(constrained);
        self
    }

    /// This spec with `defaults` for every capability it leaves unset, and
    /// the label `<provider> - <name>` unless it has one.
    pub fn with_defaults(mut self, defaults: ModelSupports, provider: &str) -> Self {
        let (Ok(Value::Object(mut merged)), Ok(Value::Object(own))) = (
            serde_json::to_value(&defaults),
            serde_json::to_value(&self.supports),
        ) else {
            return self;
        };
        merged.extend(own.into_iter().filter(|(_, v)| !v.is_null()));
        self.supports = serde_json::from_value(Value::Object(merged)).unwrap_or(defaults);
        let label = self.label.take();
        self.label = label.or_else(|| Some(format!("{provider} - {}", self.name)));
        self
    }
}

impl AsRef<ModelSpec> for ModelSpec {
    fn as_ref(&self) -> &ModelSpec {
        self
    }
}

impl Spec for ModelSpec {
    fn name(&self) -> &str {
        &self.name
    }

    fn unlisted(name: &str) -> Self {
        ModelSpec::new(name)
    }
}

/// A request's `config` (or an embed request's `options`): any type with
/// defaults, a schema and `Deserialize`.
pub trait RequestConfig: DeserializeOwned + JsonSchema + Default + Send + 'static {
    /// Reads a request's `config` (absent or `null` gives the defaults;
    /// `null` members count as absent).
    fn from_value(config: Option<&Value>) -> std::result::Result<Self, serde_json::Error> {
        crate::plugin::parse_options(config)
    }
}

impl<T: DeserializeOwned + JsonSchema + Default + Send + 'static> RequestConfig for T {}

/// One request to send: `POST <base>/<path>` with `body`, and the state
/// that reads the answer.
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
        let path = path.into();
        Self { path, body, state }
    }

    /// A call to `path` with `body` serialized (`INVALID_ARGUMENT` if it
    /// cannot be).
    pub fn json(path: impl Into<String>, body: &impl Serialize, state: S) -> Result<Self> {
        let body = serde_json::to_value(body).map_err(|e| {
            genkit_core::Error::invalid_argument(format!("request body: {e}")).with_source(e)
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

/// What [`provider_plugin!`](crate::provider_plugin) declares for a
/// provider: its plugin's builder and whether the plugin has embedders.
pub trait Declared {
    /// The builder, with the provider's defaults.
    type Builder: Default;
    /// Whether the plugin has embedders (`with embedders`).
    const EMBEDDERS: bool;
}

/// What one provider plugin declares, with how its API writes errors
/// ([`ErrorFormat`]); [`ProviderPlugin`] does the rest. The provider value
/// holds the plugin's own settings, which its builder sets.
pub trait Provider: ErrorFormat + Declared + Default + Clone {
    /// Names, defaults, credentials and framing.
    const INFO: ProviderInfo;
    /// A model's description: a [`ModelSpec`], or one extending it.
    type Model: Spec + AsRef<ModelSpec> + fmt::Debug + Send + Sync + 'static;
    /// A model request's `config`.
    type Config: RequestConfig;
    /// An embed request's `options` (`()` without embedders).
    type EmbedOptions: RequestConfig;
    /// Reads one answer: whole, or streamed frame by frame.
    type Answer: StreamFold<Output = GenerateResponse, Error = ProviderError<Self>> + Send + 'static;

    /// The models a new builder lists (default: [`ProviderInfo::models`]).
    fn default_models() -> Vec<Self::Model> {
        let names = Self::INFO.models.iter();
        names.map(|n| Spec::unlisted(n)).collect()
    }

    /// The embedders a new builder lists (default:
    /// [`ProviderInfo::embedder_names`]).
    fn default_embedders() -> Vec<EmbedderSpec> {
        let names = Self::INFO.embedder_names.iter();
        names.map(|n| EmbedderSpec::new(*n)).collect()
    }

    /// A model's description completed with the provider's defaults for its
    /// name (listed and unlisted models alike).
    fn describe_model(&self, spec: Self::Model) -> Self::Model {
        spec
    }

    /// Builds the request for a generate call, and the reader of its answer.
    fn chat_request(&self, chat: Chat<'_, Self>) -> Result<WireCall<Self::Answer>>;

    /// Reads a whole (non-streamed) answer.
    fn chat_response(&self, answer: Self::Answer, body: &[u8]) -> Result<GenerateResponse>;

    /// What an embedder reports about itself (default: text only).
    fn embedder_info(&self, spec: &EmbedderSpec) -> EmbedderInfo {
        let label = spec.label.clone();
        let label = label.unwrap_or_else(|| format!("{} - {}", Self::INFO.display, spec.name));
        text_embedder_info(label, spec.dimensions)
    }

    /// Builds the request embedding a request's documents (never empty).
    fn embed_request(&self, embed: Embed<'_, Self>) -> Result<WireCall<()>> {
        let (display, name) = (Self::INFO.display, &embed.spec.name);
        Err(genkit_core::Error::new(
            genkit_core::StatusCode::Unimplemented,
            format!("{display} has no embedder `{name}`"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::constrained_chat_supports;

    #[test]
    fn declared_capabilities_win_over_the_provider_defaults() {
        let spec = ModelSpec::new("m")
            .tools(false)
            .with_defaults(constrained_chat_supports(), "P");
        assert_eq!(spec.supports.tools, Some(false));
        assert_eq!(spec.supports.multiturn, Some(true));
        assert_eq!(spec.label.as_deref(), Some("P - m"));
        let labelled = ModelSpec::new("m")
            .label("Mine")
            .with_defaults(ModelSupports::default(), "P");
        assert_eq!(labelled.label.as_deref(), Some("Mine"));
        assert_eq!(labelled.supports, ModelSupports::default());
    }
}
