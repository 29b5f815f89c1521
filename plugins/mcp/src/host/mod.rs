//! The host: named connections to any number of MCP servers, and their
//! tools as Genkit tool actions (Genkit JS's `GenkitMcpHost`).

mod actions;

use crate::client::{McpClient, McpProgress, McpResourceTemplate};
use crate::config::McpServerConfig;
use async_trait::async_trait;
use genkit_core::{
    Action, ActionDesc, ActionKind, DynAction, DynamicActionProvider, Error, Registry, Result,
};
use genkit_model::types::{Message, Part};
use parking_lot::RwLock;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

/// Connections to named MCP servers. Cheap to clone (shared).
///
/// Tools are listed from each server on first use and cached until the
/// server sends `notifications/tools/list_changed` (or is reconnected), so
/// tools a server adds later appear without a restart; a server on the
/// stateless 2026-07-28 revision, which sends no such notification on its
/// own, is listed at each use.
#[derive(Clone)]
pub struct McpHost {
    inner: Arc<HostInner>,
}

struct HostInner {
    name: String,
    servers: RwLock<BTreeMap<String, Server>>,
}

/// A configured server: connected, or disabled (configured, not running).
struct Server {
    config: McpServerConfig,
    connection: Option<Connection>,
}

struct Connection {
    client: Arc<McpClient>,
    tools: Arc<RwLock<ToolCache>>,
}

/// A server's tools as actions, until its tool list changes.
#[derive(Default)]
struct ToolCache {
    /// Bumped by each list-changed notification, so a listing that was
    /// under way when the list changed is not cached.
    generation: u64,
    tools: Option<Vec<DynAction>>,
}

impl std::fmt::Debug for McpHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHost")
            .field("name", &self.inner.name)
            .field("servers", &self.server_names())
            .finish()
    }
}

