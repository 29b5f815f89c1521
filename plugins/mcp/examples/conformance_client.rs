//! The MCP client the conformance suite's client scenarios drive (npm
//! `@modelcontextprotocol/conformance`): genkit-mcp's host side connects to
//! the suite's server at the URL it is given (the last argument) over
//! Streamable HTTP, lists its tools and calls each one, as an application
//! using the server's tools would. `MCP_CONFORMANCE_SCENARIO` names the
//! scenario; the client does the same in each (`add_numbers` gets numbers).
//! `docs/mcp.md` records the counts and why the rest fail.
//!
//! ```sh
//! cargo build -p genkit-mcp --example conformance_client
//! npx @modelcontextprotocol/conformance client \
//!   --command target/debug/examples/conformance_client --scenario tools_call
//! ```

use genkit_mcp::{McpClient, McpServerConfig};
use serde_json::{Map, json};
use std::process::ExitCode;
use std::time::Duration;

#[tokio::main]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client <server-url>");
        return ExitCode::FAILURE;
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scenario `{scenario}`: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str) -> genkit_core::Result<()> {
    let config = McpServerConfig::http(url).timeout(Duration::from_secs(10));
    let client = McpClient::connect("genkit-conformance-client", "suite", &config).await?;
    for tool in client.list_tools().await? {
        let arguments = match tool.name.as_str() {
            "add_numbers" => json!({"a": 5, "b": 3}),
            _ => json!({}),
        };
        let Some(arguments) = arguments.as_object().cloned() else {
            continue;
        };
        let result = client
            .call_tool_raw(&tool.name, Some::<Map<_, _>>(arguments), None)
            .await?;
        println!("{}: {result}", tool.name);
    }
    client.close().await;
    Ok(())
}
