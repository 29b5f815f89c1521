//! The server side: a Genkit registry's tools, prompts and resources served
//! to MCP clients (Genkit JS's `createMcpServer`), over stdio or Streamable
//! HTTP, with rmcp's server.
//!
//! What is served is read from the registry at each request, so actions
//! defined after the server started are served too:
//!
//! - every `/tool/` and `/tool.v2/` action as a tool, named by its action
//!   name, with its input JSON schema; a call runs the action and answers
//!   its output as text (and `structuredContent` for an object), a failure
//!   (bad input included) as an `isError` result with the message; when the
//!   client asks for progress, the tool's stream chunks are sent as progress
//!   notifications (see [`convert::progress`]), and a cancelled request
//!   cancels the run;
//! - every `/prompt/` action as a prompt, its input schema's properties as
//!   arguments; `prompts/get` renders it and maps the messages;
//! - every `/resource/` action: fixed URIs in `resources/list`, templates
//!   in `resources/templates/list`, and `resources/read` routed to the first
//!   resource (by name) serving the URI; a `mimeType` entry in the
//!   resource's metadata is listed and labels its text contents (which are
//!   `text/plain` otherwise).
//!
//! An unknown tool or prompt is a JSON-RPC "invalid params" error (-32602)
//! and an unknown resource URI a "resource not found" error (-32002), as
//! the specification asks.

mod changes;
pub mod convert;

use genkit_core::{ActionKind, DynAction, Error, Registry, RunOptions, StatusCode};
use genkit_model::resource::{Resource, list_resources};
use genkit_model::types::GenerateRequest;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// The path [`McpServer::router`] serves Streamable HTTP on.
pub const MCP_PATH: &str = "/mcp";

/// How the server introduces itself (`serverInfo` in the handshake).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerOptions {
    /// The server's name.
    pub name: String,
    /// Its version (`1.0.0` unless set, as in Genkit JS).
    pub version: String,
}

impl McpServerOptions {
    /// Options for a server named `name`, version `1.0.0`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: "1.0.0".into(),
        }
    }

    /// Sets the version.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }
}

/// An MCP server serving a registry's tools, prompts and resources (see
/// the [module docs](self)). Cheap to clone: clones share the registry.
#[derive(Clone)]
pub struct McpServer {
    registry: Registry,
    options: Arc<McpServerOptions>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// A server for `registry` (Genkit JS's `createMcpServer(ai, {name, version})`).
pub fn create_mcp_server(registry: &Registry, options: McpServerOptions) -> McpServer {
    McpServer::new(registry, options)
}

impl McpServer {
    /// A server for `registry`.
    pub fn new(registry: &Registry, options: McpServerOptions) -> Self {
        Self {
            registry: registry.clone(),
            options: Arc::new(options),
        }
    }

    /// Serves one client on this process's stdin and stdout until the client
    /// disconnects (closes stdin).
    pub async fn serve_stdio(self) -> genkit_core::Result<()> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves one client over a byte stream pair (newline-delimited JSON-RPC,
    /// as stdio) until it disconnects.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> genkit_core::Result<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let name = self.options.name.clone();
        let running = self.serve((reader, writer)).await.map_err(|e| {
            Error::new(
                StatusCode::Unavailable,
                format!("MCP server `{name}`: the handshake failed: {e}"),
            )
        })?;
        running
            .waiting()
            .await
            .map_err(|e| Error::internal(format!("MCP server `{name}` stopped: {e}")))?;
        Ok(())
    }

    /// The Streamable HTTP endpoint as a tower service (rmcp's), with a
    /// session per client: mount it in any router (axum's `nest_service`).
    /// Like rmcp's default, it accepts only loopback `Host` headers
    /// (`localhost`, `127.0.0.1`, `::1`) against DNS rebinding; see
    /// [`streamable_http_service_with`](Self::streamable_http_service_with).
    pub fn streamable_http_service(&self) -> StreamableHttpService<McpServer, LocalSessionManager> {
        self.streamable_http_service_with(StreamableHttpServerConfig::default())
    }

    /// [`streamable_http_service`](Self::streamable_http_service) with rmcp's
    /// configuration (allowed hosts and origins, keep-alive, JSON responses,
    /// cancellation).
    pub fn streamable_http_service_with(
        &self,
        config: StreamableHttpServerConfig,
    ) -> StreamableHttpService<McpServer, LocalSessionManager> {
        let server = self.clone();
        StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        )
    }

    /// An axum router serving Streamable HTTP at [`MCP_PATH`] (`/mcp`).
    pub fn router(&self) -> axum::Router {
        axum::Router::new().nest_service(MCP_PATH, self.streamable_http_service())
    }

    /// Serves Streamable HTTP at `http://<listener address>/mcp` until
    /// `shutdown` completes.
    pub async fn serve_http(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> genkit_core::Result<()> {
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|e| Error::internal(format!("MCP server `{}`: {e}", self.options.name)))
    }

    /// The registry's actions of `kinds`, by name (the first kind wins when
    /// two share a name).
    async fn actions(&self, kinds: &[ActionKind]) -> Result<Vec<DynAction>, ErrorData> {
        let all = self.registry.list_actions().await.map_err(internal)?;
        let mut out: Vec<DynAction> = Vec::new();
        for kind in kinds {
            for action in all.values().filter(|a| a.desc().kind == *kind) {
                if !out.iter().any(|a| a.name() == action.name()) {
                    out.push(action.clone());
                }
            }
        }
        out.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(out)
    }

    async fn tools(&self) -> Result<Vec<DynAction>, ErrorData> {
        self.actions(&[ActionKind::Tool, ActionKind::ToolV2]).await
    }

