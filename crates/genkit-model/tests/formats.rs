//! Output formats: complete and streaming parsing, instructions, and where they go.

use std::sync::Arc;

use genkit_model::formats::*;
use genkit_model::types::*;
use serde_json::{Value, json};

fn handler(name: &str, schema: Option<Value>) -> Box<dyn FormatHandler> {
    let formats = Formats::default();
    let format = formats.get(name).expect("format exists");
    format.handler(schema.as_ref()).expect("handler")
}

/// Feeds `chunks` one at a time (as model chunks of message 0) and returns each
/// chunk's parsed output.
fn stream(handler: &dyn FormatHandler, chunks: &[&str]) -> Vec<Option<Value>> {
    let mut previous: Vec<GenerateResponseChunk> = Vec::new();
    let mut outputs = Vec::new();
    for text in chunks {
        let chunk =
            GenerateResponseChunk::new(vec![Part::text(*text)]).with_position(0, Role::Model);
        let ctx = ChunkParseContext::new(&chunk, &previous);
        outputs.push(handler.parse_chunk(&ctx).expect("chunk parses"));
        previous.push(chunk);
    }
    outputs
}

fn parse(handler: &dyn FormatHandler, text: &str) -> Result<Value, FormatError> {
    handler.parse_message(&Message::model(text))
}

#[test]
fn default_formats_and_configs() {
    let formats = Formats::default();
    assert_eq!(
        formats.names().collect::<Vec<_>>(),
        ["json", "array", "text", "enum", "jsonl"]
    );
    let config = |name: &str| formats.get(name).map(|f| f.config()).unwrap_or_default();
    assert_eq!(
        config("json"),
        FormatConfig {
            format: Some("json".into()),
            content_type: Some("application/json".into()),
            constrained: Some(true),
            default_instructions: Some(false),
        }
    );
    assert_eq!(
        config("array").content_type.as_deref(),
        Some("application/json")
    );
    assert_eq!(config("array").constrained, Some(true));
    assert_eq!(config("enum").content_type.as_deref(), Some("text/enum"));
    assert_eq!(
        config("jsonl").content_type.as_deref(),
        Some("application/jsonl")
    );
    assert_eq!(config("jsonl").constrained, None);
    assert_eq!(config("text").content_type.as_deref(), Some("text/plain"));
    assert!(config("array").injects_default_instructions());
    assert!(!config("json").injects_default_instructions());
}

#[test]
fn registry_resolution() {
    let mut formats = Formats::default();
    assert!(matches!(
        formats.register(Arc::new(JsonFormat)),
        Err(FormatError::DuplicateFormat(name)) if name == "json"
    ));
    let name = |f: Option<Arc<dyn Format>>| f.map(|f| f.name().to_owned());
    assert_eq!(formats.resolve(None, false).map(name), Ok(None));
    assert_eq!(
        formats.resolve(None, true).map(name),
        Ok(Some("json".into()))
    );
    assert_eq!(
        formats.resolve(Some("array"), true).map(name),
        Ok(Some("array".into()))
    );
    assert_eq!(
        formats.resolve(Some("yaml"), false).map(name),
        Err(FormatError::UnknownFormat("yaml".into()))
    );
    let output = GenerateActionOutputConfig::schema(json!({"type": "object"}));
    assert_eq!(
        formats.resolve_output(Some(&output)).map(name),
        Ok(Some("json".into()))
    );
    assert_eq!(formats.resolve_output(None).map(name), Ok(None));
    assert_eq!(resolve_format_name(None, true), Some("json"));
    assert_eq!(resolve_format_name(Some("text"), true), Some("text"));

    let mut empty = Formats::empty();
    assert!(empty.get("json").is_none());
    assert_eq!(empty.register(Arc::new(TextFormat)), Ok(()));
    assert_eq!(format!("{empty:?}"), r#"["text"]"#);
}

// ---- json -------------------------------------------------------------------------

#[test]
fn json_instructions() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let h = handler("json", Some(schema));
    assert_eq!(
        h.instructions().as_deref(),
        Some(
            "Output should be in JSON format and conform to the following schema:\n\n```\n{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}\n```\n"
        )
    );
    assert_eq!(handler("json", None).instructions(), None);
}

