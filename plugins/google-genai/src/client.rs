//! The HTTP client for the Gemini API: URLs, headers, timeouts and error
//! statuses. Knows nothing of Genkit types.

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

use crate::error::{GeminiError, api_error, retry_after_header};
use crate::secret::ApiKey;
use crate::wire::{
    BatchEmbedContentsRequest, BatchEmbedContentsResponse, EmbedContentRequest,
    EmbedContentResponse, GenerateContentRequest, GenerateContentResponse,
};

/// The Gemini API endpoint used unless another is configured.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The `x-goog-api-client` value sent with every request.
const CLIENT_HEADER: &str = concat!("genkit-rust/", env!("CARGO_PKG_VERSION"));

/// Error bodies larger than this are cut before being read.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A configured connection to the Gemini API.
#[derive(Debug, Clone)]
pub(crate) struct GeminiClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<ApiKey>,
    timeout: Option<Duration>,
}

impl GeminiClient {
    pub fn new(
        http: reqwest::Client,
        base_url: &str,
        api_key: Option<ApiKey>,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            timeout,
        }
    }

    /// `models/<name>:generateContent`.
    pub async fn generate_content(
        &self,
        model: &str,
        body: &GenerateContentRequest,
    ) -> Result<GenerateContentResponse, GeminiError> {
        let response = self.post(model, "generateContent", false, body).await?;
        read_json(response).await
    }

    /// `models/<name>:streamGenerateContent?alt=sse`: the response, whose body
    /// is a server-sent event stream.
    pub async fn stream_generate_content(
        &self,
        model: &str,
        body: &GenerateContentRequest,
    ) -> Result<reqwest::Response, GeminiError> {
        self.post(model, "streamGenerateContent", true, body).await
    }

    /// `models/<name>:embedContent`.
    pub async fn embed_content(
        &self,
        model: &str,
        body: &EmbedContentRequest,
    ) -> Result<EmbedContentResponse, GeminiError> {
        let response = self.post(model, "embedContent", false, body).await?;
        read_json(response).await
    }

    /// `models/<name>:batchEmbedContents`.
    pub async fn batch_embed_contents(
        &self,
        model: &str,
        body: &BatchEmbedContentsRequest,
    ) -> Result<BatchEmbedContentsResponse, GeminiError> {
        let response = self.post(model, "batchEmbedContents", false, body).await?;
        read_json(response).await
    }

    /// Sends a POST and turns error statuses into [`GeminiError::Api`].
    async fn post<B: Serialize + ?Sized>(
        &self,
        model: &str,
        method: &str,
        sse: bool,
        body: &B,
    ) -> Result<reqwest::Response, GeminiError> {
        let key = self.api_key.as_ref().ok_or(GeminiError::MissingApiKey)?;
        let mut url = format!("{}/{}:{method}", self.base_url, model_path(model));
        if sse {
            url.push_str("?alt=sse");
        }
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("x-goog-api-client", HeaderValue::from_static(CLIENT_HEADER));
        headers.insert("x-goog-api-key", key.header_value()?);
        let payload = serde_json::to_vec(body)
            .map_err(|e| GeminiError::InvalidRequest(format!("request body: {e}")))?;
        tracing::debug!(%url, bytes = payload.len(), "calling the Gemini API");
        let mut request = self.http.post(url).headers(headers).body(payload);
        if let Some(t) = self.timeout {
            request = request.timeout(t);
        }
        let response = request.send().await.map_err(GeminiError::from_reqwest)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after_header(response.headers());
        let body = read_limited(response, MAX_ERROR_BODY).await?;
        Err(api_error(status.as_u16(), &body, retry_after))
    }
}

/// `models/<name>`, unless the name is already a resource path
/// (`models/...`, `tunedModels/...`).
fn model_path(model: &str) -> String {
    if model.starts_with("models/") || model.starts_with("tunedModels/") {
        model.to_owned()
    } else {
        format!("models/{model}")
    }
}

async fn read_json<T: DeserializeOwned>(response: reqwest::Response) -> Result<T, GeminiError> {
    let bytes = response.bytes().await.map_err(GeminiError::from_reqwest)?;
    serde_json::from_slice(&bytes).map_err(|e| GeminiError::Decode(e.to_string()))
}

async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, GeminiError> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(GeminiError::from_reqwest)? {
        let room = limit.saturating_sub(out.len());
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_paths() {
        assert_eq!(model_path("gemini-2.5-flash"), "models/gemini-2.5-flash");
        assert_eq!(model_path("models/x"), "models/x");
        assert_eq!(model_path("tunedModels/t"), "tunedModels/t");
    }

    #[test]
    fn debug_hides_the_key() {
        let c = GeminiClient::new(
            reqwest::Client::new(),
            DEFAULT_BASE_URL,
            Some(ApiKey::new("AIza-secret")),
            None,
        );
        assert!(!format!("{c:?}").contains("AIza-secret"));
    }
}
