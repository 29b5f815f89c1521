//! The agent wire types against Genkit's `agent.yaml` cases and the `$defs`
//! of `genkit-schema.json`, and round trips of JSON as Genkit JS writes it.

use genkit_model::types::{Message, Part};
use genkit_session::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

fn schema_defs() -> Value {
    let path = genkit_conformance::genkit_dir().join("genkit-schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("genkit-schema.json is JSON");
    schema["$defs"].clone()
}

thread_local! {
    /// Compiled validators by `$def` name (compiling one takes a while).
    static VALIDATORS: RefCell<HashMap<String, Rc<jsonschema::Validator>>> = RefCell::default();
}

fn assert_valid(defs: &Value, def: &str, value: &Value) {
    assert!(defs.get(def).is_some(), "no $def {def}");
    let validator = VALIDATORS.with(|cache| {
        cache
            .borrow_mut()
            .entry(def.to_owned())
            .or_insert_with(|| {
                let schema = json!({"$ref": format!("#/$defs/{def}"), "$defs": defs});
                Rc::new(jsonschema::validator_for(&schema).expect("schema compiles"))
            })
            .clone()
    });
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{def} rejected {}:\n{}",
        serde_json::to_string_pretty(value).unwrap_or_default(),
        errors.join("\n")
    );
}

/// Parses `value` as `T`, writes it back unchanged, and checks both against
/// the schema's `def` (when the schema has one).
fn round_trip<T: Serialize + DeserializeOwned>(
    defs: &Value,
    def: Option<&str>,
    value: &Value,
) -> T {
    let typed: T = serde_json::from_value(value.clone()).unwrap_or_else(|e| {
        panic!(
            "{} does not parse as {}: {e}",
            value,
            std::any::type_name::<T>()
        )
    });
    let back = serde_json::to_value(&typed).expect("serializes");
    assert_eq!(
        &back,
        value,
        "{} changed in a round trip",
        std::any::type_name::<T>()
    );
    if let Some(def) = def {
        assert_valid(defs, def, value);
        assert_valid(defs, def, &back);
    }
    typed
}

fn agent_cases() -> Vec<Value> {
    let path = genkit_conformance::genkit_dir().join("agent.yaml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let doc: Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    doc["tests"].as_array().cloned().unwrap_or_default()
}

/// Replaces `'{{name}}'` captures with what a run would have captured: a
/// state object for `state`, an id string elsewhere.
fn fill_captures(value: &Value, key: &str) -> Value {
    match value {
        Value::String(s) if s.starts_with("{{") && s.ends_with("}}") => {
            if key == "state" {
                json!({
                    "sessionId": "0b6f4d2e-8f3c-4c55-9a52-5d7c8e1f2a33",
                    "messages": [{"role": "user", "content": [{"text": "first"}]}],
                    "custom": {"counter": 1},
                    "artifacts": []
                })
            } else {
                Value::from(format!("captured-{}", &s[2..s.len() - 2]))
            }
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), fill_captures(v, k)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| fill_captures(v, key)).collect()),
        other => other.clone(),
    }
}

/// `expectOutput`/`expectSnapshot` assertions use the output's own shapes:
/// each piece parses as its wire type and fits the schema.
fn check_expectations(defs: &Value, expect: &Value, counted: &mut usize) {
    if let Some(message) = expect.get("message") {
        if message.get("role").is_some() {
            round_trip::<Message>(defs, Some("Message"), message);
        } else {
            // Interrupt cases give only the content of the expected message.
            round_trip::<Vec<Part>>(defs, None, &message["content"]);
        }
        *counted += 1;
    }
    if let Some(reason) = expect.get("finishReason") {
        round_trip::<AgentFinishReason>(defs, Some("AgentFinishReason"), reason);
        *counted += 1;
    }
    if let Some(status) = expect.get("status") {
        round_trip::<SnapshotStatus>(defs, Some("SnapshotStatus"), status);
        *counted += 1;
    }
    if let Some(state) = expect.get("stateContains") {
        round_trip::<SessionState>(defs, Some("SessionState"), state);
        *counted += 1;
    }
    if let Some(artifacts) = expect.get("artifactsContain") {
        for a in artifacts.as_array().expect("artifactsContain is a list") {
            round_trip::<Artifact>(defs, Some("Artifact"), a);
            *counted += 1;
        }
    }
    if let Some(error) = expect.get("errorContains") {
        round_trip::<RuntimeError>(defs, Some("RuntimeError"), error);
        *counted += 1;
    }
}