impl McpHost {
    /// A host with no servers. `name` is how it introduces itself to servers
    /// and, once defined in a registry, the prefix of its tools' keys.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(HostInner {
                name: name.into(),
                servers: RwLock::new(BTreeMap::new()),
            }),
        }
    }

    /// A host connected to every server of `servers` (in parallel); the
    /// first server that fails to connect fails the whole call, naming it.
    pub async fn with_servers<I, S>(name: impl Into<String>, servers: I) -> Result<Self>
    where
        I: IntoIterator<Item = (S, McpServerConfig)>,
        S: Into<String>,
    {
        let host = Self::new(name);
        let connects = servers.into_iter().map(|(server, config)| {
            let host = host.clone();
            let server = server.into();
            async move { host.connect(&server, config).await }
        });
        futures::future::try_join_all(connects).await?;
        Ok(host)
    }

    /// The host's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Names of the configured servers (enabled or not).
    pub fn server_names(&self) -> Vec<String> {
        self.inner.servers.read().keys().cloned().collect()
    }

    /// Connects the server `server` (replacing, and closing, a server of
    /// that name). A server that cannot be started or does not complete the
    /// handshake in time is an error naming it; the host is left unchanged.
    /// A server configured [`disabled`](McpServerConfig::disabled) is only
    /// recorded, not started.
    pub async fn connect(&self, server: &str, config: McpServerConfig) -> Result<()> {
        if server.is_empty() || server.contains('/') {
            return Err(Error::invalid_argument(format!(
                "MCP server name `{server}` must be non-empty and without `/`"
            )));
        }
        let connection = if config.disabled {
            None
        } else {
            Some(self.open(server, &config).await?)
        };
        let previous = self
            .inner
            .servers
            .write()
            .insert(server.to_owned(), Server { config, connection });
        if let Some(old) = previous {
            close(old.connection).await;
        }
        Ok(())
    }

    /// A new connection to `server`, with a tool cache its list-changed
    /// notifications clear.
    async fn open(&self, server: &str, config: &McpServerConfig) -> Result<Connection> {
        let tools: Arc<RwLock<ToolCache>> = Arc::default();
        let stale = Arc::downgrade(&tools);
        let on_change = Arc::new(move || {
            if let Some(tools) = stale.upgrade() {
                let mut cache = tools.write();
                cache.generation += 1;
                cache.tools = None;
            }
        });
        let client = McpClient::connect_with(self.name(), server, config, on_change).await?;
        Ok(Connection {
            client: Arc::new(client),
            tools,
        })
    }

    /// Disconnects the server `server` and forgets its configuration
    /// (stopping a stdio server); `NOT_FOUND` if there is none.
    pub async fn disconnect(&self, server: &str) -> Result<()> {
        let removed = self.inner.servers.write().remove(server);
        match removed {
            Some(old) => {
                close(old.connection).await;
                Ok(())
            }
            None => Err(self.unknown(server)),
        }
    }

    /// Disables the server `server` (Genkit JS's `disable`): its connection
    /// closes (a stdio server stops) but its configuration stays; its tools
    /// vanish from listings and calls to them fail saying it is disabled.
    /// Disabling a disabled server does nothing; `NOT_FOUND` if there is
    /// none.
    pub async fn disable(&self, server: &str) -> Result<()> {
        let connection = {
            let mut servers = self.inner.servers.write();
            let s = servers
                .get_mut(server)
                .ok_or_else(|| self.unknown(server))?;
            s.config.disabled = true;
            s.connection.take()
        };
        close(connection).await;
        Ok(())
    }

    /// Enables the server `server` (Genkit JS's `enable`), connecting it
    /// again with its configuration. Enabling an enabled server does
    /// nothing. If it cannot connect, the error names it and it stays
    /// disabled.
    pub async fn enable(&self, server: &str) -> Result<()> {
        let config = {
            let servers = self.inner.servers.read();
            let s = servers.get(server).ok_or_else(|| self.unknown(server))?;
            if s.connection.is_some() {
                return Ok(());
            }
            s.config.clone().disabled(false)
        };
        self.connect(server, config).await
    }

    /// Closes the connection to `server` and connects it again with its
    /// configuration (Genkit JS's `reconnect`), enabling it if it was
    /// disabled: a way back from a server that died or misbehaved. If it
    /// cannot connect, the error names it and it is left disabled.
    pub async fn reconnect(&self, server: &str) -> Result<()> {
        let (config, old) = {
            let mut servers = self.inner.servers.write();
            let s = servers
                .get_mut(server)
                .ok_or_else(|| self.unknown(server))?;
            s.config.disabled = true;
            (s.config.clone().disabled(false), s.connection.take())
        };
        close(old).await;
        self.connect(server, config).await
    }

    /// Whether `server` is enabled (connected); `NOT_FOUND` if there is none.
    pub fn is_enabled(&self, server: &str) -> Result<bool> {
        self.inner
            .servers
            .read()
            .get(server)
            .map(|s| s.connection.is_some())
            .ok_or_else(|| self.unknown(server))
    }

    /// The configuration of `server`; `NOT_FOUND` if there is none.
    pub fn server_config(&self, server: &str) -> Result<McpServerConfig> {
        self.inner
            .servers
            .read()
            .get(server)
            .map(|s| s.config.clone())
            .ok_or_else(|| self.unknown(server))
    }

    /// The protocol version negotiated with `server` (e.g. `2025-11-25`).
    pub fn protocol_version(&self, server: &str) -> Result<String> {
        self.client(server)?.protocol_version().ok_or_else(|| {
            Error::internal(format!(
                "MCP server `{server}`: no protocol version was negotiated"
            ))
        })
    }

    /// Disconnects every server.
    pub async fn close(&self) {
        let all = std::mem::take(&mut *self.inner.servers.write());
        for (_, server) in all {
            close(server.connection).await;
        }
    }

    /// The connection to `server`: `NOT_FOUND` if there is none,
    /// `FAILED_PRECONDITION` if it is disabled.
    pub fn client(&self, server: &str) -> Result<Arc<McpClient>> {
        let servers = self.inner.servers.read();
        let s = servers.get(server).ok_or_else(|| self.unknown(server))?;
        Ok(live(&self.inner.name, server, s)?.client.clone())
    }

    fn unknown(&self, server: &str) -> Error {
        unknown(&self.inner.name, server)
    }

    /// The tools of `server` as Genkit tool actions named
    /// `<server>/<tool>` (multipart tools, kind `tool.v2`: images and
    /// resources come back as parts), those its configuration's tool filter
    /// allows. Listed once and cached until the server's tool list changes.
    /// A disabled server's tools are an error saying so.
    pub async fn server_tools(&self, server: &str) -> Result<Vec<DynAction>> {
        let (client, cache, config) = {
            let servers = self.inner.servers.read();
            let s = servers.get(server).ok_or_else(|| self.unknown(server))?;
            let c = live(&self.inner.name, server, s)?;
            (c.client.clone(), c.tools.clone(), s.config.clone())
        };
        let generation = {
            let cache = cache.read();
            if let Some(tools) = &cache.tools {
                return Ok(tools.clone());
            }
            cache.generation
        };
        let listed = client.list_tools().await?;
        let mut actions = Vec::with_capacity(listed.len());
        for tool in listed.into_iter().filter(|t| config.allows_tool(&t.name)) {
            match tool_action(Arc::downgrade(&self.inner), server, tool) {
                Ok(action) => actions.push(action),
                Err(e) => tracing::warn!(server, "skipping an MCP tool: {e}"),
            }
        }
        let mut cache = cache.write();
        if cache.generation == generation && client.notifies_list_changes() {
            cache.tools = Some(actions.clone());
        }
        Ok(actions)
    }

    /// The tools of every enabled server. A server that fails to list its
    /// tools is skipped with a warning (as in Genkit JS), so one broken
    /// server does not hide the others' tools.
    pub async fn tools(&self) -> Vec<DynAction> {
        let mut all = Vec::new();
        let enabled: Vec<String> = self
            .inner
            .servers
            .read()
            .iter()
            .filter(|(_, s)| s.connection.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        for server in enabled {
            match self.server_tools(&server).await {
                Ok(tools) => all.extend(tools),
                Err(e) => tracing::warn!(host = self.name(), "{e}"),
            }
        }
        all
    }

    /// The tool `tool` of `server`, if the server offers it.
    pub async fn tool(&self, server: &str, tool: &str) -> Result<Option<DynAction>> {
        let name = format!("{server}/{tool}");
        Ok(self
            .server_tools(server)
            .await?
            .into_iter()
            .find(|a| a.name() == name))
    }

    /// Renders the prompt `prompt` of `server` with `arguments` (MCP prompt
    /// arguments are strings).
    pub async fn get_prompt(
        &self,
        server: &str,
        prompt: &str,
        arguments: BTreeMap<String, String>,
    ) -> Result<Vec<Message>> {
        let args = (!arguments.is_empty()).then(|| {
            arguments
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect()
        });
        self.client(server)?.get_prompt(prompt, args).await
    }

    /// Reads the resource at `uri` from `server` (a fixed resource's URI, or
    /// one a resource template describes).
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<Vec<Part>> {
        self.client(server)?.read_resource(uri).await
    }

    /// The resource templates of `server`.
    pub async fn resource_templates(&self, server: &str) -> Result<Vec<McpResourceTemplate>> {
        self.client(server)?.list_resource_templates().await
    }

    /// Reads from `server` the resource its template named `template`
    /// describes for `values` (see [`McpResourceTemplate::expand`]).
    pub async fn read_template(
        &self,
        server: &str,
        template: &str,
        values: &BTreeMap<String, String>,
    ) -> Result<Vec<Part>> {
        let client = self.client(server)?;
        let templates = client.list_resource_templates().await?;
        let found = templates
            .iter()
            .find(|t| t.name == template)
            .ok_or_else(|| {
                Error::not_found(format!(
                    "MCP server `{server}` has no resource template `{template}`"
                ))
            })?;
        client.read_resource(&found.expand(values)?).await
    }
}

