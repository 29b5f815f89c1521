//! How to reach one MCP server: a child process speaking stdio, or a
//! Streamable HTTP endpoint; how long its requests may take; whether it is
//! enabled, and which of its tools the host offers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The default time limit of one request (and of the initialisation
/// handshake) to a server.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a server is.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A local process started by the host, speaking MCP on its stdin and
    /// stdout (its stderr is inherited, as in Genkit JS).
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables set on top of the host's.
        env: BTreeMap<String, String>,
        /// The working directory (the host's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint (`http://` only: no TLS backend is built in).
    Http {
        /// The endpoint URL, e.g. `http://127.0.0.1:3000/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `authorization`).
        headers: BTreeMap<String, String>,
    },
}

/// How the host opens its session with a server: the lifecycle of the
/// protocol revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum McpHandshake {
    /// The `initialize` handshake of the revisions up to 2025-11-25, which
    /// every server of today answers. The default.
    #[default]
    Initialize,
    /// `server/discover`, the stateless 2026-07-28 revision, only: a server
    /// that does not know it fails the connection.
    Discover,
    /// `server/discover` first, falling back to `initialize` with a server
    /// that does not know it (or does not answer it within 10 seconds).
    Auto,
}

/// One server's configuration: Genkit JS's `McpServerConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: McpTransport,
    /// The time limit of each request, and of connecting.
    pub timeout: Duration,
    /// When set, the server is configured but not started: its tools are
    /// not listed and calls say it is disabled, until
    /// [`McpHost::enable`](crate::McpHost::enable) (Genkit JS's `disabled`).
    pub disabled: bool,
    /// When set, only the tools these patterns match are offered (see
    /// [`allows_tool`](Self::allows_tool)).
    pub allowed_tools: Option<Vec<String>>,
    /// Tools these patterns match are never offered, even if allowed.
    pub excluded_tools: Vec<String>,
    /// How the session is opened (`initialize` by default).
    pub handshake: McpHandshake,
}

impl McpServerConfig {
    /// A server started as `command args...`, speaking stdio.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::with_transport(McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        })
    }

    /// A server at a Streamable HTTP endpoint.
    pub fn http(url: impl Into<String>) -> Self {
        Self::with_transport(McpTransport::Http {
            url: url.into(),
            headers: BTreeMap::new(),
        })
    }

    fn with_transport(transport: McpTransport) -> Self {
        Self {
            transport,
            timeout: DEFAULT_TIMEOUT,
            disabled: false,
            allowed_tools: None,
            excluded_tools: Vec::new(),
            handshake: McpHandshake::default(),
        }
    }

    /// Sets how the session is opened: see [`McpHandshake`].
    pub fn handshake(mut self, handshake: McpHandshake) -> Self {
        self.handshake = handshake;
        self
    }

    /// Configures the server disabled (or enabled): a disabled server is not
    /// started until the host enables it.
    pub fn disabled(mut self, disabled: bool) -> Self {
        self.disabled = disabled;
        self
    }

    /// Offers only the server's tools matched by one of `patterns` (a tool
    /// name, or a prefix ending in `*`). Genkit JS 1.42 has no such option;
    /// this is the usual allow list of MCP hosts.
    pub fn allowed_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_tools = Some(patterns.into_iter().map(Into::into).collect());
        self
    }

    /// Never offers the server's tools matched by one of `patterns` (a tool
    /// name, or a prefix ending in `*`); exclusion wins over
    /// [`allowed_tools`](Self::allowed_tools).
    pub fn excluded_tools<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.excluded_tools = patterns.into_iter().map(Into::into).collect();
        self
    }

    /// Whether the host offers the server's tool `tool`: allowed (or no
    /// allow list) and not excluded.
    pub fn allows_tool(&self, tool: &str) -> bool {
        let matches = |patterns: &[String]| patterns.iter().any(|p| pattern_matches(p, tool));
        self.allowed_tools.as_deref().is_none_or(matches) && !matches(&self.excluded_tools)
    }

    /// Sets the per-request time limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets an environment variable of a stdio server (ignored for HTTP).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for HTTP).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request to an HTTP server (ignored for stdio).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }
}

/// `pattern` is a tool name, or a prefix followed by `*`.
fn pattern_matches(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_filters_allow_then_exclude() {
        let all = McpServerConfig::stdio("x", Vec::<String>::new());
        assert!(all.allows_tool("anything"));
        let some = all.clone().allowed_tools(["add", "get_*"]);
        assert!(some.allows_tool("add") && some.allows_tool("get_file"));
        assert!(!some.allows_tool("adder") && !some.allows_tool("delete"));
        let fewer = some.excluded_tools(["get_secret"]);
        assert!(fewer.allows_tool("get_file") && !fewer.allows_tool("get_secret"));
        let none = all.clone().allowed_tools(Vec::<String>::new());
        assert!(!none.allows_tool("add"));
        let most = all.excluded_tools(["*"]);
        assert!(!most.allows_tool("add"));
    }
}