#[test]
fn every_agent_yaml_shape_parses_and_round_trips() {
    let defs = schema_defs();
    let cases = agent_cases();
    assert!(cases.len() >= 31, "agent.yaml has {} cases", cases.len());
    let mut counted = 0;
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        for step in case["steps"].as_array().expect("steps") {
            let step = fill_captures(step, "");
            if let Some(init) = step.get("init") {
                round_trip::<AgentInit>(&defs, Some("AgentInit"), init);
                counted += 1;
            }
            for input in step["inputs"].as_array().into_iter().flatten() {
                let input: AgentInput = round_trip(&defs, Some("AgentInput"), input);
                assert!(
                    input.has_payload() || input.is_detach(),
                    "{name}: an input with nothing in it"
                );
                counted += 1;
            }
            for chunk in step["expectChunks"].as_array().into_iter().flatten() {
                round_trip::<AgentStreamChunk>(&defs, Some("AgentStreamChunk"), chunk);
                counted += 1;
            }
            for key in ["expectOutput", "expectSnapshot"] {
                if let Some(expect) = step.get(key) {
                    check_expectations(&defs, expect, &mut counted);
                }
            }
            if let Some(error) = step.get("expectError") {
                round_trip::<RuntimeError>(&defs, Some("RuntimeError"), error);
                counted += 1;
            }
            if let Some(previous) = step.get("expectPreviousStatus") {
                let status: Option<SnapshotStatus> =
                    serde_json::from_value(previous.clone()).expect("a previous status");
                if step["snapshotId"] == "non-existent-id" {
                    assert_eq!(status, None);
                }
                counted += 1;
            }
        }
    }
    assert!(counted > 150, "only {counted} shapes checked");
}

#[test]
fn js_shaped_outputs_and_snapshots_round_trip() {
    let defs = schema_defs();
    // A client-managed turn's output.
    round_trip::<AgentOutput>(
        &defs,
        Some("AgentOutput"),
        &json!({
            "sessionId": "a3c1b0de-1f5e-4b7a-9c1e-3f0d2b6a7c11",
            "state": {
                "sessionId": "a3c1b0de-1f5e-4b7a-9c1e-3f0d2b6a7c11",
                "messages": [
                    {"role": "user", "content": [{"text": "hi"}]},
                    {"role": "model", "content": [{"text": "hello back"}]}
                ],
                "artifacts": []
            },
            "message": {"role": "model", "content": [{"text": "hello back"}]},
            "artifacts": [],
            "finishReason": "stop"
        }),
    );
    // A failed turn resolves with the error as data.
    let failed: AgentOutput = round_trip(
        &defs,
        Some("AgentOutput"),
        &json!({
            "sessionId": "s1",
            "snapshotId": "p1",
            "finishReason": "failed",
            "error": {
                "status": "INVALID_ARGUMENT",
                "message": "Tool restartTool was restarted with modified inputs",
                "details": {"ref": "r1"}
            }
        }),
    );
    let error = failed.error.expect("an error");
    assert_eq!(
        error.status_code(),
        Some(genkit_core::StatusCode::InvalidArgument)
    );
    // Every field of a snapshot, including a heartbeat and an error.
    let snap: SessionSnapshot = round_trip(
        &defs,
        Some("SessionSnapshot"),
        &json!({
            "snapshotId": "c0ffee00-0000-4000-8000-000000000002",
            "sessionId": "s1",
            "parentId": "c0ffee00-0000-4000-8000-000000000001",
            "createdAt": "2026-12-01T05:38:31.123Z",
            "updatedAt": "2026-12-01T05:38:32.456Z",
            "heartbeatAt": "2026-12-01T05:38:32.000Z",
            "status": "failed",
            "finishReason": "failed",
            "error": {"status": "INTERNAL", "message": "intentional failure"},
            "state": {
                "sessionId": "s1",
                "messages": [{"role": "user", "content": [{"text": "fail"}]}],
                "custom": {"counter": 2, "status": "done"},
                "artifacts": [{"name": "doc1", "parts": [{"text": "v2"}], "metadata": {"v": 2}}]
            }
        }),
    );
    assert_eq!(snap.owner_session_id(), Some("s1"));
    assert!(!snap.is_resumable());
    // A pending snapshot of a detached turn: no state yet.
    round_trip::<SessionSnapshot>(
        &defs,
        Some("SessionSnapshot"),
        &json!({
            "snapshotId": "p2",
            "sessionId": "s1",
            "createdAt": "2026-12-01T05:38:31.123Z",
            "updatedAt": "2026-12-01T05:38:31.123Z",
            "heartbeatAt": "2026-12-01T05:38:31.123Z",
            "status": "pending"
        }),
    );
    round_trip::<AgentStreamChunk>(
        &defs,
        Some("AgentStreamChunk"),
        &json!({"customPatch": [
            {"op": "replace", "path": "", "value": {"counter": 1, "status": "working"}},
            {"op": "replace", "path": "/counter", "value": 2},
            {"op": "move", "path": "/b", "from": "/a"},
            {"op": "remove", "path": "/status"}
        ]}),
    );
    round_trip::<AgentStreamChunk>(
        &defs,
        Some("AgentStreamChunk"),
        &json!({"turnEnd": {"snapshotId": "p1", "finishReason": "interrupted"}}),
    );
    round_trip::<AgentResult>(
        &defs,
        Some("AgentResult"),
        &json!({"message": {"role": "model", "content": [{"text": "done"}]}, "finishReason": "stop"}),
    );
    round_trip::<GetSnapshotRequest>(
        &defs,
        Some("GetSnapshotRequest"),
        &json!({"sessionId": "s1"}),
    );
    round_trip::<AgentAbortRequest>(
        &defs,
        Some("AgentAbortRequest"),
        &json!({"snapshotId": "p1"}),
    );
    round_trip::<AgentAbortResponse>(
        &defs,
        Some("AgentAbortResponse"),
        &json!({"snapshotId": "p1", "status": "pending"}),
    );
    round_trip::<AgentAbortResponse>(
        &defs,
        Some("AgentAbortResponse"),
        &json!({"snapshotId": "non-existent-id"}),
    );
    round_trip::<AgentMetadata>(
        &defs,
        Some("AgentMetadata"),
        &json!({
            "stateManagement": "server",
            "abortable": true,
            "stateSchema": {"type": "object", "properties": {"counter": {"type": "number"}}}
        }),
    );
}

