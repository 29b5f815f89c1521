//! Media download: `http(s)` media URLs become `data:` URLs, for models that
//! cannot fetch media themselves.

use super::{ModelCallCtx, ModelMiddleware, ModelNext};
use crate::types::{GenerateRequest, GenerateResponse, Part, PartKind};
use async_trait::async_trait;
use futures::future::BoxFuture;
use genkit_core::{Error, Result};
use std::sync::Arc;

/// Decides which media parts to download.
pub type PartFilter = Arc<dyn Fn(&Part) -> bool + Send + Sync>;

/// Fetches a URL's bytes and content type for [`DownloadMedia`]. The second
/// argument is the size limit: a fetcher should stop reading past it.
pub type MediaFetcher = Arc<
    dyn Fn(String, Option<usize>) -> BoxFuture<'static, Result<(Vec<u8>, Option<String>)>>
        + Send
        + Sync,
>;

/// Replaces `http(s)` media URLs in the request with `data:` URLs, for models
/// that cannot fetch media themselves.
pub struct DownloadMedia {
    fetcher: MediaFetcher,
    max_bytes: Option<usize>,
    filter: Option<PartFilter>,
}

/// Media download using `fetcher` to get each URL's bytes and content type
/// (`download_request_media_http()` gives an HTTP fetcher when the
/// `download-media` feature is on).
pub fn download_request_media(fetcher: MediaFetcher) -> DownloadMedia {
    DownloadMedia {
        fetcher,
        max_bytes: None,
        filter: None,
    }
}

impl DownloadMedia {
    /// Refuse media larger than this.
    pub fn max_bytes(mut self, n: usize) -> Self {
        self.max_bytes = Some(n);
        self
    }

    /// Only download parts for which `f` is true.
    pub fn filter(mut self, f: impl Fn(&Part) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(f));
        self
    }
}

/// Media download over HTTP (feature `download-media`) with the safe
/// defaults of [`HttpMediaFetch`](super::HttpMediaFetch): public addresses
/// only, no redirects, a timeout, and reading stops at
/// [`max_bytes`](DownloadMedia::max_bytes).
#[cfg(feature = "download-media")]
pub fn download_request_media_http() -> DownloadMedia {
    super::HttpMediaFetch::new().middleware()
}

#[async_trait]
impl ModelMiddleware for DownloadMedia {
    async fn call(
        &self,
        mut req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        use base64::Engine;
        let wanted = |part: &Part| match &part.kind {
            PartKind::Media(media) => {
                media.url.starts_with("http") && self.filter.as_ref().is_none_or(|f| f(part))
            }
            _ => false,
        };
        // Copy-on-write: the history is copied only when something is fetched.
        if !req.messages.iter().any(|m| m.content.iter().any(wanted)) {
            return next.run(req, ctx).await;
        }
        for message in Arc::make_mut(&mut req.messages) {
            for part in &mut message.content {
                if !wanted(part) {
                    continue;
                }
                let PartKind::Media(media) = &part.kind else {
                    continue;
                };
                let (bytes, sniffed) = (self.fetcher)(media.url.clone(), self.max_bytes).await?;
                if let Some(max) = self.max_bytes
                    && bytes.len() > max
                {
                    return Err(Error::invalid_argument(format!(
                        "media '{}' is {} bytes, more than the {max} allowed",
                        media.url,
                        bytes.len()
                    )));
                }
                let content_type = media.content_type.clone().or(sniffed).unwrap_or_default();
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                *part = Part::media(
                    format!("data:{content_type};base64,{data}"),
                    Some(&content_type),
                );
            }
        }
        next.run(req, ctx).await
    }
}
as_generate_middleware!(DownloadMedia, "downloadRequestMedia");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{ScriptedTail, request, run_layer};
    use crate::types::{Message, Role};

    fn fetcher() -> MediaFetcher {
        Arc::new(|_url, _max| {
            Box::pin(async { Ok((b"abc".to_vec(), Some("image/png".to_owned()))) })
        })
    }

    fn with_image() -> GenerateRequest {
        request(vec![Message::new(
            Role::User,
            vec![Part::media("https://example.com/a.png", None)],
        )])
    }

    #[tokio::test]
    async fn http_media_becomes_a_data_url() {
        let tail = ScriptedTail::default();
        run_layer(download_request_media(fetcher()), &tail, with_image())
            .await
            .unwrap();
        let seen = tail.last();
        let PartKind::Media(media) = &seen.messages[0].content[0].kind else {
            panic!("not media");
        };
        assert_eq!(media.url, "data:image/png;base64,YWJj");
    }

    #[tokio::test]
    async fn media_over_the_size_limit_is_refused() {
        let tail = ScriptedTail::default();
        let layer = download_request_media(fetcher()).max_bytes(2);
        let err = run_layer(layer, &tail, with_image()).await.unwrap_err();
        assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
        assert_eq!(tail.calls(), 0);
    }
}
