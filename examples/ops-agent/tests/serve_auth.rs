//! `ops-agent --serve` lets in only holders of its bearer token, on all
//! three agent routes, and only requests no web page could have made (the
//! flow server's request guard), tried against the real binary.

use serde_json::{Value, json};

mod common;
use common::{Served, ops_agent, request, serve};

const ROUTES: [&str; 3] = ["/opsAgent", "/opsAgent/getSnapshot", "/opsAgent/abort"];

/// A body each route accepts.
fn body(route: &str) -> String {
    match route {
        "/opsAgent" => json!({
            "data": {"message": {"role": "user", "content": [{"text": "is the api ok?"}]}},
            "init": {}
        }),
        _ => json!({"data": {"snapshotId": "no-such-snapshot"}}),
    }
    .to_string()
}

fn post(served: &Served, route: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let mut all = vec![("Content-Type", "application/json")];
    all.extend_from_slice(headers);
    let (status, body) = request(served.port, route, &all, &body(route));
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[test]
fn serve_requires_its_generated_token_on_every_route() {
    let dir = tempfile::tempdir().expect("temp dir");
    let served = serve(dir.path(), None);
    // 256 random bits, printed where the operator sees them.
    assert_eq!(served.token.len(), 64, "{}", served.lines[0]);
    assert!(served.token.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(
        served.lines[0].contains("(generated at start: set OPS_AGENT_TOKEN to choose it)"),
        "{}",
        served.lines[0]
    );
    let good = format!("Bearer {}", served.token);
    let wrong = format!("Bearer {}0", served.token);
    for route in ROUTES {
        assert_eq!(
            post(&served, route, &[]),
            (
                401,
                json!({"status": "UNAUTHENTICATED", "message": "Unauthenticated"})
            ),
            "{route}"
        );
        for bad in [wrong.as_str(), served.token.as_str(), "Bearer"] {
            let (status, _) = post(&served, route, &[("Authorization", bad)]);
            let expected = if bad == wrong { 403 } else { 401 };
            assert_eq!(status, expected, "{route} with `{bad}`");
        }
    }
    let (status, reply) = post(&served, "/opsAgent", &[("Authorization", &good)]);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(
        reply["result"]["message"]["content"][0]["text"], "- api is healthy (cpu 42%, memory 55%).",
        "{reply}"
    );
    let snapshot = reply["result"]["snapshotId"].clone();
    let (status, _) = request(
        served.port,
        "/opsAgent/getSnapshot",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &good),
        ],
        &json!({"data": {"snapshotId": snapshot}}).to_string(),
    );
    assert_eq!(status, 200);
}

#[test]
fn serve_takes_its_token_from_the_environment_without_printing_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token = "ops-token-from-the-environment-0123456789";
    let served = serve(dir.path(), Some(token));
    for line in &served.lines {
        assert!(!line.contains(token), "{line}");
    }
    assert!(
        served.lines[0].contains("`Authorization: Bearer $OPS_AGENT_TOKEN` (from OPS_AGENT_TOKEN)"),
        "{}",
        served.lines[0]
    );
    let good = format!("Bearer {token}");
    assert_eq!(
        post(&served, "/opsAgent", &[("Authorization", &good)]).0,
        200
    );
    assert_eq!(
        post(&served, "/opsAgent", &[("Authorization", "Bearer other")]).0,
        403
    );

    let out = ops_agent(dir.path())
        .args(["--serve", "--port", &common::free_port().to_string()])
        .env("OPS_AGENT_TOKEN", "two words")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OPS_AGENT_TOKEN: the token must be non-empty printable ASCII"),
        "{stderr}"
    );
}

/// Even with the token, what a web page could send is refused before any
/// turn runs: a simple cross-site `text/plain` POST (415), a foreign
/// `Origin` or a cross-site fetch (403), a DNS-rebound `Host` (403).
#[test]
fn serve_refuses_what_a_web_page_could_send() {
    let dir = tempfile::tempdir().expect("temp dir");
    let served = serve(dir.path(), None);
    let auth = format!("Bearer {}", served.token);
    let rebound = format!("evil.example:{}", served.port);
    let turn = body("/opsAgent");
    let cases: [(&[(&str, &str)], u16); 4] = [
        (
            &[
                ("Content-Type", "text/plain"),
                ("Origin", "http://evil.example"),
            ],
            415,
        ),
        (
            &[
                ("Content-Type", "application/json"),
                ("Origin", "http://evil.example"),
            ],
            403,
        ),
        (
            &[
                ("Content-Type", "application/json"),
                ("Sec-Fetch-Site", "cross-site"),
            ],
            403,
        ),
        (
            &[("Content-Type", "application/json"), ("Host", &rebound)],
            403,
        ),
    ];
    for (headers, expected) in cases {
        let mut all = headers.to_vec();
        all.push(("Authorization", &auth));
        let (status, reply) = request(served.port, "/opsAgent", &all, &turn);
        assert_eq!(status, expected, "{headers:?}: {reply}");
        let reply: Value = serde_json::from_str(&reply).expect("a JSON error body");
        let kind = if expected == 415 {
            "INVALID_ARGUMENT"
        } else {
            "PERMISSION_DENIED"
        };
        assert_eq!(reply["status"], kind, "{reply}");
    }
}
