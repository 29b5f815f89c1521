//! The request guard every server of this crate runs before its handlers:
//! it keeps web pages, and names rebound to this machine, from driving a
//! server that a browser can reach.
//!
//! A browser lets any page send a "simple" cross-origin request without
//! asking the server first: a `POST` whose body is `text/plain`, a form or
//! `multipart/form-data`. The page cannot read the answer, but the request
//! runs. A JSON body needs a CORS preflight, which is granted only to the
//! origins the server lists. And a page that rebinds its own name to
//! 127.0.0.1 talks to a loopback server as its own origin, so it can read the
//! answers too. So a request is refused, before any handler runs, unless:
//!
//! 1. **`Host`** is one the server answers ([`AllowedHosts`]; a server bound
//!    to loopback answers only `localhost`, `127.0.0.1` and `[::1]`): else
//!    403. A rebound name (`evil.example:3400`) is refused.
//! 2. **`Content-Type`** of a `POST` is `application/json` (parameters such
//!    as `; charset=utf-8` allowed): else 415. The one exception is a `POST`
//!    with an empty body, no `Content-Type` and no `Origin`: a non-browser
//!    client running a flow without input (`curl -X POST`). Browsers send
//!    `Origin` with every `POST`, so no page gets through this way.
//! 3. **`Origin`**, if present, is the request's own (its host and port are
//!    those of `Host`), or one the server lists (see
//!    [`FlowServer::allow_origins`](crate::FlowServer::allow_origins)), or,
//!    on the Reflection API, a loopback origin (the Dev UI): else 403.
//!    `null` (sandboxed frames, `file:` pages) is never accepted.
//! 4. **`Sec-Fetch-Site`**: a `cross-site` or `same-site` request (as
//!    browsers label them) must come from a listed origin: else 403.
//!
//! A refusal is answered with Genkit's error body (`{"status": ...,
//! "message": ...}`, the message naming the header at fault) and logged as a
//! warning. The checks are a few header lookups; nothing is read from the
//! body.

use crate::error::ServerError;
use crate::response::error_response;
use axum::Router;
use axum::http::header::{CONTENT_TYPE, HOST, ORIGIN};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode as HttpStatus, Uri};
use axum::response::Response;
use genkit_core::{Error, StatusCode};
use std::sync::Arc;

const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Which `Host` names a server answers (checked by its [`RequestGuard`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedHosts {
    /// Any name: no check. For a server reached under names it does not
    /// know in advance (behind a load balancer, on a public address).
    #[default]
    Any,
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: what a server bound to
    /// the loopback interface is called by clients on this machine. A
    /// DNS-rebound name is refused.
    Loopback,
    /// These names, case-insensitive: `api.example.com` (any port) or
    /// `api.example.com:8443` (that port only). Loopback names are not
    /// implied: list `localhost` too if local clients call it so.
    Listed(Vec<String>),
}

impl AllowedHosts {
    /// [`AllowedHosts::Listed`] from any list of names.
    pub fn listed<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Listed(names.into_iter().map(Into::into).collect())
    }

    /// Whether `authority` (a `Host` value, `host[:port]`) is allowed.
    pub fn allows(&self, authority: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Loopback => split_authority(authority).is_some_and(|(h, _)| is_loopback_host(h)),
            Self::Listed(names) => {
                let Some((host, port)) = split_authority(authority) else {
                    return false;
                };
                names
                    .iter()
                    .filter_map(|n| split_authority(n.trim()))
                    .any(|(name, name_port)| {
                        name.eq_ignore_ascii_case(host)
                            && name_port.is_none_or(|np| port_number(Some(np)) == port_number(port))
                    })
            }
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Self::Any => "",
            Self::Loopback => " (this server answers only localhost, 127.0.0.1 and [::1])",
            Self::Listed(_) => " (it is not one of the server's allowed hosts)",
        }
    }
}

/// The checks a server runs on every request before its handlers (see the
/// [module docs](self)). [`FlowServer`](crate::FlowServer) and the
/// [Reflection API](crate::reflection) each configure one; use
/// [`apply`](Self::apply) to put one in front of routes of your own.
///
/// ```
/// use genkit_server::guard::{AllowedHosts, RequestGuard};
/// let guard = RequestGuard::new()
///     .allowed_hosts(AllowedHosts::listed(["api.example.com"]))
///     .allow_origins(["https://app.example.com"])
///     .expect("valid origins");
/// let app = guard.apply(axum::Router::new(), "my app");
/// # let _ = app;
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestGuard {
    hosts: AllowedHosts,
    /// Normalized (see [`normalize_origin`]).
    origins: Arc<[String]>,
    loopback_origins: bool,
}

