//! Context providers: turn an HTTP request into the action context a flow
//! runs with (`{"auth": ...}`), or refuse it.
//!
//! A provider sees the request method, its headers (names are lower-case),
//! the decoded input and, for an agent, its `init` (the session or snapshot
//! the turn continues), like Genkit JS's `ContextProvider`. A refusal is a
//! [`genkit_core::Error`]; make it [user-facing](genkit_core::Error::user_facing)
//! (the built-in providers do) so the client sees its status and message:
//! `UNAUTHENTICATED` answers 401, `PERMISSION_DENIED` 403. Any other error is
//! answered with 500 `Internal Error`.

use axum::http::{HeaderMap, Method};
use futures::future::BoxFuture;
use genkit_core::{ActionContext, Error, StatusCode};
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;

/// What a context provider may look at.
#[derive(Debug, Clone)]
pub struct RequestData {
    /// The HTTP method.
    pub method: Method,
    /// The request headers (names are lower-case).
    pub headers: HeaderMap,
    /// The flow input (`data` of the request body).
    pub input: Value,
    /// `init` of the request body: for an agent turn, the session or
    /// snapshot it continues (or the client-managed state), so a provider
    /// can authorize by session; `None` without one (flows ignore it).
    pub init: Option<Value>,
}

impl RequestData {
    /// A header's value, if present and valid text. Repeated headers are
    /// joined with `, ` (RFC 9110 5.3).
    pub fn header(&self, name: &str) -> Option<String> {
        let mut values = self
            .headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok());
        let first = values.next()?;
        Some(values.fold(first.to_owned(), |mut acc, v| {
            acc.push_str(", ");
            acc.push_str(v);
            acc
        }))
    }
}

/// Produces the action context for a request, or refuses it.
pub trait ContextProvider: Send + Sync + 'static {
    /// The context for `request`, or the error to answer with.
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>>;
}

/// A shared context provider.
pub type SharedContextProvider = Arc<dyn ContextProvider>;

impl<P: ContextProvider + ?Sized> ContextProvider for Arc<P> {
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>> {
        (**self).provide(request)
    }
}

/// A provider from a function. The function reads what it needs from the
/// request synchronously and returns a future (which may be async: look up a
/// token, call an auth service):
///
/// ```
/// use genkit_server::context_providers::{from_fn, RequestData};
/// use genkit_core::{ActionContext, Error, StatusCode};
///
/// let tenant = from_fn(|req: &RequestData| {
///     let tenant = req.header("x-tenant");
///     async move {
///         match tenant {
///             Some(t) => Ok(ActionContext::new().with("tenant", t.into())),
///             None => Err(Error::user_facing(StatusCode::InvalidArgument, "x-tenant is required")),
///         }
///     }
/// });
/// # let _ = tenant;
/// ```
pub fn from_fn<F, Fut>(f: F) -> FnProvider<F>
where
    F: Fn(&RequestData) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ActionContext, Error>> + Send + 'static,
{
    FnProvider(f)
}

/// A provider built by [`from_fn`].
#[derive(Clone)]
pub struct FnProvider<F>(F);

impl<F, Fut> ContextProvider for FnProvider<F>
where
    F: Fn(&RequestData) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ActionContext, Error>> + Send + 'static,
{
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>> {
        Box::pin((self.0)(request))
    }
}

/// Genkit's `apiKey(value)`: the `Authorization` header must equal `key`.
/// Missing: 401 `Unauthenticated`; different: 403 `Permission Denied`;
/// equal: context `{"auth": {"apiKey": key}}`.
pub fn api_key(key: impl Into<String>) -> ApiKey {
    ApiKey { key: key.into() }
}

/// The provider built by [`api_key`].
#[derive(Clone)]
pub struct ApiKey {
    key: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ContextProvider for ApiKey {
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>> {
        let result = match request.header("authorization") {
            None => Err(unauthenticated()),
            Some(given) if given.is_empty() => Err(unauthenticated()),
            Some(given) if !constant_time_eq(given.as_bytes(), self.key.as_bytes()) => Err(
                Error::user_facing(StatusCode::PermissionDenied, "Permission Denied"),
            ),
            Some(given) => Ok(ActionContext::new().with_auth(json!({ "apiKey": given }))),
        };
        Box::pin(std::future::ready(result))
    }
}

/// A bearer-token check: the `Authorization` header must be `Bearer <token>`
/// (missing or malformed: 401 `Unauthenticated`), and `verify(token)` returns
/// the `auth` value of the context, or the refusal (usually
/// `Error::user_facing(StatusCode::PermissionDenied, ..)`).
pub fn bearer_token<F, Fut>(verify: F) -> BearerToken<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    BearerToken(verify)
}

