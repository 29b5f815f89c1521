//! MCP (Model Context Protocol) for Genkit for Rust: use the tools, prompts
//! and resources of MCP servers, and serve a registry's own as an MCP
//! server, as Genkit JS's `@genkit-ai/mcp` does.
//!
//! An [`McpHost`] holds named connections to any number of servers, each a
//! child process speaking stdio or a Streamable HTTP endpoint
//! ([`McpServerConfig`]). Through it you list and call a server's tools,
//! render its prompts and read its resources. Each tool is also a Genkit
//! multipart tool action (`tool.v2`) named `<server>/<tool>`, which a
//! `generate` call can use: its result maps to Genkit parts (text and JSON
//! output, images as media parts with `data:` URLs, embedded resources),
//! an `isError` result is an error naming the server and the tool, and the
//! server's progress reports stream as the action's chunks.
//!
//! [`McpHost::register`] makes the host a dynamic action provider of a
//! registry (Genkit JS's `defineMcpHost`): its tools are then named
//! `<host>:tool/<server>/<tool>` in `generate`'s (and prompts') tools, and
//! `<host>:tool/*` (or `<host>:tool/<server>/*`) stands for all of them.
//! They are resolved at each lookup, so servers connected later and tools a
//! server adds later (`notifications/tools/list_changed`) appear without a
//! restart. A server's prompts and resources are offered the same way
//! (Genkit JS's host offers tools and resources): each prompt as
//! `<host>:prompt/<server>/<prompt>` (rendering a `GenerateRequest`) and
//! `<host>:executable-prompt/<server>/<prompt>` (rendering `generate`'s
//! options, whose messages `generate` takes), and each resource or resource
//! template as `<host>:resource/<server>/<name>`, which
//! `genkit_model::resource::find_matching_resource` finds by URI. Prompts
//! and resources are listed at each lookup (only those the server's
//! capabilities declare), not cached like tools.
//!
//! Errors name the server that failed: a server that cannot be started or
//! does not finish the handshake fails [`McpHost::connect`]; every request
//! has the server's time limit ([`McpServerConfig::timeout`]), so a server
//! that dies or hangs mid-call ends in an error in time while the host keeps
//! serving the others.
//!
//! ```no_run
//! use genkit_mcp::{McpHost, McpServerConfig};
//! use std::time::Duration;
//!
//! # async fn run() -> genkit_core::Result<()> {
//! let host = McpHost::with_servers(
//!     "my-host",
//!     [
//!         ("fs", McpServerConfig::stdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "."])),
//!         ("remote", McpServerConfig::http("http://127.0.0.1:3000/mcp").timeout(Duration::from_secs(10))),
//!     ],
//! )
//! .await?;
//! for tool in host.server_tools("fs").await? {
//!     println!("{}", tool.name()); // fs/read_file, ...
//! }
//! let text = host.read_resource("remote", "test://readme").await?;
//! # let _ = text;
//!
//! // In a registry: `generate` may now use "my-host:tool/fs/read_file",
//! // or "my-host:tool/*" for every server's tools.
//! let registry = genkit_core::Registry::new();
//! host.register(&registry)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Per-server controls
//!
//! As in Genkit JS, a server can be configured
//! [`disabled`](McpServerConfig::disabled) (recorded, not started), and
//! [`McpHost::disable`], [`McpHost::enable`] and [`McpHost::reconnect`]
//! stop, restart and renew one server's connection while its configuration
//! stays: a disabled server's tools vanish from listings and calls to them
//! fail saying it is disabled. A tool filter per server
//! ([`allowed_tools`](McpServerConfig::allowed_tools),
//! [`excluded_tools`](McpServerConfig::excluded_tools): names or `prefix*`;
//! Genkit JS 1.42 has no such option) decides which of its tools the host
//! offers, including tools the server adds later. Resource templates are
//! listed with [`McpHost::resource_templates`] and read with
//! [`McpHost::read_template`] (or [`McpHost::read_resource`] with the
//! expanded URI); [`McpHost::protocol_version`] is the version negotiated
//! with each server.
//!
//! # Protocol versions
//!
//! By default the host opens each session with the `initialize` handshake,
//! offering 2025-11-25 (servers of the official TypeScript SDK 1.32 and
//! Python SDK 2.3 both settle on it). [`McpHandshake::Discover`] speaks the
//! stateless 2026-07-28 revision instead (`server/discover`, no session;
//! the Python SDK 2.3 serves it over stdio and HTTP), and
//! [`McpHandshake::Auto`] tries it first and falls back to `initialize`.
//! In that revision list changes reach only subscriptions, so such a
//! server's tools are listed at each use rather than cached.
//!
//! # Bad input
//!
//! A server that breaks the protocol costs its own calls only: replies that
//! are not JSON-RPC are dropped, a stdio line longer than rmcp's 16 MiB
//! limit is discarded without being buffered, a reply that does not fit its
//! request is an error, and silence ends at the time limit; each error names
//! the server. The tests drive the official TypeScript SDK 1.32 and Python
//! SDK 2.3 servers over stdio and Streamable HTTP, and a scripted server
//! that sends malformed JSON-RPC, floods its output or never answers. The
//! official conformance suite's client scenarios pass for the handshake,
//! tool calls and SSE resumption, not for elicitation or OAuth
//! (`docs/mcp.md` has the counts; `tests-support/mcp/conformance.sh` runs
//! both sides' suites).
//!
//! # Serving a registry
//!
//! [`McpServer`] is the other side (Genkit JS's `createMcpServer`): it
//! serves a registry's tools (with their input JSON schemas), prompts and
//! resources (`define_resource` in `genkit-model`: fixed URIs and URI
//! templates) to MCP clients over stdio ([`McpServer::serve_stdio`]) or
//! Streamable HTTP ([`McpServer::serve_http`], or
//! [`McpServer::streamable_http_service`] to mount in an axum router). A
//! failing tool answers an `isError` result with its message, a streaming
//! tool's chunks become progress notifications, and unknown tools, prompts
//! and resources are JSON-RPC errors. The [`server`] module says how results
//! are mapped; `docs/mcp.md` has the conformance suite's counts.
//!
//! ```no_run
//! use genkit_mcp::{McpServer, McpServerOptions};
//!
//! # async fn run(registry: genkit_core::Registry) -> genkit_core::Result<()> {
//! let server = McpServer::new(&registry, McpServerOptions::new("my-app").version("1.2.0"));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await.expect("a free port");
//! server.serve_http(listener, std::future::pending()).await // http://127.0.0.1:3000/mcp
//! # }
//! ```
//!
//! Tools, prompts and resources registered after a client connected are
//! announced to it (`notifications/tools/list_changed` and the prompts and
//! resources ones, declared as `listChanged` in the server's capabilities;
//! `Registry::subscribe_changes` tells the server).
//!
//! Not served yet: MCP logging, argument completion, resource
//! subscriptions, and asking the client for sampling or elicitation.
//!
//! # The SDK
//!
//! The protocol is the official Rust SDK, [`rmcp`]: its client, and its
//! server for [`McpServer`]. The host reaches Streamable HTTP servers over
//! plain `http://` only: rmcp's TLS
//! options pull `aws-lc-rs` (a C build) or a second TLS stack next to the
//! workspace's `ring`-based one, too heavy for this crate's build budget, so
//! `https://` URLs are refused with an error for now.
//!
//! # Not done yet
//!
//! On the host side: caching a server's prompts and resources between
//! lookups (`prompts/list_changed`, `resources/list_changed`);
//! `https://` endpoints; OAuth for protected servers; answering servers'
//! sampling, roots or elicitation requests. Unlike Genkit JS, whose tools are plain by default, every MCP
//! tool here is multipart (`tool.v2`), so images reach the model as parts.

pub mod client;
pub mod config;
pub mod convert;
mod host;
pub mod server;

pub use client::{McpClient, McpProgress, McpTool};
pub use client::{McpPrompt, McpPromptArgument, McpResourceTemplate};
pub use config::McpHandshake;
pub use config::{DEFAULT_TIMEOUT, McpServerConfig, McpTransport};
pub use host::McpHost;
pub use server::{McpServer, McpServerOptions, create_mcp_server};
