//! Wire types against Genkit's shared schema and conformance vectors.

use std::path::PathBuf;

use genkit_model::types::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn conformance_dir() -> PathBuf {
    genkit_conformance::genkit_dir()
}

fn schema_defs() -> Value {
    let path = conformance_dir().join("genkit-schema.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("genkit-schema.json is JSON");
    schema["$defs"].clone()
}

/// Validates `value` against `$defs/<def>` of genkit-schema.json.
fn assert_valid(defs: &Value, def: &str, value: &Value) {
    assert!(defs.get(def).is_some(), "no $def {def}");
    let schema = json!({"$ref": format!("#/$defs/{def}"), "$defs": defs});
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
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

fn assert_no_nulls_except_data(value: &Value, path: &str) {
    match value {
        Value::Null => panic!("null at {path}"),
        Value::Object(map) => {
            for (k, v) in map {
                // `data`, `input`, `output`, `config`, `custom`, `raw` are free-form values.
                if matches!(
                    k.as_str(),
                    "data" | "input" | "output" | "config" | "custom" | "raw"
                ) {
                    continue;
                }
                assert_no_nulls_except_data(v, &format!("{path}.{k}"));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                assert_no_nulls_except_data(v, &format!("{path}[{i}]"));
            }
        }
        _ => {}
    }
}

/// Serializes, validates against the schema, checks no `null` optionals, and that it
/// deserializes back to an equal value.
fn check<T>(defs: &Value, def: &str, value: &T) -> Value
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).expect("serializes");
    assert_valid(defs, def, &json);
    assert_no_nulls_except_data(&json, def);
    let back: T = serde_json::from_value(json.clone()).expect("deserializes");
    assert_eq!(&back, value, "{def} round trip");
    json
}

fn meta(v: Value) -> Metadata {
    match v {
        Value::Object(m) => m,
        _ => Metadata::new(),
    }
}

fn all_parts() -> Vec<Part> {
    let m = || json!({"source": "test", "n": 1});
    vec![
        Part::text("hello").with_metadata("purpose", json!("output")),
        Part::media("data:image/png;base64,AAAA", Some("image/png")).with_metadata("k", m()),
        Part::media("https://example.com/a.jpg", None),
        Part::tool_request(ToolRequest::new("weather", json!({"city": "Paris"})).with_ref("c1"))
            .with_metadata("interrupt", json!(true)),
        Part::tool_request(ToolRequest {
            reference: None,
            name: "partial".into(),
            input: None,
            partial: Some(true),
        }),
        Part::tool_response(
            ToolResponse::new("weather", json!({"temp": 21}))
                .with_ref("c1")
                .with_content(vec![
                    Part::text("sunny"),
                    Part::media("https://x/y.png", None),
                ]),
        )
        .with_metadata("k", m()),
        Part::data(json!({"a": [1, 2]})).with_metadata("k", m()),
        Part::custom(meta(json!({"executableCode": {"code": "print(1)"}}))).with_metadata("k", m()),
        Part::reasoning("thinking...").with_metadata("signature", json!("abc")),
        Part::resource("file:///tmp/a.txt").with_metadata("k", m()),
    ]
}

#[test]
fn every_part_kind_validates() {
    let defs = schema_defs();
    let wanted_defs = [
        "TextPart",
        "MediaPart",
        "MediaPart",
        "ToolRequestPart",
        "ToolRequestPart",
        "ToolResponsePart",
        "DataPart",
        "CustomPart",
        "ReasoningPart",
        "ResourcePart",
    ];
    for (part, def) in all_parts().iter().zip(wanted_defs) {
        let json = check(&defs, "Part", part);
        assert_valid(&defs, def, &json);
    }
    // Exact shape of one part.
    assert_eq!(
        serde_json::to_value(Part::text("hi")).ok(),
        Some(json!({"text": "hi"}))
    );
    assert_eq!(
        serde_json::to_value(Part::tool_request(
            ToolRequest::new("t", json!({})).with_ref("r")
        ))
        .ok(),
        Some(json!({"toolRequest": {"ref": "r", "name": "t", "input": {}}}))
    );
}