/// The provider built by [`bearer_token`].
#[derive(Clone)]
pub struct BearerToken<F>(F);

impl<F, Fut> ContextProvider for BearerToken<F>
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, Error>> + Send + 'static,
{
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>> {
        match bearer_of(request) {
            None => Box::pin(std::future::ready(Err(unauthenticated()))),
            Some(token) => {
                let check = (self.0)(token);
                Box::pin(async move { Ok(ActionContext::new().with_auth(check.await?)) })
            }
        }
    }
}

/// A check against one shared bearer token, for a server with one kind of
/// caller (an operator, another service): the `Authorization` header must be
/// `Bearer <token>`. Missing or malformed: 401 `Unauthenticated`; another
/// token: 403 `Permission Denied` (compared in constant time); the token:
/// context `{"auth": principal}`.
///
/// `principal` names the caller, e.g. `{"sub": "operator"}`; it is what
/// actions see as `auth` and may be recorded (an agent session's owner), so
/// it must not be the token itself.
///
/// ```
/// use genkit_server::context_providers::static_bearer_token;
/// let provider = static_bearer_token(
///     std::env::var("MY_TOKEN").unwrap_or_default(),
///     serde_json::json!({"sub": "operator"}),
/// );
/// # let _ = provider;
/// ```
pub fn static_bearer_token(token: impl Into<String>, principal: Value) -> StaticBearerToken {
    static_bearer_tokens([(token.into(), principal)])
}

/// [`static_bearer_token`] for several callers, each with its own token and
/// principal (several operators, each owning the agent sessions they
/// start). A token listed twice answers as its first principal.
///
/// ```
/// use genkit_server::context_providers::static_bearer_tokens;
/// use serde_json::json;
/// let provider = static_bearer_tokens([
///     ("token-of-alice".to_owned(), json!({"sub": "alice"})),
///     ("token-of-bob".to_owned(), json!({"sub": "bob"})),
/// ]);
/// # let _ = provider;
/// ```
pub fn static_bearer_tokens(
    callers: impl IntoIterator<Item = (String, Value)>,
) -> StaticBearerToken {
    StaticBearerToken {
        callers: callers.into_iter().collect(),
    }
}

/// The provider built by [`static_bearer_token`] and
/// [`static_bearer_tokens`].
#[derive(Clone)]
pub struct StaticBearerToken {
    callers: Vec<(String, Value)>,
}

impl std::fmt::Debug for StaticBearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let principals: Vec<&Value> = self.callers.iter().map(|(_, p)| p).collect();
        f.debug_struct("StaticBearerToken")
            .field("tokens", &"<redacted>")
            .field("principals", &principals)
            .finish()
    }
}

impl ContextProvider for StaticBearerToken {
    fn provide<'a>(
        &'a self,
        request: &'a RequestData,
    ) -> BoxFuture<'a, Result<ActionContext, Error>> {
        let result = match bearer_of(request) {
            None => Err(unauthenticated()),
            Some(given) => {
                // Every token is compared, so the time taken does not tell
                // which one came close. An empty configured token matches
                // nothing (`bearer_of` never returns an empty one).
                let mut found = None;
                for (token, principal) in &self.callers {
                    if constant_time_eq(given.as_bytes(), token.as_bytes()) && found.is_none() {
                        found = Some(principal);
                    }
                }
                match found {
                    Some(principal) => Ok(ActionContext::new().with_auth(principal.clone())),
                    None => Err(Error::user_facing(
                        StatusCode::PermissionDenied,
                        "Permission Denied",
                    )),
                }
            }
        };
        Box::pin(std::future::ready(result))
    }
}

/// The token of `Authorization: Bearer <token>` (scheme case-insensitive);
/// `None` if the header is missing, has another scheme or no token.
fn bearer_of(request: &RequestData) -> Option<String> {
    let header = request.header("authorization")?;
    let (scheme, token) = header.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then(|| token.to_owned())
}

fn unauthenticated() -> Error {
    Error::user_facing(StatusCode::Unauthenticated, "Unauthenticated")
}