impl RequestGuard {
    /// Any `Host`, no listed origin: only same-origin and non-browser
    /// requests with JSON bodies get through.
    pub fn new() -> Self {
        Self::default()
    }

    /// The `Host` names answered ([`AllowedHosts::Any`] by default).
    pub fn allowed_hosts(mut self, hosts: AllowedHosts) -> Self {
        self.hosts = hosts;
        self
    }

    /// The `Host` names answered.
    pub fn hosts(&self) -> &AllowedHosts {
        &self.hosts
    }

    /// Accepts requests from these origins (`scheme://host[:port]`, as a
    /// browser sends them in `Origin`; case and a default port do not
    /// matter), cross-site ones included. Fails on anything that is not an
    /// origin (a path, `*`, `null`), naming it.
    pub fn allow_origins<I, S>(mut self, origins: I) -> Result<Self, ServerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut list: Vec<String> = self.origins.to_vec();
        for origin in origins {
            let origin = origin.as_ref();
            let normalized = normalize_origin(origin.trim()).ok_or_else(|| {
                ServerError::Config(format!(
                    "allowed origins: `{origin}` is not an origin (scheme://host[:port], \
                     no path; `*` and `null` are not accepted)"
                ))
            })?;
            if !list.contains(&normalized) {
                list.push(normalized);
            }
        }
        self.origins = list.into();
        Ok(self)
    }

    /// The listed origins, normalized as browsers send them (lower-case,
    /// no default port): what a CORS layer should allow.
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    /// Also accepts any loopback origin (`http://localhost:4000`,
    /// `http://127.0.0.1:4000`, `https://[::1]`): local tools such as the
    /// Genkit Dev UI. The Reflection API's policy.
    pub fn allow_loopback_origins(mut self) -> Self {
        self.loopback_origins = true;
        self
    }

    /// `router` with this guard in front of all its routes (fallback
    /// included); `server` names it in the log lines of refusals.
    pub fn apply(self, router: Router, server: &'static str) -> Router {
        router.layer(self.layer(server))
    }

    /// This guard as a [`tower::Layer`], for services other than an axum
    /// [`Router`]; `server` names it in the log lines of refusals.
    pub fn layer(self, server: &'static str) -> GuardLayer {
        GuardLayer {
            guard: Arc::new((self, server)),
        }
    }

    /// Why the request must be refused, if it must. `empty_body`: the
    /// request is known to have no body.
    pub(crate) fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        empty_body: bool,
    ) -> Result<(), Refusal> {
        let seen = Seen::of(headers);
        if self.hosts != AllowedHosts::Any {
            let Some(host) = seen.host else {
                return Err(Refusal::forbidden("the request has no `Host` header"));
            };
            let host = host.to_str().unwrap_or("");
            if !self.hosts.allows(host) {
                return Err(Refusal::forbidden(format!(
                    "`Host: {host}` is not a name of this server{}",
                    self.hosts.describe()
                )));
            }
            // An absolute request target names the host too.
            if let Some(authority) = uri.authority()
                && !self.hosts.allows(authority.as_str())
            {
                return Err(Refusal::forbidden(format!(
                    "`{authority}` (in the request target) is not a name of this server{}",
                    self.hosts.describe()
                )));
            }
        }
        let origin = seen.origin;
        if method == Method::POST {
            let content_type = seen.content_type;
            let without_body = empty_body && content_type.is_none() && origin.is_none();
            if !without_body && !content_type.is_some_and(is_json) {
                let got = match content_type {
                    Some(v) => format!(" (got `{}`)", text_of(v)),
                    None => " (it has none)".to_owned(),
                };
                return Err(Refusal {
                    status: HttpStatus::UNSUPPORTED_MEDIA_TYPE,
                    reason: format!(
                        "the request body must be sent as `Content-Type: application/json`{got}"
                    ),
                });
            }
        }
        let listed = match origin {
            None => false,
            Some(value) => {
                let raw = text_of(value);
                let normalized = normalize_origin(raw);
                let listed = normalized.as_deref().is_some_and(|o| self.is_listed(o));
                let own = normalized.as_deref().is_some_and(|o| {
                    seen.host
                        .and_then(|h| h.to_str().ok())
                        .is_some_and(|host| is_same_origin(o, host))
                });
                if !listed && !own {
                    return Err(Refusal::forbidden(format!(
                        "requests from `Origin: {raw}` are not accepted by this server"
                    )));
                }
                listed
            }
        };
        if let Some(site) = seen.sec_fetch_site {
            let site = text_of(site);
            let foreign =
                site.eq_ignore_ascii_case("cross-site") || site.eq_ignore_ascii_case("same-site");
            if foreign && !listed {
                return Err(Refusal::forbidden(format!(
                    "a `Sec-Fetch-Site: {site}` request is accepted only from an origin this \
                     server lists"
                )));
            }
        }
        Ok(())
    }

    /// A normalized origin this guard accepts from anywhere.
    fn is_listed(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| o == origin)
            || (self.loopback_origins
                && origin
                    .split_once("://")
                    .and_then(|(_, authority)| split_authority(authority))
                    .is_some_and(|(host, _)| is_loopback_host(host)))
    }
}