#[test]
fn part_rejects_empty_and_ambiguous_and_takes_placeholders() {
    let empty = serde_json::from_value::<Part>(json!({}));
    assert!(empty.is_err_and(|e| e.to_string().contains("no content")));
    // Only metadata is a placeholder (Genkit JS's pending section parts),
    // which the schema allows; it round-trips.
    let placeholder = json!({"metadata": {"purpose": "context", "pending": true}});
    assert_valid(&schema_defs(), "Part", &placeholder);
    let part = serde_json::from_value::<Part>(placeholder.clone()).expect("a placeholder");
    assert_eq!(part.kind, PartKind::Placeholder);
    assert_eq!(serde_json::to_value(&part).ok(), Some(placeholder));
    let bare = Part::new(PartKind::Placeholder);
    assert_eq!(
        serde_json::to_value(&bare).ok(),
        Some(json!({"metadata": {}}))
    );
    let ambiguous = serde_json::from_value::<Part>(json!({"text": "a", "media": {"url": "u"}}));
    assert!(ambiguous.is_err_and(|e| e.to_string().contains("ambiguous")));
    let bad = serde_json::from_value::<Part>(json!({"text": 5}));
    assert!(bad.is_err_and(|e| e.to_string().contains("text")));
    let bad_meta = serde_json::from_value::<Part>(json!({"text": "a", "metadata": 3}));
    assert!(bad_meta.is_err());
}

#[test]
fn part_keeps_schema_allowed_siblings() {
    let defs = schema_defs();
    for original in [
        json!({"text": "hi", "custom": {"x": 1}, "metadata": {"m": true}}),
        json!({"custom": {"x": 1}, "data": [1, 2]}),
        json!({"data": null}),
        json!({"media": {"url": "u"}, "data": "d"}),
    ] {
        assert_valid(&defs, "Part", &original);
        let part: Part = serde_json::from_value(original.clone()).expect("part");
        assert_eq!(serde_json::to_value(&part).ok(), Some(original));
    }
    let part: Part = serde_json::from_value(json!({"custom": {"x": 1}, "data": 2})).expect("part");
    assert!(part.is_custom());
    // Unknown keys are ignored, like zod's default object parsing.
    let part: Part = serde_json::from_value(json!({"text": "a", "extra": 1})).expect("part");
    assert_eq!(part, Part::text("a"));
}

#[test]
fn part_and_message_helpers() {
    let msg = Message::model(all_parts());
    assert_eq!(msg.text(), "hello");
    assert_eq!(msg.reasoning(), "thinking...");
    assert_eq!(
        msg.media().map(|m| m.url.as_str()),
        Some("data:image/png;base64,AAAA")
    );
    assert_eq!(msg.data(), Some(&json!({"a": [1, 2]})));
    assert_eq!(msg.tool_requests().count(), 2);
    assert_eq!(msg.tool_responses().count(), 1);
    let interrupts: Vec<_> = msg.interrupts().collect();
    assert_eq!(interrupts.len(), 1);
    assert_eq!(
        interrupts[0].as_tool_request().map(|r| r.name.as_str()),
        Some("weather")
    );

    let user = Message::user("hi");
    assert_eq!(user.role, Role::User);
    assert_eq!(user.content, vec![Part::text("hi")]);
    let multi = Message::user(["a", "b"]);
    assert_eq!(multi.text(), "ab");
    let mixed = Message::user(vec![
        Part::text("look"),
        Part::media("https://x/a.png", None),
    ]);
    assert_eq!(mixed.content.len(), 2);
    assert_eq!(Message::system("s").role, Role::System);
    assert_eq!(Message::tool(Part::data(json!(1))).role, Role::Tool);

    let output = Message::model("Result: ```json\n{\"ok\": true}\n```").output();
    assert_eq!(output, Some(json!({"ok": true})));

    let media = Media::new("data:image/jpeg;base64,xx");
    assert_eq!(media.effective_content_type(), Some("image/jpeg"));
    let falsy = Part::tool_request(ToolRequest::new("t", json!({})))
        .with_metadata("interrupt", json!(false));
    assert!(!falsy.is_interrupt());
    let tr = ToolRequest::new("t", json!({})).with_ref("r9");
    let resp = ToolResponse::for_request(&tr, json!("done"));
    assert_eq!(resp.reference.as_deref(), Some("r9"));
}

