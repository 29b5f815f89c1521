//! Loading a prompt directory: sub-folders, variants, partial files, named
//! schemas defined after loading, and the prompt actions with their metadata.

use std::path::PathBuf;

use futures::StreamExt;
use genkit_core::{Registry, StatusCode};
use genkit_generate::GenerateOptions;
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::define_tool;
use genkit_model::types::{Message, ToolChoice};
use genkit_prompt::{define_schema, load_prompt_folder, prompt};
use serde_json::{Value, json};

fn valid_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/prompts/valid")
}

/// A registry with the `programmable` model, the `lookupName` tool and the
/// valid prompt folder loaded.
fn setup() -> (Registry, ProgrammableModel) {
    let registry = Registry::new();
    let model = ProgrammableModel::define(&registry, "programmable");
    define_tool(
        &registry,
        "lookupName",
        "Looks a name up.",
        |name: String, _ctx| async move { Ok(format!("{name} is known")) },
    )
    .unwrap();
    let loaded = load_prompt_folder(&registry, valid_dir(), None).unwrap();
    assert_eq!(loaded, 3, "greeting, greeting.formal and support/triage");
    (registry, model)
}

fn prompt_keys(registry: &Registry) -> Vec<String> {
    registry
        .registered_actions()
        .into_keys()
        .filter(|k| k.starts_with("/prompt/") || k.starts_with("/executable-prompt/"))
        .collect()
}

#[test]
fn every_prompt_file_is_registered_twice() {
    let (registry, _) = setup();
    assert_eq!(
        prompt_keys(&registry),
        vec![
            "/executable-prompt/greeting",
            "/executable-prompt/greeting.formal",
            "/executable-prompt/support/triage",
            "/prompt/greeting",
            "/prompt/greeting.formal",
            "/prompt/support/triage",
        ]
    );
    let formal = prompt::<Value, Value>(&registry, "greeting", Some("formal")).unwrap();
    assert_eq!(formal.name(), "greeting");
    assert_eq!(formal.variant(), Some("formal"));
    assert_eq!(formal.key(), "greeting.formal");
    assert!(prompt::<Value, Value>(&registry, "support/triage", None).is_ok());
    let err = prompt::<Value, Value>(&registry, "triage", None).unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
}

#[test]
fn a_namespace_prefixes_every_prompt() {
    let registry = Registry::new();
    assert_eq!(
        load_prompt_folder(&registry, valid_dir(), Some("ns")).unwrap(),
        3
    );
    assert!(prompt::<Value, Value>(&registry, "ns/support/triage", None).is_ok());
    assert!(prompt::<Value, Value>(&registry, "ns/greeting", Some("formal")).is_ok());
    assert!(prompt_keys(&registry).contains(&"/prompt/ns/greeting".to_owned()));
}

