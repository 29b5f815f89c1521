//! The app's Genkit instance: the model, the tools, the middleware, the
//! prompt, and the `opsAgent` agent whose sessions live in the store.

use std::sync::Arc;
use std::time::Duration;

use genkit::agent::store::SessionStore;
use genkit::agent::{Agent, AgentOptions};
use genkit::mcp::McpHost;
use genkit::middleware::{
    GenerateMiddleware, ModelCallCtx, ModelNext, history_policy, tool_approval, tool_cache,
};
use genkit::prelude::*;
use genkit::prompt::PromptConfig;
use genkit::types::{Role, ToolChoice};
use genkit_openai::tokenizer::TiktokenEstimator;

use crate::fleet::{Fleet, Level, Service, Status};
use crate::models::{self, ModelChoice};
use crate::offline_model;
use crate::tools::{self, Logs, Restarted, TOOLS};

/// The agent's name (`/agent/opsAgent`, `POST /opsAgent` when served).
pub const AGENT: &str = "opsAgent";

/// The history the model sees: the last turns that fit, tool pairs whole.
pub const KEEP_TURNS: usize = 20;
/// The token budget of the history the model sees.
pub const KEEP_TOKENS: usize = 8_000;

const SYSTEM: &str = "You are an operations assistant for a fleet of four services: api, worker, \
scheduler and db. Use the tools to answer: getServiceStatus for health, queryLogs for causes \
(windows relative to now, like \"15m\"), restartService only when the user asks for a restart \
or agrees to one you proposed (the user approves every restart). When the user says \"it\" or \
\"that one\", they mean the service you were discussing. Answer briefly, from the tool results.";

/// The system prompt of a small local model: shorter, one rule a line,
/// and the answer's form spelled out (a 135M model follows little else).
const LOCAL_SYSTEM: &str = "You are an operations assistant for four services: api, worker, \
scheduler and db.\n\
- Call getServiceStatus to see whether a service is up.\n\
- Call queryLogs to see why a service failed.\n\
- Call restartService only when the user asks for a restart.\n\
The \"service\" argument is the service named in the user's question.\n\
After a tool result, answer with one sentence: copy the tool result's summary word for word.";

/// One tool call per question, then the answer: once a turn's tools ran,
/// the next model call may not call another (a small model would call
/// tools until `max_turns` instead of answering from their results).
struct AnswerAfterTools;

#[async_trait::async_trait]
impl GenerateMiddleware for AnswerAfterTools {
    fn name(&self) -> &str {
        "answerAfterTools"
    }

