//! `--mcp`: the agent is given an MCP server's tools. The server is the one
//! written with the official TypeScript SDK (`tests-support/mcp/server.mjs`,
//! its npm packages installed by `test.sh`), over stdio and Streamable HTTP;
//! the offline model names the tools it is offered and calls one it is told
//! to.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

mod common;
use common::{Child, ops_agent};

/// `tests-support/mcp/server.mjs`, or `None` (the test skips, loudly)
/// without node, which CI must have.
fn mcp_server() -> Option<PathBuf> {
    let has_node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(!ci, "node is needed under CI");
        eprintln!("*** SKIPPED: no node to run the MCP test server ***");
        return None;
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests-support/mcp");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk/package.json")
            .exists(),
        "the MCP test server's npm packages are missing: run `npm ci` in {} (test.sh does)",
        dir.display()
    );
    Some(dir.join("server.mjs"))
}

/// `ops-agent --ask QUESTION --json` with `args`: the answer.
fn ask(args: &[&str], question: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = ops_agent(dir.path())
        .args(args)
        .args(["--ask", question, "--json"])
        .output()
        .expect("ops-agent runs");
    assert!(
        out.status.success(),
        "ops-agent {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON object");
    value["answer"].as_str().expect("an answer").to_owned()
}

#[test]
fn an_mcp_servers_tools_are_offered_and_called_over_stdio() {
    let Some(server) = mcp_server() else { return };
    let spec = format!("peer=node {} stdio", server.display());
    let answer = ask(&["--mcp", &spec], "Which tools do you have?");
    // The app's own tools, then the server's, found through `mcp:tool/*`.
    let listed = answer
        .strip_prefix("I can use these tools: ")
        .and_then(|l| l.strip_suffix('.'))
        .unwrap_or_else(|| panic!("{answer}"));
    let mut tools: Vec<&str> = listed.split(", ").collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "add",
            "add_tool",
            "count",
            "die",
            "fail",
            "getServiceStatus",
            "hang",
            "picture",
            "queryLogs",
            "restartService"
        ],
        "{answer}"
    );

    // The model calls the MCP tool in the agent's tool loop.
    let answer = ask(&["--mcp", &spec], r#"call add {"a": 20, "b": 22}"#);
    assert_eq!(answer, r#"- add returned "42""#);

    // Without --mcp, only the app's own tools.
    let answer = ask(&[], "Which tools do you have?");
    assert_eq!(
        answer,
        "I can use these tools: getServiceStatus, queryLogs, restartService."
    );
}

#[test]
fn an_mcp_server_over_http_and_one_that_cannot_start() {
    let Some(server) = mcp_server() else { return };
    let mut child = Command::new("node")
        .arg(&server)
        .arg("http")
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting node");
    let stdout = child.stdout.take().expect("piped stdout");
    let _child = Child(child);
    let mut url = String::new();
    BufReader::new(stdout)
        .read_line(&mut url)
        .expect("the server's URL");
    let spec = format!("remote={}", url.trim());
    let answer = ask(&["--mcp", &spec], "call picture");
    assert!(
        answer.starts_with(r#"- picture returned "a red pixel"#),
        "{answer}"
    );

    // A server that cannot start stops the app with an error naming it.
    let dir = tempfile::tempdir().expect("temp dir");
    let out: Output = ops_agent(dir.path())
        .args(["--mcp", "broken=/nonexistent/mcp-server", "--ask", "hi"])
        .output()
        .expect("ops-agent runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`broken`"), "{stderr}");
}
