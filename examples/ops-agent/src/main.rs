//! ops-agent: an operations assistant built with Genkit for Rust.
//!
//! `cargo run -p ops-agent` answers a few questions about a simulated fleet
//! with flows, tools and a model, streaming one answer, and prints the trace
//! of each run. `cargo run -p ops-agent -- --serve` serves the flows over
//! HTTP on `PORT` (default 3400); under `genkit start -- cargo run -p
//! ops-agent -- --serve` the official Genkit CLI and Dev UI see every action.

mod demo_model;
mod tools;

use genkit::prelude::*;

/// The app: a Genkit instance with its flows.
struct App {
    ai: Genkit,
    diagnose: genkit::Action<String, String>,
    stream_diagnose: genkit::Action<String, String, String>,
}

/// The system prompt of every diagnosis.
const SYSTEM: &str = "You are an operations assistant. Use the tools, then answer briefly.";

fn build() -> genkit::Result<App> {
    let ai = Genkit::builder()
        .default_model(demo_model::DEMO_MODEL)
        .build()?;
    demo_model::define_demo_model(&ai);
    tools::define_tools(&ai);

    // Flow bodies reach the Genkit instance from their context and name the
    // registered tools: nothing is cloned into the closures.
    let diagnose = ai.define_flow("diagnose", |question: String, ctx| async move {
        let reply = ctx
            .genkit()?
            .generate(
                GenerateOptions::prompt(question)
                    .system(SYSTEM)
                    .tools(tools::TOOLS)
                    .max_turns(3),
            )
            .await?;
        Ok(reply.text())
    });

    let stream_diagnose = ai.define_streaming_flow(
        "streamDiagnose",
        |question: String, ctx: FlowContext<String>| async move {
            let mut stream = ctx
                .genkit()?
                .generate_stream(GenerateOptions::prompt(question).tools(tools::TOOLS));
            while let Some(chunk) = stream.next().await {
                let text = chunk?.text();
                if !text.is_empty() {
                    ctx.send_chunk(text);
                }
            }
            Ok(stream.response().await?.text())
        },
    );
    Ok(App {
        ai,
        diagnose,
        stream_diagnose,
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt::init(); // the log, with the details of internal errors
    let App {
        ai,
        diagnose,
        stream_diagnose,
    } = build()?;

    if std::env::args().any(|a| a == "--serve") || genkit_server::is_dev_env() {
        let _dev = genkit_server::start_dev_tooling(ai.registry()).await?;
        let port = std::env::var("PORT").unwrap_or_else(|_| "3400".into());
        println!("serving flows on http://127.0.0.1:{port} (Ctrl-C to stop)");
        return Ok(genkit_server::serve(ai.registry(), format!("127.0.0.1:{port}")).await?);
    }

    for question in ["Is the database healthy?", "Why is the scheduler down?"] {
        let result = diagnose
            .run_with(question.to_owned(), Default::default())
            .await?;
        println!(
            "> {question}\n{}\n(trace {})\n",
            result.output, result.trace.trace_id
        );
    }

    println!("> (streaming) How are the api and worker doing?");
    let mut stream = stream_diagnose.stream("How are the api and worker doing?".to_owned());
    while let Some(chunk) = stream.next().await {
        print!("{}", chunk?);
    }
    let answer = stream.output().await?;
    println!("\n({} characters streamed)", answer.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn diagnose_uses_the_tools_and_names_the_culprit() -> Result<()> {
        let app = build()?;
        let answer = app.diagnose.run("Is the database healthy?".into()).await?;
        assert!(answer.contains("db is overloaded (cpu 97%)"), "{answer}");
        assert!(answer.contains("connection pool exhausted"), "{answer}");
        Ok(())
    }

    #[tokio::test]
    async fn stream_diagnose_streams_the_answer_it_returns() -> Result<()> {
        let app = build()?;
        let mut stream = app.stream_diagnose.stream("Is the scheduler up?".into());
        let mut streamed = String::new();
        while let Some(chunk) = stream.next().await {
            streamed.push_str(&chunk?);
        }
        let answer = stream.output().await?;
        assert_eq!(streamed, answer);
        assert!(answer.contains("scheduler is DOWN"), "{answer}");
        Ok(())
    }

    #[tokio::test]
    async fn flows_are_served_by_key() -> Result<()> {
        let app = build()?;
        let flow = app.ai.registry().require_action("/flow/diagnose").await?;
        let out = flow
            .run_json(json!("How is the worker?"), Default::default())
            .await?;
        assert!(
            out.output
                .as_str()
                .is_some_and(|s| s.contains("worker looks healthy"))
        );
        Ok(())
    }
}