#[test]
fn json_parse_message() {
    let h = handler("json", None);
    assert_eq!(parse(h.as_ref(), r#"{"a": 1}"#), Ok(json!({"a": 1})));
    assert_eq!(
        parse(
            h.as_ref(),
            "Sure!\n```json\n{\"a\": [1, 2]}\n```\nAnything else?"
        ),
        Ok(json!({"a": [1, 2]}))
    );
    assert_eq!(parse(h.as_ref(), "[1, 2, 3]"), Ok(json!([1, 2, 3])));
    assert_eq!(
        parse(h.as_ref(), r#"{"a": "trunc"#),
        Ok(json!({"a": "trunc"}))
    );
    assert_eq!(parse(h.as_ref(), "no json"), Ok(Value::Null));
    let err = parse(h.as_ref(), "{definitely: not json}");
    assert!(
        matches!(err, Err(FormatError::InvalidOutput { .. })),
        "{err:?}"
    );
    // Text parts are concatenated before parsing; other parts are ignored.
    let msg = Message::model(vec![
        Part::text("{\"a\":"),
        Part::reasoning("hmm"),
        Part::text(" 1}"),
    ]);
    assert_eq!(h.parse_message(&msg), Ok(json!({"a": 1})));
}

#[test]
fn json_streaming_yields_partial_objects() {
    let h = handler("json", None);
    let out = stream(
        h.as_ref(),
        &[
            "Here:",
            " ```json\n{\"name\": \"Jo",
            "hn\", \"tags\": [\"a\"",
            ", \"b\"]",
            ", \"age\": 4",
            "2}\n```",
        ],
    );
    assert_eq!(
        out,
        vec![
            None,
            Some(json!({"name": "Jo"})),
            Some(json!({"name": "John", "tags": ["a"]})),
            Some(json!({"name": "John", "tags": ["a", "b"]})),
            Some(json!({"name": "John", "tags": ["a", "b"], "age": 4})),
            Some(json!({"name": "John", "tags": ["a", "b"], "age": 42})),
        ]
    );
}

#[test]
fn chunks_of_other_messages_do_not_count() {
    let h = handler("json", None);
    let earlier =
        GenerateResponseChunk::new(vec![Part::text("{\"old\": 1}")]).with_position(0, Role::Model);
    let chunk =
        GenerateResponseChunk::new(vec![Part::text("{\"new\": ")]).with_position(2, Role::Model);
    let previous = [earlier];
    let ctx = ChunkParseContext::new(&chunk, &previous);
    assert!(!ctx.has_previous());
    assert_eq!(ctx.accumulated_text(), "{\"new\": ");
    assert_eq!(h.parse_chunk(&ctx), Ok(Some(json!({}))));
}

// ---- array ------------------------------------------------------------------------

#[test]
fn array_schema_and_instructions() {
    for bad in [json!({"type": "string"}), json!({"type": "object"})] {
        let err = Formats::default()
            .get("array")
            .map(|f| f.handler(Some(&bad)).err());
        assert!(
            matches!(err, Some(Some(FormatError::InvalidSchema(ref m))) if m.contains("Must supply an 'array' schema type")),
            "{err:?}"
        );
    }
    let h = handler(
        "array",
        Some(json!({"type": "array", "items": {"type": "string"}})),
    );
    assert_eq!(
        h.instructions().as_deref(),
        Some(
            "Output should be a JSON array conforming to the following schema:\n    \n```\n{\"type\":\"array\",\"items\":{\"type\":\"string\"}}\n```\n    "
        )
    );
    assert_eq!(handler("array", None).instructions(), None);
}

#[test]
fn array_streaming_emits_new_complete_items() {
    let h = handler("array", None);
    let cases: Vec<(Vec<&str>, Vec<Value>)> = vec![
        (
            vec![
                "[{\"id\": 1,",
                "\"name\": \"first\"}",
                ", {\"id\": 2, \"name\": \"second\"}]",
            ],
            vec![
                json!([]),
                json!([{"id": 1, "name": "first"}]),
                json!([{"id": 2, "name": "second"}]),
            ],
        ),
        (
            vec!["[{\"id\": 1, \"name\": \"single\"}]"],
            vec![json!([{"id": 1, "name": "single"}])],
        ),
        (
            vec![
                "Here is the array you requested:\n\n```json\n[",
                "{\"id\": 1, \"name\": \"item\"}]\n```",
            ],
            vec![json!([]), json!([{"id": 1, "name": "item"}])],
        ),
        (
            vec!["Sure", "! [\"a\", \"b", "\", 1", "0, tr", "ue, [1]]"],
            vec![
                json!([]),
                json!(["a"]),
                json!(["b"]),
                json!([10]),
                json!([true, [1]]),
            ],
        ),
    ];
    for (chunks, want) in cases {
        let got: Vec<Value> = stream(h.as_ref(), &chunks)
            .into_iter()
            .map(Option::unwrap_or_default)
            .collect();
        assert_eq!(got, want, "{chunks:?}");
    }
}

#[test]
fn array_parse_message() {
    let h = handler("array", None);
    assert_eq!(
        parse(h.as_ref(), "[{\"id\": 1, \"name\": \"test\"}]"),
        Ok(json!([{"id": 1, "name": "test"}]))
    );
    assert_eq!(parse(h.as_ref(), "[]"), Ok(json!([])));
    assert_eq!(
        parse(
            h.as_ref(),
            "Here is the array:\n\n```json\n[{\"id\": 1}]\n```"
        ),
        Ok(json!([{"id": 1}]))
    );
    assert_eq!(parse(h.as_ref(), "no array"), Ok(json!([])));
    assert_eq!(
        parse(h.as_ref(), "[{\"a\": 1}, {\"b\": "),
        Ok(json!([{"a": 1}]))
    );
}

// ---- enum -------------------------------------------------------------------------

#[test]
fn enum_format() {
    let schema = json!({"type": "string", "enum": ["RED", "GREEN", "BLUE"]});
    let h = handler("enum", Some(schema));
    assert_eq!(
        h.instructions().as_deref(),
        Some(
            "Output should be ONLY one of the following enum values. Do not output any additional information or add quotes.\n\nRED\nGREEN\nBLUE"
        )
    );
    assert_eq!(parse(h.as_ref(), "  \"GREEN\"\n"), Ok(json!("GREEN")));
    assert_eq!(parse(h.as_ref(), "'BLUE'"), Ok(json!("BLUE")));
    assert_eq!(parse(h.as_ref(), "RED"), Ok(json!("RED")));
    assert_eq!(
        stream(h.as_ref(), &["\"GR", "EEN\""]),
        vec![Some(json!("GR")), Some(json!("GREEN"))]
    );
    assert_eq!(stream(h.as_ref(), &["  "]), vec![None]);

    // A typeless enum schema is accepted; a string schema without enum has no instructions.
    assert!(
        handler("enum", Some(json!({"enum": ["a", 1]})))
            .instructions()
            .is_some_and(|i| i.ends_with("a\n1"))
    );
    assert_eq!(
        handler("enum", Some(json!({"type": "string"}))).instructions(),
        None
    );
    for bad in [
        json!({"type": "object"}),
        json!({"type": "array", "items": {}}),
    ] {
        let err = EnumFormat.handler(Some(&bad)).err();
        assert!(
            matches!(err, Some(FormatError::InvalidSchema(ref m)) if m.contains("'string' or 'enum'")),
            "{err:?}"
        );
    }
}

// ---- jsonl ------------------------------------------------------------------------

#[test]
fn jsonl_schema_and_instructions() {
    let schema = json!({"type": "array", "items": {"type": "object", "properties": {"n": {"type": "number"}}}});
    let h = handler("jsonl", Some(schema));
    assert_eq!(
        h.instructions().as_deref(),
        Some(
            "Output should be JSONL format, a sequence of JSON objects (one per line) separated by a newline `\\n` character. Each line should be a JSON object conforming to the following schema:\n\n```\n{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\"}}}\n```\n    "
        )
    );
    for bad in [
        json!({"type": "object"}),
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"type": "array"}),
    ] {
        let err = JsonlFormat.handler(Some(&bad)).err();
        assert!(matches!(err, Some(FormatError::InvalidSchema(_))), "{bad}");
    }
}

#[test]
fn jsonl_parse_message_and_stream() {
    let h = handler("jsonl", None);
    assert_eq!(
        parse(
            h.as_ref(),
            "Here:\n{\"a\": 1}\n  {\"b\": 2}  \nnot json\n{\"c\": 3"
        ),
        Ok(json!([{"a": 1}, {"b": 2}, {"c": 3}]))
    );
    let out: Vec<Value> = stream(
        h.as_ref(),
        &[
            "{\"a\": 1}\n{\"b\"",
            ": 2}",
            "\n",
            "{\"c\": 3}\n{\"d\": 4}\n",
            "oops\n{\"e\": 5}",
        ],
    )
    .into_iter()
    .map(Option::unwrap_or_default)
    .collect();
    assert_eq!(
        out,
        vec![
            json!([{"a": 1}]),
            json!([{"b": 2}]),
            json!([]),
            json!([{"c": 3}, {"d": 4}]),
            json!([{"e": 5}]),
        ]
    );
}

// ---- text -------------------------------------------------------------------------

#[test]
fn text_passthrough() {
    let h = handler("text", Some(json!({"type": "object"})));
    assert_eq!(h.instructions(), None);
    assert_eq!(
        parse(h.as_ref(), "  hello {\"a\":1} "),
        Ok(json!("  hello {\"a\":1} "))
    );
    assert_eq!(
        stream(h.as_ref(), &["hel", "lo"]),
        vec![Some(json!("hel")), Some(json!("lo"))]
    );
}

#[test]
fn response_output_with_handler() {
    let response = GenerateResponse::new(Message::model("[{\"x\": 1}]"), FinishReason::Stop);
    let h = handler("array", None);
    assert_eq!(
        response.output_with(h.as_ref()),
        Ok(Some(json!([{"x": 1}])))
    );
    assert_eq!(
        GenerateResponse::default().output_with(h.as_ref()),
        Ok(None)
    );
}

// ---- where and when instructions go ---------------------------------------------

fn output_part(text: &str) -> Part {
    Part::text(text).with_metadata("purpose", json!("output"))
}

#[test]
fn inject_targets_system_then_last_user() {
    let mut msgs = vec![
        Message::user("first"),
        Message::model("reply"),
        Message::user("second"),
    ];
    assert!(inject_instructions(&mut msgs, "FORMAT"));
    assert_eq!(
        msgs[2].content,
        vec![Part::text("second"), output_part("FORMAT")]
    );
    assert_eq!(msgs[0].content.len(), 1);

    let mut msgs = vec![Message::system("sys"), Message::user("hi")];
    assert!(inject_instructions(&mut msgs, "FORMAT"));
    assert_eq!(
        msgs[0].content,
        vec![Part::text("sys"), output_part("FORMAT")]
    );
    assert_eq!(msgs[1].content.len(), 1);

    let mut msgs = vec![Message::model("only model")];
    assert!(!inject_instructions(&mut msgs, "FORMAT"));
    assert!(!inject_instructions(&mut [], "FORMAT"));
    let mut msgs = vec![Message::user("hi")];
    assert!(!inject_instructions(&mut msgs, ""));
    assert_eq!(msgs[0].content.len(), 1);
}

#[test]
fn inject_respects_existing_and_pending_output_parts() {
    // An existing (non-pending) output part anywhere wins: nothing is injected.
    let mut msgs = vec![Message::user(vec![Part::text("q"), output_part("mine")])];
    assert!(!inject_instructions(&mut msgs, "FORMAT"));
    assert_eq!(msgs[0].content[1], output_part("mine"));

    // A pending placeholder is replaced in place, even as the first part.
    let pending = Part::text("")
        .with_metadata("purpose", json!("output"))
        .with_metadata("pending", json!(true));
    let mut msgs = vec![Message::user(vec![pending.clone(), Part::text("q")])];
    assert!(inject_instructions(&mut msgs, "FORMAT"));
    assert_eq!(
        msgs[0].content,
        vec![output_part("FORMAT"), Part::text("q")]
    );

    let mut msgs = vec![Message::user(vec![Part::text("q"), pending])];
    assert!(inject_instructions(&mut msgs, "FORMAT"));
    assert_eq!(
        msgs[0].content,
        vec![Part::text("q"), output_part("FORMAT")]
    );
}

#[test]
fn instruction_resolution_rules() {
    let array: &dyn Format = &ArrayFormat;
    let schema = json!({"type": "array", "items": {"type": "string"}});
    let own = resolve_instructions(Some(array), Some(&schema), None);
    assert!(own.as_ref().is_ok_and(|i| {
        i.as_deref()
            .is_some_and(|i| i.starts_with("Output should be a JSON array"))
    }));
    assert_eq!(
        resolve_instructions(
            Some(array),
            Some(&schema),
            Some(&OutputInstructions::Enabled(true))
        ),
        own
    );
    assert_eq!(
        resolve_instructions(
            Some(array),
            Some(&schema),
            Some(&OutputInstructions::Enabled(false))
        ),
        Ok(None)
    );
    assert_eq!(
        resolve_instructions(Some(array), Some(&schema), Some(&"Just a list".into())),
        Ok(Some("Just a list".into()))
    );
    assert_eq!(resolve_instructions(None, Some(&schema), None), Ok(None));
    assert!(resolve_instructions(Some(array), Some(&json!({"type": "object"})), None).is_err());

    let json_cfg = JsonFormat.config();
    let array_cfg = ArrayFormat.config();
    let out = |i: Option<OutputInstructions>| GenerateActionOutputConfig {
        instructions: i,
        ..GenerateActionOutputConfig::default()
    };
    assert!(!should_inject_format_instructions(
        Some(&json_cfg),
        Some(&out(None))
    ));
    assert!(should_inject_format_instructions(
        Some(&json_cfg),
        Some(&out(Some(true.into())))
    ));
    assert!(should_inject_format_instructions(
        Some(&json_cfg),
        Some(&out(Some("x".into())))
    ));
    assert!(!should_inject_format_instructions(
        Some(&json_cfg),
        Some(&out(Some(false.into())))
    ));
    assert!(should_inject_format_instructions(Some(&array_cfg), None));
    assert!(should_inject_format_instructions(None, None));
}

fn options(output: GenerateActionOutputConfig) -> GenerateActionOptions {
    GenerateActionOptions::new(vec![Message::user("make it")]).with_output(output)
}

fn output_parts(options: &GenerateActionOptions) -> Vec<String> {
    options
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter(|p| p.metadata_value("purpose") == Some(&json!("output")))
        .filter_map(|p| p.as_text().map(str::to_owned))
        .collect()
}

#[test]
fn apply_format_json_schema_defaults() {
    let formats = Formats::default();
    let schema = json!({"type": "object"});
    // Schema without format: json, no injected instructions (constrained generation
    // carries the schema), output filled from the format's config.
    let mut opts = options(GenerateActionOutputConfig::schema(schema.clone()));
    let format = apply_format(&mut opts, &formats).expect("applies");
    assert_eq!(format.map(|f| f.name().to_owned()), Some("json".into()));
    assert!(output_parts(&opts).is_empty());
    assert_eq!(
        opts.output,
        Some(GenerateActionOutputConfig {
            format: Some("json".into()),
            content_type: Some("application/json".into()),
            instructions: None,
            json_schema: Some(schema.clone()),
            constrained: Some(true),
        })
    );
    // Explicit options win over the format's config.
    let mut opts = options(
        GenerateActionOutputConfig::schema(schema.clone())
            .with_constrained(false)
            .with_content_type("application/vnd+json"),
    );
    apply_format(&mut opts, &formats).expect("applies");
    let out = opts.output.clone().unwrap_or_default();
    assert_eq!(out.constrained, Some(false));
    assert_eq!(out.content_type.as_deref(), Some("application/vnd+json"));

    // instructions: true forces the json instructions in.
    let mut opts =
        options(GenerateActionOutputConfig::schema(schema.clone()).with_instructions(true));
    apply_format(&mut opts, &formats).expect("applies");
    let parts = output_parts(&opts);
    assert_eq!(parts.len(), 1);
    assert!(parts[0].starts_with("Output should be in JSON format"));

    // A custom string replaces them.
    let mut opts =
        options(GenerateActionOutputConfig::schema(schema).with_instructions("Reply in JSON."));
    apply_format(&mut opts, &formats).expect("applies");
    assert_eq!(output_parts(&opts), vec!["Reply in JSON.".to_owned()]);
}

#[test]
fn apply_format_other_formats() {
    let formats = Formats::default();
    let schema = json!({"type": "array", "items": {"type": "object"}});
    // array injects its instructions by default.
    let mut opts = options(GenerateActionOutputConfig::schema(schema.clone()).with_format("array"));
    apply_format(&mut opts, &formats).expect("applies");
    let parts = output_parts(&opts);
    assert_eq!(parts.len(), 1);
    assert!(parts[0].starts_with("Output should be a JSON array"));
    let out = opts.output.clone().unwrap_or_default();
    assert_eq!(out.format.as_deref(), Some("array"));
    assert_eq!(out.content_type.as_deref(), Some("application/json"));
    assert_eq!(out.constrained, Some(true));

    // instructions: false disables them.
    let mut opts = options(
        GenerateActionOutputConfig::schema(schema.clone())
            .with_format("jsonl")
            .with_instructions(false),
    );
    apply_format(&mut opts, &formats).expect("applies");
    assert!(output_parts(&opts).is_empty());
    assert_eq!(
        opts.output.as_ref().and_then(|o| o.content_type.as_deref()),
        Some("application/jsonl")
    );

    // Already placed output instructions are left alone.
    let mut opts = GenerateActionOptions::new(vec![Message::user(vec![
        Part::text("q"),
        output_part("my own"),
    ])])
    .with_output(GenerateActionOutputConfig::schema(schema.clone()).with_format("array"));
    apply_format(&mut opts, &formats).expect("applies");
    assert_eq!(output_parts(&opts), vec!["my own".to_owned()]);

    // text: no instructions, content type filled in.
    let mut opts = options(GenerateActionOutputConfig::format("text"));
    apply_format(&mut opts, &formats).expect("applies");
    assert!(output_parts(&opts).is_empty());
    assert_eq!(
        opts.output.as_ref().and_then(|o| o.content_type.as_deref()),
        Some("text/plain")
    );

    // Errors: unknown format, schema that does not fit.
    let mut opts = options(GenerateActionOutputConfig::format("yaml"));
    assert_eq!(
        apply_format(&mut opts, &formats).err(),
        Some(FormatError::UnknownFormat("yaml".into()))
    );
    let mut opts =
        options(GenerateActionOutputConfig::schema(json!({"type": "object"})).with_format("enum"));
    assert!(matches!(
        apply_format(&mut opts, &formats),
        Err(FormatError::InvalidSchema(_))
    ));

    // No output options: nothing to do.
    let mut opts = GenerateActionOptions::new(vec![Message::user("hi")]);
    assert!(apply_format(&mut opts, &formats).is_ok_and(|f| f.is_none()));
    assert_eq!(opts, GenerateActionOptions::new(vec![Message::user("hi")]));
}

#[test]
fn constrained_generation_simulation() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "number"}}});
    let output = GenerateActionOutputConfig::schema(schema.clone())
        .with_format("json")
        .with_constrained(true)
        .with_content_type("application/json");
    let mut request =
        GenerateRequest::new(vec![Message::user("q")]).with_output(output.to_output_config());
    assert_eq!(
        request.output.as_ref().and_then(|o| o.schema.clone()),
        Some(schema.clone())
    );

    let supports = |c: Option<ConstrainedSupport>| ModelSupports {
        constrained: c,
        ..ModelSupports::default()
    };
    assert!(needs_simulated_constraints(None, &request));
    assert!(needs_simulated_constraints(Some(&supports(None)), &request));
    assert!(needs_simulated_constraints(
        Some(&supports(Some(ConstrainedSupport::None))),
        &request
    ));
    assert!(!needs_simulated_constraints(
        Some(&supports(Some(ConstrainedSupport::All))),
        &request
    ));
    assert!(!needs_simulated_constraints(
        Some(&supports(Some(ConstrainedSupport::NoTools))),
        &request
    ));
    let with_tools = request
        .clone()
        .with_tools(vec![ToolDefinition::new("t", "d")]);
    assert!(needs_simulated_constraints(
        Some(&supports(Some(ConstrainedSupport::NoTools))),
        &with_tools
    ));

    assert!(simulate_constrained_generation(&mut request));
    assert_eq!(
        request.messages[0].content[1],
        output_part(&constrained_instructions(&schema))
    );
    assert!(constrained_instructions(&schema).starts_with(
        "Output should be in JSON format and conform to the following schema:\n\n```\n{\"type\":\"object\""
    ));
    assert_eq!(
        request.output,
        Some(OutputConfig {
            constrained: Some(false),
            ..OutputConfig::default()
        })
    );
    // Nothing to simulate the second time, or without a schema / constraint.
    assert!(!simulate_constrained_generation(&mut request));
    let mut unconstrained =
        GenerateRequest::new(vec![Message::user("q")]).with_output(OutputConfig {
            schema: Some(schema),
            ..OutputConfig::default()
        });
    assert!(!simulate_constrained_generation(&mut unconstrained));
    assert_eq!(unconstrained.messages[0].content.len(), 1);
}