/// The headers the guard reads (the first value of each, as
/// `HeaderMap::get` gives), found in one pass over the request's few
/// headers rather than one hash lookup each.
#[derive(Default)]
struct Seen<'a> {
    host: Option<&'a HeaderValue>,
    origin: Option<&'a HeaderValue>,
    content_type: Option<&'a HeaderValue>,
    sec_fetch_site: Option<&'a HeaderValue>,
}

impl<'a> Seen<'a> {
    fn of(headers: &'a HeaderMap) -> Self {
        let mut seen = Self::default();
        for (name, value) in headers {
            let slot = if name == HOST {
                &mut seen.host
            } else if name == ORIGIN {
                &mut seen.origin
            } else if name == CONTENT_TYPE {
                &mut seen.content_type
            } else if name == SEC_FETCH_SITE {
                &mut seen.sec_fetch_site
            } else {
                continue;
            };
            slot.get_or_insert(value);
        }
        seen
    }
}

/// Why a request was refused, and the HTTP status to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) status: HttpStatus,
    pub(crate) reason: String,
}

impl Refusal {
    fn forbidden(reason: impl Into<String>) -> Self {
        Self {
            status: HttpStatus::FORBIDDEN,
            reason: reason.into(),
        }
    }

    /// Genkit's error body: `PERMISSION_DENIED` for 403, `INVALID_ARGUMENT`
    /// (with status 415) for a body of the wrong type.
    fn response(self) -> Response {
        let status = if self.status == HttpStatus::FORBIDDEN {
            StatusCode::PermissionDenied
        } else {
            StatusCode::InvalidArgument
        };
        let mut r = error_response(&Error::user_facing(status, self.reason));
        *r.status_mut() = self.status;
        r
    }
}

/// A [`RequestGuard`] as a [`tower::Layer`] (see [`RequestGuard::layer`]).
#[derive(Clone)]
pub struct GuardLayer {
    guard: Arc<(RequestGuard, &'static str)>,
}

impl<S> tower::Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            inner,
            guard: self.guard.clone(),
        }
    }
}

/// A service behind a [`RequestGuard`]: a request that passes goes to
/// `inner` as is (no boxing, no copy of its headers); one that does not is
/// answered at once.
#[derive(Clone)]
pub struct Guarded<S> {
    inner: S,
    guard: Arc<(RequestGuard, &'static str)>,
}

impl<S, B> tower::Service<axum::http::Request<B>> for Guarded<S>
where
    S: tower::Service<axum::http::Request<B>, Response = Response>,
    B: http_body::Body,
{
    type Response = Response;
    type Error = S::Error;
    type Future =
        futures::future::Either<std::future::Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        let (guard, server) = &*self.guard;
        // Known empty: `Content-Length: 0`, or neither a length nor chunks.
        let empty_body = request.body().size_hint().exact() == Some(0);
        match guard.check(
            request.method(),
            request.uri(),
            request.headers(),
            empty_body,
        ) {
            Ok(()) => futures::future::Either::Right(self.inner.call(request)),
            Err(refusal) => {
                ::tracing::warn!(
                    "{server}: refused {} {}: {}",
                    request.method(),
                    request.uri().path(),
                    refusal.reason
                );
                futures::future::Either::Left(std::future::ready(Ok(refusal.response())))
            }
        }
    }
}

/// A header's text, or a marker when it is not visible ASCII.
fn text_of(value: &HeaderValue) -> &str {
    value.to_str().unwrap_or("<not text>")
}