    async fn model(
        &self,
        mut req: genkit::types::GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<genkit::types::GenerateResponse> {
        if req.messages.last().is_some_and(|m| m.role == Role::Tool) {
            req.tool_choice = Some(ToolChoice::None);
        }
        next.run(req, ctx).await
    }
}

/// A worked example the local model reads before the conversation: three
/// earlier questions, each about another service and answered by another
/// tool, the call naming the service of its question and the answer
/// copying the result's summary. SmolLM2-135M, told the convention in the
/// system prompt alone, names the first service of the schema's enum
/// whatever the question; given one example in the system prompt, it
/// copied that example's service; from several exchanges, each about
/// another service, it takes the service from the question. The scheduler is in none of them, and the values are not the
/// fleet's, so an answer copied from an example shows up as one. The
/// example nearest the question is a status check answered with its whole
/// summary: the form the model then follows (ordered otherwise, it
/// answered "DOWN (not answering health checks)." for the scheduler).
fn local_examples() -> Vec<Message> {
    use genkit::types::{ToolRequest, ToolResponse};
    let exchange = |question: &str, tool: &str, service: Service, result: Value, answer: &str| {
        let args = json!({ "service": service });
        vec![
            Message::user(question),
            Message::model(vec![Part::tool_request(ToolRequest::new(tool, args))]),
            Message::tool(vec![Part::tool_response(ToolResponse::new(tool, result))]),
            Message::model(answer),
        ]
    };
    let status = |service: Service, cpu: f64, memory: f64| {
        let summary = format!(
            "{} is healthy (cpu {:.0}%, memory {:.0}%)",
            service.name(),
            cpu * 100.0,
            memory * 100.0
        );
        Status {
            service,
            online: true,
            cpu,
            memory,
            summary,
        }
    };
    // The tools' own output types, so the example cannot drift from them.
    fn to_value(output: &impl Serialize) -> Value {
        serde_json::to_value(output).unwrap_or(Value::Null)
    }
    let line = "[12m ago] ERROR job queue full (5000/5000)";
    let logs = Logs {
        service: Service::Worker,
        level: Level::Error,
        window: "1h".into(),
        lines: vec![line.into()],
        total: 1,
    };
    let db = status(Service::Db, 0.20, 0.35);
    let db_answer = format!("Restarted: {}.", db.summary);
    let restarted = Restarted {
        service: Service::Db,
        status: db,
    };
    let api = status(Service::Api, 0.31, 0.44);
    let api_answer = format!("{}.", api.summary);
    [
        exchange(
            "Why is the worker failing?",
            "queryLogs",
            Service::Worker,
            to_value(&logs),
            &format!("{line}."),
        ),
        exchange(
            "Restart the db.",
            "restartService",
            Service::Db,
            to_value(&restarted),
            &db_answer,
        ),
        exchange(
            "Is the api up?",
            "getServiceStatus",
            Service::Api,
            to_value(&api),
            &api_answer,
        ),
    ]
    .concat()
}

/// Puts [`local_examples`] between the system prompt and the conversation
/// of every model call (the session does not store them).
struct LocalExamples(Vec<Message>);

#[async_trait::async_trait]
impl GenerateMiddleware for LocalExamples {
    fn name(&self) -> &str {
        "localExamples"
    }

