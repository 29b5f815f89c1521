//! The flow server's request guard over HTTP: what a web page (a simple
//! cross-site request, a foreign `Origin`, a DNS-rebound name) can no
//! longer do, and what an app that serves browsers lists to let its own
//! pages in. The rules themselves are unit-tested in `src/guard.rs`.

mod common;

use common::{client, start};
use genkit_core::Registry;
use genkit_core::flow::define_flow;
use genkit_server::FlowServer;
use genkit_server::cors::CorsLayer;
use genkit_server::guard::AllowedHosts;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `diagnose` (counts its runs, echoes its input) and `ping` (no input).
fn registry(runs: &Arc<AtomicUsize>) -> Registry {
    let r = Registry::new();
    let counter = runs.clone();
    define_flow(&r, "diagnose", move |input: Value, _| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(json!({"ran": input}))
        }
    })
    .unwrap();
    let counter = runs.clone();
    define_flow(&r, "ping", move |_: Option<String>, _| {
        let counter = counter.clone();
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok("pong".to_owned())
        }
    })
    .unwrap();
    r
}

async fn answer(r: reqwest::RequestBuilder) -> (u16, Value) {
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

const BODY: &str = r#"{"data": {"service": "db"}}"#;

#[tokio::test]
async fn a_simple_cross_site_post_is_refused_before_it_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(FlowServer::new(&registry(&runs))).await;
    for content_type in [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let (status, body) = answer(
            client()
                .post(s.url("/diagnose"))
                .header("content-type", content_type)
                .header("origin", "http://evil.example")
                .header("sec-fetch-site", "cross-site")
                .body(BODY),
        )
        .await;
        assert_eq!(status, 415, "{content_type}");
        assert_eq!(
            body,
            json!({
                "status": "INVALID_ARGUMENT",
                "message": format!(
                    "the request body must be sent as `Content-Type: application/json` (got `{content_type}`)"
                )
            })
        );
    }
    // Without any content type, a body is refused too.
    let (status, _) = answer(client().post(s.url("/diagnose")).body(BODY)).await;
    assert_eq!(status, 415);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no flow ran");
}

#[tokio::test]
async fn foreign_origins_and_cross_site_requests_are_refused() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(FlowServer::new(&registry(&runs))).await;
    let json = || {
        client()
            .post(s.url("/diagnose"))
            .header("content-type", "application/json")
            .body(BODY)
    };
    for origin in ["http://evil.example", "null", "http://localhost:4000"] {
        let (status, body) = answer(json().header("origin", origin)).await;
        assert_eq!(status, 403, "{origin}");
        assert_eq!(
            body,
            json!({
                "status": "PERMISSION_DENIED",
                "message": format!("requests from `Origin: {origin}` are not accepted by this server")
            })
        );
    }
    let (status, body) = answer(json().header("sec-fetch-site", "cross-site")).await;
    assert_eq!(status, 403);
    assert_eq!(body["status"], "PERMISSION_DENIED");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("`Sec-Fetch-Site: cross-site`")
    );
    let (status, _) = answer(json().header("sec-fetch-site", "same-site")).await;
    assert_eq!(status, 403);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no flow ran");

    // Non-browser clients (no `Origin`) and the server's own pages are fine.
    assert_eq!(answer(json()).await.0, 200);
    let own = format!("http://{}", s.addr);
    let (status, body) = answer(
        json()
            .header("origin", own)
            .header("sec-fetch-site", "same-origin"),
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({"result": {"ran": {"service": "db"}}}))
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_loopback_server_refuses_a_rebound_host() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(FlowServer::new(&registry(&runs))).await;
    let port = s.addr.port();
    let post = |host: String| {
        client()
            .post(s.url("/diagnose"))
            .header("host", host)
            .header("content-type", "application/json")
            .body(BODY)
    };
    // The page's own origin, once its name points here: still refused.
    let (status, body) = answer(
        post(format!("evil.example:{port}"))
            .header("origin", format!("http://evil.example:{port}")),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(
        body["message"],
        format!(
            "`Host: evil.example:{port}` is not a name of this server (this server answers only \
             localhost, 127.0.0.1 and [::1])"
        )
    );
    assert_eq!(answer(post(format!("evil.example:{port}"))).await.0, 403);
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no flow ran");
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        assert_eq!(answer(post(host)).await.0, 200);
    }

    // Listed names replace the loopback default.
    let s = start(
        FlowServer::new(&registry(&runs))
            .allowed_hosts(AllowedHosts::listed(["flows.internal.example"])),
    )
    .await;
    let post = |host: &str| {
        client()
            .post(s.url("/diagnose"))
            .header("host", host)
            .header("content-type", "application/json")
            .body(BODY)
    };
    assert_eq!(answer(post("flows.internal.example:3400")).await.0, 200);
    assert_eq!(answer(post("localhost:3400")).await.0, 403);
}

