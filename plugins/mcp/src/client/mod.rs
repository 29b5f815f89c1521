//! One connection to one MCP server (rmcp's client): list and call its
//! tools, get its prompts, read its resources. Every error names the server,
//! and every request has the server's time limit.

use crate::config::{McpHandshake, McpServerConfig, McpTransport};
use crate::convert;
use genkit_core::{Error, Result, StatusCode};
use genkit_model::types::{Message, MultipartToolResponse, Part};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest,
    GetPromptRequestParams, Implementation, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Map, Value};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

mod progress_router;
mod progress_tap;
use progress_router::ProgressRouter;
use progress_tap::ProgressTap;

/// Called when a server says its tool list changed.
pub(crate) type ListChanged = Arc<dyn Fn() + Send + Sync>;

/// A progress report of a running tool call (`notifications/progress`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpProgress {
    /// How far along the call is (grows with each report).
    pub progress: f64,
    /// The total, if the server knows it.
    pub total: Option<f64>,
    /// A human-readable status, if any.
    pub message: Option<String>,
}

impl From<ProgressNotificationParam> for McpProgress {
    fn from(p: ProgressNotificationParam) -> Self {
        Self {
            progress: p.progress,
            total: p.total,
            message: p.message,
        }
    }
}

/// A tool a server offers (`tools/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// Its name on the server.
    pub name: String,
    /// What it does.
    pub description: Option<String>,
    /// The JSON schema of its arguments.
    pub input_schema: Value,
}

/// A prompt a server offers (`prompts/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpPrompt {
    /// Its name on the server.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// The (string) arguments it takes.
    pub arguments: Vec<McpPromptArgument>,
}

/// One argument of an [`McpPrompt`].
#[derive(Debug, Clone, PartialEq)]
pub struct McpPromptArgument {
    /// Its name.
    pub name: String,
    /// What it means.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A resource template a server offers (`resources/templates/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpResourceTemplate {
    /// Its RFC 6570 URI template, e.g. `file:///{path}`.
    pub uri_template: String,
    /// Its programmatic name.
    pub name: String,
    /// What the resources it describes are.
    pub description: Option<String>,
    /// The MIME type of those resources, if they share one.
    pub mime_type: Option<String>,
}

impl McpResourceTemplate {
    /// The URI for `values`, expanding the template's `{name}` expressions
    /// (RFC 6570 simple string expansion: values are percent-encoded, except
    /// unreserved characters; a missing value expands to nothing). Operator
    /// expressions (`{+path}`, `{?q}`, ...) are an error: read such a
    /// resource by its URI with [`McpClient::read_resource`].
    pub fn expand(&self, values: &std::collections::BTreeMap<String, String>) -> Result<String> {
        let mut uri = String::with_capacity(self.uri_template.len());
        let mut rest = self.uri_template.as_str();
        while let Some(open) = rest.find('{') {
            uri.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or_else(|| {
                Error::invalid_argument(format!(
                    "URI template `{}` has an unclosed `{{`",
                    self.uri_template
                ))
            })?;
            let expr = &after[..close];
            for name in expr.split(',') {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(Error::invalid_argument(format!(
                        "URI template `{}`: only simple `{{name}}` expressions can be expanded here, not `{{{expr}}}`",
                        self.uri_template
                    )));
                }
            }
            let expanded: Vec<String> = expr
                .split(',')
                .filter_map(|name| values.get(name))
                .map(|v| percent_encode(v))
                .collect();
            uri.push_str(&expanded.join(","));
            rest = &after[close + 1..];
        }
        uri.push_str(rest);
        Ok(uri)
    }
}

/// Percent-encodes all but RFC 3986's unreserved characters.
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The client side of the protocol: answers the server's notifications.
/// Progress reports are not among them: the transport passes them on as it
/// reads them ([`ProgressTap`]), so they stay in order with the answers.
struct Handler {
    name: String,
    progress: ProgressRouter,
    tools_changed: ListChanged,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        (self.tools_changed)();
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        // The newest revision with an `initialize` handshake: what the
        // handshake offers (`server/discover` names its versions itself).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

/// A connected MCP server.
pub struct McpClient {
    server: String,
    timeout: Duration,
    service: RunningService<RoleClient, Handler>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts (stdio) or reaches (HTTP) the server `server` and completes the
    /// initialisation handshake within the configured timeout. `client_name`
    /// is how the host introduces itself.
    pub async fn connect(
        client_name: &str,
        server: &str,
        config: &McpServerConfig,
    ) -> Result<McpClient> {
        Self::connect_with(client_name, server, config, Arc::new(|| {})).await
    }