#[test]
fn messages_and_documents_validate() {
    let defs = schema_defs();
    for role in [Role::System, Role::User, Role::Model, Role::Tool] {
        check(&defs, "Role", &role);
    }
    check(
        &defs,
        "Message",
        &Message::model(all_parts()).with_metadata("k", json!(1)),
    );
    let doc = DocumentData::from_text("a doc").with_metadata(meta(json!({"id": 1})));
    check(&defs, "DocumentData", &doc);
    check(
        &defs,
        "DocumentData",
        &DocumentData::from_media("https://x/y.png", Some("image/png")),
    );
    let embed_req = EmbedRequest {
        input: vec![doc.clone()],
        options: Some(json!({"dims": 3})),
    };
    check(&defs, "EmbedRequest", &embed_req);
    let embed_resp = EmbedResponse {
        embeddings: vec![Embedding {
            embedding: vec![0.5, -1.0, 2.25],
            metadata: Some(meta(json!({"part": 0}))),
        }],
    };
    check(&defs, "EmbedResponse", &embed_resp);
}

fn full_request() -> GenerateRequest {
    GenerateRequest::new(vec![
        Message::system("be nice"),
        Message::user(["hi", "there"]),
        Message::model(Part::tool_request(
            ToolRequest::new("t", json!({"q": 1})).with_ref("1"),
        )),
        Message::tool(Part::tool_response(
            ToolResponse::new("t", json!(2)).with_ref("1"),
        )),
    ])
    .with_config(json!({"temperature": 0.5}))
    .with_tools(vec![
        ToolDefinition::new("t", "a tool")
            .with_input_schema(json!({"type": "object"}))
            .with_output_schema(json!({"type": "number"})),
    ])
    .with_tool_choice(ToolChoice::Auto)
    .with_output(OutputConfig {
        format: Some("json".into()),
        schema: Some(json!({"type": "object"})),
        constrained: Some(true),
        content_type: Some("application/json".into()),
    })
    .with_docs(vec![DocumentData::from_text("context")])
}

