//! Serving flows over HTTP with Genkit's flow protocol, the one
//! `genkit/beta/client` (`runFlow`, `streamFlow`) and Genkit's own Express and
//! Go handlers speak:
//!
//! - `POST /<flow>` with body `{"data": <input>}` answers 200
//!   `{"result": <output>}` with headers `x-genkit-trace-id` and
//!   `x-genkit-span-id`;
//! - with `Accept: text/event-stream` or `?stream=true` it answers a stream of
//!   frames (see [`crate::sse`]);
//! - an agent (a bidirectional action, see [`FlowServer::agent`]) takes
//!   `{"data": <input>, "init": <init>}` at `POST /<agent>`, and serves its
//!   snapshot and abort actions at `/<agent>/getSnapshot` and `/<agent>/abort`,
//!   where Genkit's `remoteAgent` client finds them;
//! - errors answer their HTTP status with `{"status": ..., "message": ...}`;
//!   an error that is not [user-facing](genkit_core::Error::user_facing) is
//!   500 `{"status":"INTERNAL","message":"Internal Error"}`, its details only
//!   in the server log and the trace.
//!
//! Every request first passes the [request guard](crate::guard): JSON
//! bodies only (415 otherwise), no foreign `Origin` or cross-site request
//! unless the app [lists the origin](FlowServer::allow_origins) (403), and
//! on a loopback-bound server no `Host` but a loopback name (403). Pages in
//! a browser therefore cannot run flows unless the app lets them.

use crate::context_providers::{ContextProvider, RequestData, SharedContextProvider};
use crate::error::ServerError;
use crate::guard::{AllowedHosts, RequestGuard};
use crate::response::{SPAN_ID, TRACE_ID, concat, error_response, insert_trace_headers};
use crate::run::{self, Event};
use crate::serving::{self, ServeOptions};
use crate::shutdown;
use crate::sse;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::header::{ACCEPT, CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode as HttpStatus, Uri};
use axum::response::Response;
use futures::{FutureExt, StreamExt};
use genkit_core::schema::SchemaValidator;
use genkit_core::tracing::TraceInfo;
use genkit_core::{ActionContext, ActionKind, DynAction, Error, Registry, RunOptions, StatusCode};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio::net::{TcpListener, ToSocketAddrs};
use tower::Layer as _;
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// Default request body limit: 10 MiB (large enough for inline images).
pub const DEFAULT_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// Which flows (and agents) to serve.
enum Selection {
    All,
    Named(Vec<(Served, String, Option<SharedContextProvider>)>),
}

/// What a named entry of the selection is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Served {
    Flow,
    Agent,
}

/// Builds an HTTP server (an axum [`Router`]) exposing flows as `POST /<flow>`.
///
/// ```no_run
/// use genkit_server::{FlowServer, context_providers::api_key};
/// # async fn demo(registry: genkit_core::Registry) -> Result<(), genkit_server::ServerError> {
/// FlowServer::new(&registry)
///     .flows(["summarize", "translate"])
///     .context_provider(api_key("my-secret"))
///     // The web app that calls these flows from the browser.
///     .allow_origins(["https://app.example.com"])
///     .body_limit(1 << 20)
///     .serve("127.0.0.1:3400")
///     .await
/// # }
/// ```
pub struct FlowServer {
    registry: Registry,
    selection: Selection,
    provider: Option<SharedContextProvider>,
    origins: Vec<String>,
    cors: Option<CorsLayer>,
    hosts: Option<AllowedHosts>,
    body_limit: usize,
    path_prefix: String,
    options: ServeOptions,
    durable: Option<crate::durable::Durable>,
    health: Option<crate::health::Health>,
}

impl FlowServer {
    /// A server for the flows of `registry` (all of them unless
    /// [`flows`](Self::flows) or [`flow`](Self::flow) narrow it down).
    pub fn new(registry: &Registry) -> Self {
        Self {
            registry: registry.clone(),
            selection: Selection::All,
            provider: None,
            origins: Vec::new(),
            cors: None,
            hosts: None,
            body_limit: DEFAULT_BODY_LIMIT,
            path_prefix: String::new(),
            options: ServeOptions::default(),
            durable: None,
            health: None,
        }
    }