/// `into_router` does not know where it is served: it answers any `Host`
/// unless told otherwise.
#[tokio::test]
async fn into_router_answers_any_host_unless_told() {
    let runs = Arc::new(AtomicUsize::new(0));
    for (hosts, expected) in [(None, 200), (Some(AllowedHosts::Loopback), 403)] {
        let mut server = FlowServer::new(&registry(&runs));
        if let Some(h) = hosts {
            server = server.allowed_hosts(h);
        }
        let router = server.into_router().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move { axum::serve(listener, router).await });
        let (status, _) = answer(
            client()
                .post(format!("http://{addr}/diagnose"))
                .header("host", "evil.example")
                .json(&json!({"data": 1})),
        )
        .await;
        assert_eq!(status, expected);
        // The other checks are on either way.
        let (status, _) = answer(
            client()
                .post(format!("http://{addr}/diagnose"))
                .header("content-type", "text/plain")
                .body(BODY),
        )
        .await;
        assert_eq!(status, 415);
        task.abort();
    }
}

#[tokio::test]
async fn a_flow_without_input_runs_from_an_empty_post() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(FlowServer::new(&registry(&runs))).await;
    // `curl -X POST <url>`: no body, no type, no `Origin`.
    let (status, body) = answer(client().post(s.url("/ping"))).await;
    assert_eq!((status, body), (200, json!({"result": "pong"})));
    // A browser sends `Origin` with every POST: its empty POST must be JSON.
    let (status, _) = answer(
        client()
            .post(s.url("/ping"))
            .header("origin", format!("http://{}", s.addr)),
    )
    .await;
    assert_eq!(status, 415);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn listed_origins_get_cors_and_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(FlowServer::new(&registry(&runs)).allow_origins(["https://App.example"])).await;
    let pre = client()
        .request(reqwest::Method::OPTIONS, s.url("/diagnose"))
        .header("origin", "https://app.example")
        .header("sec-fetch-site", "cross-site")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type,authorization",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 200);
    let h = pre.headers();
    assert_eq!(h["access-control-allow-origin"], "https://app.example");
    assert_eq!(h["access-control-allow-methods"], "POST");
    assert_eq!(
        h["access-control-allow-headers"],
        "content-type,authorization"
    );
    let r = client()
        .post(s.url("/diagnose"))
        .header("origin", "https://app.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"data": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = r.headers();
    assert_eq!(h["access-control-allow-origin"], "https://app.example");
    let exposed = h["access-control-expose-headers"].to_str().unwrap();
    assert!(exposed.contains("x-genkit-trace-id"), "{exposed}");
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"result": {"ran": "x"}})
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    // Another origin gets neither a preflight grant nor a run.
    let pre = client()
        .request(reqwest::Method::OPTIONS, s.url("/diagnose"))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 403);
    assert!(pre.headers().get("access-control-allow-origin").is_none());
    let (status, _) = answer(
        client()
            .post(s.url("/diagnose"))
            .header("origin", "https://evil.example")
            .json(&json!({"data": "x"})),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

/// A custom CORS layer shapes the CORS answers, but the origins are always
/// those of `allow_origins`: even `CorsLayer::permissive()` grants no other.
#[tokio::test]
async fn a_custom_cors_layer_cannot_widen_the_origins() {
    let runs = Arc::new(AtomicUsize::new(0));
    let s = start(
        FlowServer::new(&registry(&runs))
            .allow_origins(["https://app.example"])
            .cors(CorsLayer::permissive().max_age(std::time::Duration::from_secs(60))),
    )
    .await;
    let pre = |origin: &'static str| {
        client()
            .request(reqwest::Method::OPTIONS, s.url("/diagnose"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .send()
    };
    let ok = pre("https://app.example").await.unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(
        ok.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    assert_eq!(ok.headers()["access-control-max-age"], "60");
    let refused = pre("https://evil.example").await.unwrap();
    assert_eq!(refused.status(), 403);
    let (status, _) = answer(
        client()
            .post(s.url("/diagnose"))
            .header("origin", "https://evil.example")
            .json(&json!({"data": 1})),
    )
    .await;
    assert_eq!(status, 403);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn origins_must_be_listed_correctly() {
    let runs = Arc::new(AtomicUsize::new(0));
    let e = FlowServer::new(&registry(&runs))
        .cors(CorsLayer::permissive())
        .into_router()
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("FlowServer::cors needs the origins it serves"),
        "{e}"
    );
    let e = FlowServer::new(&registry(&runs))
        .allow_origins(["https://app.example/path"])
        .into_router()
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("`https://app.example/path` is not an origin"),
        "{e}"
    );
}