#[test]
fn requests_and_responses_validate() {
    let defs = schema_defs();
    let request = full_request();
    check(&defs, "GenerateRequest", &request);
    check(&defs, "ModelRequest", &request);
    check(&defs, "OutputConfig", &OutputConfig::default());
    for choice in [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None] {
        assert_valid(
            &defs,
            "GenerateRequest",
            &json!({"messages": [], "toolChoice": choice}),
        );
    }

    let usage = GenerationUsage {
        input_tokens: Some(1),
        output_tokens: Some(2),
        total_tokens: Some(3),
        input_characters: Some(4),
        output_characters: Some(5),
        input_images: Some(6),
        output_images: Some(7),
        input_videos: Some(8),
        output_videos: Some(9),
        input_audio_files: Some(10),
        output_audio_files: Some(11),
        custom: Some([("cost".to_owned(), serde_json::Number::from(3))].into()),
        thoughts_tokens: Some(12),
        cached_content_tokens: Some(13),
    };
    check(&defs, "GenerationUsage", &usage);

    let response = GenerateResponse {
        message: Some(Message::model("ok")),
        finish_reason: Some(FinishReason::Stop),
        finish_message: Some("done".into()),
        latency_ms: Some(12.5),
        usage: Some(Box::new(usage)),
        custom: Some(json!({})),
        raw: Some(json!({"id": "x"})),
        request: Some(Box::new(request.clone())),
        operation: Some(Box::new(Operation {
            action: Some("/background-model/veo".into()),
            id: "op1".into(),
            done: Some(false),
            output: None,
            error: None,
            metadata: None,
        })),
        candidates: None,
    };
    check(&defs, "ModelResponse", &response);
    check(&defs, "GenerateResponse", &response);
    for reason in [
        FinishReason::Stop,
        FinishReason::Length,
        FinishReason::Blocked,
        FinishReason::Aborted,
        FinishReason::Interrupted,
        FinishReason::Other,
        FinishReason::Unknown,
    ] {
        check(&defs, "FinishReason", &reason);
    }
    let candidate = Candidate {
        index: 0,
        message: Message::model("c"),
        usage: None,
        finish_reason: FinishReason::Length,
        finish_message: None,
        custom: None,
    };
    check(&defs, "Candidate", &candidate);
    let legacy = GenerateResponse {
        candidates: Some(vec![candidate]),
        ..GenerateResponse::default()
    };
    check(&defs, "GenerateResponse", &legacy);
    assert_eq!(legacy.text(), "c");
    assert_eq!(legacy.finish_reason(), Some(FinishReason::Length));
    check(
        &defs,
        "CandidateError",
        &CandidateError {
            index: 1,
            code: CandidateErrorCode::Blocked,
            message: Some("no".into()),
        },
    );
    // An empty response is `{}`.
    assert_eq!(
        serde_json::to_value(GenerateResponse::default()).ok(),
        Some(json!({}))
    );

    let chunk = GenerateResponseChunk {
        role: Some(Role::Model),
        index: Some(0),
        content: vec![Part::text("par"), Part::reasoning("r")],
        custom: Some(Box::new(json!({"x": 1}))),
        aggregated: Some(false),
    };
    check(&defs, "GenerateResponseChunk", &chunk);
    check(&defs, "ModelResponseChunk", &chunk);
    check(
        &defs,
        "GenerateResponseChunk",
        &GenerateResponseChunk::new(vec![]),
    );
}

#[test]
fn response_helpers() {
    let msg = Message::model(vec![
        Part::text("Here: "),
        Part::text("{\"a\": 1}"),
        Part::tool_request(ToolRequest::new("ask", json!({})))
            .with_metadata("interrupt", json!({"q": 1})),
        Part::tool_request(ToolRequest::new("calc", json!({}))),
    ]);
    let mut response = GenerateResponse::new(msg, FinishReason::Stop);
    assert_eq!(response.text(), "Here: {\"a\": 1}");
    assert_eq!(response.output_value().ok(), Some(json!({"a": 1})));
    assert_eq!(response.finish_reason(), Some(FinishReason::Stop));
    assert_eq!(response.tool_requests().len(), 2);
    assert_eq!(response.interrupts().len(), 1);
    assert_eq!(response.messages(), None);
    response.request = Some(Box::new(GenerateRequest::new(vec![Message::user("q")])));
    assert_eq!(response.messages().map(|m| m.len()), Some(2));

    let chunks = [
        GenerateResponseChunk::new(vec![Part::text("{\"a\": ")]).with_position(0, Role::Model),
        GenerateResponseChunk::new(vec![Part::text("[1, 2")]).with_position(0, Role::Model),
    ];
    assert_eq!(chunks[1].text(), "[1, 2");
    assert_eq!(chunks[1].accumulated_text(&chunks[..1]), "{\"a\": [1, 2");
    assert_eq!(chunks[1].output(&chunks[..1]), Some(json!({"a": [1, 2]})));
}

