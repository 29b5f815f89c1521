//! Trace export from a dev-mode runtime to a (stand-in) Genkit telemetry
//! server: the URL announced by `/api/notify`, realtime start records, the
//! span tree and `genkit:*` attributes, and traces delivered before the
//! Reflection API answers.

mod common;

use common::{FakeTelemetryServer, RuntimeProcess, client};
use serde_json::{Value, json};

fn by_name<'a>(spans: &'a std::collections::BTreeMap<String, Value>, name: &str) -> &'a Value {
    spans
        .values()
        .find(|s| s["displayName"] == name)
        .unwrap_or_else(|| panic!("no span {name}: {spans:#?}"))
}

#[tokio::test]
async fn notified_url_receives_realtime_traces_before_the_answer() {
    let (fake, url) = FakeTelemetryServer::start().await;
    let mut rt =
        RuntimeProcess::start(false, &[("GENKIT_ENABLE_REALTIME_TELEMETRY", "true")]).await;
    let base = rt.reflection_url();
    let r = client()
        .post(format!("{base}/api/notify"))
        .json(&json!({"telemetryServerUrl": url, "reflectionApiSpecVersion": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    let r = client()
        .post(format!("{base}/api/runAction"))
        .json(&json!({"key": "/flow/nested", "input": "ada", "context": {"auth": {"uid": "u1"}, "tenant": "t"}, "telemetryLabels": {"genkitx:test": "yes"}}))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"], "Hello, ADA!");
    let trace_id = body["telemetry"]["traceId"].as_str().unwrap().to_owned();

    // Flushed before the answer: everything is there already.
    let spans = fake.merged(&trace_id);
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let root = by_name(&spans, "nested");
    let step = by_name(&spans, "shout");
    let hello = by_name(&spans, "hello");
    assert!(root.get("parentSpanId").is_none());
    assert_eq!(step["parentSpanId"], root["spanId"]);
    assert_eq!(hello["parentSpanId"], root["spanId"]);
    let a = &root["attributes"];
    assert_eq!(a["genkit:type"], "action");
    assert_eq!(a["genkit:metadata:subtype"], "flow");
    assert_eq!(a["genkit:name"], "nested");
    assert_eq!(a["genkit:key"], "/flow/nested");
    assert_eq!(a["genkit:isRoot"], true);
    assert_eq!(a["genkit:path"], "/{nested,t:flow}");
    assert_eq!(a["genkit:input"], "\"ada\"");
    assert_eq!(a["genkit:output"], "\"Hello, ADA!\"");
    assert_eq!(a["genkit:state"], "success");
    assert_eq!(a["genkitx:test"], "yes");
    let ctx: Value = serde_json::from_str(a["genkit:metadata:context"].as_str().unwrap()).unwrap();
    assert_eq!(ctx, json!({"auth": "<redacted>", "tenant": "t"}));
    assert_eq!(step["attributes"]["genkit:type"], "flowStep");
    assert_eq!(
        step["attributes"]["genkit:path"],
        "/{nested,t:flow}/{shout,t:flowStep}"
    );
    assert_eq!(
        hello["attributes"]["genkit:path"],
        "/{nested,t:flow}/{hello,t:flow,s:flow}"
    );
    for s in spans.values() {
        assert_eq!(s["traceId"], trace_id.as_str());
        assert_eq!(s["spanKind"], "INTERNAL");
        assert_eq!(
            s["instrumentationLibrary"],
            json!({"name": "genkit-tracer", "version": "v1"})
        );
        assert_eq!(s["status"], json!({"code": 0}));
        assert!(s["endTime"].as_f64().unwrap() >= s["startTime"].as_f64().unwrap());
    }
    // Realtime: a running span is visible before it ends.
    let r = client()
        .post(format!("{base}/api/runAction?stream=true"))
        .json(&json!({"key": "/flow/slow", "input": 400}))
        .send()
        .await
        .unwrap();
    let slow_trace = r.headers()["x-genkit-trace-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut seen_running = false;
    for _ in 0..30 {
        let records = fake.records(&slow_trace);
        if records
            .iter()
            .any(|s| s["endTime"] == 0.0 && s["attributes"].get("genkit:state").is_none())
        {
            seen_running = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(
        seen_running,
        "no in-progress span record while the flow ran"
    );
    let text = r.text().await.unwrap();
    assert!(
        text.ends_with(&format!("\"telemetry\":{{\"traceId\":\"{slow_trace}\"}}}}")),
        "{text}"
    );
    assert!(
        fake.merged(&slow_trace)
            .values()
            .all(|s| s["endTime"].as_f64().unwrap() > 0.0)
    );
    let trace_post = fake
        .posts
        .lock()
        .iter()
        .find(|p| p["traceId"] == trace_id.as_str() && p.get("displayName").is_some())
        .cloned()
        .unwrap();
    assert_eq!(trace_post["displayName"], "nested");

    // A failing flow: error status, failure source and exception event.
    let r = client()
        .post(format!("{base}/api/runAction"))
        .json(&json!({"key": "/flow/fail", "input": 1}))
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    let trace_id = body["error"]["details"]["traceId"]
        .as_str()
        .unwrap()
        .to_owned();
    let spans = fake.merged(&trace_id);
    let fail = by_name(&spans, "fail");
    assert_eq!(fail["attributes"]["genkit:state"], "error");
    assert_eq!(fail["attributes"]["genkit:isFailureSource"], true);
    assert_eq!(fail["status"]["code"], 2);
    let ev = &fail["timeEvents"]["timeEvent"][0]["annotation"];
    assert_eq!(ev["description"], "exception");
    assert_eq!(ev["attributes"]["exception.message"], "INTERNAL: boom");

    rt.signal("INT");
    rt.wait().await;
}

#[tokio::test]
async fn env_url_wins_over_notify() {
    let (pinned, pinned_url) = FakeTelemetryServer::start().await;
    let (other, other_url) = FakeTelemetryServer::start().await;
    let mut rt = RuntimeProcess::start(false, &[("GENKIT_TELEMETRY_SERVER", &pinned_url)]).await;
    let base = rt.reflection_url();
    client()
        .post(format!("{base}/api/notify"))
        .json(&json!({"telemetryServerUrl": other_url, "reflectionApiSpecVersion": 1}))
        .send()
        .await
        .unwrap();
    let body: Value = client()
        .post(format!("{base}/api/runAction?stream=true"))
        .json(&json!({"key": "/flow/streamy", "input": 2}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .map(|t| serde_json::from_str(t.rsplit('\n').next().unwrap()).unwrap())
        .unwrap();
    let trace_id = body["telemetry"]["traceId"].as_str().unwrap();
    let spans = pinned.merged(trace_id);
    assert_eq!(
        by_name(&spans, "streamy")["attributes"]["genkit:output"],
        "\"done 2, streamed: 2 times\""
    );
    // Not realtime: only finished spans.
    assert!(
        pinned
            .records(trace_id)
            .iter()
            .all(|s| s["endTime"].as_f64().unwrap() > 0.0)
    );
    assert!(other.posts.lock().is_empty());
    rt.signal("INT");
    rt.wait().await;
}

/// `/api/notify` from a request a web page could make changes nothing: the
/// trace export stays where it was (here: nowhere, so nothing arrives),
/// while the same notify from the CLI takes effect.
#[tokio::test]
async fn notify_from_a_page_changes_nothing() {
    let (fake, url) = FakeTelemetryServer::start().await;
    let mut rt = RuntimeProcess::start(false, &[]).await;
    let base = rt.reflection_url();
    let notify = json!({"telemetryServerUrl": url, "reflectionApiSpecVersion": 1}).to_string();
    let port = base.rsplit(':').next().unwrap().to_owned();
    // A body of the wrong type is 415, a foreign origin or host 403.
    let forged = [
        (
            415,
            client()
                .post(format!("{base}/api/notify"))
                .header("content-type", "text/plain")
                .body(notify.clone()),
        ),
        (
            403,
            client()
                .post(format!("{base}/api/notify"))
                .header("content-type", "application/json")
                .header("origin", "https://evil.example")
                .body(notify.clone()),
        ),
        (
            403,
            client()
                .post(format!("{base}/api/notify"))
                .header("content-type", "application/json")
                .header("host", format!("evil.example:{port}"))
                .body(notify.clone()),
        ),
    ];
    for (status, request) in forged {
        assert_eq!(request.send().await.unwrap().status(), status);
    }
    let run = || async {
        let body: Value = client()
            .post(format!("{base}/api/runAction"))
            .json(&json!({"key": "/flow/hello", "input": "x"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["telemetry"]["traceId"].as_str().unwrap().to_owned()
    };
    let before = run().await;
    assert!(fake.posts.lock().is_empty());
    assert!(fake.records(&before).is_empty());

    let r = client()
        .post(format!("{base}/api/notify"))
        .header("content-type", "application/json")
        .body(notify)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let after = run().await;
    assert_eq!(fake.merged(&after).len(), 1);
    rt.signal("INT");
    rt.wait().await;
}
