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
/// A `const` built from [`ProviderInfo::new`] with the fields that differ
/// (`ProviderInfo { key_required: true, ..ProviderInfo::new(..) }`).
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
    /// The models a new builder lists, by name.
    pub models: &'static [&'static str],
    /// The embedders a new builder lists, by name.
    pub embedder_names: &'static [&'static str],
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
            models: &[],
            embedder_names: &[],
        }
    }
}