/// Compares secrets without stopping at the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn request(auth: Option<&str>) -> RequestData {
        let mut headers = HeaderMap::new();
        if let Some(a) = auth {
            headers.insert("authorization", HeaderValue::from_str(a).unwrap());
        }
        RequestData {
            method: Method::POST,
            headers,
            input: Value::Null,
            init: None,
        }
    }

    #[tokio::test]
    async fn api_key_missing_wrong_right() {
        let p = api_key("s3cret");
        let e = p.provide(&request(None)).await.unwrap_err();
        assert_eq!(
            (e.status(), e.public_http_status()),
            (StatusCode::Unauthenticated, 401)
        );
        let e = p.provide(&request(Some("nope"))).await.unwrap_err();
        assert_eq!(
            (e.status(), e.public_http_status()),
            (StatusCode::PermissionDenied, 403)
        );
        let ctx = p.provide(&request(Some("s3cret"))).await.unwrap();
        assert_eq!(ctx.auth(), Some(&json!({"apiKey": "s3cret"})));
        assert!(!format!("{p:?}").contains("s3cret"));
    }

    #[tokio::test]
    async fn bearer_token_parses_and_verifies() {
        let p = bearer_token(|t: String| async move {
            if t == "good" {
                Ok(json!({"uid": "u1"}))
            } else {
                Err(Error::user_facing(
                    StatusCode::PermissionDenied,
                    "bad token",
                ))
            }
        });
        assert_eq!(
            p.provide(&request(None)).await.unwrap_err().status(),
            StatusCode::Unauthenticated
        );
        assert_eq!(
            p.provide(&request(Some("good")))
                .await
                .unwrap_err()
                .status(),
            StatusCode::Unauthenticated
        );
        assert_eq!(
            p.provide(&request(Some("Bearer bad")))
                .await
                .unwrap_err()
                .status(),
            StatusCode::PermissionDenied
        );
        let ctx = p.provide(&request(Some("bearer good"))).await.unwrap();
        assert_eq!(ctx.auth(), Some(&json!({"uid": "u1"})));
    }

    #[tokio::test]
    async fn a_static_bearer_token_names_its_principal_not_itself() {
        let p = static_bearer_token("t0ken", json!({"sub": "operator"}));
        for (header, status) in [
            (None, StatusCode::Unauthenticated),
            (Some("t0ken"), StatusCode::Unauthenticated),
            (Some("Basic t0ken"), StatusCode::Unauthenticated),
            (Some("Bearer "), StatusCode::Unauthenticated),
            (Some("Bearer t0ke"), StatusCode::PermissionDenied),
            (Some("Bearer t0ken2"), StatusCode::PermissionDenied),
        ] {
            let e = p.provide(&request(header)).await.unwrap_err();
            assert_eq!(e.status(), status, "{header:?}");
            assert!(e.is_user_facing());
        }
        let ctx = p.provide(&request(Some("bearer t0ken"))).await.unwrap();
        assert_eq!(ctx.auth(), Some(&json!({"sub": "operator"})));
        assert!(!format!("{p:?}").contains("t0ken"));
        // No token configured: nothing gets in.
        let empty = static_bearer_token("", json!({}));
        assert_eq!(
            empty
                .provide(&request(Some("Bearer ")))
                .await
                .unwrap_err()
                .status(),
            StatusCode::Unauthenticated
        );
    }

    #[tokio::test]
    async fn static_bearer_tokens_tell_their_callers_apart() {
        let p = static_bearer_tokens([
            ("alice-token".to_owned(), json!({"sub": "alice"})),
            ("bob-token".to_owned(), json!({"sub": "bob"})),
        ]);
        for (token, who) in [("alice-token", "alice"), ("bob-token", "bob")] {
            let ctx = p
                .provide(&request(Some(&format!("Bearer {token}"))))
                .await
                .unwrap();
            assert_eq!(ctx.auth(), Some(&json!({"sub": who})));
        }
        let e = p
            .provide(&request(Some("Bearer carol-token")))
            .await
            .unwrap_err();
        assert_eq!(e.status(), StatusCode::PermissionDenied);
        let shown = format!("{p:?}");
        assert!(
            !shown.contains("-token") && shown.contains("bob"),
            "{shown}"
        );
    }

    #[test]
    fn repeated_headers_are_joined() {
        let mut r = request(None);
        r.headers.append("x-a", HeaderValue::from_static("1"));
        r.headers.append("x-a", HeaderValue::from_static("2"));
        assert_eq!(r.header("x-a").as_deref(), Some("1, 2"));
        assert_eq!(r.header("x-b"), None);
    }

    #[test]
    fn constant_time_eq_works() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