#[test]
fn errors_have_statuses() {
    assert_eq!(
        FormatError::UnknownFormat("x".into()).status_name(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(
        FormatError::DuplicateFormat("x".into()).status_name(),
        "ALREADY_EXISTS"
    );
    assert_eq!(
        FormatError::UnknownFormat("yaml".into()).to_string(),
        "unknown output format 'yaml'"
    );
}

#[test]
fn format_errors_keep_their_source() {
    use std::error::Error as _;
    let err = format_handler(&Formats::default(), Some("yaml"), None)
        .err()
        .expect("an unknown format");
    assert_eq!(err.status(), genkit_core::StatusCode::InvalidArgument);
    assert_eq!(
        err.to_string(),
        "INVALID_ARGUMENT: unknown output format 'yaml'"
    );
    let source = err.source().and_then(|s| s.downcast_ref::<FormatError>());
    assert_eq!(source, Some(&FormatError::UnknownFormat("yaml".into())));
    let duplicate = genkit_core::Error::from(FormatError::DuplicateFormat("json".into()));
    assert_eq!(duplicate.status(), genkit_core::StatusCode::AlreadyExists);

    // Output of another shape than asked for: the JSON error is the source.
    let response = GenerateResponse::new(Message::model("{\"x\": 1}"), FinishReason::Stop);
    let err = response.output::<Vec<u32>>().expect_err("not a list");
    assert!(
        err.message()
            .starts_with("the model output does not fit the requested type: "),
        "{err}"
    );
    let source = err.source().expect("a source");
    assert!(source.downcast_ref::<serde_json::Error>().is_some());
}
