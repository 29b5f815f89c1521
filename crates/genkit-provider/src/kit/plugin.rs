//! [`ProviderPlugin`]: the [`Plugin`] every provider is; [`PluginSetup`]:
//! the options every provider takes; [`provider_plugin!`](crate::provider_plugin),
//! which declares a plugin and its builder.

use super::*;

/// A provider plugin: the [`Plugin`] every provider is, parameterised by
/// its [`Provider`]. Each plugin crate names it (`type Anthropic =
/// ProviderPlugin<..>`).
///
/// Nothing is registered up front: each model (`/model/<name>/<model>`) and
/// embedder (`/embedder/<name>/<model>`) is built on its first lookup —
/// listed or not, any name resolves — and the listed ones are described
/// (with their capabilities) without initialising anything.
#[derive(Clone, Debug)]
pub struct ProviderPlugin<P: Provider> {
    kit: Arc<Kit<P>>,
}

#[derive(Debug)]
struct Kit<P: Provider> {
    provider: P,
    name: String,
    client: ProviderClient,
    models: SpecList<P::Model>,
    embedders: SpecList<EmbedderSpec>,
}

impl<P: Provider> ProviderPlugin<P> {
    /// A builder with the provider's defaults.
    pub fn builder() -> P::Builder {
        P::Builder::default()
    }

    /// The plugin with its defaults, the key from the provider's usual
    /// environment variable and, where the provider has one, the base URL
    /// from its variable (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`,
    /// `GOOGLE_GEMINI_BASE_URL`, `OLLAMA_HOST`), as the provider's SDKs
    /// read them. The key goes to that URL too: both are the user's
    /// settings for this provider.
    pub fn from_env() -> Result<Self> {
        Self::from_env_with(|var| std::env::var(var).ok())
    }

