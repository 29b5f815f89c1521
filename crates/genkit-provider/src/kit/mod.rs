//! The plugin kit: what a provider plugin declares ([`Provider`]: its
//! [`ProviderInfo`], how it builds a wire request, parses an answer and
//! folds a stream) and what the kit does for it ([`ProviderPlugin`]:
//! options, HTTP, credentials, timeouts, errors, cancellation, config
//! parsing, and the registration of its models and embedders). The example
//! is in `docs/architecture.md` ("Provider plugins: one kit").

use crate::error::HttpError;
use crate::http::{HttpClientBuilder, MAX_CONNECT_TIMEOUT, USER_AGENT};
use crate::plugin::{
    EmbedderSpec, Spec, SpecList, check_embedding_count, header_map, parse_request_config,
    text_embedder_info, validate_http_url, validate_name,
};
use crate::provider_error::{ErrorFormat, ProviderError};
use crate::stream::{FrameReader, StreamFold, fold_stream};
use crate::{ApiKey, Deadline, HttpClient, until_cancelled};
use bytes::Bytes;
use genkit_core::{ActionDesc, ActionKind, DynAction, IntoDynAction, Plugin, Registry, Result};
use genkit_model::embedder::{EmbedderAction, EmbedderInfo, EmbedderOptions, embedder};
use genkit_model::model::{Model, ModelCtx, ModelOptions};
use genkit_model::types::{
    EmbedRequest, EmbedResponse, Embedding, GenerateRequest, GenerateResponse, ModelSupports,
};
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod client;
mod plugin;
mod provider;

pub use client::ProviderClient;
pub use plugin::{PluginSetup, ProviderPlugin};
pub use provider::{
    Chat, DEFAULT_TIMEOUT, Declared, Embed, KeyHeader, ModelSpec, Provider, ProviderInfo,
    RequestConfig, StreamFormat, WireCall,
};
