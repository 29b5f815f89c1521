//! Resource parts in a request are replaced by the resource's content
//! before the model sees them (Genkit JS's `applyResources`).

use genkit_core::{Registry, StatusCode};
use genkit_generate::{GenerateOptions, generate};
use genkit_model::resource::{ResourceOptions, ResourceOutput, define_resource};
use genkit_model::testing::{MockModelOptions, mock_model};
use genkit_model::types::{Message, Part};

fn setup() -> Registry {
    let registry = Registry::new();
    define_resource(
        &registry,
        ResourceOptions::uri("readme", "docs://readme"),
        |_, _| async { Ok(ResourceOutput::new(vec![Part::text("the readme")])) },
    )
    .unwrap();
    define_resource(
        &registry,
        ResourceOptions::template("profile", "users://{id}/profile"),
        |input, _| async move {
            Ok(ResourceOutput::new(vec![
                Part::text(format!("profile at {}", input.uri)),
                Part::text("second part"),
            ]))
        },
    )
    .unwrap();
    registry
}

#[tokio::test]
async fn resource_parts_become_the_resources_content() {
    let registry = setup();
    let model = mock_model(&registry, MockModelOptions::new().respond("ok")).unwrap();
    let message = Message::user(vec![
        Part::text("read "),
        Part::resource("docs://readme"),
        Part::text(" and "),
        Part::resource("users://7/profile"),
    ]);
    let out = generate(
        &registry,
        GenerateOptions::messages([message]).model("mockModel"),
    )
    .await
    .unwrap();
    assert_eq!(out.text(), "ok");
    let seen = model.last_request().unwrap();
    let texts: Vec<_> = seen.messages[0]
        .content
        .iter()
        .map(|p| p.as_text().unwrap_or("<not text>").to_owned())
        .collect();
    assert_eq!(
        texts,
        [
            "read ",
            "the readme",
            " and ",
            "profile at users://7/profile",
            "second part"
        ]
    );
    // Each part says which resource it came from.
    assert_eq!(
        seen.messages[0].content[1]
            .metadata_value("resource")
            .unwrap()["uri"],
        "docs://readme"
    );
    // The replaced content is what the response's history keeps.
    assert!(
        out.messages()
            .unwrap()
            .iter()
            .flat_map(|m| m.content.iter())
            .all(|p| p.as_resource().is_none())
    );
}

#[tokio::test]
async fn an_unserved_uri_or_an_unknown_named_resource_is_an_error() {
    let registry = setup();
    let model = mock_model(&registry, MockModelOptions::new().respond("ok")).unwrap();
    let err = generate(
        &registry,
        GenerateOptions::messages([Message::user(vec![Part::resource("nope://x")])])
            .model("mockModel"),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(
        err.message(),
        "failed to find matching resource for nope://x"
    );

    let err = generate(
        &registry,
        GenerateOptions::messages([Message::user(vec![Part::resource("docs://readme")])])
            .model("mockModel")
            .resources(["missing"]),
    )
    .await
    .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
    assert_eq!(err.message(), "Resource missing not found");
    assert_eq!(model.request_count(), 0, "the model was never called");
}

#[tokio::test]
async fn named_resources_are_tried_first() {
    let registry = setup();
    // A second resource serving the same URI, named by the call.
    define_resource(
        &registry,
        ResourceOptions::uri("readme-v2", "docs://readme"),
        |_, _| async { Ok(ResourceOutput::new(vec![Part::text("the new readme")])) },
    )
    .unwrap();
    let model = mock_model(&registry, MockModelOptions::new().respond("ok")).unwrap();
    generate(
        &registry,
        GenerateOptions::messages([Message::user(vec![Part::resource("docs://readme")])])
            .model("mockModel")
            .resources(["readme-v2"]),
    )
    .await
    .unwrap();
    let seen = model.last_request().unwrap();
    assert_eq!(
        seen.messages[0].content[0].as_text(),
        Some("the new readme")
    );
}