#[test]
fn generate_action_options_validate() {
    let defs = schema_defs();
    let options = GenerateActionOptions::new(vec![Message::user("hi")])
        .with_model("googleai/gemini")
        .with_docs(vec![DocumentData::from_text("d")])
        .with_tools(["a", "b"])
        .with_resources(["res"])
        .with_tool_choice(ToolChoice::Required)
        .with_config(json!({"temperature": 1}))
        .with_output(
            GenerateActionOutputConfig::schema(json!({"type": "object"}))
                .with_format("json")
                .with_content_type("application/json")
                .with_instructions(true)
                .with_constrained(true),
        )
        .with_resume(GenerateActionResume {
            respond: Some(vec![Part::tool_response(
                ToolResponse::new("a", json!(1)).with_ref("r"),
            )]),
            restart: Some(vec![
                Part::tool_request(ToolRequest::new("b", json!({})).with_ref("s"))
                    .with_metadata("resumed", json!(true)),
            ]),
            metadata: Some(meta(json!({"k": "v"}))),
        })
        .with_return_tool_requests(false)
        .with_max_turns(3)
        .with_step_name("step")
        .with_middleware(MiddlewareRef {
            name: "retry".into(),
            config: Some(json!({"max": 2})),
        });
    let json = check(&defs, "GenerateActionOptions", &options);
    assert_eq!(json["output"]["instructions"], json!(true));
    assert_eq!(json["use"][0]["name"], json!("retry"));
    for instructions in [
        OutputInstructions::Enabled(false),
        OutputInstructions::from("Be brief"),
    ] {
        let out = GenerateActionOutputConfig::format("text").with_instructions(instructions);
        check(&defs, "GenerateActionOutputConfig", &out);
    }
}

#[test]
fn model_metadata_validates() {
    let defs = schema_defs();
    for constrained in [
        ConstrainedSupport::None,
        ConstrainedSupport::All,
        ConstrainedSupport::NoTools,
    ] {
        let info = ModelInfo::new("Test Model")
            .with_supports(ModelSupports {
                multiturn: Some(true),
                media: Some(false),
                tools: Some(true),
                system_role: Some(true),
                output: Some(vec!["text".into(), "json".into()]),
                content_type: Some(vec!["application/json".into()]),
                context: Some(false),
                constrained: Some(constrained),
                tool_choice: Some(true),
                long_running: Some(false),
            })
            .with_stage(ModelStage::Stable);
        let mut info = info;
        info.versions = Some(vec!["v1".into()]);
        info.config_schema = Some(json!({"type": "object"}));
        check(&defs, "ModelInfo", &info);
    }
    assert_eq!(
        serde_json::to_value(ConstrainedSupport::NoTools).ok(),
        Some(json!("no-tools"))
    );
    for stage in [
        ModelStage::Featured,
        ModelStage::Stable,
        ModelStage::Unstable,
        ModelStage::Legacy,
        ModelStage::Deprecated,
    ] {
        assert_valid(&defs, "ModelInfo", &json!({"stage": stage}));
    }
    check(
        &defs,
        "ModelReference",
        &ModelReference {
            name: "openai/gpt-4o".into(),
            config: Some(json!({"temperature": 0})),
        },
    );
    let tool = ToolDefinition {
        key: Some("/tool/t".into()),
        metadata: Some(meta(json!({"multipart": true}))),
        ..ToolDefinition::new("t", "does things")
    };
    check(&defs, "ToolDefinition", &tool);
    let op = Operation {
        action: Some("/model/veo".into()),
        id: "1".into(),
        done: Some(true),
        output: Some(json!({"finishReason": "stop"})),
        error: Some(OperationError {
            message: "boom".into(),
            extra: meta(json!({"code": 13})),
        }),
        metadata: Some(meta(json!({"progress": 1}))),
    };
    check(&defs, "Operation", &op);
    let config = GenerationCommonConfig {
        version: Some("v2".into()),
        temperature: Some(0.7),
        max_output_tokens: Some(100),
        top_k: Some(3),
        top_p: Some(0.9),
        stop_sequences: Some(vec!["END".into()]),
        api_key: Some("k".into()),
        extra: meta(json!({"safetySettings": []})),
    };
    let json = check(&defs, "GenerationCommonConfig", &config);
    assert_eq!(json["safetySettings"], json!([]));
    check(
        &defs,
        "MultipartToolResponse",
        &MultipartToolResponse {
            output: Some(json!(1)),
            content: Some(vec![Part::text("x")]),
            metadata: None,
        },
    );
    check(
        &defs,
        "Media",
        &Media::new("https://x").with_content_type("image/png"),
    );
    check(&defs, "ToolRequest", &ToolRequest::new("t", json!([1])));
    check(&defs, "ToolResponse", &ToolResponse::new("t", json!("x")));
}