/// `Content-Type: application/json`, parameters (`; charset=utf-8`) allowed.
fn is_json(content_type: &HeaderValue) -> bool {
    content_type
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// `host[:port]` split in two; `None` unless it is a plain authority (a
/// name or address, a port of digits, no user info, path or spaces).
fn split_authority(authority: &str) -> Option<(&str, Option<&str>)> {
    if authority.is_empty()
        || authority
            .bytes()
            .any(|b| matches!(b, b'/' | b'@' | b'?' | b'#' | b'\\') || b <= b' ')
    {
        return None;
    }
    let (host, port) = if authority.starts_with('[') {
        // `[v6]` or `[v6]:port`.
        let end = authority.find(']')?;
        let (host, rest) = authority.split_at(end + 1);
        if rest.is_empty() {
            (host, None)
        } else {
            (host, Some(rest.strip_prefix(':')?))
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.parse::<u16>().is_ok());
    (!host.is_empty() && (host.starts_with('[') || !host.contains(':')) && port_ok)
        .then_some((host, port))
}

fn port_number(port: Option<&str>) -> Option<u16> {
    port.and_then(|p| p.parse().ok())
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host == "127.0.0.1" || host == "[::1]"
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" | "ws" => Some(80),
        "https" | "wss" => Some(443),
        _ => None,
    }
}

/// `scheme://host[:port]`, normalized as a browser serializes an origin:
/// lower-case, without the scheme's default port. `None` for anything else
/// (a path, user info, `null`, `*`).
pub(crate) fn normalize_origin(origin: &str) -> Option<String> {
    let (scheme, authority) = origin.split_once("://")?;
    let scheme_ok = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !scheme_ok {
        return None;
    }
    let (host, port) = split_authority(authority)?;
    let scheme = scheme.to_ascii_lowercase();
    let host = host.to_ascii_lowercase();
    Some(
        match port_number(port).filter(|p| Some(*p) != default_port(&scheme)) {
            Some(p) => format!("{scheme}://{host}:{p}"),
            None => format!("{scheme}://{host}"),
        },
    )
}

/// Whether a normalized origin names the same host and port as the
/// request's `Host` (whose port, when absent, is the origin scheme's
/// default). The scheme is not compared: a server behind a TLS proxy does
/// not know its own.
fn is_same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let (Some((o_host, o_port)), Some((h_host, h_port))) =
        (split_authority(authority), split_authority(host))
    else {
        return false;
    };
    let effective = |p: Option<&str>| port_number(p).or_else(|| default_port(scheme));
    o_host.eq_ignore_ascii_case(h_host) && effective(o_port) == effective(h_port)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn check(
        guard: &RequestGuard,
        method: Method,
        pairs: &[(&'static str, &'static str)],
    ) -> Result<(), Refusal> {
        guard.check(&method, &"/flow".parse().unwrap(), &headers(pairs), false)
    }

    fn status(guard: &RequestGuard, method: Method, pairs: &[(&'static str, &'static str)]) -> u16 {
        check(guard, method, pairs).map_or_else(|r| r.status.as_u16(), |()| 200)
    }

    /// The Reflection API's guard.
    fn reflection() -> RequestGuard {
        RequestGuard::new()
            .allowed_hosts(AllowedHosts::Loopback)
            .allow_loopback_origins()
    }

    /// A loopback flow server with one listed origin.
    fn flow_server() -> RequestGuard {
        RequestGuard::new()
            .allowed_hosts(AllowedHosts::Loopback)
            .allow_origins(["https://App.Example:443"])
            .unwrap()
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    #[test]
    fn local_tools_are_let_in() {
        let g = reflection();
        for host in [
            "localhost:3100",
            "127.0.0.1:3100",
            "[::1]:3100",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert_eq!(status(&g, Method::POST, &[("host", host), JSON]), 200);
            assert_eq!(status(&g, Method::GET, &[("host", host)]), 200);
        }
        assert_eq!(
            status(
                &g,
                Method::POST,
                &[
                    ("host", "localhost:3100"),
                    ("content-type", "Application/JSON; charset=utf-8")
                ]
            ),
            200
        );
        for origin in [
            "http://localhost:4000",
            "http://127.0.0.1:4000",
            "https://[::1]:4000",
            "http://localhost",
        ] {
            assert_eq!(
                status(
                    &g,
                    Method::POST,
                    &[
                        ("host", "localhost:3100"),
                        ("origin", origin),
                        ("sec-fetch-site", "same-site"),
                        JSON
                    ]
                ),
                200,
                "{origin}"
            );
        }
    }

    #[test]
    fn rebound_and_foreign_hosts_are_refused() {
        for g in [reflection(), flow_server()] {
            for host in [
                "evil.example:3100",
                "evil.example",
                "localhost.evil.example:3100",
                "127.0.0.1.nip.io:3100",
                "localhost:31x0",
                "localhost:",
                "localhost:99999",
                "[::1]x",
                "user@localhost",
                "",
            ] {
                let r = check(&g, Method::GET, &[("host", host)]).unwrap_err();
                assert_eq!(r.status, HttpStatus::FORBIDDEN, "{host}");
                assert!(r.reason.starts_with(&format!("`Host: {host}`")), "{r:?}");
            }
            assert_eq!(
                check(&g, Method::GET, &[]).unwrap_err().reason,
                "the request has no `Host` header"
            );
            let absolute = g.check(
                &Method::GET,
                &"http://evil.example/api/actions".parse().unwrap(),
                &headers(&[("host", "localhost:3100")]),
                false,
            );
            assert_eq!(absolute.unwrap_err().status, HttpStatus::FORBIDDEN);
        }
        let rebound = check(
            &flow_server(),
            Method::POST,
            &[("host", "evil.example:3400"), JSON],
        );
        assert_eq!(
            rebound.unwrap_err().reason,
            "`Host: evil.example:3400` is not a name of this server (this server answers \
             only localhost, 127.0.0.1 and [::1])"
        );
    }

    #[test]
    fn listed_hosts_match_by_name_and_optional_port() {
        let hosts = AllowedHosts::listed(["api.example.com", "admin.example.com:8443", "[::1]"]);
        assert!(hosts.allows("api.example.com"));
        assert!(hosts.allows("API.example.com:443"));
        assert!(hosts.allows("admin.example.com:8443"));
        assert!(!hosts.allows("admin.example.com"));
        assert!(!hosts.allows("admin.example.com:443"));
        assert!(hosts.allows("[::1]:3400"));
        assert!(!hosts.allows("localhost"));
        assert!(!hosts.allows("evil.example"));
        assert!(AllowedHosts::Any.allows("anything"));
        // No Host check at all: even a request without `Host` passes.
        assert_eq!(status(&RequestGuard::new(), Method::GET, &[]), 200);
    }

    #[test]
    fn only_json_bodies_are_posted() {
        let g = flow_server();
        for ct in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "application/json-patch+json",
        ] {
            let r = check(
                &g,
                Method::POST,
                &[("host", "localhost:3400"), ("content-type", ct)],
            )
            .unwrap_err();
            assert_eq!(r.status, HttpStatus::UNSUPPORTED_MEDIA_TYPE, "{ct}");
            assert_eq!(
                r.reason,
                format!(
                    "the request body must be sent as `Content-Type: application/json` (got `{ct}`)"
                )
            );
        }
        let none = check(&g, Method::POST, &[("host", "localhost:3400")]).unwrap_err();
        assert_eq!(none.status, HttpStatus::UNSUPPORTED_MEDIA_TYPE);
        assert!(none.reason.ends_with("(it has none)"), "{none:?}");
        // A browser's simple request is refused before its origin is looked at.
        assert_eq!(
            status(
                &g,
                Method::POST,
                &[
                    ("host", "localhost:3400"),
                    ("content-type", "text/plain"),
                    ("origin", "http://evil.example")
                ]
            ),
            415
        );
        // GET carries no body to check.
        assert_eq!(status(&g, Method::GET, &[("host", "localhost:3400")]), 200);
    }

    #[test]
    fn an_empty_post_without_type_is_a_non_browser_flow_call() {
        let g = flow_server();
        let post = |pairs: &[(&'static str, &'static str)], empty: bool| {
            g.check(
                &Method::POST,
                &"/flow".parse().unwrap(),
                &headers(pairs),
                empty,
            )
            .map_or_else(|r| r.status.as_u16(), |()| 200)
        };
        assert_eq!(post(&[("host", "localhost:3400")], true), 200);
        // Not known to be empty (chunked), or typed as something else.
        assert_eq!(post(&[("host", "localhost:3400")], false), 415);
        assert_eq!(
            post(
                &[("host", "localhost:3400"), ("content-type", "text/plain")],
                true
            ),
            415
        );
        // Browsers send `Origin` with every POST: even their own page's
        // empty POST must say JSON.
        assert_eq!(
            post(
                &[
                    ("host", "localhost:3400"),
                    ("origin", "http://localhost:3400")
                ],
                true
            ),
            415
        );
    }

    #[test]
    fn origins_must_be_own_or_listed() {
        let g = flow_server();
        let post = |origin: &'static str, host: &'static str| {
            status(
                &g,
                Method::POST,
                &[("host", host), ("origin", origin), JSON],
            )
        };
        // Listed (normalized: case and default port do not matter).
        assert_eq!(post("https://app.example", "localhost:3400"), 200);
        assert_eq!(post("https://APP.example:443", "localhost:3400"), 200);
        assert_eq!(post("http://app.example", "localhost:3400"), 403);
        assert_eq!(post("https://app.example:8443", "localhost:3400"), 403);
        // The request's own origin.
        assert_eq!(post("http://localhost:3400", "localhost:3400"), 200);
        assert_eq!(post("http://127.0.0.1:3400", "127.0.0.1:3400"), 200);
        assert_eq!(post("http://localhost:3401", "localhost:3400"), 403);
        assert_eq!(post("http://127.0.0.1:3400", "localhost:3400"), 403);
        // Loopback origins are the Reflection API's exception, not the rule.
        assert_eq!(post("http://localhost:4000", "localhost:3400"), 403);
        for foreign in [
            "http://evil.example",
            "null",
            "http://localhost.evil.example:3400",
            "http://localhost:3400/x",
            "http://user@localhost:3400",
            "file://",
            "*",
            "",
        ] {
            let r = check(
                &g,
                Method::POST,
                &[("host", "localhost:3400"), ("origin", foreign), JSON],
            )
            .unwrap_err();
            assert_eq!(r.status, HttpStatus::FORBIDDEN, "{foreign}");
            assert_eq!(
                r.reason,
                format!("requests from `Origin: {foreign}` are not accepted by this server")
            );
        }
        let open = RequestGuard::new();
        assert_eq!(
            status(
                &open,
                Method::POST,
                &[
                    ("host", "api.example.com"),
                    ("origin", "https://api.example.com"),
                    JSON
                ]
            ),
            200
        );
        assert_eq!(
            status(
                &open,
                Method::POST,
                &[
                    ("host", "api.example.com:8080"),
                    ("origin", "https://api.example.com"),
                    JSON
                ]
            ),
            403
        );
    }

    #[test]
    fn cross_site_requests_need_a_listed_origin() {
        let g = flow_server();
        let site = |site: &'static str, origin: Option<&'static str>| {
            let mut pairs = vec![("host", "localhost:3400"), ("sec-fetch-site", site), JSON];
            if let Some(o) = origin {
                pairs.push(("origin", o));
            }
            status(&g, Method::POST, &pairs)
        };
        assert_eq!(site("cross-site", None), 403);
        assert_eq!(site("cross-site", Some("https://app.example")), 200);
        assert_eq!(site("same-site", None), 403);
        assert_eq!(site("same-site", Some("https://app.example")), 200);
        assert_eq!(site("same-origin", Some("http://localhost:3400")), 200);
        assert_eq!(site("none", None), 200);
        // Its own origin, yet labelled cross-site: the label wins.
        assert_eq!(site("cross-site", Some("http://localhost:3400")), 403);
        let r = check(
            &g,
            Method::GET,
            &[("host", "localhost:3400"), ("sec-fetch-site", "cross-site")],
        )
        .unwrap_err();
        assert_eq!(
            r.reason,
            "a `Sec-Fetch-Site: cross-site` request is accepted only from an origin this server \
             lists"
        );
    }

    #[test]
    fn origins_are_validated_and_normalized() {
        let g = RequestGuard::new()
            .allow_origins([
                "HTTPS://App.Example:443",
                "http://localhost:3000",
                "https://app.example",
            ])
            .unwrap();
        assert_eq!(
            g.origins(),
            ["https://app.example", "http://localhost:3000"]
        );
        for bad in [
            "*",
            "null",
            "app.example",
            "https://app.example/",
            "https://",
            "https://a:b",
        ] {
            let e = RequestGuard::new().allow_origins([bad]).unwrap_err();
            assert!(
                e.to_string().contains(&format!("`{bad}` is not an origin")),
                "{e}"
            );
        }
        assert_eq!(
            normalize_origin("http://[::1]:80").as_deref(),
            Some("http://[::1]")
        );
        assert_eq!(
            normalize_origin("chrome-extension://abc").as_deref(),
            Some("chrome-extension://abc")
        );
    }
}
