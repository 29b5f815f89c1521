//! `--mcp`: MCP servers whose tools the agent may use beside its own. Each
//! server joins one MCP host, registered in the app's registry, so the
//! agent's prompt takes every server's tools as `mcp:tool/*` (Genkit JS's
//! naming), found when the agent runs, not fixed at start-up.

use std::time::Duration;

use genkit::mcp::{McpHost, McpServerConfig};
use genkit::prelude::*;

/// The MCP host's name: its tools are `mcp:tool/<server>/<tool>`.
pub const HOST: &str = "mcp";

/// How long an MCP server may take to start, and to answer each call.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One `--mcp` value: `NAME=URL` for a Streamable HTTP server
/// (`http://…`), else `NAME=COMMAND ARGS…` for a server started as a child
/// process speaking stdio (the command line is split at whitespace; there
/// is no shell quoting).
pub fn parse_spec(spec: &str) -> Result<(String, McpServerConfig)> {
    let usage = || {
        Error::invalid_argument(format!(
            "--mcp {spec:?}: expected NAME=COMMAND ARGS… or NAME=http://HOST:PORT/PATH"
        ))
    };
    let (name, target) = spec.split_once('=').ok_or_else(usage)?;
    let name = name.trim();
    if name.is_empty() || name.contains('/') || name.contains(char::is_whitespace) {
        return Err(Error::invalid_argument(format!(
            "--mcp {spec:?}: the server name must be non-empty, without `/` or spaces"
        )));
    }
    let target = target.trim();
    let config = if target.starts_with("http://") || target.starts_with("https://") {
        McpServerConfig::http(target)
    } else {
        let mut words = target.split_whitespace();
        let command = words.next().ok_or_else(usage)?;
        McpServerConfig::stdio(command, words)
    };
    Ok((name.to_owned(), config.timeout(TIMEOUT)))
}

/// Connects every server of `specs` (in parallel): the first that fails to
/// start fails the whole, naming it. `None` without specs.
pub async fn connect(specs: &[String]) -> Result<Option<McpHost>> {
    if specs.is_empty() {
        return Ok(None);
    }
    let servers = specs
        .iter()
        .map(|s| parse_spec(s))
        .collect::<Result<Vec<_>>>()?;
    let mut names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::invalid_argument(format!(
            "--mcp: the server name `{}` is given twice",
            w[0]
        )));
    }
    McpHost::with_servers(HOST, servers).await.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit::mcp::McpTransport;

    #[test]
    fn specs_name_a_command_or_a_url() {
        let (name, config) = parse_spec("fs=npx -y  server-fs /tmp").unwrap();
        assert_eq!(name, "fs");
        match config.transport {
            McpTransport::Stdio { command, args, .. } => {
                assert_eq!(command, "npx");
                assert_eq!(args, ["-y", "server-fs", "/tmp"]);
            }
            other => panic!("{other:?}"),
        }
        let (name, config) = parse_spec("remote=http://127.0.0.1:3000/mcp").unwrap();
        assert_eq!(name, "remote");
        assert!(
            matches!(config.transport, McpTransport::Http { url, .. } if url == "http://127.0.0.1:3000/mcp")
        );
        for bad in ["noequals", "=cmd", "a/b=cmd", "name=", "name=   "] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }
}