    /// Serves `GET /healthz` (liveness) and `GET /readyz` (readiness: the
    /// checks of `health`, and 503 while draining) outside the request
    /// guard, and makes shutdown (in [`serve`](Self::serve) and
    /// [`serve_with_shutdown`](Self::serve_with_shutdown)) turn `/readyz`
    /// to 503 for the [drain delay](crate::health::Health::drain_delay)
    /// before it stops accepting: see [`crate::health`].
    pub fn health(mut self, health: crate::health::Health) -> Self {
        self.health = Some(health);
        self
    }

    /// Durable streaming, as Genkit JS's `streamManager` option: every
    /// streaming response gets a stream id (`x-genkit-stream-id`), its
    /// events are written to `manager` as they happen and its run goes on
    /// if the client leaves; a client that lost its connection sends the
    /// same request with `x-genkit-stream-id` (Genkit's `streamFlow({
    /// streamId })`) to this or any server on the same `manager` and reads
    /// the stream again from the start, or after the chunks it names in
    /// `x-genkit-stream-offset`, then live (see [`crate::durable`]). A
    /// stream can be read only by a caller whose context provider gives the
    /// same `auth`.
    pub fn stream_manager(
        mut self,
        manager: Arc<dyn genkit_core::streaming::StreamManager>,
    ) -> Self {
        self.durable = Some(crate::durable::Durable {
            manager,
            follow_timeout: genkit_core::streaming::DEFAULT_FOLLOW_TIMEOUT,
        });
        self
    }

    /// How long a resumed stream waits for its next event before ending
    /// with `DEADLINE_EXCEEDED` (its run's server may have died): 60 s by
    /// default, as Genkit JS's Firestore stream manager. Needs
    /// [`stream_manager`](Self::stream_manager).
    pub fn stream_follow_timeout(mut self, timeout: std::time::Duration) -> Self {
        if let Some(d) = &mut self.durable {
            d.follow_timeout = timeout;
        }
        self
    }

