//! [`ProviderInfo`]: what a provider is, as data.

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