    /// [`from_env`](Self::from_env) reading variables through `lookup`
    /// (for tests, or settings kept elsewhere than the process environment).
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut setup = PluginSetup::of::<P>();
        setup.base_url = env_base_url(&P::INFO, &lookup).unwrap_or(setup.base_url);
        setup.api_key = ApiKey::from_lookup(P::INFO.key_env, &lookup);
        Self::new(setup, P::default())
    }

    /// The plugin `setup` and `provider` describe (what a builder's `build`
    /// calls).
    pub fn new(setup: PluginSetup<P::Model>, provider: P) -> Result<Self> {
        let client = ProviderClient::new(&P::INFO, &setup)?;
        Ok(Self {
            kit: Arc::new(Kit {
                provider,
                name: setup.name,
                client,
                models: setup.models,
                embedders: setup.embedders,
            }),
        })
    }

    /// The plugin name (the models' prefix).
    pub fn name(&self) -> &str {
        &self.kit.name
    }

    /// The full name of one of its models or embedders: `<plugin>/<model>`.
    pub fn model_name(&self, model: &str) -> String {
        format!("{}/{model}", self.kit.name)
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
        let described = spec.as_ref();
        let mut options = ModelOptions::new(self.model_name(name))
            .supports(described.supports.clone())
            .config_schema::<P::Config>();
        options.label = described.label.clone();
        let (kit, spec) = (kit.clone(), Arc::new(spec));
        Model::new(options, move |request, ctx| {
            let (kit, spec) = (kit.clone(), spec.clone());
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
        let (kit, spec) = (kit.clone(), Arc::new(spec));
        embedder(options, move |request, ctx| {
            let (kit, spec) = (kit.clone(), spec.clone());
            async move { until_cancelled(&ctx.cancel.token(), kit.embed(&spec, request)).await }
        })
    }

    fn action(&self, kind: ActionKind, name: &str) -> Option<DynAction> {
        if name.trim().is_empty() {
            return None;
        }
        match kind {
            ActionKind::Model => Some(self.model(name).into_dyn()),
            ActionKind::Embedder if P::EMBEDDERS => Some(self.embedder(name).into_dyn()),
            _ => None,
        }
    }
}

/// The base URL in `info`'s variable: `http://` added when it names only a
/// host and port (`OLLAMA_HOST=127.0.0.1:11434`), the provider's API path
/// appended where its SDKs leave it out; `None` when unset or blank.
fn env_base_url(info: &ProviderInfo, lookup: impl Fn(&str) -> Option<String>) -> Option<String> {
    let value = lookup(info.base_url_env?)?;
    let value = value.trim();
    let scheme = if value.contains("://") { "" } else { "http://" };
    let url = match info.base_url_env_path.trim_start_matches('/') {
        "" => format!("{scheme}{value}"),
        path => format!("{scheme}{}/{path}", value.trim_end_matches('/')),
    };
    (!value.is_empty()).then_some(url)
}

impl<P: Provider> Kit<P> {
    /// A request's `config` parsed, and its own key (`apiKey`) where the
    /// provider takes one (elsewhere the key is refused).
    fn config<C: RequestConfig>(
        &self,
        config: Option<&Value>,
        what: &str,
    ) -> Result<(C, Option<ApiKey>)> {
        let parsed = parse_request_config(config, what, &P::INFO)
            .map_err(ProviderError::<P>::InvalidRequest)?;
        let key = config.and_then(|c| c.get("apiKey")?.as_str().map(ApiKey::new));
        Ok((parsed, key))
    }

    async fn generate(
        &self,
        spec: &P::Model,
        request: GenerateRequest,
        ctx: ModelCtx,
    ) -> Result<GenerateResponse> {
        let (config, key) = self.config::<P::Config>(request.config.as_ref(), "model")?;
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
                .post::<P>(&call.path, &call.body, key.as_ref())
                .await?;
            if streaming {
                let frames = client.frames(response, P::INFO.stream);
                let send = |chunk| ctx.send_chunk(chunk);
                Ok(fold_stream(frames, call.state, |e| client.error(e), send).await?)
            } else {
                let body = client.read_body::<P>(response).await?;
                self.provider.chat_response(call.state, &body)
            }
        };
        until_cancelled(&ctx.cancel.token(), work).await
    }

    async fn embed(&self, spec: &EmbedderSpec, request: EmbedRequest) -> Result<EmbedResponse> {
        if request.input.is_empty() {
            return Ok(EmbedResponse {
                embeddings: Vec::new(),
            });
        }
        let (options, key) =
            self.config::<P::EmbedOptions>(request.options.as_ref(), "embedder")?;
        let embed = Embed {
            spec,
            request: &request,
            options,
        };
        let call = self.provider.embed_request(embed)?;
        let response = self
            .client
            .post::<P>(&call.path, &call.body, key.as_ref())
            .await?;
        let body = self.client.read_body::<P>(response).await?;
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
    /// beyond them ([`Provider::discover`]), described without initialising.
    async fn list_actions(&self) -> Result<Vec<ActionDesc>> {
        let models = self.kit.models.as_slice().iter();
        let models = models.map(|m| (ActionKind::Model, m.name().to_owned()));
        let embedders = self.kit.embedders.as_slice().iter();
        let listed = models.chain(embedders.map(|e| (ActionKind::Embedder, e.name.clone())));
        let discovered = self.kit.provider.discover(&self.kit.client).await;
        let mut descs: Vec<ActionDesc> = Vec::new();
        for (kind, name) in listed.chain(discovered) {
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

/// The options every provider plugin takes; the builders' setters of the
/// same names document them.
#[derive(Clone, Debug)]
pub struct PluginSetup<M> {
    /// The plugin name.
    pub name: String,
    /// The API's base URL.
    pub base_url: String,
    /// The API key.
    pub api_key: Option<ApiKey>,
    /// Whether a call without a key fails before a request goes out.
    pub require_api_key: Option<bool>,
    /// The longest wait at any one point.
    pub timeout: Option<Duration>,
    /// Headers sent with every request (values are secrets: never shown).
    pub headers: Vec<(String, ApiKey)>,
    /// A custom HTTP client.
    pub http_client: Option<reqwest::Client>,
    /// The models listed.
    pub models: SpecList<M>,
    /// The embedders listed.
    pub embedders: SpecList<EmbedderSpec>,
}

impl<M: Spec> PluginSetup<M> {
    /// The defaults of provider `P`, listing its default models and embedders.
    pub fn of<P: Provider<Model = M>>() -> Self {
        Self {
            name: P::INFO.default_name.to_owned(),
            base_url: P::INFO.default_base_url.to_owned(),
            api_key: None,
            require_api_key: None,
            timeout: Some(DEFAULT_TIMEOUT),
            headers: Vec::new(),
            http_client: None,
            models: SpecList::new(P::default_models()),
            embedders: SpecList::new(P::default_embedders()),
        }
    }
}

/// Declares a provider plugin: the plugin type (`ProviderPlugin<$provider>`),
/// the provider struct with its settings and their defaults, and the builder
/// (the provider's [`Declared::Builder`]):
/// a setter per setting, the shared setters (`name`, `base_url`, `api_key`,
/// `require_api_key`, `timeout`, `no_timeout`, `header`,
/// `http_client`, `models`, `model`; `with embedders` adds `embedders`,
/// `embedder`) and `build`. The plugin then implements [`Provider`] for the
/// provider struct.
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

        $(#[$bdoc])*
        #[derive(Debug, Clone)]
        pub struct $builder {
            setup: $crate::kit::PluginSetup<<$provider as $crate::kit::Provider>::Model>,
            provider: $provider,
        }

        impl $crate::kit::Declared for $provider {
            type Builder = $builder;
            const EMBEDDERS: bool = $crate::provider_plugin!(@has $($embedders)?);
        }

        impl Default for $builder {
            fn default() -> Self {
                Self { setup: $crate::kit::PluginSetup::of::<$provider>(), provider: $provider::default() }
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
            $crate::provider_plugin!(@setters
                /// The plugin name: the namespace of its actions (`<name>/<model>`).
                name(name: impl Into<String>) { name = name.into() }
                /// The API's base URL.
                base_url(url: impl Into<String>) { base_url = url.into() }
                /// The API key. Default (only with the default base URL): the
                /// provider's usual variable.
                api_key(key: impl Into<$crate::ApiKey>) { api_key = Some(key.into()) }
                /// Whether a call without a key fails (`FAILED_PRECONDITION`) before
                /// any request (default: on the provider's own base URL).
                require_api_key(required: bool) { require_api_key = Some(required) }
                /// The longest wait for the server at any one point (headers, a whole
                /// body, the next stream frame), so a flowing stream is never cut;
                /// exceeding it is `DEADLINE_EXCEEDED`. Default: ten minutes.
                timeout(timeout: ::std::time::Duration) { timeout = Some(timeout) }
                /// Waits as long as the server takes (cancellation still ends a call).
                no_timeout() { timeout = None }
                /// Adds a header to every request. Values are treated as secrets.
                header(name: impl Into<String>, value: impl Into<String>) {
                    headers.push((name.into(), $crate::ApiKey::new(value)))
                }
                /// Uses this HTTP client (proxies, custom TLS roots...). It should not
                /// follow redirects, so credentials never go to another host.
                http_client(client: ::reqwest::Client) { http_client = Some(client) }
                /// Replaces the list of known models.
                models(list: impl IntoIterator<Item = <$provider as $crate::kit::Provider>::Model>) {
                    models = $crate::plugin::SpecList::new(list)
                }
                /// Adds (or replaces, by name) one known model.
                model(model: <$provider as $crate::kit::Provider>::Model) { models.upsert(model) }
            );
            $($crate::provider_plugin!(@$embedders);)?
            /// Builds the plugin. Fails with `INVALID_ARGUMENT` for an empty
            /// name, a base URL that is not `http(s)`, or an invalid header.
            pub fn build(self) -> ::genkit_core::Result<$crate::kit::ProviderPlugin<$provider>> {
                $crate::kit::ProviderPlugin::new(self.setup, self.provider)
            }
        }
    };
    // The shared setters: `$name($args) { change }` is a setter applying
    // `change` to the setup (`field = value`, `field.method(..)`).
    (@setters $($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) { $($change:tt)+ })*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $($arg: $ty),*) -> Self {
                self.setup.$($change)+;
                self
            }
        )*
    };
    (@has embedders) => { true };
    (@has) => { false };
    (@embedders) => {
        $crate::provider_plugin!(@setters
            /// Replaces the list of known embedders.
            embedders(list: impl IntoIterator<Item = $crate::plugin::EmbedderSpec>) {
                embedders = $crate::plugin::SpecList::new(list)
            }
            /// Adds (or replaces, by name) one known embedder.
            embedder(embedder: $crate::plugin::EmbedderSpec) { embedders.upsert(embedder) }
        );
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(value: &'static str) -> impl Fn(&str) -> Option<String> {
        move |var| (var == "TEST_BASE_URL").then(|| value.to_owned())
    }

    #[test]
    fn the_base_url_variable_is_read_as_the_sdks_read_it() {
        let info = ProviderInfo {
            base_url_env: Some("TEST_BASE_URL"),
            ..ProviderInfo::new("Test", "test", "https://api.test/v1")
        };
        let url = |v| env_base_url(&info, lookup(v));
        assert_eq!(
            url("http://127.0.0.1:9/v1").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            url(" 127.0.0.1:11434 ").as_deref(),
            Some("http://127.0.0.1:11434")
        );
        assert_eq!(url("  "), None);
        let versioned = ProviderInfo {
            base_url_env_path: "v1beta",
            ..info
        };
        assert_eq!(
            env_base_url(&versioned, lookup("http://127.0.0.1:9/")).as_deref(),
            Some("http://127.0.0.1:9/v1beta")
        );
        let without = ProviderInfo::new("Test", "test", "https://api.test/v1");
        assert_eq!(env_base_url(&without, lookup("http://x")), None);
    }
}