    async fn model(
        &self,
        mut req: genkit::types::GenerateRequest,
        ctx: ModelCallCtx,
        next: ModelNext,
    ) -> Result<genkit::types::GenerateResponse> {
        let at = usize::from(req.messages.first().is_some_and(|m| m.role == Role::System));
        let mut messages = req.messages.to_vec();
        messages.splice(at..at, self.0.iter().cloned());
        req.messages = Arc::new(messages);
        next.run(req, ctx).await
    }
}

/// How many tokens a local model may write per turn: enough for a tool
/// call or a short answer, and a bound on a slow CPU.
pub const LOCAL_MAX_OUTPUT_TOKENS: u32 = 96;

/// The built app.
pub struct App {
    /// The Genkit instance.
    pub ai: Genkit,
    /// The agent.
    pub agent: Agent,
    /// The model the agent uses.
    pub model: ModelChoice,
    /// How the history the model sees is trimmed, for the start-up line.
    pub history: String,
}

/// How this process runs as one replica of several on a shared store.
#[derive(Debug, Clone, Default)]
pub struct Replica {
    /// Who holds this replica's leases [default: a random id per process].
    pub id: Option<String>,
    /// How long a detached turn's lease lasts without renewal [default:
    /// the agent's, 30 s]; the heartbeat renews it every third of it.
    pub lease_time: Option<Duration>,
}

impl Replica {
    /// The agent options with this replica's id and lease time.
    fn apply(&self, mut options: AgentOptions) -> AgentOptions {
        if let Some(id) = &self.id {
            options = options.replica_id(id.clone());
        }
        if let Some(lease) = self.lease_time {
            options = options.lease_time(lease);
        }
        options
    }
}

/// Builds the app on `store`, talking to `model`, its tools acting on
/// `fleet`; with `mcp`, the agent is also offered every tool of that host's
/// servers (`mcp:tool/*`, resolved at each turn).
#[cfg(test)]
pub fn build(
    store: Arc<dyn SessionStore>,
    model: ModelChoice,
    fleet: Arc<Fleet>,
    mcp: Option<&McpHost>,
) -> Result<App> {
    build_replica(store, model, fleet, mcp, &Replica::default())
}

/// [`build`], as the replica `replica` of several on one store.
pub fn build_replica(
    store: Arc<dyn SessionStore>,
    model: ModelChoice,
    fleet: Arc<Fleet>,
    mcp: Option<&McpHost>,
    replica: &Replica,
) -> Result<App> {
    let builder = models::with_provider(Genkit::builder().no_prompt_dir(), &model)?;
    let ai = builder.default_model(model.name.clone()).build()?;
    offline_model::define_offline_model(&ai);
    tools::define_tools(&ai, &fleet, &store);
    let mut tool_names: Vec<String> = TOOLS.iter().map(|t| (*t).to_owned()).collect();
    if let Some(host) = mcp {
        host.register(ai.registry())?;
        tool_names.push(format!("{}:tool/*", host.name()));
    }

    // The budget is counted with the model's own tokenizer where one is
    // known (OpenAI's), else estimated from the characters.
    let tokenizer = TiktokenEstimator::for_model(&model.name);
    let history = format!(
        "last {KEEP_TURNS} turns within {KEEP_TOKENS} tokens, {}",
        tokenizer.as_ref().map_or_else(
            || "estimated at 4 characters a token".to_owned(),
            |t| format!("counted with {}", t.encoding().name())
        )
    );
    // Named middleware, so the prompt (and the Dev UI) can refer to them.
    ai.define_middleware(
        "historyPolicy",
        "Keeps the last turns within a token budget, tool pairs whole",
        move |_config| {
            let mut policy = history_policy()
                .last_turns(KEEP_TURNS)
                .max_tokens(KEEP_TOKENS);
            if let Some(tokenizer) = &tokenizer {
                policy = policy.estimator(tokenizer.clone());
            }
            Ok(Arc::new(policy) as Arc<dyn GenerateMiddleware>)
        },
    );
    ai.define_middleware(
        "toolApproval",
        "Interrupts before tools that need approval",
        |_config| Ok(Arc::new(tool_approval()) as Arc<dyn GenerateMiddleware>),
    );
    // One cache for the app's life: log queries are reused for 15 s;
    // restartService is side-effecting, so never cached.
    let cache: Arc<dyn GenerateMiddleware> =
        Arc::new(tool_cache().ttl("queryLogs", Duration::from_secs(15)));
    ai.define_middleware(
        "toolCache",
        "Reuses log query results for 15 s",
        move |_config| Ok(cache.clone()),
    );

    let mut config = PromptConfig::new(AGENT)
        .model(model.name.clone())
        .system(SYSTEM)
        .tools(tool_names)
        .max_turns(6)
        .use_middleware("historyPolicy", None)
        .use_middleware("toolApproval", None)
        .use_middleware("toolCache", None);
    if model.gguf.is_some() {
        // A small in-process model: a focused prompt, greedy decoding, a
        // bounded answer, a tool call forced on each question's first
        // turn (constrained decoding makes its arguments valid), then an
        // answer in text from the tool result.
        ai.define_middleware(
            "answerAfterTools",
            "After a turn's tools ran, the model answers instead of calling more",
            |_config| Ok(Arc::new(AnswerAfterTools) as Arc<dyn GenerateMiddleware>),
        );
        ai.define_middleware(
            "localExamples",
            "A worked example before the conversation",
            |_config| Ok(Arc::new(LocalExamples(local_examples())) as Arc<dyn GenerateMiddleware>),
        );
        config = config
            .use_middleware("localExamples", None)
            .use_middleware("answerAfterTools", None)
            .system(LOCAL_SYSTEM)
            .config(json!({"temperature": 0, "maxOutputTokens": LOCAL_MAX_OUTPUT_TOKENS}))
            .tool_choice_once(ToolChoice::Required);
    }
    let prompt = ai.define_prompt::<Value, Value>(config);
    let agent = ai.define_prompt_agent(
        AGENT,
        &prompt,
        replica.apply(
            AgentOptions::new()
                .store(store)
                .description("Operations assistant: service status, logs, restarts (approved)"),
        ),
    );
    Ok(App {
        ai,
        agent,
        model,
        history,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit::agent::store::InMemorySessionStore;
    use genkit::agent::types::{AgentOutput, AgentResume};
    use genkit::status::StatusCode;
    use genkit::testing::ProgrammableModel;
    use genkit::types::Role;

    /// The model sees at most the last KEEP_TURNS turns (and the system
    /// prompt); the session keeps every message.
    #[tokio::test]
    async fn the_model_sees_a_trimmed_history_and_the_session_keeps_it_all() -> Result<()> {
        let store = Arc::new(InMemorySessionStore::new());
        let model = ModelChoice {
            name: "offline/recorder".into(),
            reason: "test".into(),
            gguf: None,
        };
        let app = build(store, model, Arc::new(Fleet::default()), None)?;
        let turns = KEEP_TURNS + 5;
        let mut recorder = ProgrammableModel::define(app.ai.registry(), "offline/recorder");
        for i in 0..turns {
            recorder = recorder.respond_text(&format!("answer {i}"));
        }
        let chat = app.agent.chat();
        for i in 0..turns {
            chat.send(Message::user(format!("question {i}"))).await?;
        }
        let requests = recorder.requests();
        let last = requests
            .last()
            .map(|r| r.messages.clone())
            .unwrap_or_default();
        assert_eq!(last.first().map(|m| m.role), Some(Role::System));
        let questions: Vec<String> = last
            .iter()
            .filter(|m| m.role == Role::User)
            .map(Message::text)
            .collect();
        let expected: Vec<String> = (turns - KEEP_TURNS..turns)
            .map(|i| format!("question {i}"))
            .collect();
        assert_eq!(questions, expected);
        let stored = chat.snapshot().await?.state.unwrap_or_default();
        assert_eq!(stored.messages().len(), 2 * turns);
        Ok(())
    }

    /// The approval of `interrupt` as a restart part, carrying the
    /// interrupt id the agent runtime mints for it (`<snapshotId>/<n>`, the
    /// snapshot that asked). The runtime sets `resumed.interruptId` itself on
    /// every restart it accepts against the stored interrupt; these tests
    /// set it too, so that they do not depend on it.
    fn approved(interrupt: &Part, snapshot_id: Option<&str>) -> Part {
        let mut part = genkit::middleware::approve(interrupt).unwrap_or_else(|_| interrupt.clone());
        if let Some(Value::Object(resumed)) =
            part.metadata.as_mut().and_then(|m| m.get_mut("resumed"))
        {
            resumed.insert(
                genkit::agent::effect::INTERRUPT_ID_KEY.into(),
                json!(format!("{}/0", snapshot_id.unwrap_or_default())),
            );
        }
        part
    }

    /// The interrupt a turn ended with.
    fn interrupt_of(output: &AgentOutput) -> Result<Part> {
        output
            .message
            .iter()
            .flat_map(|m| m.content.iter())
            .find(|p| p.metadata_value("interrupt").is_some())
            .cloned()
            .ok_or_else(|| Error::internal("no interrupt"))
    }

    /// A restart is claimed before it runs and recorded the moment it ran:
    /// when the turn then fails and is retried (from the same interrupted
    /// snapshot, the same approval), the retry finds the record and the
    /// service is not restarted twice.
    #[tokio::test]
    async fn a_retried_turn_does_not_restart_the_service_again() -> Result<()> {
        use genkit::agent::types::{AgentFinishReason, AgentInit, AgentInput};

        let store = Arc::new(InMemorySessionStore::new());
        let model = ModelChoice {
            name: "offline/recorder".into(),
            reason: "test".into(),
            gguf: None,
        };
        let fleet = Arc::new(Fleet::default());
        let app = build(store, model, fleet.clone(), None)?;
        ProgrammableModel::define(app.ai.registry(), "offline/recorder")
            .respond_tool_call("restartService", json!({"service": "db"}))
            .respond_error(Error::new(StatusCode::Unavailable, "the model went away"))
            .respond_text("db restarted");
        // The server mints the session's id; later turns resume it by id.
        let asked = app
            .agent
            .chat()
            .send(Message::user("restart the db"))
            .await?;
        let session = asked
            .session_id
            .clone()
            .ok_or_else(|| Error::internal("no session id"))?;
        let chat = || {
            app.agent.chat_from(AgentInit {
                session_id: Some(session.clone()),
                ..AgentInit::default()
            })
        };
        assert_eq!(asked.finish_reason, Some(AgentFinishReason::Interrupted));
        let interrupt = interrupt_of(&asked)?;
        let resume = || AgentResume {
            restart: Some(vec![approved(&interrupt, asked.snapshot_id.as_deref())]),
            ..AgentResume::default()
        };
        // Approved: the restart runs, then the model fails; the turn fails.
        let failed = chat()
            .send_stream(AgentInput::resume(resume()))
            .output()
            .await?;
        assert_eq!(failed.finish_reason, Some(AgentFinishReason::Failed));
        assert_eq!(fleet.restarts(), 1);
        // The retry (from the interrupted turn again) reuses the record.
        let retried = chat().resume(resume()).await?;
        assert_eq!(
            retried.message.map(|m| m.text()).as_deref(),
            Some("db restarted")
        );
        assert_eq!(fleet.restarts(), 1, "restarted twice");
        Ok(())
    }

    /// Two approvals of the same interrupt sent at once: the service is
    /// restarted once.
    #[tokio::test]
    async fn two_concurrent_approvals_restart_the_service_once() -> Result<()> {
        use genkit::agent::types::{AgentFinishReason, AgentInit};

        let store = Arc::new(InMemorySessionStore::new());
        let model = ModelChoice {
            name: "offline/recorder".into(),
            reason: "test".into(),
            gguf: None,
        };
        // A slow fleet API, so the second approval arrives mid-restart.
        let fleet = Arc::new(Fleet::new(Duration::from_millis(50)));
        let app = build(store, model, fleet.clone(), None)?;
        ProgrammableModel::define(app.ai.registry(), "offline/recorder")
            .respond_tool_call("restartService", json!({"service": "db"}))
            .respond_text("db restarted")
            .respond_text("db restarted");
        let asked = app
            .agent
            .chat()
            .send(Message::user("restart the db"))
            .await?;
        assert_eq!(asked.finish_reason, Some(AgentFinishReason::Interrupted));
        let session = asked.session_id.clone();
        let chat = || {
            app.agent.chat_from(AgentInit {
                session_id: session.clone(),
                ..AgentInit::default()
            })
        };
        let approval = approved(&interrupt_of(&asked)?, asked.snapshot_id.as_deref());
        let resume = || AgentResume {
            restart: Some(vec![approval.clone()]),
            ..AgentResume::default()
        };
        let (one, two) = (chat(), chat());
        let (a, b) = tokio::join!(one.resume(resume()), two.resume(resume()));
        assert_eq!(
            fleet.restarts(),
            1,
            "one approval restarted twice: {a:?} {b:?}"
        );
        Ok(())
    }

    /// After one approved restart, a later request to restart the same
    /// service is asked about and, approved, restarts it again: the new
    /// approval is not mistaken for the first one.
    #[tokio::test]
    async fn a_later_approved_restart_of_the_same_service_runs() -> Result<()> {
        use genkit::agent::types::AgentFinishReason;

        let store = Arc::new(InMemorySessionStore::new());
        let model = ModelChoice {
            name: "offline/recorder".into(),
            reason: "test".into(),
            gguf: None,
        };
        let fleet = Arc::new(Fleet::default());
        let app = build(store, model, fleet.clone(), None)?;
        ProgrammableModel::define(app.ai.registry(), "offline/recorder")
            .respond_tool_call("restartService", json!({"service": "db"}))
            .respond_text("db restarted")
            .respond_tool_call("restartService", json!({"service": "db"}))
            .respond_text("db restarted again");
        let chat = app.agent.chat();
        for (round, answer) in [(1, "db restarted"), (2, "db restarted again")] {
            let asked = chat.send(Message::user("restart the db")).await?;
            assert_eq!(asked.finish_reason, Some(AgentFinishReason::Interrupted));
            let approval = approved(&interrupt_of(&asked)?, asked.snapshot_id.as_deref());
            let done = chat
                .resume(AgentResume {
                    restart: Some(vec![approval]),
                    ..AgentResume::default()
                })
                .await?;
            assert_eq!(done.message.map(|m| m.text()).as_deref(), Some(answer));
            assert_eq!(fleet.restarts(), round);
        }
        Ok(())
    }

    /// The local model names the service of each question in its tool call
    /// (the worked example's lesson), for eight questions; it prints what it
    /// called and answered, so it doubles as the measuring loop for the
    /// local setup (`PRINT_PROMPT=1` also prints each prompt the model
    /// reads). The tool itself is printed, not checked: SmolLM2-135M
    /// answers "logs" questions with getServiceStatus. Needs
    /// `GENKIT_LOCAL_MODEL_GGUF`; about 3 minutes in a debug build:
    /// `cargo test -p ops-agent --bin ops-agent local_model -- --ignored --nocapture`.
    #[tokio::test(flavor = "multi_thread")]
    #[ignore = "needs GENKIT_LOCAL_MODEL_GGUF; minutes on a small CPU"]
    async fn local_model_takes_the_service_from_the_question() -> Result<()> {
        let Some(path) = std::env::var_os("GENKIT_LOCAL_MODEL_GGUF") else {
            return Err(Error::failed_precondition("set GENKIT_LOCAL_MODEL_GGUF"));
        };
        if std::env::var_os("PRINT_PROMPT").is_some() {
            use tracing_subscriber::prelude::*;
            let prompts = tracing_subscriber::filter::filter_fn(|m| {
                m.target() == "genkit_local_model::prompt"
            });
            let _ = tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().with_filter(prompts))
                .try_init();
        }
        let path = std::path::PathBuf::from(path);
        let model = ModelChoice {
            name: models::gguf_model_name(&path),
            reason: "test".into(),
            gguf: Some(path),
        };
        let app = build(
            Arc::new(InMemorySessionStore::new()),
            model,
            Arc::new(Fleet::default()),
            None,
        )?;
        // (question, the service it names, the tools that fit it)
        let cases: [(&str, &str, &[&str]); 8] = [
            (
                "Why is the scheduler down?",
                "scheduler",
                &["getServiceStatus", "queryLogs"],
            ),
            ("Is the db up?", "db", &["getServiceStatus"]),
            ("Show the worker's logs", "worker", &["queryLogs"]),
            ("Restart the api", "api", &["restartService"]),
            ("Restart the scheduler.", "scheduler", &["restartService"]),
            ("Is the worker healthy?", "worker", &["getServiceStatus"]),
            (
                "Why is the db slow?",
                "db",
                &["getServiceStatus", "queryLogs"],
            ),
            ("What do the api logs say?", "api", &["queryLogs"]),
        ];
        let (mut services, mut tools) = (0, 0);
        for (question, service, fits) in cases {
            let started = std::time::Instant::now();
            let chat = app.agent.chat();
            let output = chat.send(Message::user(question)).await?;
            let state = chat.snapshot().await?.state.unwrap_or_default();
            let messages = state.messages().iter().chain(output.message.iter());
            let calls: Vec<_> = messages
                .flat_map(|m| m.content.iter().filter_map(Part::as_tool_request))
                .map(|r| (r.name.clone(), r.input.clone().unwrap_or_default()))
                .collect();
            let first = calls.first();
            let right_service = first.is_some_and(|(_, args)| args["service"] == service);
            let right_tool = first.is_some_and(|(name, _)| fits.contains(&name.as_str()));
            services += usize::from(right_service);
            tools += usize::from(right_tool);
            println!(
                "{question:?}: {} {} [{}{}] {:.1}s\n    answer: {:?}",
                first.map_or("-", |(name, _)| name.as_str()),
                first.map_or_else(String::new, |(_, args)| args.to_string()),
                if right_service {
                    "service ok"
                } else {
                    "SERVICE WRONG"
                },
                if right_tool {
                    ", tool ok"
                } else {
                    ", TOOL WRONG"
                },
                started.elapsed().as_secs_f64(),
                output.message.map(|m| m.text()).unwrap_or_default(),
            );
        }
        println!("right service: {services}/8, right tool: {tools}/8");
        assert_eq!(
            services, 8,
            "a call named another service than its question"
        );
        Ok(())
    }
}