    async fn resources(&self) -> Result<Vec<Resource>, ErrorData> {
        list_resources(&self.registry).await.map_err(internal)
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"listChanged": true},
        }))
        .unwrap_or_default();
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            self.options.name.clone(),
            self.options.version.clone(),
        ))
    }

    /// Once the client has initialised, tells it when tools, prompts or
    /// resources are registered later (`notifications/*/list_changed`).
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        changes::watch(&self.registry, context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools: Vec<Value> = self
            .tools()
            .await?
            .iter()
            .map(|t| convert::tool_entry(t.desc()))
            .collect();
        wire(json!({"resultType": "complete", "tools": tools}))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = self
            .tools()
            .await?
            .into_iter()
            .find(|t| t.name() == request.name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("Unknown tool: {}", request.name), None)
            })?;
        let desc = tool.desc();
        let input = convert::tool_input(desc, request.arguments);
        // The client's cancellation (`notifications/cancelled`) cancels the run.
        let mut opts = RunOptions::default().cancel(context.ct.clone());
        let forwarder = context
            .meta
            .get_progress_token()
            .map(|token| forward_progress(&mut opts, token, context.peer.clone()));
        let outcome = tool.run_json(input, opts).await;
        if let Some(forwarder) = forwarder {
            // Reports go out before the result; a chunk sender kept alive
            // past the run must not hold the result back.
            let _ = tokio::time::timeout(PROGRESS_DRAIN, forwarder).await;
        }
        let result = match outcome {
            Ok(out) => convert::tool_result(desc.kind, &out.output),
            Err(e) => convert::tool_error(e.message()),
        };
        Ok(wire::<CallToolResult>(result)?.into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let prompts: Vec<Value> = self
            .actions(&[ActionKind::Prompt])
            .await?
            .iter()
            .map(|p| convert::prompt_entry(p.desc()))
            .collect();
        wire(json!({"resultType": "complete", "prompts": prompts}))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let prompt = self
            .actions(&[ActionKind::Prompt])
            .await?
            .into_iter()
            .find(|p| p.name() == request.name)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("Unknown prompt: {}", request.name), None)
            })?;
        let desc = prompt.desc();
        let input = convert::prompt_input(desc, request.arguments);
        let rendered = prompt
            .run_json(input, RunOptions::default())
            .await
            .map_err(|e| action_error(&format!("prompt `{}`", request.name), &e))?
            .output;
        // The rendered request is checked for shape before it is mapped.
        let request_json = serde_json::from_value::<GenerateRequest>(rendered.clone())
            .map(|_| rendered)
            .map_err(|e| {
                ErrorData::internal_error(
                    format!("prompt `{}` rendered an invalid request: {e}", request.name),
                    None,
                )
            })?;
        let result =
            convert::prompt_result(desc.description.as_deref(), &request_json).map_err(|e| {
                ErrorData::internal_error(format!("prompt `{}`: {e}", request.name), None)
            })?;
        Ok(wire::<GetPromptResult>(result)?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources: Vec<Value> = self
            .resources()
            .await?
            .iter()
            .filter_map(convert::resource_entry)
            .collect();
        wire(json!({"resultType": "complete", "resources": resources}))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates: Vec<Value> = self
            .resources()
            .await?
            .iter()
            .filter_map(convert::template_entry)
            .collect();
        wire(json!({"resultType": "complete", "resourceTemplates": templates}))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let resource = self
            .resources()
            .await?
            .into_iter()
            .find(|r| r.matches(&uri))
            .ok_or_else(|| {
                ErrorData::resource_not_found(
                    format!("Resource not found: {uri}"),
                    Some(json!({"uri": uri})),
                )
            })?;
        let out = resource
            .read(&uri)
            .await
            .map_err(|e| action_error(&format!("resource `{}`", resource.name()), &e))?;
        let mime = convert::resource_mime_type(&resource);
        let result =
            convert::resource_result(&uri, mime.as_deref(), &out.content).map_err(|e| {
                ErrorData::internal_error(format!("resource `{}`: {e}", resource.name()), None)
            })?;
        Ok(wire::<ReadResourceResult>(result)?.into())
    }
}

/// How long a finished tool call waits for its last progress reports.
const PROGRESS_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Sends the tool's stream chunks as progress notifications for `token`,
/// in order (one task drains them), until the run drops its chunk sender.
fn forward_progress(
    opts: &mut RunOptions<Value>,
    token: ProgressToken,
    peer: Peer<RoleServer>,
) -> tokio::task::JoinHandle<()> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
    *opts = std::mem::take(opts).on_chunk(move |chunk| {
        let _ = tx.send(chunk);
    });
    tokio::spawn(async move {
        let mut last = None;
        while let Some(chunk) = rx.recv().await {
            let Some((progress, total, message)) = convert::progress(&chunk, last) else {
                continue;
            };
            last = Some(progress);
            let mut param = ProgressNotificationParam::new(token.clone(), progress);
            param.total = total;
            param.message = message;
            if peer.notify_progress(param).await.is_err() {
                // The client is gone: nobody to report to.
                break;
            }
        }
    })
}

/// Wire JSON as an rmcp type; a mismatch is our bug, reported as an
/// internal error rather than a panic.
fn wire<T: DeserializeOwned>(value: Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("building the MCP result: {e}"), None))
}

fn internal(e: Error) -> ErrorData {
    ErrorData::internal_error(e.message().to_owned(), None)
}

/// A failed prompt render or resource read as a JSON-RPC error: bad input
/// is "invalid params", anything else an internal error with the message.
fn action_error(what: &str, e: &Error) -> ErrorData {
    let message = format!("{what}: {}", e.message());
    match e.status() {
        StatusCode::InvalidArgument => ErrorData::invalid_params(message, None),
        _ => ErrorData::internal_error(message, None),
    }
}