#[test]
fn values_built_in_rust_fit_the_schema() {
    let defs = schema_defs();
    let mut snap = SessionSnapshot::new("id", "2026-12-01T05:38:31.123Z");
    snap.status = Some(SnapshotStatus::Completed);
    snap.state = Some(SessionState::default());
    assert_valid(
        &defs,
        "SessionSnapshot",
        &serde_json::to_value(&snap).unwrap(),
    );
    assert_eq!(
        serde_json::to_value(&snap).unwrap(),
        json!({"snapshotId": "id", "createdAt": "2026-12-01T05:38:31.123Z", "status": "completed", "state": {}})
    );
    for chunk in [
        AgentStreamChunk::turn_end(TurnEnd::default()),
        AgentStreamChunk::artifact(Artifact::new("doc", vec![Part::text("x")])),
        AgentStreamChunk::custom_patch(vec![]),
    ] {
        assert_valid(
            &defs,
            "AgentStreamChunk",
            &serde_json::to_value(&chunk).unwrap(),
        );
    }
    let input = AgentInput::message(Message::user("hi")).with_detach();
    assert_eq!(
        serde_json::to_value(&input).unwrap(),
        json!({"message": {"role": "user", "content": [{"text": "hi"}]}, "detach": true})
    );
    assert_eq!(
        serde_json::to_value(AgentInit::default()).unwrap(),
        json!({})
    );
    let err = RuntimeError::from(&genkit_core::Error::not_found("Snapshot x not found"));
    assert_valid(&defs, "RuntimeError", &serde_json::to_value(&err).unwrap());
}

#[test]
fn unknown_keys_are_ignored_and_bad_values_refused() {
    // Genkit JS's schemas strip unknown keys rather than failing.
    let input: AgentInput =
        serde_json::from_value(json!({"detach": true, "somethingNew": 1})).unwrap();
    assert!(input.is_detach() && !input.has_payload());
    assert!(serde_json::from_value::<SnapshotStatus>(json!("done")).is_err());
    assert!(serde_json::from_value::<AgentFinishReason>(json!("STOP")).is_err());
    assert!(serde_json::from_value::<SessionSnapshot>(json!({"snapshotId": "x"})).is_err());
    let resume: AgentResume = serde_json::from_value(json!({"respond": []})).unwrap();
    assert!(resume.is_empty());
    assert!(!AgentInput::resume(resume).has_payload());
}