#[test]
fn a_missing_directory_loads_nothing_and_a_file_is_refused() {
    let registry = Registry::new();
    assert_eq!(
        load_prompt_folder(&registry, valid_dir().join("absent"), None).unwrap(),
        0
    );
    let err = load_prompt_folder(&registry, valid_dir().join("greeting.prompt"), None).unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(
        err.message().contains("is not a directory"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn calling_generates_with_the_frontmatter_options() {
    let (registry, model) = setup();
    let model = model.respond_text(r#"{"greeting": "Hello, Ada!"}"#);
    let greeting = prompt::<Value, Value>(&registry, "greeting", None).unwrap();

    let response = greeting.call(json!({"name": "Ada"})).await.unwrap();
    assert_eq!(
        response.output::<Value>().unwrap(),
        json!({"greeting": "Hello, Ada!"})
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    // The partial renders with the default `style`; the JSON format's
    // instructions join the system message.
    assert_eq!(
        request.messages[0].content[0].as_text(),
        Some("You are a warm greeter.\n\n")
    );
    assert!(
        request.messages[0].content[1]
            .as_text()
            .is_some_and(|t| t.starts_with("Output should be in JSON format"))
    );
    assert_eq!(request.messages[1].text(), "Greet Ada in a warm way.");
    assert_eq!(request.config, Some(json!({"temperature": 0.3})));
    assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    let tools: Vec<_> = request.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, vec!["lookupName"]);
}

#[tokio::test]
async fn max_turns_from_frontmatter_limits_the_tool_loop() {
    let (registry, model) = setup();
    let mut model = model;
    for _ in 0..4 {
        model = model.respond_tool_call("lookupName", json!("Ada"));
    }
    let greeting = prompt::<Value, Value>(&registry, "greeting", None).unwrap();
    let err = greeting.call(json!({"name": "Ada"})).await.unwrap_err();
    assert!(
        err.message()
            .contains("Exceeded maximum tool call iterations (3)"),
        "{}",
        err.message()
    );
    // Three rounds of tool calls are allowed; the fourth request fails.
    assert_eq!(model.call_count(), 4);
}

#[tokio::test]
async fn variants_render_their_own_template_and_config() {
    let (registry, model) = setup();
    let model = model.respond_text("Good day to you too.");
    let formal = prompt::<Value, Value>(&registry, "greeting", Some("formal")).unwrap();
    let response = formal
        .call_with(
            json!({"name": "Ada"}),
            GenerateOptions::new().config(json!({"topK": 2})),
        )
        .await
        .unwrap();
    assert_eq!(response.text(), "Good day to you too.");
    let request = &model.requests()[0];
    assert_eq!(request.messages.len(), 1);
    assert_eq!(
        request.messages[0].text(),
        "Good day, Ada. You are a plain greeter.\n"
    );
    assert_eq!(request.config, Some(json!({"temperature": 0.1, "topK": 2})));
}

#[tokio::test]
async fn named_schemas_defined_after_loading_resolve_on_first_use() {
    let (registry, model) = setup();

    // Until `Ticket` exists, the prompt is listed without an input schema
    // and cannot render.
    let listed = registry
        .list_resolvable_actions()
        .await
        .remove("/executable-prompt/support/triage")
        .unwrap();
    assert_eq!(listed.input_schema, None);
    let triage = prompt::<Value, Value>(&registry, "support/triage", None).unwrap();
    let err = triage
        .render(json!({"id": 1, "subject": "x"}))
        .await
        .unwrap_err();
    assert!(err.message().contains("'Ticket'"), "{}", err.message());

    define_schema(
        &registry,
        "Ticket",
        json!({
            "type": "object",
            "properties": {"id": {"type": "integer"}, "subject": {"type": "string"}},
            "required": ["id", "subject"]
        }),
    )
    .unwrap();
    let listed = registry
        .list_resolvable_actions()
        .await
        .remove("/executable-prompt/support/triage")
        .unwrap();
    assert_eq!(
        listed.input_schema.unwrap()["required"],
        json!(["id", "subject"])
    );

    let err = triage
        .render(json!({"id": "one", "subject": "x"}))
        .await
        .unwrap_err();
    assert!(err.message().contains("- id:"), "{}", err.message());

    // History goes where `{{history}}` is, between the system and user turns.
    let model = model.respond_text("Routed to billing.");
    let history = vec![
        Message::user("My card was charged twice."),
        Message::model("Sorry!"),
    ];
    let mut stream = triage.stream_with(
        json!({"id": 7, "subject": "Refund"}),
        GenerateOptions::new().with_messages(history),
    );
    while let Some(chunk) = stream.next().await {
        chunk.unwrap();
    }
    assert_eq!(
        stream.response().await.unwrap().text(),
        "Routed to billing."
    );
    let request = &model.requests()[0];
    let turns: Vec<(String, String)> = request
        .messages
        .iter()
        .map(|m| (m.role.as_str().to_owned(), m.text()))
        .collect();
    assert_eq!(
        turns,
        vec![
            (
                "system".into(),
                "Triage tickets. -- the support team\n\n".into()
            ),
            ("user".into(), "My card was charged twice.".into()),
            ("model".into(), "Sorry!".into()),
            ("user".into(), "Ticket 7: Refund".into()),
        ]
    );
    assert_eq!(
        request.messages[1].metadata_value("purpose"),
        Some(&json!("history"))
    );
}

#[tokio::test]
async fn actions_are_listed_with_prompt_metadata() {
    let (registry, _) = setup();
    let actions = registry.list_resolvable_actions().await;

    let executable = actions["/executable-prompt/greeting"].to_descriptor();
    assert_eq!(executable["name"], "greeting");
    assert_eq!(executable["description"], "Greets someone.");
    assert_eq!(executable["inputSchema"]["required"], json!(["name"]));
    assert_eq!(
        executable["inputSchema"]["properties"]["style"],
        json!({"type": ["string", "null"], "description": "how"})
    );
    assert!(executable["outputSchema"]["properties"]["messages"].is_object());
    let metadata = &executable["metadata"];
    assert_eq!(metadata["type"], "executable-prompt");
    assert_eq!(metadata["metadata"], json!({"owner": "tests"}));
    let p = &metadata["prompt"];
    assert_eq!(p["name"], "greeting");
    assert_eq!(p["model"], "programmable");
    assert_eq!(p["config"], json!({"temperature": 0.3}));
    assert_eq!(p["input"]["schema"], executable["inputSchema"]);
    assert_eq!(p["input"]["default"], json!({"style": "warm"}));
    assert_eq!(p["output"]["format"], "json");
    assert_eq!(p["output"]["schema"]["required"], json!(["greeting"]));
    assert_eq!(p["tools"], json!(["lookupName"]));
    assert_eq!(p["toolChoice"], "required");
    assert_eq!(p["maxTurns"], 3);
    assert_eq!(p["use"], json!([]));
    assert_eq!(p["ext"], json!({"custom": {"flag": true}}));
    assert_eq!(p["raw"]["custom.flag"], true);
    assert_eq!(
        p["template"],
        "{{role \"system\"}}{{> header}}\n{{role \"user\"}}Greet {{name}} in a {{style}} way."
    );

    let renderer = actions["/prompt/greeting.formal"].to_descriptor();
    assert_eq!(renderer["metadata"]["type"], "prompt");
    assert_eq!(renderer["metadata"]["prompt"]["name"], "greeting");
    assert_eq!(renderer["metadata"]["prompt"]["variant"], "formal");
    assert_eq!(renderer.get("outputSchema"), None);
}

#[tokio::test]
async fn prompt_actions_render_requests_and_options() {
    let (registry, model) = setup();

    let request = registry
        .require_action("/prompt/greeting")
        .await
        .unwrap()
        .run_json(json!({"name": "Ada", "style": "dry"}), Default::default())
        .await
        .unwrap()
        .output;
    assert_eq!(
        request["messages"][0]["content"][0]["text"],
        "You are a dry greeter.\n\n"
    );
    // As Genkit's `toGenerateRequest`: the format's config fills the output
    // options (JSON asks for native constraints, so no instructions are added).
    assert_eq!(
        request["messages"][0]["content"],
        json!([{"text": "You are a dry greeter.\n\n"}])
    );
    assert_eq!(
        request["messages"][1]["content"],
        json!([{"text": "Greet Ada in a dry way."}])
    );
    assert_eq!(request["config"], json!({"temperature": 0.3}));
    assert_eq!(request["tools"][0]["name"], "lookupName");
    assert_eq!(request["tools"][0]["inputSchema"]["type"], "string");
    // The tool choice is the generate call's business (Genkit JS's
    // `/prompt/` output leaves it out too).
    assert!(request.get("toolChoice").is_none());
    assert_eq!(
        request["output"],
        json!({
            "format": "json",
            "schema": {
                "type": "object",
                "properties": {"greeting": {"type": "string"}},
                "required": ["greeting"],
                "additionalProperties": false
            },
            "constrained": true,
            "contentType": "application/json"
        })
    );

    let options = registry
        .require_action("/executable-prompt/greeting")
        .await
        .unwrap()
        .run_json(json!({"name": "Ada"}), Default::default())
        .await
        .unwrap()
        .output;
    assert_eq!(options["model"], "programmable");
    assert_eq!(options["tools"], json!(["lookupName"]));
    assert_eq!(options["maxTurns"], 3);
    assert_eq!(options["toolChoice"], "required");
    assert_eq!(options["output"]["format"], "json");
    assert_eq!(
        options["output"]["jsonSchema"]["required"],
        json!(["greeting"])
    );
    assert_eq!(
        options["messages"][1]["content"],
        json!([{"text": "Greet Ada in a warm way."}])
    );

    // Rendering never calls the model.
    assert_eq!(model.call_count(), 0);
}
