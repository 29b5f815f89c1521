//! How to reach one MCP server: a child process speaking stdio, or a
//! Streamable HTTP endpoint; and how long its requests may take.

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

/// One server's configuration: Genkit JS's `McpServerConfig`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    /// How to reach it.
    pub transport: McpTransport,
    /// The time limit of each request, and of connecting.
    pub timeout: Duration,
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
        }
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