#[test]
fn schemars_schemas_generate() {
    for schema in [
        schemars::schema_for!(GenerateRequest),
        schemars::schema_for!(GenerateResponse),
        schemars::schema_for!(GenerateResponseChunk),
        schemars::schema_for!(GenerateActionOptions),
        schemars::schema_for!(Part),
    ] {
        let value = schema.to_value();
        assert!(value.get("$defs").is_some() || value.get("anyOf").is_some());
        // Our own schema accepts our own values.
        let validator = jsonschema::validator_for(&value).expect("compiles");
        let instance = serde_json::to_value(full_request()).unwrap_or_default();
        if value.get("title") == Some(&json!("GenerateRequest")) {
            assert!(validator.is_valid(&instance));
        }
    }
    let part_schema = schemars::schema_for!(Part).to_value();
    let validator = jsonschema::validator_for(&part_schema).expect("compiles");
    for part in all_parts() {
        let v = serde_json::to_value(&part).unwrap_or_default();
        assert!(validator.is_valid(&v), "{v}");
    }
}

// ---- Conformance vectors ------------------------------------------------------------

#[derive(Default)]
struct Found {
    count: usize,
    kinds: std::collections::BTreeMap<&'static str, usize>,
}

fn round_trip<T: Serialize + DeserializeOwned>(
    kind: &'static str,
    value: &Value,
    found: &mut Found,
    where_: &str,
) {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|e| panic!("{where_}: {kind} does not parse: {e}\n{value}"));
    let back = serde_json::to_value(&typed).expect("serializes");
    assert_eq!(&back, value, "{where_}: {kind} round trip differs");
    found.count += 1;
    *found.kinds.entry(kind).or_default() += 1;
}

fn is_message(v: &Value) -> bool {
    v.get("role").is_some() && v.get("content").is_some()
}

