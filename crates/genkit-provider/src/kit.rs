//! The plugin kit: what a provider plugin declares ([`Provider`]: its
//! [`ProviderInfo`], how it builds a wire request, parses an answer and
//! folds a stream) and what the kit does for it ([`ProviderPlugin`]:
//! options, HTTP, credentials, timeouts, errors, cancellation, config
//! parsing, and the registration of its models and embedders).

use crate::config::CommonConfig;
use crate::error::HttpError;
use crate::http::{HttpClientBuilder, USER_AGENT};
use crate::plugin::{
    ConfigRules, EmbedderSpec, Spec, SpecList, check_embedding_count, header_map,
    parse_request_config, text_embedder_info, validate_http_url, validate_name,
};
use crate::provider_error::{ErrorBody, ProviderError};
use crate::stream::{FrameReader, StreamFold, fold_stream};
use crate::{ApiKey, Deadline, HttpClient, until_cancelled};
use bytes::Bytes;
use genkit_ai::embedder::{EmbedderAction, EmbedderInfo, EmbedderOptions, embedder};
use genkit_ai::model::{Model, ModelCtx, ModelOptions};
use genkit_ai::types::{
    EmbedRequest, EmbedResponse, Embedding, GenerateRequest, GenerateResponse, ModelSupports,
};
use genkit_core::{ActionDesc, ActionKind, DynAction, IntoDynAction, Plugin, Registry, Result};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

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

/// What a provider is, as data: names, defaults, credentials, framing.
/// Built in a `const` with [`ProviderInfo::new`] and the setters below.
#[derive(Debug, Clone, Copy)]
pub struct ProviderInfo {
    /// The plugin's type name in messages and labels (e.g. `Anthropic`).
    pub display: &'static str,
    /// The default plugin name: the namespace of its actions.
    pub default_name: &'static str,
    /// The API's default base URL.
    pub default_base_url: &'static str,
    /// The environment variable `from_env` reads the base URL from, if any.
    pub base_url_env: Option<&'static str>,
    /// Environment variables holding the key, in order; read only when the
    /// base URL is the default one, so a key is never sent elsewhere.
    pub key_env: &'static [&'static str],
    /// How the key is sent.
    pub key_header: KeyHeader,
    /// Whether a call without a key fails (`FAILED_PRECONDITION`) when the
    /// base URL is the default one.
    pub key_required: bool,
    /// Whether a request's `config.apiKey` may replace the key. When not,
    /// the key is refused (the request config is recorded in traces).
    pub request_keys: bool,
    /// Headers sent with every request (e.g. an API version).
    pub headers: &'static [(&'static str, &'static str)],
    /// Config keys dropped before parsing (other Genkit implementations'
    /// client overrides).
    pub ignored_config_keys: &'static [&'static str],
    /// How streamed answers are framed.
    pub stream: StreamFormat,
    /// Whether the provider has embedders.
    pub embedders: bool,
}

impl ProviderInfo {
    /// A provider without key, extra headers or embedders, streaming
    /// Server-Sent Events.
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
            key_env: &[],
            key_header: KeyHeader::Bearer,
            key_required: false,
            request_keys: false,
            headers: &[],
            ignored_config_keys: &[],
            stream: StreamFormat::Sse,
            embedders: false,
        }
    }

    /// The key travels as `header`; `env` names its variables, and a call
    /// without one fails when `required`.
    pub const fn key(
        mut self,
        header: KeyHeader,
        env: &'static [&'static str],
        required: bool,
    ) -> Self {
        self.key_header = header;
        self.key_env = env;
        self.key_required = required;
        self
    }

    /// A request's `config.apiKey` may replace the key.
    pub const fn request_keys(mut self) -> Self {
        self.request_keys = true;
        self
    }

    /// Sends `headers` with every request.
    pub const fn headers(mut self, headers: &'static [(&'static str, &'static str)]) -> Self {
        self.headers = headers;
        self
    }

    /// Drops these config keys before parsing.
    pub const fn ignore_config_keys(mut self, keys: &'static [&'static str]) -> Self {
        self.ignored_config_keys = keys;
        self
    }

    /// Streams are framed as `stream`.
    pub const fn stream(mut self, stream: StreamFormat) -> Self {
        self.stream = stream;
        self
    }

    /// The provider has embedders.
    pub const fn embedders(mut self) -> Self {
        self.embedders = true;
        self
    }

    /// `from_env` reads the base URL from `var`.
    pub const fn base_url_env(mut self, var: &'static str) -> Self {
        self.base_url_env = Some(var);
        self
    }
}