    /// Serves these flows (by name), with the default context provider.
    pub fn flows<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for name in names {
            self.push(Served::Flow, name.into(), None);
        }
        self
    }

    /// Serves one more flow, with the default context provider.
    pub fn flow(mut self, name: impl Into<String>) -> Self {
        self.push(Served::Flow, name.into(), None);
        self
    }

    /// Serves agent `name` (the bidirectional action `/agent/<name>`) where
    /// Genkit's `remoteAgent({url: '<server>/<name>'})` drives it: `POST
    /// /<name>` with `{"data": <input>, "init": <init>}` runs a turn,
    /// `/<name>/getSnapshot` and `/<name>/abort` run its
    /// `/agent-snapshot/<name>` and `/agent-abort/<name>` actions (when
    /// registered). Uses the default context provider.
    pub fn agent(mut self, name: impl Into<String>) -> Self {
        self.push(Served::Agent, name.into(), None);
        self
    }

    /// Serves one more agent (as [`agent`](Self::agent)) with its own
    /// context provider, for all three of its routes.
    pub fn agent_with_context(
        mut self,
        name: impl Into<String>,
        provider: impl ContextProvider,
    ) -> Self {
        self.push(Served::Agent, name.into(), Some(Arc::new(provider)));
        self
    }

    /// Serves one more flow with its own context provider (overriding the
    /// default one), like Genkit's `withContextProvider(flow, provider)`.
    pub fn flow_with_context(
        mut self,
        name: impl Into<String>,
        provider: impl ContextProvider,
    ) -> Self {
        self.push(Served::Flow, name.into(), Some(Arc::new(provider)));
        self
    }

    fn push(&mut self, what: Served, name: String, provider: Option<SharedContextProvider>) {
        match &mut self.selection {
            Selection::Named(list) => list.push((what, name, provider)),
            Selection::All => self.selection = Selection::Named(vec![(what, name, provider)]),
        }
    }

    /// The context provider of every flow that has none of its own.
    pub fn context_provider(mut self, provider: impl ContextProvider) -> Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// Lets web pages from these origins call the flows: the [request
    /// guard](crate::guard) accepts requests with their `Origin` (cross-site
    /// ones included), and a CORS layer answers their preflights and
    /// responses (`POST`, any request header, the `x-genkit-trace-id` and
    /// `x-genkit-span-id` headers readable; no credentials: see
    /// [`cors`](Self::cors) to change that). Each origin is
    /// `scheme://host[:port]` as a browser sends it (`https://app.example`);
    /// [`into_router`](Self::into_router) fails on anything else. Calls
    /// add up.
    ///
    /// Without this, only requests without `Origin` (non-browser clients)
    /// and from the server's own origin are served: no page elsewhere can
    /// run a flow, not even with a "simple" request that needs no preflight.
    pub fn allow_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.origins.extend(origins.into_iter().map(Into::into));
        self
    }

    /// Answers CORS requests as `layer` says (methods, headers,
    /// credentials, max age), for the origins of
    /// [`allow_origins`](Self::allow_origins) only: the layer's own origin
    /// setting is replaced by that list, so what CORS lets a page read and
    /// what the request guard lets it run are always the same origins.
    /// [`into_router`](Self::into_router) fails if no origin is listed.
    pub fn cors(mut self, layer: CorsLayer) -> Self {
        self.cors = Some(layer);
        self
    }

    /// The `Host` names the server answers; others get 403 (this keeps out
    /// pages that rebind their name to this server's address). By default,
    /// [`serve`](Self::serve) and
    /// [`serve_with_shutdown`](Self::serve_with_shutdown) on a loopback
    /// address answer only loopback names ([`AllowedHosts::Loopback`]), and
    /// any name on other addresses; [`into_router`](Self::into_router),
    /// which does not know where it is served, answers any name
    /// ([`AllowedHosts::Any`]): say [`AllowedHosts::Loopback`] when you
    /// serve it on loopback yourself, and list your names
    /// ([`AllowedHosts::listed`]) for a server on a private network or
    /// behind a proxy that keeps `Host`.
    pub fn allowed_hosts(mut self, hosts: AllowedHosts) -> Self {
        self.hosts = Some(hosts);
        self
    }

    /// Largest accepted request body in bytes ([`DEFAULT_BODY_LIMIT`] by
    /// default); larger bodies are answered with 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Serves flows under `prefix` (`/api` serves `POST /api/<flow>`).
    pub fn path_prefix(mut self, prefix: impl Into<String>) -> Self {
        let p = prefix.into();
        self.path_prefix = format!("/{}", p.trim_matches('/'));
        if self.path_prefix == "/" {
            self.path_prefix.clear();
        }
        self
    }

    /// Timeouts, the concurrency limit and the shutdown drain deadline
    /// ([`ServeOptions::default`] unless set), used by [`serve`](Self::serve)
    /// and [`serve_with_shutdown`](Self::serve_with_shutdown).
    pub fn serve_options(mut self, options: ServeOptions) -> Self {
        self.options = options;
        self
    }

    /// The router, for serving it yourself or merging it into a larger app.
    /// Serves every flow and agent of the registry unless some were named,
    /// behind the [request guard](crate::guard) (see
    /// [`allowed_hosts`](Self::allowed_hosts) for its default here). Fails
    /// if a named flow or agent is not registered, if an
    /// [allowed origin](Self::allow_origins) is not an origin, or if a
    /// [CORS layer](Self::cors) is set without any. The per-request
    /// limits of the [serve options](Self::serve_options) are not in it:
    /// add them with [`ServeOptions::apply`] (connection timeouts and
    /// graceful shutdown are up to the server you use); it uses their
    /// [event buffer](ServeOptions::event_buffer) and
    /// [request timeout](ServeOptions::request_timeout) for agent turns.
    pub async fn into_router(self) -> Result<Router, ServerError> {
        Ok(self.into_app().await?.into_router())
    }

    /// The served routes behind their layers (see
    /// [`into_router`](Self::into_router)).
    async fn into_app(self) -> Result<App, ServerError> {
        let guard = RequestGuard::new()
            .allowed_hosts(self.hosts.clone().unwrap_or_default())
            .allow_origins(&self.origins)?;
        let cors = cors_layer(self.cors, guard.origins())?;
        let health = self.health.clone();
        let mut routes = HashMap::new();
        let default = self.provider.clone();
        match self.selection {
            Selection::All => {
                let actions = self.registry.list_actions().await?;
                for action in actions.values() {
                    let kind = action.desc().kind;
                    if kind == ActionKind::Flow {
                        let path = format!("{}/{}", self.path_prefix, action.name());
                        add_route(
                            &mut routes,
                            path,
                            Route::new(action.clone(), default.clone()),
                        )?;
                    } else if kind == ActionKind::Agent {
                        for (path, action) in
                            crate::bidi::agent_routes(&self.registry, action.name()).await?
                        {
                            let path = format!("{}{path}", self.path_prefix);
                            add_route(&mut routes, path, Route::new(action, default.clone()))?;
                        }
                    }
                }
            }
            Selection::Named(list) => {
                for (what, name, provider) in list {
                    let provider = provider.or_else(|| default.clone());
                    if what == Served::Agent {
                        for (path, action) in
                            crate::bidi::agent_routes(&self.registry, &name).await?
                        {
                            let path = format!("{}{path}", self.path_prefix);
                            add_route(&mut routes, path, Route::new(action, provider.clone()))?;
                        }
                        continue;
                    }
                    let action = self
                        .registry
                        .lookup(ActionKind::Flow, &name)
                        .await?
                        .ok_or_else(|| {
                            Error::not_found(format!("flow `{name}` is not registered"))
                        })?;
                    let path = format!("{}/{name}", self.path_prefix);
                    add_route(&mut routes, path, Route::new(action, provider))?;
                }
            }
        }
        let served = FlowService(Arc::new(Routes {
            routes,
            body_limit: self.body_limit,
            event_buffer: self.options.event_buffer_len(),
            turn_timeout: self.options.request_deadline(),
            durable: self.durable,
        }));
        Ok(App {
            guard: guard.layer("flow server"),
            cors,
            served,
            health,
        })
    }

    /// Binds `addr` and serves until Ctrl-C or SIGTERM, then finishes the
    /// requests in flight (streams included) until the
    /// [drain deadline](ServeOptions::drain_timeout), flushes the trace
    /// exporters and returns. Also installs the trace exporters configured
    /// in the environment
    /// ([`telemetry::init_from_env`](crate::telemetry::init_from_env)).
    pub async fn serve(self, addr: impl ToSocketAddrs) -> Result<(), ServerError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ServerError::Bind {
                what: "the flow server address".into(),
                source,
            })?;
        crate::telemetry::init_from_env()?;
        let _serving = shutdown::Participant::enter();
        self.serve_with_shutdown(listener, shutdown::signal()).await
    }

    /// Serves on `listener` until `signal` resolves, then stops accepting
    /// connections, waits for the requests in flight (streams included) until
    /// the [drain deadline](ServeOptions::drain_timeout), closes the rest and
    /// flushes the installed trace exporters.
    ///
    /// Unless [`allowed_hosts`](Self::allowed_hosts) says otherwise, a
    /// listener on a loopback address answers only loopback `Host` names.
    pub async fn serve_with_shutdown(
        mut self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let addr = listener.local_addr().ok();
        if self.hosts.is_none() && addr.is_some_and(|a| a.ip().is_loopback()) {
            self.hosts = Some(AllowedHosts::Loopback);
        }
        let options = self.options.clone();
        let app = self.into_app().await?;
        if let Some(addr) = addr {
            ::tracing::info!("flow server listening on http://{addr}");
        }
        const WHAT: &str = "flow server";
        if let Some(health) = app.health.clone() {
            // Readiness turns 503 for the drain delay before accepting stops.
            let signal = health.drain_after(signal);
            return serving::serve(listener, app.into_router(), &options, signal, WHAT).await;
        }
        match app.cors {
            // Without CORS, no router is needed: the guarded service is
            // served as is, which spares a routing pass and a boxed future.
            None => {
                let service = app.guard.layer(app.served);
                serving::serve(listener, service, &options, signal, WHAT).await
            }
            Some(_) => serving::serve(listener, app.into_router(), &options, signal, WHAT).await,
        }
    }
}

