//! [`PluginSetup`]: the options every provider plugin takes, and
//! [`provider_plugin!`](crate::provider_plugin), which declares a plugin and
//! its builder.

use super::*;

/// The options every provider plugin takes; the builders' setters of the
/// same names document them.
#[derive(Clone)]
pub struct PluginSetup<M> {
    /// The plugin name.
    pub name: String,
    /// The API's base URL.
    pub base_url: String,
    /// The API key.
    pub api_key: Option<ApiKey>,
    /// An environment variable to read the key from.
    pub api_key_env: Option<String>,
    /// Whether a call without a key fails before a request goes out.
    pub require_api_key: Option<bool>,
    /// The longest wait at any one point.
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

/// Shows header names only: their values may be credentials.
impl<M: Spec> fmt::Debug for PluginSetup<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<_> = self.headers.iter().map(|(k, _)| k).collect();
        f.debug_struct("PluginSetup")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("headers", &headers)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl<M: Spec> PluginSetup<M> {
    /// The defaults of provider `P`, listing its default models and embedders.
    pub fn of<P: Provider<Model = M>>() -> Self {
        Self::new(&P::INFO, P::default_models(), P::default_embedders())
    }

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
            /// Builds the plugin. Fails with `INVALID_ARGUMENT` for an empty
            /// name, a base URL that is not `http(s)`, or an invalid header.
            pub fn build(self) -> ::genkit_core::Result<$crate::kit::ProviderPlugin<$provider>> {
                $crate::kit::ProviderPlugin::new(self.setup, self.provider)
            }
        }

        $crate::provider_plugin!(@shared $builder, <$provider as $crate::kit::Provider>::Model);
        $($crate::provider_plugin!(@$embedders $builder);)?
    };
    // One setter of the shared options: `$name($arg: $ty)` sets `$field` to `$value`.
    (@set $(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty)?) => $field:ident = $value:expr) => {
        $(#[$doc])*
        pub fn $name(mut self, $($arg: $ty)?) -> Self {
            self.setup.$field = $value;
            self
        }
    };
    (@embedders $builder:ident) => {
        impl $builder {
            $crate::provider_plugin!(@set
                /// Replaces the list of known embedders.
                embedders(list: impl IntoIterator<Item = $crate::plugin::EmbedderSpec>)
                => embedders = $crate::plugin::SpecList::new(list));
            /// Adds (or replaces, by name) one known embedder.
            pub fn embedder(mut self, embedder: $crate::plugin::EmbedderSpec) -> Self {
                self.setup.embedders.upsert(embedder);
                self
            }
        }
    };
    (@shared $builder:ident, $model:ty) => {
        impl $builder {
            $crate::provider_plugin!(@set
                /// The plugin name: the namespace of its actions (`<name>/<model>`).
                name(name: impl Into<String>) => name = name.into());
            $crate::provider_plugin!(@set
                /// The API's base URL.
                base_url(url: impl Into<String>) => base_url = url.into());
            $crate::provider_plugin!(@set
                /// The API key. Default: the variable named by
                /// [`api_key_env`](Self::api_key_env), else (only with the default
                /// base URL) the provider's usual variable.
                api_key(key: impl Into<$crate::ApiKey>) => api_key = Some(key.into()));
            $crate::provider_plugin!(@set
                /// Reads the key from the environment variable `var` when no key is given.
                api_key_env(var: impl Into<String>) => api_key_env = Some(var.into()));
            $crate::provider_plugin!(@set
                /// Whether a call without a key fails (`FAILED_PRECONDITION`)
                /// before any request (default: on the provider's own base URL).
                require_api_key(required: bool) => require_api_key = Some(required));
            $crate::provider_plugin!(@set
                /// The longest wait for the server at any one point (headers, a
                /// whole body, the next stream frame), so a flowing stream is never
                /// cut; exceeding it is `DEADLINE_EXCEEDED`. Default: ten minutes.
                timeout(timeout: ::std::time::Duration) => timeout = Some(timeout));
            $crate::provider_plugin!(@set
                /// Waits as long as the server takes (cancellation still ends a call).
                no_timeout() => timeout = None);
            /// Adds a header to every request. Values are treated as secrets.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.setup.headers.push((name.into(), value.into()));
                self
            }
            $crate::provider_plugin!(@set
                /// Uses this HTTP client (proxies, custom TLS roots...). It should
                /// not follow redirects, so credentials never go to another host.
                http_client(client: ::reqwest::Client) => http_client = Some(client));
            $crate::provider_plugin!(@set
                /// Replaces the list of known models.
                models(list: impl IntoIterator<Item = $model>)
                => models = $crate::plugin::SpecList::new(list));
            /// Adds (or replaces, by name) one known model.
            pub fn model(mut self, model: $model) -> Self {
                self.setup.models.upsert(model);
                self
            }
        }
    };
}
