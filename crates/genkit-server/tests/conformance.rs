//! Genkit's published conformance cases, read unchanged from
//! `GENKIT_CONFORMANCE_DIR`: `reflection_api.yaml` against the Reflection API
//! and `flow_server_tests.yaml` against the flow server, both served by the
//! test runtime (`genkit-test-runtime`) in dev mode.

mod common;

use common::{RuntimeProcess, client, conformance_dir, sse_frames};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = conformance_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap()
}

/// Genkit's harness comparison: every key of `want` must be in `got` with a
/// matching value (extra keys are fine); arrays and scalars match exactly.
fn contains(path: &str, got: &Value, want: &Value, errors: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                match g.get(k) {
                    Some(gv) => contains(&format!("{path}.{k}"), gv, wv, errors),
                    None => errors.push(format!("{path}: missing key {k}")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) => {
            if w.len() != g.len() {
                errors.push(format!("{path}: length {} != {}", g.len(), w.len()));
            } else {
                for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                    contains(&format!("{path}[{i}]"), gv, wv, errors);
                }
            }
        }
        (Value::Number(w), Value::Number(g)) if w.as_f64() == g.as_f64() => {}
        _ if got == want => {}
        _ => errors.push(format!("{path}: got {got}, want {want}")),
    }
}

#[tokio::test]
async fn conformance_suites() {
    let mut rt = RuntimeProcess::start(true, &[]).await;

    let reflection = load("reflection_api.yaml");
    let cases = reflection["tests"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let path = case["path"].as_str().unwrap();
        let url = format!("{}{path}", rt.reflection_url());
        let resp = match case.get("post") {
            Some(body) => client().post(&url).json(body).send().await.unwrap(),
            None => client().get(&url).send().await.unwrap(),
        };
        assert_eq!(resp.status(), 200, "{path}");
        let got: Value = resp.json().await.unwrap();
        let mut errors = Vec::new();
        contains("body", &got, &case["body"], &mut errors);
        assert!(errors.is_empty(), "{path}: {errors:#?}\n{got:#}");
        if path == "/api/runAction" {
            let id = got["telemetry"]["traceId"].as_str().unwrap();
            assert!(
                id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
                "{id}"
            );
        }
    }

    let flows = load("flow_server_tests.yaml");
    let cases = flows["tests"].as_array().unwrap();
    assert!(!cases.is_empty());
    for case in cases {
        let path = case["path"].as_str().unwrap();
        let count = case["post"]["data"].as_u64().unwrap();
        let body = client()
            .post(rt.flow_url(&format!("/{path}")))
            .header("accept", "text/event-stream")
            .json(&case["post"])
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let frames = sse_frames(&body);
        assert_eq!(frames.len() as u64, count + 1, "{body}");
        let message = case["response"]["message"].as_str().unwrap();
        for (i, frame) in frames[..count as usize].iter().enumerate() {
            let v: Value = serde_json::from_str(&frame["data: ".len()..]).unwrap();
            let chunk = serde_json::to_string(&v["message"]).unwrap();
            assert_eq!(chunk, message.replace("{count}", &i.to_string()));
        }
        let last: Value = serde_json::from_str(&frames[count as usize]["data: ".len()..]).unwrap();
        let result = case["response"]["result"]
            .as_str()
            .unwrap()
            .replace("{count}", &count.to_string());
        assert_eq!(last, serde_json::json!({ "result": result }));
    }

    rt.signal("INT");
    assert_eq!(rt.wait().await, Some(0));
    assert!(!rt.runtime_file.exists());
}