/// A flow server's routes behind its request guard and CORS layer, and its
/// health probes.
struct App {
    guard: crate::guard::GuardLayer,
    cors: Option<CorsLayer>,
    served: FlowService,
    health: Option<crate::health::Health>,
}

impl App {
    /// The router answering every path with the guarded routes. The guard
    /// is outermost: a refused request reaches nothing else. The layers
    /// wrap the service directly rather than through `Router::layer`, which
    /// boxes the service and its future once per layer. Health probes, if
    /// any, are routed beside the guard: they send no body and may name the
    /// server by its address.
    fn into_router(self) -> Router {
        let Self {
            guard,
            cors,
            served,
            health,
        } = self;
        let guarded = match cors {
            None => Router::new().fallback_service(guard.layer(served)),
            Some(cors) => Router::new().fallback_service(guard.layer(cors.layer(served))),
        };
        match health {
            Some(health) => health.router().merge(guarded),
            None => guarded,
        }
    }
}

/// One served flow.
struct Route {
    action: DynAction,
    provider: Option<SharedContextProvider>,
}

impl Route {
    fn new(action: DynAction, provider: Option<SharedContextProvider>) -> Self {
        Self { action, provider }
    }
}

/// What the router serves, and how agent turns are bounded.
struct Routes {
    routes: HashMap<String, Route>,
    /// Largest request body, in bytes.
    body_limit: usize,
    event_buffer: usize,
    turn_timeout: Option<std::time::Duration>,
    durable: Option<crate::durable::Durable>,
}

