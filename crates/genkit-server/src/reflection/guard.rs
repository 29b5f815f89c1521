//! Keeps web pages out of the Reflection API.
//!
//! The API is unauthenticated and listens on 127.0.0.1, which every page in
//! the developer's browser can reach. So, before any handler runs, a request
//! is refused with 403 unless:
//!
//! - its `Host` names the loopback interface (`localhost`, `127.0.0.1` or
//!   `[::1]`, any port): a DNS-rebound name (`evil.example:3100`) is refused,
//!   so a page cannot read answers through its own origin;
//! - its `Origin`, if any, is a loopback origin (`http://localhost:4000`, the
//!   Dev UI the CLI serves from another port, is fine; a foreign site or
//!   `null` is not);
//! - a `POST` says `Content-Type: application/json`. A page can send
//!   `text/plain` (or a form) cross-origin without asking; `application/json`
//!   needs a CORS preflight this server never grants. Genkit JS likewise
//!   parses only JSON bodies.
//!
//! The official CLI (which sends JSON to `http://localhost:<port>`, without
//! `Origin`) passes all three.

use axum::extract::Request;
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Runs the request only if [`refusal`] finds nothing wrong with it.
pub(super) async fn local_tools_only(request: Request, next: Next) -> Response {
    match refusal(request.method(), request.uri(), request.headers()) {
        None => next.run(request).await,
        Some(why) => {
            ::tracing::warn!(
                "reflection API: refused {} {}: {why}",
                request.method(),
                request.uri().path()
            );
            (StatusCode::FORBIDDEN, format!("Forbidden: {why}")).into_response()
        }
    }
}

/// Why a request must not reach the Reflection API, if it must not.
pub(super) fn refusal(
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Option<String> {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok());
    match host {
        Some(h) if is_loopback_authority(h) => {}
        Some(h) => {
            return Some(format!(
                "`Host: {h}` is not this machine's loopback address"
            ));
        }
        None => return Some("the request has no `Host`".into()),
    }
    if let Some(authority) = uri.authority()
        && !is_loopback_authority(authority.as_str())
    {
        return Some(format!(
            "`{authority}` is not this machine's loopback address"
        ));
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !is_loopback_origin(origin) {
            return Some(format!("requests from `Origin: {origin}` are not accepted"));
        }
    }
    if method == Method::POST && !is_json(headers) {
        return Some("the body must be sent as `Content-Type: application/json`".into());
    }
    None
}

/// `localhost`, `127.0.0.1` or `[::1]`, with or without a port.
fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.rsplit_once(':') {
        // A port follows the last colon unless it is inside `[...]`.
        Some((host, port)) if !port.contains(']') => {
            if !port.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            host
        }
        _ => authority,
    };
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

/// `http(s)://` followed by a loopback authority, nothing else.
fn is_loopback_origin(origin: &str) -> bool {
    let lower = origin.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"));
    rest.is_some_and(|authority| !authority.contains('/') && is_loopback_authority(authority))
}

/// `Content-Type: application/json`, parameters (`; charset=utf-8`) allowed.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn refused(method: Method, pairs: &[(&'static str, &'static str)]) -> bool {
        refusal(&method, &"/api/runAction".parse().unwrap(), &headers(pairs)).is_some()
    }

    #[test]
    fn the_cli_is_let_in() {
        let json = ("content-type", "application/json");
        for host in [
            "localhost:3100",
            "127.0.0.1:3100",
            "[::1]:3100",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(!refused(Method::POST, &[("host", host), json]), "{host}");
            assert!(!refused(Method::GET, &[("host", host)]), "{host}");
        }
        assert!(!refused(
            Method::POST,
            &[
                ("host", "localhost:3100"),
                ("content-type", "application/json; charset=utf-8")
            ]
        ));
        for origin in [
            "http://localhost:4000",
            "http://127.0.0.1:4000",
            "https://[::1]:4000",
            "http://localhost",
        ] {
            assert!(
                !refused(
                    Method::POST,
                    &[("host", "localhost:3100"), ("origin", origin), json]
                ),
                "{origin}"
            );
        }
    }

    #[test]
    fn pages_and_rebound_names_are_refused() {
        let json = ("content-type", "application/json");
        for host in [
            "evil.example:3100",
            "evil.example",
            "localhost.evil.example:3100",
            "127.0.0.1.nip.io:3100",
            "localhost:31x0",
            "[::1]x",
            "",
        ] {
            assert!(refused(Method::GET, &[("host", host)]), "{host}");
        }
        assert!(refused(Method::GET, &[]));
        for origin in [
            "http://evil.example",
            "null",
            "http://localhost.evil.example:4000",
            "http://localhost:4000/x",
            "file://",
            "",
        ] {
            assert!(
                refused(
                    Method::POST,
                    &[("host", "localhost:3100"), ("origin", origin), json]
                ),
                "{origin}"
            );
        }
        for ct in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data",
            "application/jsonx",
        ] {
            assert!(
                refused(
                    Method::POST,
                    &[("host", "localhost:3100"), ("content-type", ct)]
                ),
                "{ct}"
            );
        }
        assert!(refused(Method::POST, &[("host", "localhost:3100")]));
        assert!(
            refusal(
                &Method::GET,
                &"http://evil.example/api/actions".parse().unwrap(),
                &headers(&[("host", "localhost:3100")])
            )
            .is_some()
        );
    }
}