/// A request's `config` (or an embed request's `options`) as a provider
/// reads it.
pub trait RequestConfig: DeserializeOwned + JsonSchema + Default + Send + 'static {
    /// A key for this request only (`apiKey`), if the config holds one.
    fn api_key(&self) -> Option<&ApiKey> {
        None
    }
}

impl RequestConfig for CommonConfig {
    fn api_key(&self) -> Option<&ApiKey> {
        self.api_key.as_ref()
    }
}

/// The options of a provider without embedders.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema)]
pub struct NoOptions {}

impl RequestConfig for NoOptions {}

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

    /// The models a new builder lists.
    fn default_models() -> Vec<Self::Model> {
        Vec::new()
    }

    /// The embedders a new builder lists.
    fn default_embedders() -> Vec<EmbedderSpec> {
        Vec::new()
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
    /// The plugin's builder.
    type Builder: ProviderBuilder<Self>;
}

/// A plugin builder, as [`provider_plugin!`](crate::provider_plugin)
/// defines it: the shared options and the provider's own settings.
pub trait ProviderBuilder<P: Provider>: Default + Clone + fmt::Debug {
    /// The shared options.
    fn setup_mut(&mut self) -> &mut PluginSetup<P::Model>;
    /// The provider and the shared options, to build the plugin from.
    fn into_parts(self) -> (P, PluginSetup<P::Model>);
}

/// The options every provider plugin takes. Builders set them; see the
/// builder methods of the same names.
#[derive(Clone)]
pub struct PluginSetup<M> {
    /// The plugin name: the namespace of its actions.
    pub name: String,
    /// The API's base URL.
    pub base_url: String,
    /// The API key.
    pub api_key: Option<ApiKey>,
    /// An environment variable to read the key from.
    pub api_key_env: Option<String>,
    /// Whether a call without a key fails before a request goes out.
    pub require_api_key: Option<bool>,
    /// The longest wait at any one point (see the builders' `timeout`).
    pub timeout: Option<Duration>,
    /// Headers sent with every request (values treated as secrets).
    pub headers: Vec<(String, String)>,
    /// A custom HTTP client.
    pub http_client: Option<reqwest::Client>,
    /// The models listed.
    pub models: SpecList<M>,
    /// The embedders listed.
    pub embedders: SpecList<EmbedderSpec>,
}

impl<M: Spec> fmt::Debug for PluginSetup<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginSetup")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("api_key_env", &self.api_key_env)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("models", &self.models.as_slice().len())
            .field("embedders", &self.embedders.as_slice().len())
            .finish_non_exhaustive()
    }
}

impl<M: Spec> PluginSetup<M> {
    /// The defaults of `info`, listing `models` and `embedders`.
    pub fn new(
        info: &ProviderInfo,
        models: impl IntoIterator<Item = M>,
        embedders: impl IntoIterator<Item = EmbedderSpec>,
    ) -> Self {
        Self {
            name: info.default_name.to_owned(),
            base_url: info.default_base_url.to_owned(),
            api_key: None,
            api_key_env: None,
            require_api_key: None,
            timeout: Some(DEFAULT_TIMEOUT),
            headers: Vec::new(),
            http_client: None,
            models: SpecList::new(models),
            embedders: SpecList::new(embedders),
        }
    }
}

