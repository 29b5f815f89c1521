//! [`ProviderPlugin`]: the [`Plugin`] every provider is.

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
    listed: OnceLock<Vec<ActionDesc>>,
}

impl<P: Buildable> ProviderPlugin<P> {
    /// A builder with the provider's defaults.
    pub fn builder() -> P::Builder {
        P::Builder::default()
    }
}

impl<P: Provider> ProviderPlugin<P> {
    /// The plugin with its defaults, the key from the provider's usual
    /// environment variable (and, where the provider has one, the address
    /// from its variable, e.g. `OLLAMA_HOST`).
    pub fn from_env() -> Result<Self> {
        let mut setup = PluginSetup::of::<P>();
        let address = P::INFO.base_url_env.and_then(|var| std::env::var(var).ok());
        if let Some(address) = address.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            setup.base_url = if address.contains("://") {
                address.to_owned()
            } else {
                format!("http://{address}")
            };
        }
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
                listed: OnceLock::new(),
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
            let (models, embedders) = (self.kit.models.as_slice(), self.kit.embedders.as_slice());
            let models = models.iter().map(|m| self.model(m.name()).into_dyn());
            let embedders = embedders.iter().map(|e| self.embedder(&e.name).into_dyn());
            models.chain(embedders).map(|a| a.desc().clone()).collect()
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
    /// A request's `config` parsed, and its own key (`apiKey`) where the
    /// provider takes one (elsewhere the key is refused).
    fn config<C: RequestConfig>(
        &self,
        config: Option<&Value>,
        what: &str,
    ) -> Result<(C, Option<ApiKey>)> {
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
        let parsed = parse_request_config(config, what, &rules)
            .map_err(ProviderError::<P::ErrorBody>::InvalidRequest)?;
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