/// The CORS layer for the listed `origins` (normalized): `custom` (with its
/// origins replaced) or the default one; none without origins.
fn cors_layer(
    custom: Option<CorsLayer>,
    origins: &[String],
) -> Result<Option<CorsLayer>, ServerError> {
    if origins.is_empty() {
        return match custom {
            None => Ok(None),
            Some(_) => Err(ServerError::Config(
                "FlowServer::cors needs the origins it serves: list them with \
                 FlowServer::allow_origins (the request guard refuses every other origin)"
                    .into(),
            )),
        };
    }
    let values = origins
        .iter()
        .map(|o| {
            HeaderValue::from_str(o).map_err(|_| {
                ServerError::Config(format!("allowed origins: `{o}` is not a header value"))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let layer = custom.unwrap_or_else(|| {
        CorsLayer::new()
            .allow_methods([Method::POST])
            .allow_headers(AllowHeaders::mirror_request())
            .expose_headers([TRACE_ID, SPAN_ID, crate::durable::STREAM_ID])
    });
    Ok(Some(layer.allow_origin(AllowOrigin::list(values))))
}

/// Adds a route; two different actions at one path (a flow named like an
/// agent's route) are refused rather than one silently hiding the other.
fn add_route(routes: &mut HashMap<String, Route>, path: String, route: Route) -> Result<(), Error> {
    if let Some(taken) = routes.get(&path) {
        let (old, new) = (taken.action.desc().key(), route.action.desc().key());
        if old != new {
            return Err(Error::invalid_argument(format!(
                "`{path}` would serve both `{old}` and `{new}`"
            )));
        }
    }
    routes.insert(path, route);
    Ok(())
}

/// The flow server's handler of every path: the served flows and agents.
#[derive(Clone)]
struct FlowService(Arc<Routes>);

impl<B> tower::Service<axum::http::Request<B>> for FlowService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = futures::future::Map<
        futures::future::BoxFuture<'static, Response>,
        fn(Response) -> Result<Response, std::convert::Infallible>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        dispatch(self.0.clone(), request.map(Body::new))
            .boxed()
            .map(Ok)
    }
}

async fn dispatch(served: Arc<Routes>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let axum::http::request::Parts {
        method,
        uri,
        headers,
        mut extensions,
        ..
    } = parts;
    let in_flight = extensions.remove::<crate::serving::InFlight>();
    let Some(route) = served.routes.get(uri.path()) else {
        return error_response(&Error::user_facing(
            StatusCode::NotFound,
            format!("no flow at `{}`", uri.path()),
        ));
    };
    if method != Method::POST {
        let mut r = error_response(&Error::user_facing(
            StatusCode::InvalidArgument,
            "flows accept only POST",
        ));
        *r.status_mut() = HttpStatus::METHOD_NOT_ALLOWED;
        r.headers_mut()
            .insert(axum::http::header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    let body = match read_body(body, served.body_limit).await {
        Ok(b) => b,
        Err(BodyError::TooLarge) => {
            let mut r = error_response(&Error::user_facing(
                StatusCode::InvalidArgument,
                "request body is too large",
            ));
            *r.status_mut() = HttpStatus::PAYLOAD_TOO_LARGE;
            return r;
        }
        Err(BodyError::Read(e)) => {
            // The cause (a connection error) is the server's business.
            ::tracing::debug!("flow server: reading a request body failed: {e}");
            return error_response(&Error::user_facing(
                StatusCode::InvalidArgument,
                "could not read the request body",
            ));
        }
    };
    let (input, init) = match parse_input(&body) {
        Ok(v) => v,
        Err(e) => return error_response(&e),
    };
    if input.is_null()
        && let Some(e) = missing_data_wrapper(&route.action, &body)
    {
        return error_response(&e);
    }
    if init.is_none() && route.action.desc().kind == genkit_core::ActionKind::Agent {
        return error_response(&Error::user_facing(
            StatusCode::InvalidArgument,
            "the agent request has no `init`: send {\"data\": <input>, \"init\": {}} \
             (`{}` starts a new session; {\"sessionId\": \"...\"} continues one)",
        ));
    }
    let streaming = wants_stream(&uri, &headers);
    // A streaming request naming a durable stream reads it and runs nothing.
    let resume = match (&served.durable, streaming) {
        (Some(_), true) => match crate::durable::requested_stream(&headers) {
            None => None,
            Some(Ok(id)) => match crate::durable::requested_offset(&headers) {
                Ok(offset) => Some((id, offset)),
                Err(e) => return error_response(&e),
            },
            Some(Err(e)) => return error_response(&e),
        },
        _ => None,
    };
    let (context, input, init) = match &route.provider {
        None => (ActionContext::new(), input, init),
        Some(provider) => {
            let request = RequestData {
                method,
                headers,
                input,
                init,
            };
            match provider.provide(&request).await {
                Ok(ctx) => (ctx, request.input, request.init),
                Err(e) => {
                    // Its details (an auth service's address...) stay here
                    // unless it made the error user-facing.
                    ::tracing::warn!(flow = route.action.name(), "context provider refused: {e}");
                    return error_response(&e);
                }
            }
        }
    };
    let durable = match (&served.durable, streaming) {
        (Some(d), true) => Some((d, crate::durable::owner_of(&context))),
        _ => None,
    };
    if let (Some((d, owner)), Some((id, offset))) = (&durable, resume) {
        return crate::durable::resume(d, id, owner.clone(), offset).await;
    }
    let mut opts = RunOptions::new().context(context);
    if let Some(in_flight) = &in_flight {
        // Work the run hands off (a detached agent turn) keeps the
        // request's place under the concurrency limit until it ends.
        opts = opts.extension(genkit_core::RunLease::new(in_flight.clone()));
    }
    let bounds = crate::bidi::Bounds {
        buffer: served.event_buffer,
        deadline: served.turn_timeout.map(|t| tokio::time::Instant::now() + t),
        in_flight,
    };
    if streaming {
        stream_response(route.action.clone(), init, input, opts, bounds, durable).await
    } else {
        let started = run::start(route.action.clone(), init, input, opts, false).await;
        let trace = started.trace;
        let outcome =
            events_of(&route.action, started.events, bounds).filter_map(|ev| async move {
                match ev {
                    Event::Done(r) => Some(r),
                    Event::Chunk(_) => None,
                }
            });
        let outcome = std::pin::pin!(outcome).next().await;
        match outcome.unwrap_or_else(|| Err(Error::internal("the run ended without an outcome"))) {
            Ok(output) => json_response(&output, trace),
            Err(e) => {
                log_failure(route.action.name(), &e);
                error_response(&e)
            }
        }
    }
}

/// Why a request body could not be read.
enum BodyError {
    /// Longer than the body limit.
    TooLarge,
    /// The connection failed.
    Read(axum::Error),
}

/// The whole request body, refused past `limit` bytes (at once when its
/// `Content-Length` says so). A body in one frame (the usual small JSON
/// request) is taken without a copy.
async fn read_body(body: Body, limit: usize) -> Result<Bytes, BodyError> {
    use http_body::Body as _;
    if body.size_hint().lower() > limit as u64 {
        return Err(BodyError::TooLarge);
    }
    let mut body = std::pin::pin!(body);
    let mut first: Option<Bytes> = None;
    let mut rest: Option<bytes::BytesMut> = None;
    let mut len = 0usize;
    while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
        let Ok(data) = frame.map_err(BodyError::Read)?.into_data() else {
            // Trailers carry nothing a flow reads.
            continue;
        };
        len += data.len();
        if len > limit {
            return Err(BodyError::TooLarge);
        }
        let Some(f) = &first else {
            first = Some(data);
            continue;
        };
        rest.get_or_insert_with(|| {
            let mut buf = bytes::BytesMut::with_capacity(f.len() + data.len());
            buf.extend_from_slice(f);
            buf
        })
        .extend_from_slice(&data);
    }
    Ok(match (first, rest) {
        (_, Some(buf)) => buf.freeze(),
        (Some(f), None) => f,
        (None, None) => Bytes::new(),
    })
}

/// `{"data": <input>, "init": <init>}` (the init only for bidirectional
/// actions); an empty body means no input.
fn parse_input(body: &[u8]) -> Result<(Value, Option<Value>), Error> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok((Value::Null, None));
    }
    let parsed = serde_json::from_slice::<Value>(body).map(crate::bidi::split_request);
    match parsed {
        Ok(Some(request)) => Ok(request),
        Ok(None) => Err(Error::user_facing(
            StatusCode::InvalidArgument,
            "the request body must be a JSON object `{\"data\": ...}`",
        )),
        Err(e) => Err(Error::user_facing(
            StatusCode::InvalidArgument,
            format!("the request body is not valid JSON: {e}"),
        )),
    }
}

/// A body that is an object with fields but no `data` (the input sent
/// bare, `{"city": "Paris"}`) to a flow whose input schema rejects `null`:
/// say so, rather than report that `null` does not fit the schema.
fn missing_data_wrapper(action: &DynAction, body: &[u8]) -> Option<Error> {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return None;
    };
    if fields.is_empty() || fields.contains_key("data") {
        return None;
    }
    let schema = action.desc().input_schema.as_ref()?;
    let rejects_null = SchemaValidator::compile(schema)
        .and_then(|v| v.validate(&Value::Null))
        .is_err();
    if !rejects_null {
        return None;
    }
    let keys: Vec<&str> = fields.keys().map(String::as_str).take(5).collect();
    Some(Error::user_facing(
        StatusCode::InvalidArgument,
        format!(
            "the request body has no `data` field (it has `{}`): send the flow's input \
             wrapped as {{\"data\": <input>}}",
            keys.join("`, `")
        ),
    ))
}