fn walk(value: &Value, path: &str, found: &mut Found) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let here = format!("{path}.{key}");
                match key.as_str() {
                    "message" if is_message(v) => round_trip::<Message>("Message", v, found, &here),
                    "messages" => {
                        for m in v.as_array().into_iter().flatten().filter(|m| is_message(m)) {
                            round_trip::<Message>("Message", m, found, &here);
                        }
                    }
                    "modelResponses" => {
                        for r in v.as_array().into_iter().flatten() {
                            round_trip::<ModelResponse>("ModelResponse", r, found, &here);
                        }
                    }
                    "streamChunks" => {
                        for c in v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .flat_map(|a| a.as_array().into_iter().flatten())
                        {
                            round_trip::<ModelResponseChunk>("ModelResponseChunk", c, found, &here);
                        }
                    }
                    "expectChunks" => {
                        for c in v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter(|c| c.get("content").is_some())
                        {
                            round_trip::<GenerateResponseChunk>(
                                "GenerateResponseChunk",
                                c,
                                found,
                                &here,
                            );
                        }
                    }
                    "modelChunk" => round_trip::<GenerateResponseChunk>(
                        "GenerateResponseChunk",
                        v,
                        found,
                        &here,
                    ),
                    "expectResponse" => {
                        round_trip::<GenerateResponse>("GenerateResponse", v, found, &here)
                    }
                    "request" if v.get("messages").is_some() => {
                        round_trip::<GenerateRequest>("GenerateRequest", v, found, &here)
                    }
                    "input" if v.get("messages").is_some() => round_trip::<GenerateActionOptions>(
                        "GenerateActionOptions",
                        v,
                        found,
                        &here,
                    ),
                    "resume" => {
                        round_trip::<GenerateActionResume>("GenerateActionResume", v, found, &here)
                    }
                    "respond" | "restart" | "parts" | "content" if v.is_array() => {
                        round_trip::<Vec<Part>>("Part[]", v, found, &here)
                    }
                    _ => {}
                }
                walk(v, &here, found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(v, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

fn load_yaml(name: &str) -> Value {
    let path = conformance_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn conformance_vectors_round_trip() {
    let defs = schema_defs();
    let mut total = 0;
    for file in ["generate.yaml", "agent.yaml"] {
        let doc = load_yaml(file);
        let mut found = Found::default();
        walk(&doc, file, &mut found);
        eprintln!(
            "{file}: {} values round-tripped {:?}",
            found.count, found.kinds
        );
        assert!(
            found.count > 10,
            "{file}: found only {} values",
            found.count
        );
        total += found.count;
    }
    assert!(total > 100);

    // generate.yaml's values also satisfy the shared schema (where they are complete).
    let doc = load_yaml("generate.yaml");
    for test in doc["tests"].as_array().into_iter().flatten() {
        assert_valid(&defs, "GenerateActionOptions", &test["input"]);
        assert_valid(&defs, "GenerateResponse", &test["expectResponse"]);
        for chunk in test["expectChunks"].as_array().into_iter().flatten() {
            assert_valid(&defs, "GenerateResponseChunk", chunk);
        }
    }
}

#[test]
fn schema_check_rejects_bad_shapes() {
    // Guards the harness itself: the validator does reject wrong shapes.
    let defs = schema_defs();
    let schema = json!({"$ref": "#/$defs/Part", "$defs": defs});
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    assert!(!validator.is_valid(&json!({"text": 1})));
    assert!(!validator.is_valid(&json!({"text": "a", "media": {"url": "u"}})));
    let schema = json!({"$ref": "#/$defs/GenerateResponse", "$defs": defs});
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    assert!(!validator.is_valid(&json!({"finishReason": null})));
    assert!(!validator.is_valid(&json!({"finishReason": "done"})));
}

/// The wire types' schemas are listed to tools (the Dev UI shows their
/// descriptions): no Rust implementation notes or rustdoc links in them.
#[test]
fn wire_schemas_describe_the_wire_not_the_rust() {
    let mut descriptions = Vec::new();
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    if let ("description", Value::String(d)) = (k.as_str(), x) {
                        out.push(d.clone());
                    }
                    walk(x, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    for schema in [
        genkit_core::schema::schema_for::<GenerateRequest>(),
        genkit_core::schema::schema_for::<GenerateResponse>(),
        genkit_core::schema::schema_for::<GenerateResponseChunk>(),
        genkit_core::schema::schema_for::<GenerateActionOptions>(),
        genkit_core::schema::schema_for::<EmbedRequest>(),
    ] {
        walk(&schema, &mut descriptions);
    }
    assert!(descriptions.len() > 20);
    for d in &descriptions {
        for rustism in ["`Arc`", "Deref", "make_mut", "[`"] {
            assert!(!d.contains(rustism), "description mentions {rustism}: {d}");
        }
    }
}

/// An explicit `"input": null` / `"output": null` survives a round trip
/// (serde's `Option` would read it as absent and drop it on the next
/// write); an absent field stays absent. Found by the `stream_anthropic`
/// fuzz target: a tool call whose streamed input JSON is `null`.
#[test]
fn null_tool_input_and_output_are_kept_apart_from_missing_ones() {
    for json in [
        json!({"toolRequest": {"ref": "toolu_1", "name": "ns__tool", "input": null}}),
        json!({"toolRequest": {"name": "t"}}),
        json!({"toolResponse": {"ref": "1", "name": "t", "output": null}}),
        json!({"toolResponse": {"name": "t"}}),
    ] {
        let part: Part = serde_json::from_value(json.clone()).expect("parses");
        assert_eq!(serde_json::to_value(&part).expect("serializes"), json);
    }
    let part: Part = serde_json::from_value(json!({"toolRequest": {"name": "t", "input": null}}))
        .expect("parses");
    assert_eq!(
        part.as_tool_request().and_then(|t| t.input.clone()),
        Some(Value::Null)
    );
    let chunk = GenerateResponseChunk::new(vec![Part::tool_request(
        ToolRequest::new("ns__tool", Value::Null).with_ref("toolu_1"),
    )]);
    let back: GenerateResponseChunk =
        serde_json::from_str(&serde_json::to_string(&chunk).expect("serializes")).expect("parses");
    assert_eq!(back, chunk);
}