impl McpHost {
    /// Registers the host in `registry` as a dynamic action provider named
    /// after the host (Genkit JS's `defineMcpHost`): its tools are then
    /// `<host>:tool/<server>/<tool>` and `<host>:tool/*` (every server's
    /// tools) to `generate`, resolved at each lookup, so servers connected
    /// later and tools added later are found without a restart.
    pub fn register(&self, registry: &Registry) -> Result<DynAction> {
        registry.register_dynamic_action_provider(self.name(), Arc::new(self.clone()))
    }
}

impl McpHost {
    /// The prompts and resources of `server` as registry actions, each
    /// with the category it is found under: every prompt as a `prompt` and
    /// an `executable-prompt` action and every resource (fixed or template)
    /// as a `resource` action, all named `<server>/<name>`. Only what the
    /// server declared in its capabilities is listed; listed at each call.
    pub async fn server_prompts_and_resources(
        &self,
        server: &str,
    ) -> Result<Vec<(ActionKind, DynAction)>> {
        let client = self.client(server)?;
        let host = Arc::downgrade(&self.inner);
        let (prompts, resources) = client.offers_prompts_and_resources();
        let mut out = Vec::new();
        if prompts {
            for prompt in client.list_prompt_infos().await? {
                for action in actions::prompt_actions(&host, server, &prompt)? {
                    out.push((action.desc().kind, action));
                }
            }
        }
        if resources {
            for (uri, name) in client.list_resources().await? {
                let location = actions::Location::Uri(&uri);
                match actions::resource_action(&host, server, &name, None, location) {
                    Ok(a) => out.push((ActionKind::Resource, a)),
                    Err(e) => tracing::warn!(server, "skipping an MCP resource: {e}"),
                }
            }
            for t in client.list_resource_templates().await? {
                let location = actions::Location::Template(&t.uri_template);
                let description = t.description.as_deref();
                match actions::resource_action(&host, server, &t.name, description, location) {
                    Ok(a) => out.push((ActionKind::Resource, a)),
                    Err(e) => tracing::warn!(server, "skipping an MCP resource template: {e}"),
                }
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl DynamicActionProvider for McpHost {
    /// Every enabled server's tools (`tool`), prompts (`prompt`,
    /// `executable-prompt`) and resources (`resource`). A server that fails
    /// to list them is skipped with a warning.
    async fn list(&self) -> Result<Vec<(ActionKind, DynAction)>> {
        let mut all: Vec<(ActionKind, DynAction)> = self
            .tools()
            .await
            .into_iter()
            .map(|t| (ActionKind::Tool, t))
            .collect();
        let enabled: Vec<String> = self
            .inner
            .servers
            .read()
            .iter()
            .filter(|(_, s)| s.connection.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        for server in enabled {
            match self.server_prompts_and_resources(&server).await {
                Ok(actions) => all.extend(actions),
                Err(e) => tracing::warn!(host = self.name(), "{e}"),
            }
        }
        Ok(all)
    }
}

fn unknown(host: &str, server: &str) -> Error {
    Error::not_found(format!("MCP host `{host}` has no server `{server}`"))
}

/// The connection of an enabled server; a disabled one is an error saying so.
fn live<'a>(host: &str, name: &str, server: &'a Server) -> Result<&'a Connection> {
    server.connection.as_ref().ok_or_else(|| {
        Error::failed_precondition(format!("MCP server `{name}` of host `{host}` is disabled"))
    })
}

async fn close(connection: Option<Connection>) {
    // Tool actions hold the host weakly and look the client up per call, so
    // this is normally the last reference; if a call is still running, the
    // connection closes when it ends.
    if let Some(connection) = connection
        && let Ok(client) = Arc::try_unwrap(connection.client)
    {
        client.close().await;
    }
}

/// One MCP tool as a multipart tool action that calls it through the host's
/// current connection to `server` (so a reconnected server keeps working),
/// streaming the server's progress reports as chunks.
fn tool_action(
    host: Weak<HostInner>,
    server: &str,
    tool: crate::client::McpTool,
) -> Result<DynAction> {
    let mut desc = ActionDesc::new(ActionKind::ToolV2, format!("{server}/{}", tool.name))
        .with_description(tool.description.unwrap_or_default())
        .with_metadata("type", Value::from("tool.v2"))
        .with_metadata("tool", json!({"multipart": true}))
        .with_metadata("mcp", json!({"server": server, "tool": tool.name}));
    desc.input_schema = Some(tool.input_schema);
    let server = server.to_owned();
    let name = tool.name;
    let action = Action::<Value, Value, Value>::from_desc(desc, move |input, ctx| {
        let host = host.clone();
        let server = server.clone();
        let name = name.clone();
        async move {
            let client = {
                let host = host.upgrade().ok_or_else(|| {
                    Error::failed_precondition(format!(
                        "MCP tool `{server}/{name}`: its host was dropped"
                    ))
                })?;
                let servers = host.servers.read();
                let s = servers
                    .get(&server)
                    .ok_or_else(|| unknown(&host.name, &server))?;
                live(&host.name, &server, s)?.client.clone()
            };
            let arguments = match input {
                Value::Object(map) => Some(map),
                Value::Null => None,
                other => {
                    return Err(Error::invalid_argument(format!(
                        "MCP tool `{server}/{name}` takes an object, got {other}"
                    )));
                }
            };
            let report = |p: McpProgress| {
                ctx.send_chunk(json!({
                    "progress": p.progress,
                    "total": p.total,
                    "message": p.message,
                }));
            };
            let response = client.call_tool(&name, arguments, Some(&report)).await?;
            serde_json::to_value(response).map_err(|e| Error::internal(e.to_string()))
        }
    })?;
    Ok(action.to_dyn())
}