fn wants_stream(uri: &Uri, headers: &HeaderMap) -> bool {
    let by_query = uri
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "stream=true"));
    by_query
        || headers.get_all(ACCEPT).iter().any(|v| {
            v.to_str()
                .is_ok_and(|s| s.to_ascii_lowercase().contains("text/event-stream"))
        })
}

/// Logs a failed run. The caller gets only `Internal Error` for an error
/// that is not user-facing, so the log is where its details (message and
/// causes) are found.
fn log_failure(flow: &str, e: &Error) {
    if e.is_user_facing() {
        ::tracing::info!(flow, "flow `{flow}` failed: {e}");
    } else {
        ::tracing::error!(
            flow,
            "flow `{flow}` failed (the caller got `500 Internal Error`): {}",
            e.stack()
        );
    }
}

#[derive(Serialize)]
struct ResultBody<'a> {
    result: &'a Value,
}

fn json_response(output: &Value, trace: Option<TraceInfo>) -> Response {
    let body = match serde_json::to_vec(&ResultBody { result: output }) {
        Ok(b) => b,
        Err(e) => return error_response(&Error::from(e)),
    };
    let mut r = Response::new(Body::from(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(t) = trace {
        insert_trace_headers(h, t);
    }
    r
}

async fn stream_response(
    action: DynAction,
    init: Option<Value>,
    input: Value,
    opts: RunOptions<Value>,
    bounds: crate::bidi::Bounds,
    durable: Option<(&crate::durable::Durable, String)>,
) -> Response {
    let name = action.name().to_owned();
    // The stream exists before the run starts, so its id is never handed
    // out for a stream that cannot be read.
    let stream_id = match &durable {
        None => None,
        Some((d, owner)) => {
            let id = genkit_core::random_uuid();
            if let Err(e) = crate::durable::open(d, &id, owner).await {
                ::tracing::error!(flow = %name, "durable stream: opening failed: {}", e.stack());
                return error_response(&e);
            }
            Some(id)
        }
    };
    let started = run::start(action.clone(), init, input, opts, true).await;
    let events = match (&durable, &stream_id) {
        // Recorded, and driven to its end whether or not the client stays.
        (Some((d, _)), Some(id)) => {
            crate::bidi::outliving_the_client(crate::durable::record(d, id, started.events), bounds)
                .boxed()
        }
        _ => events_of(&action, started.events, bounds),
    };
    let frames = events.map(move |ev| match ev {
        Event::Chunk(c) => sse::message_frame(&c),
        Event::Done(Ok(out)) => sse::result_frame(&out),
        Event::Done(Err(e)) => {
            log_failure(&name, &e);
            sse::error_frame(&e)
        }
    });
    // Frames that are ready together go out in one write.
    let body = frames
        .ready_chunks(64)
        .map(|batch| Ok::<_, std::convert::Infallible>(concat(batch)));
    let mut r = Response::new(Body::from_stream(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Some(t) = started.trace {
        insert_trace_headers(h, t);
    }
    if let Some(id) = stream_id
        && let Ok(v) = HeaderValue::from_str(&id)
    {
        h.insert(crate::durable::STREAM_ID, v);
    }
    r
}

/// The events of a run for its response. Bidirectional actions (agents)
/// outlive a client that leaves, as in Genkit JS, within `bounds`; other
/// runs stop with it.
fn events_of(
    action: &DynAction,
    events: run::Events,
    bounds: crate::bidi::Bounds,
) -> futures::stream::BoxStream<'static, Event> {
    if genkit_core::action::as_bidi(action).is_some() {
        crate::bidi::outliving_the_client(events, bounds).boxed()
    } else {
        events.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_parsing() {
        assert_eq!(parse_input(b"").unwrap(), (Value::Null, None));
        assert_eq!(
            parse_input(br#"{"data": 5}"#).unwrap(),
            (Value::from(5), None)
        );
        assert_eq!(parse_input(br#"{}"#).unwrap(), (Value::Null, None));
        assert_eq!(
            parse_input(br#"{"data": 5, "init": {}}"#).unwrap(),
            (Value::from(5), Some(serde_json::json!({})))
        );
        assert_eq!(parse_input(b"[1]").unwrap_err().public_http_status(), 400);
        assert_eq!(parse_input(b"{").unwrap_err().public_http_status(), 400);
    }

    #[test]
    fn stream_detection() {
        let mut h = HeaderMap::new();
        assert!(!wants_stream(&"/f".parse().unwrap(), &h));
        assert!(wants_stream(&"/f?a=1&stream=true".parse().unwrap(), &h));
        assert!(!wants_stream(&"/f?stream=false".parse().unwrap(), &h));
        h.insert(ACCEPT, HeaderValue::from_static("Text/Event-Stream"));
        assert!(wants_stream(&"/f".parse().unwrap(), &h));
    }
}
