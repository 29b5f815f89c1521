//! The facade: building an instance, defaults, prompt folders, define_*.

use genkit::flow::FlowContext;
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::testing::ProgrammableModel;
use std::sync::Arc;

#[tokio::test]
async fn builder_registers_generate_and_default_model() {
    let ai = Genkit::builder()
        .default_model("scripted")
        .no_prompt_dir()
        .build()
        .unwrap();
    assert!(
        ai.registry()
            .lookup_action("/util/generate")
            .await
            .unwrap()
            .is_some()
    );
    ProgrammableModel::define(ai.registry(), "scripted").respond_text("hi");
    assert_eq!(
        ai.generate(GenerateOptions::prompt("x"))
            .await
            .unwrap()
            .text(),
        "hi"
    );
}

#[tokio::test]
async fn a_missing_explicit_prompt_dir_is_an_error() {
    let err = Genkit::builder()
        .prompt_dir("/definitely/not/here")
        .build()
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    // The default ./prompts may be absent.
    Genkit::builder().build().unwrap();
}

#[tokio::test]
async fn prompt_files_load_at_build_time() {
    let dir = std::env::temp_dir().join(format!("genkit-facade-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("hello.prompt"),
        "---\nmodel: scripted\n---\nSay hello to {{name}}.",
    )
    .unwrap();
    let ai = Genkit::builder().prompt_dir(&dir).build().unwrap();
    let model = ProgrammableModel::define(ai.registry(), "scripted").respond_text("Hello, Ada!");
    let prompt = ai.prompt::<Value, Value>("hello").unwrap();
    let reply = prompt.call(json!({"name": "Ada"})).await.unwrap();
    assert_eq!(reply.text(), "Hello, Ada!");
    assert_eq!(model.requests()[0].messages[0].text(), "Say hello to Ada.");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn duplicate_plugins_fail_the_build() {
    struct P;
    #[async_trait::async_trait]
    impl genkit::plugin::Plugin for P {
        fn name(&self) -> &str {
            "p"
        }
        async fn init(
            &self,
            _r: &genkit::registry::Registry,
        ) -> genkit::Result<Vec<genkit::action::DynAction>> {
            Ok(vec![])
        }
    }
    let err = Genkit::builder().plugin(P).plugin(P).build().unwrap_err();
    assert_eq!(err.status(), StatusCode::AlreadyExists);
}

#[test]
#[should_panic(expected = "defining flow `twice`")]
fn defining_a_flow_twice_panics_with_its_name() {
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    ai.define_flow("twice", |s: String, _ctx| async move { Ok(s) });
    ai.define_flow("twice", |s: String, _ctx| async move { Ok(s) });
}

#[tokio::test]
async fn run_steps_and_streaming_flows() {
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    let ai2 = ai.clone();
    let flow = ai.define_streaming_flow("count", move |n: u32, ctx: FlowContext<u32>| {
        let ai = ai2.clone();
        async move {
            let doubled = ai.run("double", async move { Ok(n * 2) }).await?;
            for i in 0..doubled {
                ctx.send_chunk(i);
            }
            Ok(doubled)
        }
    });
    let mut stream = flow.stream(2);
    let mut chunks = Vec::new();
    while let Some(c) = stream.next().await {
        chunks.push(c.unwrap());
    }
    assert_eq!(chunks, [0, 1, 2, 3]);
    assert_eq!(stream.output().await.unwrap(), 4);
    let _ = Arc::new(());
}

#[tokio::test]
async fn define_resource_serves_its_template_and_is_found_by_uri() {
    use genkit::resource::{ResourceOptions, ResourceOutput, find_matching_resource};
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    let user = ai.define_resource(
        ResourceOptions::template("user", "users://{id}").description("A user."),
        |input, _ctx| async move { Ok(ResourceOutput::new(vec![Part::text(input.uri)])) },
    );
    assert_eq!(user.to_dyn().key(), "/resource/user");
    let found = find_matching_resource(ai.registry(), &[], "users://7")
        .await
        .unwrap()
        .expect("the resource serving users://7");
    assert_eq!(found.name(), "user");
    let out = found.read("users://7").await.unwrap();
    assert_eq!(out.content[0].as_text(), Some("users://7"));
}

#[test]
#[should_panic(expected = "defining resource `user`")]
fn defining_a_resource_twice_panics_with_its_name() {
    use genkit::resource::{ResourceOptions, ResourceOutput};
    let ai = Genkit::builder().no_prompt_dir().build().unwrap();
    for _ in 0..2 {
        ai.define_resource(ResourceOptions::uri("user", "users://me"), |_, _| async {
            Ok(ResourceOutput::default())
        });
    }
}
