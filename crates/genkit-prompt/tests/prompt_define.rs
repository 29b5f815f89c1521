//! Prompts defined in code: typed input and output, rendering, calling and
//! streaming with the prompt's options, caller overrides, history, context,
//! tools, helpers, partials and middleware.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::StreamExt;
use genkit_core::{ActionContext, Registry, Result, StatusCode};
use genkit_generate::GenerateOptions;
use genkit_model::middleware::{GenerateMiddleware, ModelCallCtx, ModelNext, define_middleware};
use genkit_model::testing::ProgrammableModel;
use genkit_model::tool::define_tool;
use genkit_model::types::{
    DocumentData, FinishReason, GenerateRequest, GenerateResponse, GenerateResponseChunk, Message,
    Part, Role, ToolChoice,
};
use genkit_prompt::{PromptConfig, define_helper, define_partial, define_prompt, prompt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Serialize, JsonSchema)]
struct Topic {
    topic: String,
}

#[derive(Debug, PartialEq, Deserialize, JsonSchema)]
struct Joke {
    setup: String,
    punchline: String,
}

fn joke_config() -> PromptConfig<Topic, Joke> {
    PromptConfig::new("joke")
        .model("programmable")
        .config(json!({"temperature": 0.9}))
        .description("Tells a joke.")
        .input::<Topic>()
        .output::<Joke>()
        .system("You are a comedian.")
        .prompt("Tell a joke about {{topic}}.")
}