    pub(crate) async fn connect_with(
        client_name: &str,
        server: &str,
        config: &McpServerConfig,
        tools_changed: ListChanged,
    ) -> Result<McpClient> {
        let handler = Handler {
            name: client_name.to_owned(),
            progress: ProgressRouter::default(),
            tools_changed,
        };
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            Error::new(
                StatusCode::Unavailable,
                format!("MCP server `{server}`: {what}: {e}"),
            )
        };
        let lifecycle = match config.handshake {
            McpHandshake::Initialize => ClientLifecycleMode::Initialize,
            McpHandshake::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            McpHandshake::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
        };
        let start = async {
            match &config.transport {
                McpTransport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let mut cmd = tokio::process::Command::new(command);
                    // A server abandoned mid-handshake (timeout) must not outlive us.
                    cmd.args(args).envs(env).kill_on_drop(true);
                    if let Some(dir) = cwd {
                        cmd.current_dir(dir);
                    }
                    let transport = TokioChildProcess::new(cmd)
                        .map_err(|e| failed(&format!("starting `{command}`"), &e))?;
                    let transport = ProgressTap::new(transport, handler.progress.clone());
                    handler
                        .serve_with_lifecycle(transport, lifecycle)
                        .await
                        .map_err(|e| failed("initialising", &e))
                }
                McpTransport::Http { url, headers } => {
                    if !url.starts_with("http://") {
                        return Err(Error::invalid_argument(format!(
                            "MCP server `{server}`: only `http://` URLs are supported (no TLS backend is built in), got `{url}`"
                        )));
                    }
                    let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    for (name, value) in headers {
                        let name = name.parse().map_err(|e| failed("header name", &e))?;
                        let value = value.parse().map_err(|e| failed("header value", &e))?;
                        cfg.custom_headers.insert(name, value);
                    }
                    let transport = StreamableHttpClientTransport::from_config(cfg);
                    let transport = ProgressTap::new(transport, handler.progress.clone());
                    handler
                        .serve_with_lifecycle(transport, lifecycle)
                        .await
                        .map_err(|e| failed("initialising", &e))
                }
            }
        };
        let service = tokio::time::timeout(config.timeout, start)
            .await
            .map_err(|_| {
                Error::new(
                    StatusCode::DeadlineExceeded,
                    format!(
                        "MCP server `{server}`: no answer to the initialisation within {:?}",
                        config.timeout
                    ),
                )
            })??;
        Ok(McpClient {
            server: server.to_owned(),
            timeout: config.timeout,
            service,
        })
    }

    /// The server's name in the host.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The protocol version negotiated with the server (e.g. `2025-11-25`).
    pub fn protocol_version(&self) -> Option<String> {
        self.service
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.to_string())
    }

    /// Whether the server tells the host when its tool list changes
    /// (`notifications/tools/list_changed` on the session of the
    /// `initialize` revisions); the stateless 2026-07-28 revision sends them
    /// only to subscriptions, so the host lists its tools at each use.
    pub fn notifies_list_changes(&self) -> bool {
        self.service
            .peer()
            .peer_info()
            .is_some_and(|info| info.protocol_version.has_initialize())
    }

    /// The name and version the server introduced itself with, if it did.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.service.peer().peer_info()?;
        let implementation = info.server_info.as_ref()?;
        Some((implementation.name.clone(), implementation.version.clone()))
    }

    /// Runs one request with the time limit, naming the server and the
    /// operation in any error.
    async fn request<T>(
        &self,
        what: &str,
        fut: impl Future<Output = std::result::Result<T, ServiceError>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.timeout, fut).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.service_error(what, e)),
            Err(_) => Err(self.timeout_error(what)),
        }
    }

    fn timeout_error(&self, what: &str) -> Error {
        Error::new(
            StatusCode::DeadlineExceeded,
            format!(
                "MCP server `{}`: {what}: no answer within {:?}",
                self.server, self.timeout
            ),
        )
    }

    fn service_error(&self, what: &str, e: ServiceError) -> Error {
        let status = match &e {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                StatusCode::Unavailable
            }
            ServiceError::Timeout { .. } => StatusCode::DeadlineExceeded,
            ServiceError::Cancelled { .. } => StatusCode::Cancelled,
            _ => StatusCode::Internal,
        };
        let detail = match &e {
            ServiceError::TransportClosed => "the connection closed (did the server exit?)".into(),
            ServiceError::UnexpectedResponse => {
                "its reply does not fit the request (a malformed or mismatched result)".into()
            }
            other => other.to_string(),
        };
        Error::new(
            status,
            format!("MCP server `{}`: {what}: {detail}", self.server),
        )
    }

    /// Every tool the server offers (all pages).
    pub async fn list_tools(&self) -> Result<Vec<McpTool>> {
        let tools = self
            .request("listing tools", self.service.peer().list_all_tools())
            .await?;
        Ok(tools
            .into_iter()
            .map(|t| McpTool {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()),
                input_schema: Value::Object((*t.input_schema).clone()),
            })
            .collect())
    }

    /// Calls the tool `name`; the raw `CallToolResult` JSON. An `isError`
    /// result is returned as is (see [`call_tool`](Self::call_tool)).
    /// `on_progress` receives the server's progress reports for this call,
    /// every one sent before the answer, in the order sent (a report whose
    /// progress does not grow, which the spec forbids, is dropped).
    pub async fn call_tool_raw(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        on_progress: Option<&(dyn Fn(McpProgress) + Send + Sync)>,
    ) -> Result<Value> {
        let what = format!("calling tool `{name}`");
        let mut params = CallToolRequestParams::new(name.to_owned());
        params.arguments = arguments;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let options = PeerRequestOptions::with_timeout(self.timeout);
        let handle = self
            .request(
                &what,
                self.service
                    .peer()
                    .send_request_with_option(request, options),
            )
            .await?;
        // rmcp gives each request its own progress token, known only once
        // the request is queued: reports read before this subscription are
        // kept for it by the router (see `ProgressRouter`).
        let mut progress = self
            .service
            .service()
            .progress
            .subscribe(handle.progress_token.clone());
        let response = handle.await_response();
        tokio::pin!(response);
        // Progress only grows (the spec requires it); a report that does
        // not is a server's bug, dropped rather than passed on.
        let mut last = f64::NEG_INFINITY;
        let mut report = |p: ProgressNotificationParam| {
            if p.progress > last {
                last = p.progress;
                if let Some(f) = on_progress {
                    f(p.into());
                }
            }
        };
        let result = loop {
            tokio::select! {
                biased;
                Some(p) = progress.next() => report(p),
                r = &mut response => break r,
            }
        };
        // The transport queued every report sent before the answer by the
        // time the answer resolved (see `ProgressTap`): take the rest.
        while let Some(p) = progress.try_next() {
            report(p);
        }
        match result.map_err(|e| self.service_error(&what, e))? {
            ServerResult::CallToolResult(r) => serde_json::to_value(&r)
                .map_err(|e| Error::internal(format!("MCP server `{}`: {what}: {e}", self.server))),
            other => Err(Error::new(
                StatusCode::Unimplemented,
                format!(
                    "MCP server `{}`: {what}: unsupported reply {}",
                    self.server,
                    reply_kind(&other)
                ),
            )),
        }
    }

    /// Calls the tool `name` and maps its result to a multipart tool
    /// response (see [`convert::tool_result`]); an `isError` result is an
    /// error naming the server and the tool.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
        on_progress: Option<&(dyn Fn(McpProgress) + Send + Sync)>,
    ) -> Result<MultipartToolResponse> {
        let result = self.call_tool_raw(name, arguments, on_progress).await?;
        if convert::is_error(&result) {
            return Err(Error::new(
                StatusCode::Internal,
                format!(
                    "MCP server `{}`: tool `{name}` failed: {}",
                    self.server,
                    convert::error_text(&result)
                ),
            ));
        }
        Ok(convert::tool_result(&result))
    }

    /// Whether the server declared prompts and resources in its
    /// capabilities (what the host lists as registry actions).
    pub fn offers_prompts_and_resources(&self) -> (bool, bool) {
        self.service
            .peer()
            .peer_info()
            .map(|info| {
                (
                    info.capabilities.prompts.is_some(),
                    info.capabilities.resources.is_some(),
                )
            })
            .unwrap_or((false, false))
    }

    /// The server's prompts with their arguments (all pages).
    pub async fn list_prompt_infos(&self) -> Result<Vec<McpPrompt>> {
        let prompts = self
            .request("listing prompts", self.service.peer().list_all_prompts())
            .await?;
        Ok(prompts
            .into_iter()
            .map(|p| McpPrompt {
                name: p.name,
                description: p.description,
                arguments: p
                    .arguments
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| McpPromptArgument {
                        name: a.name,
                        description: a.description,
                        required: a.required.unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// Names (and descriptions) of the server's prompts.
    pub async fn list_prompts(&self) -> Result<Vec<(String, Option<String>)>> {
        let prompts = self
            .request("listing prompts", self.service.peer().list_all_prompts())
            .await?;
        Ok(prompts
            .into_iter()
            .map(|p| (p.name, p.description))
            .collect())
    }

    /// Renders the prompt `name` with string `arguments`, as Genkit messages.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<Vec<Message>> {
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        let what = format!("getting prompt `{name}`");
        let result = self
            .request(&what, self.service.peer().get_prompt(params))
            .await?;
        let json = serde_json::to_value(&result)
            .map_err(|e| Error::internal(format!("MCP server `{}`: {what}: {e}", self.server)))?;
        Ok(convert::prompt_messages(&json))
    }

    /// URIs (and names) of the server's fixed resources.
    pub async fn list_resources(&self) -> Result<Vec<(String, String)>> {
        let resources = self
            .request(
                "listing resources",
                self.service.peer().list_all_resources(),
            )
            .await?;
        Ok(resources.into_iter().map(|r| (r.uri, r.name)).collect())
    }

    /// The server's resource templates (all pages).
    pub async fn list_resource_templates(&self) -> Result<Vec<McpResourceTemplate>> {
        let templates = self
            .request(
                "listing resource templates",
                self.service.peer().list_all_resource_templates(),
            )
            .await?;
        Ok(templates
            .into_iter()
            .map(|t| McpResourceTemplate {
                uri_template: t.uri_template,
                name: t.name,
                description: t.description,
                mime_type: t.mime_type,
            })
            .collect())
    }

    /// Reads the resource at `uri` (a fixed resource's, or one a template
    /// describes), as parts.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<Part>> {
        let what = format!("reading resource `{uri}`");
        let result = self
            .request(
                &what,
                self.service
                    .peer()
                    .read_resource(ReadResourceRequestParams::new(uri)),
            )
            .await?;
        let json = serde_json::to_value(&result)
            .map_err(|e| Error::internal(format!("MCP server `{}`: {what}: {e}", self.server)))?;
        Ok(convert::resource_parts(&json))
    }

    /// Ends the session (stops a stdio server's process).
    pub async fn close(mut self) {
        if let Err(e) = self.service.close().await {
            tracing::warn!(server = %self.server, "closing the MCP connection: {e}");
        }
    }
}

fn reply_kind(result: &ServerResult) -> &'static str {
    match result {
        ServerResult::InputRequiredResult(_) => "`input_required` (not supported)",
        _ => "of an unexpected type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn template(uri: &str) -> McpResourceTemplate {
        McpResourceTemplate {
            uri_template: uri.into(),
            name: "t".into(),
            description: None,
            mime_type: None,
        }
    }

    #[test]
    fn simple_templates_expand_with_percent_encoding() {
        let values = BTreeMap::from([
            ("name".to_owned(), "Ada Lovelace/1".to_owned()),
            ("n".to_owned(), "7".to_owned()),
        ]);
        assert_eq!(
            template("test://greeting/{name}").expand(&values).unwrap(),
            "test://greeting/Ada%20Lovelace%2F1"
        );
        assert_eq!(
            template("a://{n}/{missing}/{n,name}")
                .expand(&values)
                .unwrap(),
            "a://7//7,Ada%20Lovelace%2F1"
        );
        assert!(template("a://{+path}").expand(&values).is_err());
        assert!(template("a://{oops").expand(&values).is_err());
    }
}
