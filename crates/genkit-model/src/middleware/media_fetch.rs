//! The HTTP media fetcher of [`download_request_media_http`] (feature
//! `download-media`), guarded against server-side request forgery: a media
//! URL comes from a prompt, so it may point at a cloud metadata service or a
//! private network.
//!
//! The host is resolved first and every address must be public (unless
//! [`HttpMediaFetch::allow_private_addresses`]); the connection then goes to
//! exactly those addresses (no second lookup a DNS server could answer
//! differently), directly (no proxy), without following redirects, within a
//! timeout, and the body is read only up to the size limit.

use super::download_media::{DownloadMedia, MediaFetcher, download_request_media};
use genkit_core::{Error, Result, StatusCode};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// The default limit on resolving a media host, and on downloading from it.
pub const DEFAULT_MEDIA_TIMEOUT: Duration = Duration::from_secs(30);

/// Most bytes of an error answer quoted in the error.
const MAX_ERROR_BODY: usize = 1024;

/// Options of the HTTP media fetcher.
#[derive(Debug, Clone)]
pub struct HttpMediaFetch {
    timeout: Duration,
    allow_private: bool,
}

impl Default for HttpMediaFetch {
    fn default() -> Self {
        Self {
            timeout: DEFAULT_MEDIA_TIMEOUT,
            allow_private: false,
        }
    }
}

impl HttpMediaFetch {
    /// The defaults: public addresses only, [`DEFAULT_MEDIA_TIMEOUT`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The longest time resolving the host may take, and then the longest
    /// time the download may take, connecting and reading the body included.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Also downloads from loopback, private, link-local, unspecified and
    /// multicast addresses. Only for trusted prompts (or local tests): it
    /// lets a media URL reach internal services.
    pub fn allow_private_addresses(mut self) -> Self {
        self.allow_private = true;
        self
    }

    /// The fetcher, for [`download_request_media`].
    pub fn fetcher(self) -> MediaFetcher {
        let options = Arc::new(self);
        Arc::new(move |url, max| {
            let options = options.clone();
            Box::pin(async move { options.fetch(&url, max).await })
        })
    }

    /// The middleware using this fetcher.
    pub fn middleware(self) -> DownloadMedia {
        download_request_media(self.fetcher())
    }

    async fn fetch(&self, url: &str, max: Option<usize>) -> Result<(Vec<u8>, Option<String>)> {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            Error::invalid_argument(format!("media URL '{url}': {e}")).with_source(e)
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::invalid_argument(format!(
                "media URL '{url}' is not http(s)"
            )));
        }
        let host = parsed
            .host_str()
            .ok_or_else(|| Error::invalid_argument(format!("media URL '{url}' has no host")))?;
        let port = parsed.port_or_known_default().unwrap_or(80);
        let literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        let addrs: Vec<SocketAddr> = match literal {
            Some(ip) => vec![SocketAddr::new(ip, port)],
            None => tokio::time::timeout(self.timeout, tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| timed_out(url))?
                .map_err(|e| {
                    Error::new(
                        StatusCode::Unavailable,
                        format!("media URL '{url}': cannot resolve '{host}': {e}"),
                    )
                    .with_source(e)
                })?
                .collect(),
        };
        if !self.allow_private
            && let Some(bad) = addrs.iter().find(|a| !is_public(a.ip()))
        {
            return Err(Error::invalid_argument(format!(
                "media URL '{url}' points to the non-public address {}; downloads from \
                 private, loopback, link-local and similar addresses are refused unless \
                 allowed (HttpMediaFetch::allow_private_addresses)",
                bad.ip()
            )));
        }
        let mut client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(self.timeout);
        if literal.is_none() {
            client = client.resolve_to_addrs(host, &addrs);
        }
        let client = client.build().map_err(|e| {
            Error::internal(format!("building the media HTTP client: {e}")).with_source(e)
        })?;
        let mut response = client
            .get(parsed)
            .send()
            .await
            .map_err(|e| transport(url, &e))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(Error::new(
                StatusCode::FailedPrecondition,
                format!("media URL '{url}' redirects ({status}); redirects are not followed"),
            ));
        }
        if status.as_u16() != 200 {
            let body = read_capped(&mut response, MAX_ERROR_BODY)
                .await
                .map(|(bytes, _)| String::from_utf8_lossy(&bytes).into_owned())
                .unwrap_or_default();
            return Err(Error::new(
                StatusCode::from_http_status(status.as_u16()),
                format!("HTTP error downloading media '{url}': {body}"),
            ));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let limit = max.unwrap_or(usize::MAX);
        if let Some(len) = response.content_length()
            && len > limit as u64
        {
            return Err(too_large(url, limit));
        }
        let (bytes, complete) = read_capped(&mut response, limit)
            .await
            .map_err(|e| transport(url, &e))?;
        if !complete {
            return Err(too_large(url, limit));
        }
        Ok((bytes, content_type))
    }
}

/// Reads the body up to `limit` bytes; `false` when more was coming.
async fn read_capped(
    response: &mut reqwest::Response,
    limit: usize,
) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if out.len() + chunk.len() > limit {
            let room = limit - out.len();
            out.extend_from_slice(&chunk[..room]);
            return Ok((out, false));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((out, true))
}

fn too_large(url: &str, limit: usize) -> Error {
    Error::invalid_argument(format!(
        "media '{url}' is more than the {limit} bytes allowed"
    ))
}

fn timed_out(url: &str) -> Error {
    Error::new(
        StatusCode::DeadlineExceeded,
        format!("downloading media '{url}' timed out"),
    )
}

fn transport(url: &str, e: &reqwest::Error) -> Error {
    if e.is_timeout() {
        return timed_out(url);
    }
    Error::new(
        StatusCode::Unavailable,
        format!("downloading media '{url}': {e}"),
    )
}

/// Whether `ip` is a public unicast address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // Benchmarking, 198.18.0.0/15.
        || (a == 198 && (b == 18 || b == 19))
        // Reserved, 240.0.0.0/4.
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    // v4-mapped (::ffff:a.b.c.d), v4-compatible (::a.b.c.d) and NAT64
    // (64:ff9b::a.b.c.d) addresses reach the IPv4 address inside.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let segments = ip.segments();
    if segments[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        let [.., a, b, c, d] = ip.octets();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    let first = segments[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, fc00::/7.
        || (first & 0xfe00) == 0xfc00
        // Link-local, fe80::/10, and the old site-local, fec0::/10.
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // Documentation, 2001:db8::/32.
        || (first == 0x2001 && segments[1] == 0x0db8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_public_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fd00:ec2::254",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_public(ip), "{ip} is not public");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_public(ip), "{ip} is public");
        }
    }
}