/// Declares a provider plugin: the plugin type (`ProviderPlugin<$provider>`
/// under the plugin's name), the provider struct with its own settings and
/// their defaults, and the builder — the shared options, a setter for each
/// of the provider's settings, the shared setters (`name`, `base_url`,
/// `api_key`, `api_key_env`, `require_api_key`, `timeout`, `no_timeout`,
/// `header`, `http_client`, `models`, `model`, and `with embedders` also
/// `embedders`, `embedder`) and `build`. The plugin then implements
/// [`Provider`] for the provider struct.
#[macro_export]
macro_rules! provider_plugin {
    (
        $(#[$pdoc:meta])* pub type $plugin:ident;
        $(#[$sdoc:meta])* pub struct $provider:ident {
            $($(#[$fdoc:meta])* $field:ident: $fty:ty = $default:expr),* $(,)?
        }
        $(#[$bdoc:meta])* pub struct $builder:ident $(with $embedders:ident)?;
    ) => {
        $(#[$pdoc])*
        pub type $plugin = $crate::kit::ProviderPlugin<$provider>;

        $(#[$sdoc])*
        #[derive(Debug, Clone)]
        pub struct $provider {
            $($field: $fty),*
        }

        impl Default for $provider {
            fn default() -> Self {
                Self { $($field: $default),* }
            }
        }

        impl $crate::kit::Buildable for $provider {
            type Builder = $builder;
        }

        $(#[$bdoc])*
        #[derive(Debug, Clone)]
        pub struct $builder {
            setup: $crate::kit::PluginSetup<<$provider as $crate::kit::Provider>::Model>,
            provider: $provider,
        }

        impl Default for $builder {
            fn default() -> Self {
                use $crate::kit::Provider;
                Self {
                    setup: $crate::kit::PluginSetup::new(
                        &$provider::INFO,
                        $provider::default_models(),
                        $provider::default_embedders(),
                    ),
                    provider: $provider::default(),
                }
            }
        }

        impl $crate::kit::ProviderBuilder<$provider> for $builder {
            fn setup_mut(
                &mut self,
            ) -> &mut $crate::kit::PluginSetup<<$provider as $crate::kit::Provider>::Model> {
                &mut self.setup
            }
            fn into_parts(
                self,
            ) -> (
                $provider,
                $crate::kit::PluginSetup<<$provider as $crate::kit::Provider>::Model>,
            ) {
                (self.provider, self.setup)
            }
        }

        impl $builder {
            $(
                $(#[$fdoc])*
                pub fn $field(mut self, value: $fty) -> Self {
                    self.provider.$field = value;
                    self
                }
            )*
        }

        $crate::provider_plugin!(@shared $builder, $provider);
        $($crate::provider_plugin!(@$embedders $builder);)?
    };
    (@embedders $builder:ident) => {
        impl $builder {
            /// Replaces the list of known embedders.
            pub fn embedders(
                mut self,
                embedders: impl IntoIterator<Item = $crate::plugin::EmbedderSpec>,
            ) -> Self {
                self.setup.embedders = $crate::plugin::SpecList::new(embedders);
                self
            }
            /// Adds (or replaces, by name) one known embedder.
            pub fn embedder(mut self, embedder: $crate::plugin::EmbedderSpec) -> Self {
                self.setup.embedders.upsert(embedder);
                self
            }
        }
    };
    (@shared $builder:ident, $provider:ident) => {
        impl $builder {
            /// The plugin name: the namespace of its actions (`<name>/<model>`).
            pub fn name(mut self, name: impl Into<String>) -> Self {
                self.setup.name = name.into();
                self
            }
            /// The API's base URL.
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.setup.base_url = url.into();
                self
            }
            /// The API key. Without one, the key comes from the variable
            /// named by [`api_key_env`](Self::api_key_env), else (only with
            /// the default base URL, so a key is never sent to another
            /// server by accident) from the provider's usual variable.
            pub fn api_key(mut self, key: impl Into<$crate::ApiKey>) -> Self {
                self.setup.api_key = Some(key.into());
                self
            }
            /// Reads the key from the environment variable `var` when no key is given.
            pub fn api_key_env(mut self, var: impl Into<String>) -> Self {
                self.setup.api_key_env = Some(var.into());
                self
            }
            /// Whether a call without any key fails with `FAILED_PRECONDITION`
            /// before a request goes out (default: when the provider needs a
            /// key and the base URL is its own).
            pub fn require_api_key(mut self, required: bool) -> Self {
                self.setup.require_api_key = Some(required);
                self
            }
            /// The timeout: the longest the plugin waits for the server at
            /// any one point — for the response headers, for a whole
            /// non-streamed body, and between two frames of a stream (so a
            /// long stream that keeps flowing is never cut, and one that
            /// stalls fails). Exceeding it is `DEADLINE_EXCEEDED`. Default:
            /// ten minutes.
            pub fn timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.setup.timeout = Some(timeout);
                self
            }
            /// Waits as long as the server takes (cancellation still ends a call).
            pub fn no_timeout(mut self) -> Self {
                self.setup.timeout = None;
                self
            }
            /// Adds a header to every request. Values are treated as secrets.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.setup.headers.push((name.into(), value.into()));
                self
            }
            /// Uses this HTTP client (proxies, custom TLS roots...). It should
            /// not follow redirects, so credentials never go to another host.
            pub fn http_client(mut self, client: ::reqwest::Client) -> Self {
                self.setup.http_client = Some(client);
                self
            }
            /// Replaces the list of known models.
            pub fn models(
                mut self,
                models: impl IntoIterator<Item = <$provider as $crate::kit::Provider>::Model>,
            ) -> Self {
                self.setup.models = $crate::plugin::SpecList::new(models);
                self
            }
            /// Adds (or replaces, by name) one known model.
            pub fn model(mut self, model: <$provider as $crate::kit::Provider>::Model) -> Self {
                self.setup.models.upsert(model);
                self
            }
            /// Builds the plugin. Fails with `INVALID_ARGUMENT` for an empty
            /// name, a base URL that is not `http(s)`, or an invalid header.
            pub fn build(self) -> ::genkit_core::Result<$crate::kit::ProviderPlugin<$provider>> {
                $crate::kit::ProviderPlugin::from_builder(self)
            }
        }
    };
}

/// A provider's HTTP client: base URL, credentials, headers and timeout,
/// with failures read as [`ProviderError`]s.
#[derive(Clone)]
pub struct ProviderClient {
    http: HttpClient,
    api_key: Option<ApiKey>,
    key_header: KeyHeader,
    missing_key: Option<String>,
    timeout: Option<Duration>,
}

impl fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderClient")
            .field("http", &self.http)
            .field("api_key", &self.api_key)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl ProviderClient {
    fn new<M: Spec>(info: &ProviderInfo, setup: &PluginSetup<M>) -> Result<Self> {
        validate_name(&setup.name)?;
        validate_http_url("base URL", &setup.base_url)?;
        let on_default =
            setup.base_url.trim_end_matches('/') == info.default_base_url.trim_end_matches('/');
        let api_key = setup
            .api_key
            .clone()
            .or_else(|| setup.api_key_env.as_deref().and_then(ApiKey::from_env))
            .or_else(|| {
                on_default
                    .then(|| ApiKey::from_env_vars(info.key_env))
                    .flatten()
            });
        let required = setup
            .require_api_key
            .unwrap_or(info.key_required && on_default);
        let missing_key = required.then(|| {
            format!(
                "plugin `{}` has no API key: call `.api_key(..)` on the {} builder or set {}",
                setup.name,
                info.display,
                info.key_env.join(" or ")
            )
        });
        let mut headers = header_map(&setup.headers)?;
        for (name, value) in info.headers {
            headers.insert(
                HeaderName::from_static(name),
                HeaderValue::from_static(value),
            );
        }
        let http = match &setup.http_client {
            Some(client) => client.clone(),
            None => {
                let mut builder = HttpClientBuilder::new().user_agent(USER_AGENT);
                if let Some(t) = setup.timeout {
                    builder = builder.connect_timeout(t);
                }
                builder.build()?
            }
        };
        let deadline = setup.timeout.map_or(Deadline::None, Deadline::PerWait);
        Ok(Self {
            http: HttpClient::new(http, &setup.base_url, deadline).with_headers(headers),
            api_key,
            key_header: info.key_header,
            missing_key,
            timeout: setup.timeout,
        })
    }

    /// The configured key, if any.
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// `<base>/<path>`.
    pub fn url(&self, path: &str) -> String {
        self.http.url(path)
    }

    /// A failed exchange as a [`ProviderError`].
    pub fn error<B: ErrorBody>(&self, e: HttpError) -> ProviderError<B> {
        ProviderError::from_http(e, self.timeout)
    }

    fn authorize<B: ErrorBody>(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&ApiKey>,
    ) -> std::result::Result<reqwest::RequestBuilder, ProviderError<B>> {
        let Some(key) = key.or(self.api_key.as_ref()) else {
            return match &self.missing_key {
                Some(message) => Err(ProviderError::MissingApiKey(message.clone())),
                None => Ok(request),
            };
        };
        let (name, value) = match self.key_header {
            KeyHeader::Bearer => (AUTHORIZATION, key.bearer_header_value()),
            KeyHeader::Named(name) => (HeaderName::from_static(name), key.header_value()),
        };
        let value = value.map_err(|e| ProviderError::InvalidRequest(e.to_string()))?;
        Ok(request.header(name, value))
    }

    /// `POST <base>/<path>` with a JSON body (and `key` instead of the
    /// plugin's, if given); the response once its headers arrived with a
    /// success status.
    pub async fn post<B: ErrorBody>(
        &self,
        path: &str,
        body: &Value,
        key: Option<&ApiKey>,
    ) -> std::result::Result<reqwest::Response, ProviderError<B>> {
        let request = self.authorize(self.http.post(path).json(body), key)?;
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    /// `GET <base>/<path>`, as [`post`](Self::post).
    pub async fn get<B: ErrorBody>(
        &self,
        path: &str,
    ) -> std::result::Result<reqwest::Response, ProviderError<B>> {
        let request = self.authorize(self.http.get(path), None)?;
        self.http.send(request).await.map_err(|e| self.error(e))
    }

    /// The whole body of a response.
    pub async fn read_body<B: ErrorBody>(
        &self,
        response: reqwest::Response,
    ) -> std::result::Result<Bytes, ProviderError<B>> {
        self.http
            .read_bytes(response)
            .await
            .map_err(|e| self.error(e))
    }

    /// The frames of a streamed response.
    pub fn frames(&self, response: reqwest::Response, format: StreamFormat) -> FrameReader {
        match format {
            StreamFormat::Sse => self.http.sse(response),
            StreamFormat::Ndjson { max_line } => self.http.ndjson(response, max_line),
        }
    }
}

/// A provider plugin: the [`Plugin`] every provider is, parameterised by
/// its [`Provider`]. Each plugin crate names it (`type Anthropic =
/// ProviderPlugin<..>`).
///
/// Nothing is registered up front: each model (`/model/<name>/<model>`) and
/// embedder (`/embedder/<name>/<model>`) is built on its first lookup —
/// listed or not, any name resolves — and the listed ones are described
/// (with their capabilities) without initialising anything.
pub struct ProviderPlugin<P: Provider> {
    kit: Arc<Kit<P>>,
}

impl<P: Provider> Clone for ProviderPlugin<P> {
    fn clone(&self) -> Self {
        Self {
            kit: self.kit.clone(),
        }
    }
}

struct Kit<P: Provider> {
    provider: P,
    name: String,
    client: ProviderClient,
    models: SpecList<P::Model>,
    embedders: SpecList<EmbedderSpec>,
    listed: OnceLock<Vec<ActionDesc>>,
}

impl<P: Provider> fmt::Debug for ProviderPlugin<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(P::INFO.display)
            .field("name", &self.kit.name)
            .field("provider", &self.kit.provider)
            .field("client", &self.kit.client)
            .field("models", &self.kit.models.as_slice().len())
            .field("embedders", &self.kit.embedders.as_slice().len())
            .finish()
    }
}

impl<P: Buildable> ProviderPlugin<P> {
    /// A builder with the provider's defaults.
    pub fn builder() -> P::Builder {
        P::Builder::default()
    }

    /// The plugin with its defaults, the key from the provider's usual
    /// environment variable (and, where the provider has one, the address
    /// from its variable, e.g. `OLLAMA_HOST`).
    pub fn from_env() -> Result<Self> {
        let mut builder = P::Builder::default();
        let address = P::INFO
            .base_url_env
            .and_then(|var| std::env::var(var).ok())
            .filter(|v| !v.trim().is_empty());
        if let Some(address) = address {
            let address = address.trim();
            let url = if address.contains("://") {
                address.to_owned()
            } else {
                format!("http://{address}")
            };
            builder.setup_mut().base_url = url;
        }
        Self::from_builder(builder)
    }

    /// The plugin a builder describes (what its `build` calls).
    pub fn from_builder(builder: P::Builder) -> Result<Self> {
        let (provider, setup) = builder.into_parts();
        let client = ProviderClient::new(&P::INFO, &setup)?;
        Ok(Self {
            kit: Arc::new(Kit {
                provider,
                name: setup.name,
                client,
                models: setup.models,
                embedders: setup.embedders,
                listed: OnceLock::new(),
            }),
        })
    }
}

impl<P: Provider> ProviderPlugin<P> {
    /// The plugin name (the models' prefix).
    pub fn name(&self) -> &str {
        &self.kit.name
    }

    /// The full name of one of its models or embedders: `<plugin>/<model>`.
    pub fn model_name(&self, model: &str) -> String {
        format!("{}/{model}", self.kit.name)
    }

    /// The models it lists.
    pub fn models(&self) -> &[P::Model] {
        self.kit.models.as_slice()
    }

    /// The embedders it lists.
    pub fn embedders(&self) -> &[EmbedderSpec] {
        self.kit.embedders.as_slice()
    }

    /// The provider's own settings.
    pub fn provider(&self) -> &P {
        &self.kit.provider
    }

    /// The HTTP client.
    pub fn client(&self) -> &ProviderClient {
        &self.kit.client
    }

    /// The model `<plugin>/<name>` (not registered).
    pub fn model(&self, name: &str) -> Model {
        let kit = &self.kit;
        let spec = kit
            .provider
            .describe_model(kit.models.get_or_unlisted(name));
        let mut options = ModelOptions::new(self.model_name(name))
            .supports(spec.supports().clone())
            .config_schema::<P::Config>();
        if let Some(label) = spec.label() {
            options = options.label(label);
        }
        let kit = kit.clone();
        let spec = Arc::new(spec);
        Model::new(options, move |request, ctx| {
            let kit = kit.clone();
            let spec = spec.clone();
            async move { kit.generate(&spec, request, ctx).await }
        })
    }

    /// The embedder `<plugin>/<name>` (not registered).
    pub fn embedder(&self, name: &str) -> EmbedderAction {
        let kit = &self.kit;
        let spec = kit.embedders.get_or_unlisted(name);
        let options = EmbedderOptions::new(self.model_name(name))
            .info(kit.provider.embedder_info(&spec))
            .config_json_schema(genkit_core::schema::schema_for::<P::EmbedOptions>());
        let kit = kit.clone();
        let spec = Arc::new(spec);
        embedder(options, move |request, ctx| {
            let kit = kit.clone();
            let spec = spec.clone();
            async move { until_cancelled(&ctx.cancel, kit.embed(&spec, request)).await }
        })
    }

    fn listed(&self) -> &[ActionDesc] {
        self.kit.listed.get_or_init(|| {
            let models = self
                .models()
                .iter()
                .map(|m| self.model(m.name()).into_dyn().desc().clone());
            let embedders = self
                .embedders()
                .iter()
                .map(|e| self.embedder(&e.name).into_dyn().desc().clone());
            models.chain(embedders).collect()
        })
    }

    fn action(&self, kind: ActionKind, name: &str) -> Option<DynAction> {
        if name.trim().is_empty() {
            return None;
        }
        match kind {
            ActionKind::Model => Some(self.model(name).into_dyn()),
            ActionKind::Embedder if P::INFO.embedders => Some(self.embedder(name).into_dyn()),
            _ => None,
        }
    }
}

impl<P: Provider> Kit<P> {
    fn config<C: RequestConfig>(&self, config: Option<&Value>, what: &str) -> Result<C> {
        let refused: &[&str] = if P::INFO.request_keys {
            &[]
        } else {
            &["apiKey"]
        };
        let rules = ConfigRules {
            plugin: P::INFO.display,
            refused,
            ignored: P::INFO.ignored_config_keys,
        };
        parse_request_config(config, what, &rules)
            .map_err(|m| ProviderError::<P::ErrorBody>::InvalidRequest(m).into())
    }

    async fn generate(
        &self,
        spec: &P::Model,
        request: GenerateRequest,
        ctx: ModelCtx,
    ) -> Result<GenerateResponse> {
        let config: P::Config = self.config(request.config.as_ref(), "model")?;
        let key = config.api_key().cloned();
        let streaming = ctx.is_streaming();
        let chat = Chat {
            model: spec,
            request: &request,
            config,
            streaming,
        };
        let call = self.provider.chat_request(chat)?;
        let work = async {
            let client = &self.client;
            let response = client
                .post::<P::ErrorBody>(&call.path, &call.body, key.as_ref())
                .await?;
            if streaming {
                let frames = client.frames(response, P::INFO.stream);
                let send = |chunk| ctx.send_chunk(chunk);
                Ok(fold_stream(frames, call.state, |e| client.error(e), send).await?)
            } else {
                let body = client.read_body::<P::ErrorBody>(response).await?;
                self.provider.chat_response(call.state, &body)
            }
        };
        until_cancelled(&ctx.cancel, work).await
    }

    async fn embed(&self, spec: &EmbedderSpec, request: EmbedRequest) -> Result<EmbedResponse> {
        if request.input.is_empty() {
            return Ok(EmbedResponse {
                embeddings: Vec::new(),
            });
        }
        let options: P::EmbedOptions = self.config(request.options.as_ref(), "embedder")?;
        let key = options.api_key().cloned();
        let embed = Embed {
            spec,
            request: &request,
            options,
        };
        let call = self.provider.embed_request(embed)?;
        let response = self
            .client
            .post::<P::ErrorBody>(&call.path, &call.body, key.as_ref())
            .await?;
        let body = self.client.read_body::<P::ErrorBody>(response).await?;
        let vectors = self.provider.embed_response(&body)?;
        check_embedding_count(&self.name, vectors.len(), request.input.len())?;
        Ok(EmbedResponse {
            embeddings: vectors
                .into_iter()
                .map(|embedding| Embedding {
                    embedding,
                    metadata: None,
                })
                .collect(),
        })
    }
}

#[async_trait::async_trait]
impl<P: Provider> Plugin for ProviderPlugin<P> {
    fn name(&self) -> &str {
        &self.kit.name
    }

    /// Registers nothing up front: every model and embedder is built on its
    /// first lookup.
    async fn init(&self, _registry: &Registry) -> Result<Vec<DynAction>> {
        Ok(Vec::new())
    }

    async fn resolve(
        &self,
        _registry: &Registry,
        kind: ActionKind,
        name: &str,
    ) -> Result<Option<DynAction>> {
        Ok(self.action(kind, name))
    }

    /// The listed models and embedders, then those the server offers
    /// beyond them ([`Provider::discover`]).
    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        let mut descs = self.listed().to_vec();
        for (kind, name) in self.kit.provider.discover(&self.kit.client).await {
            let known = descs
                .iter()
                .any(|d| d.kind == kind && d.name == self.model_name(&name));
            if !known && let Some(action) = self.action(kind, &name) {
                descs.push(action.desc().clone());
            }
        }
        Ok(descs)
    }
}

/// A model description most plugins use: a name, a label, and the
/// capabilities that differ from the provider's defaults for that name
/// (capabilities left unset take the provider's).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    /// The model's name at the provider, without the plugin prefix.
    pub name: String,
    /// A human-readable label.
    pub label: Option<String>,
    /// What the model can do.
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
    pub fn constrained(mut self, constrained: genkit_ai::types::ConstrainedSupport) -> Self {
        self.supports.constrained = Some(constrained);
        self
    }

    /// This spec with `defaults` for every capability it leaves unset, and
    /// the label `<provider> - <name>` unless it has one.
    pub fn with_defaults(mut self, defaults: ModelSupports, provider: &str) -> Self {
        self.supports = overlay(defaults, &self.supports);
        if self.label.is_none() {
            self.label = Some(format!("{provider} - {}", self.name));
        }
        self
    }
}

/// `base` with every capability `over` sets replaced by it.
fn overlay(base: ModelSupports, over: &ModelSupports) -> ModelSupports {
    let (Ok(Value::Object(mut merged)), Ok(Value::Object(over))) =
        (serde_json::to_value(&base), serde_json::to_value(over))
    else {
        return base;
    };
    merged.extend(over.into_iter().filter(|(_, v)| !v.is_null()));
    serde_json::from_value(Value::Object(merged)).unwrap_or(base)
}

impl Spec for ModelSpec {
    fn name(&self) -> &str {
        &self.name
    }

    fn unlisted(name: &str) -> Self {
        ModelSpec::new(name)
    }
}

impl ModelDescriptor for ModelSpec {
    fn label(&self) -> Option<&str> {
        self.label.as_deref()
    }

    fn supports(&self) -> &ModelSupports {
        &self.supports
    }
}