#[tokio::test]
async fn typed_input_and_output() {
    let registry = Registry::new();
    let model = ProgrammableModel::define(&registry, "programmable")
        .respond_text(r#"{"setup": "Why?", "punchline": "Because."}"#);
    let joke = define_prompt(&registry, joke_config()).unwrap();

    let out = joke
        .run(Topic {
            topic: "cats".into(),
        })
        .await
        .unwrap();
    assert_eq!(
        out,
        Joke {
            setup: "Why?".into(),
            punchline: "Because.".into()
        }
    );

    let request = &model.requests()[0];
    assert_eq!(request.messages[0].role, Role::System);
    assert_eq!(
        request.messages[0].content[0].as_text(),
        Some("You are a comedian.")
    );
    // The JSON format's instructions, with `Joke`'s schema, join the system
    // message (the model does not constrain output natively).
    let instructions = &request.messages[0].content[1];
    assert_eq!(
        instructions.metadata_value("purpose"),
        Some(&json!("output"))
    );
    assert!(
        instructions
            .as_text()
            .is_some_and(|t| t.contains(r#""required":["setup","punchline"]"#)),
        "{instructions:?}"
    );
    assert_eq!(request.messages[1].text(), "Tell a joke about cats.");

    // The same prompt, found by name with the same types.
    let found = prompt::<Topic, Joke>(&registry, "joke", None).unwrap();
    assert_eq!(found.description(), Some("Tells a joke."));
    assert_eq!(
        found.input_schema().unwrap().unwrap()["required"],
        json!(["topic"])
    );
}

#[tokio::test]
async fn tool_choice_once_renders_as_a_first_turn_choice_the_caller_can_override() {
    let registry = Registry::new();
    let config = PromptConfig::new("forced")
        .tool("search")
        .tool_choice_once(ToolChoice::Required)
        .prompt("hi");
    let once = define_prompt(&registry, config.clone()).unwrap();
    let options = once.render(json!({})).await.unwrap();
    assert_eq!(options.tool_choice, Some(ToolChoice::Required));
    assert!(options.tool_choice_once);

    // The caller's own choice replaces the prompt's, its once-ness too.
    let options = once
        .render_with(
            json!({}),
            GenerateOptions::new().tool_choice(ToolChoice::Auto),
        )
        .await
        .unwrap();
    assert_eq!(options.tool_choice, Some(ToolChoice::Auto));
    assert!(!options.tool_choice_once);

    // A later plain tool_choice makes it hold on every turn again.
    let every = define_prompt(
        &registry,
        config.variant("every").tool_choice(ToolChoice::Required),
    )
    .unwrap();
    let options = every.render(json!({})).await.unwrap();
    assert_eq!(options.tool_choice, Some(ToolChoice::Required));
    assert!(!options.tool_choice_once);
}

#[tokio::test]
async fn render_returns_every_generate_option() {
    let registry = Registry::new();
    let p = define_prompt(
        &registry,
        PromptConfig::new("everything")
            .model("programmable")
            .config(json!({"temperature": 0.5}))
            .input_picoschema(json!({"q": "string"}))
            .output_format("text")
            .tool("search")
            .tool_choice(ToolChoice::None)
            .max_turns(2)
            .return_tool_requests(true)
            .docs([DocumentData::from_text("fact")])
            .messages([Message::model("Earlier answer.")])
            .prompt("{{q}}"),
    )
    .unwrap();

    let options = p.render(json!({"q": "why?"})).await.unwrap();
    assert_eq!(
        options.model.as_ref().map(|m| m.name.as_str()),
        Some("programmable")
    );
    assert_eq!(options.config, Some(json!({"temperature": 0.5})));
    assert_eq!(options.max_turns, Some(2));
    assert_eq!(options.tool_choice, Some(ToolChoice::None));
    assert_eq!(options.return_tool_requests, Some(true));
    assert_eq!(options.tools.len(), 1);
    assert_eq!(options.docs.len(), 1);
    assert_eq!(
        options.output.as_ref().unwrap().format.as_deref(),
        Some("text")
    );
    let turns: Vec<_> = options
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect();
    assert_eq!(
        turns,
        vec![
            (Role::Model, "Earlier answer.".to_owned()),
            (Role::User, "why?".to_owned())
        ]
    );

    // The caller replaces options and merges config.
    let options = p
        .render_with(
            json!({"q": "how?"}),
            GenerateOptions::new()
                .model("other")
                .config(json!({"topK": 1}))
                .max_turns(9)
                .output_format("json"),
        )
        .await
        .unwrap();
    assert_eq!(
        options.model.as_ref().map(|m| m.name.as_str()),
        Some("other")
    );
    assert_eq!(options.config, Some(json!({"temperature": 0.5, "topK": 1})));
    assert_eq!(options.max_turns, Some(9));
    assert_eq!(
        options.output.as_ref().unwrap().format.as_deref(),
        Some("json")
    );
}

#[tokio::test]
async fn history_without_a_messages_template_goes_before_the_prompt() {
    let registry = Registry::new();
    let model = ProgrammableModel::define(&registry, "programmable").respond_text("ok");
    let p = define_prompt(
        &registry,
        PromptConfig::new("chat")
            .model("programmable")
            .system("Be brief.")
            .prompt("{{question}}"),
    )
    .unwrap();
    p.call_with(
        json!({"question": "And now?"}),
        GenerateOptions::new().with_messages([Message::user("Hi"), Message::model("Hello")]),
    )
    .await
    .unwrap();
    let texts: Vec<_> = model.requests()[0]
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (Role::System, "Be brief.".to_owned()),
            (Role::User, "Hi".to_owned()),
            (Role::Model, "Hello".to_owned()),
            (Role::User, "And now?".to_owned()),
        ]
    );
}

#[tokio::test]
async fn messages_template_switches_roles_and_reads_context() {
    let registry = Registry::new();
    let p = define_prompt(
        &registry,
        PromptConfig::new("roles")
            .default_input(json!({"name": "stranger"}))
            .messages_template(
                "{{role \"system\"}}User {{@auth.uid}}.\n{{role \"user\"}}Hi, I am {{name}}.",
            ),
    )
    .unwrap();
    let context = ActionContext::new().with_auth(json!({"uid": "u-42"}));
    let options = p
        .render_with(json!({}), GenerateOptions::new().context(context))
        .await
        .unwrap();
    let texts: Vec<_> = options
        .messages
        .iter()
        .map(|m| (m.role, m.text()))
        .collect();
    assert_eq!(
        texts,
        vec![
            (Role::System, "User u-42.\n".to_owned()),
            (Role::User, "Hi, I am stranger.".to_owned())
        ]
    );
}

#[tokio::test]
async fn streaming_yields_chunks_with_parsed_output() {
    let registry = Registry::new();
    let chunks = vec![
        GenerateResponseChunk::new(vec![Part::text(r#"{"setup": "Wh"#)]),
        GenerateResponseChunk::new(vec![Part::text(r#"y?", "punchline": "Because."}"#)]),
    ];
    let final_text = r#"{"setup": "Why?", "punchline": "Because."}"#;
    ProgrammableModel::define(&registry, "programmable").respond_with_chunks(
        chunks,
        GenerateResponse::new(Message::model(final_text), FinishReason::Stop),
    );
    let joke = define_prompt(&registry, joke_config()).unwrap();

    let mut stream = joke.stream(Topic {
        topic: "dogs".into(),
    });
    let mut partial = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        partial.push(chunk.output().cloned());
    }
    assert_eq!(
        partial,
        vec![
            Some(json!({"setup": "Wh"})),
            Some(json!({"setup": "Why?", "punchline": "Because."}))
        ]
    );
    let response = stream.response().await.unwrap();
    assert_eq!(response.output::<Joke>().unwrap().punchline, "Because.");
}

#[tokio::test]
async fn a_rendering_error_ends_the_stream() {
    let registry = Registry::new();
    let joke = define_prompt(&registry, joke_config()).unwrap();
    let bad = joke.typed::<Value, Value>();
    let mut stream = bad.stream(json!({"topic": 3}));
    let first = stream.next().await.unwrap().unwrap_err();
    assert_eq!(first.status(), StatusCode::InvalidArgument);
    assert!(first.message().contains("- topic:"), "{}", first.message());
}

#[tokio::test]
async fn tools_given_by_value_run_in_the_loop() {
    let registry = Registry::new();
    let model = ProgrammableModel::define(&registry, "programmable")
        .respond_tool_call("weather", json!({"city": "Paris"}))
        .respond_text("Sunny.");
    let weather = genkit_model::tool::Tool::new(
        "weather",
        "Gets the weather.",
        |input: Value, _ctx| async move { Ok(format!("sunny in {}", input["city"])) },
    );
    let p = define_prompt(
        &registry,
        PromptConfig::new("forecast")
            .model("programmable")
            .tool(&weather)
            .prompt("Weather in {{city}}?"),
    )
    .unwrap();
    let response = p.call(json!({"city": "Paris"})).await.unwrap();
    assert_eq!(response.text(), "Sunny.");
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let tool_message = requests[1].messages.last().unwrap();
    assert_eq!(tool_message.role, Role::Tool);
    assert_eq!(
        tool_message.tool_responses().next().unwrap().output,
        Some(json!("sunny in \"Paris\""))
    );
}

#[tokio::test]
async fn registered_tools_are_described_in_the_request() {
    let registry = Registry::new();
    define_tool(
        &registry,
        "add",
        "Adds numbers.",
        |nums: Vec<i64>, _ctx| async move { Ok(nums.iter().sum::<i64>()) },
    )
    .unwrap();
    let p = define_prompt(
        &registry,
        PromptConfig::new("calc")
            .tool("add")
            .prompt("Add {{a}} and {{b}}."),
    )
    .unwrap();
    let request: GenerateRequest = p.render_request(json!({"a": 1, "b": 2})).await.unwrap();
    let tools = request.tools.unwrap();
    assert_eq!(tools[0].name, "add");
    assert_eq!(tools[0].description, "Adds numbers.");

    let missing = define_prompt(
        &registry,
        PromptConfig::new("lost").tool("nope").prompt("x"),
    )
    .unwrap();
    let err = missing.render_request(json!({})).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
}

/// A dynamic action provider offering two tools.
struct TwoTools(Vec<genkit_core::DynAction>);

#[async_trait]
impl genkit_core::DynamicActionProvider for TwoTools {
    async fn list(&self) -> Result<Vec<(genkit_core::ActionKind, genkit_core::DynAction)>> {
        Ok(self
            .0
            .iter()
            .map(|a| (genkit_core::ActionKind::Tool, a.clone()))
            .collect())
    }
}

#[tokio::test]
async fn a_dynamic_providers_tools_are_described_by_pattern() {
    let registry = Registry::new();
    let scratch = Registry::new();
    let tools = ["s/one", "s/two"]
        .map(|name| {
            define_tool(
                &scratch,
                name,
                "A tool.",
                |x: i64, _ctx| async move { Ok(x) },
            )
            .unwrap()
            .to_dyn()
        })
        .to_vec();
    registry
        .register_dynamic_action_provider("host", Arc::new(TwoTools(tools)))
        .unwrap();
    let p = define_prompt(
        &registry,
        PromptConfig::new("dyn").tool("host:tool/*").prompt("x"),
    )
    .unwrap();
    let request: GenerateRequest = p.render_request(json!({})).await.unwrap();
    let names: Vec<String> = request
        .tools
        .unwrap()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(names, ["one", "two"]);
}

#[tokio::test]
async fn helpers_and_partials_belong_to_the_registry() {
    let registry = Registry::new();
    let p = define_prompt(
        &registry,
        PromptConfig::new("loud").prompt("{{> greeting}} {{shout name}}"),
    )
    .unwrap();
    // Both are defined after the prompt; they are looked up when it renders.
    define_partial(&registry, "greeting", "Dear").unwrap();
    define_helper(&registry, "shout", |args, _| {
        Ok(Value::from(
            args.first()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_uppercase(),
        ))
    });
    // A child registry sees them too.
    let child = registry.child();
    let p2 = define_prompt(
        &child,
        PromptConfig::new("child").prompt("{{> greeting}} {{shout x}}"),
    )
    .unwrap();

    let options = p.render(json!({"name": "ada"})).await.unwrap();
    assert_eq!(options.messages[0].text(), "Dear ADA");
    let options = p2.render(json!({"x": "bo"})).await.unwrap();
    assert_eq!(options.messages[0].text(), "Dear BO");

    let err = define_partial(&registry, "broken", "{{#if}}").unwrap_err();
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(
        err.message().starts_with("partial `broken`:"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn variants_are_separate_prompts() {
    let registry = Registry::new();
    define_prompt(&registry, PromptConfig::new("hello").prompt("Hello")).unwrap();
    define_prompt(
        &registry,
        PromptConfig::new("hello").variant("pirate").prompt("Ahoy"),
    )
    .unwrap();
    let base = prompt::<Value, Value>(&registry, "hello", None).unwrap();
    let pirate = prompt::<Value, Value>(&registry, "hello", Some("pirate")).unwrap();
    assert_eq!(
        base.render(json!({})).await.unwrap().messages[0].text(),
        "Hello"
    );
    assert_eq!(
        pirate.render(json!({})).await.unwrap().messages[0].text(),
        "Ahoy"
    );
    let listed = registry.list_resolvable_actions().await;
    let meta = &listed["/executable-prompt/hello.pirate"].metadata;
    assert_eq!(meta["prompt"]["name"], "hello");
    assert_eq!(meta["prompt"]["variant"], "pirate");
}

/// Counts model calls.
struct Counter(Arc<AtomicUsize>);

#[async_trait]
impl GenerateMiddleware for Counter {
    async fn model(
        &self,
        req: GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<GenerateResponse> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.run(req, ctx).await
    }
}

#[tokio::test]
async fn middleware_named_by_the_prompt_wraps_the_call() {
    let registry = Registry::new();
    ProgrammableModel::define(&registry, "programmable").respond_text("done");
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    define_middleware(
        &registry,
        "counter",
        "Counts model calls.",
        move |_config| Ok(Arc::new(Counter(seen.clone())) as Arc<dyn GenerateMiddleware>),
    );
    let p = define_prompt(
        &registry,
        PromptConfig::new("counted")
            .model("programmable")
            .use_middleware("counter", Some(json!({"k": 1})))
            .prompt("hi"),
    )
    .unwrap();
    assert_eq!(p.call(json!({})).await.unwrap().text(), "done");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let options = registry
        .require_action("/executable-prompt/counted")
        .await
        .unwrap()
        .run_json(json!({}), Default::default())
        .await
        .unwrap()
        .output;
    assert_eq!(
        options["use"],
        json!([{"name": "counter", "config": {"k": 1}}])
    );

    let unknown = define_prompt(
        &registry,
        PromptConfig::new("unknown")
            .use_middleware("nope", None)
            .prompt("hi"),
    )
    .unwrap();
    let err = unknown.call(json!({})).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound);
}
