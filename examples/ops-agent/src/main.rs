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

fn build() -> genkit::Result<App> {
    let ai = Genkit::builder()
        .default_model(demo_model::DEMO_MODEL)
        .build()?;
    demo_model::define_demo_model(&ai);
    let (status, logs) = tools::define_tools(&ai);

    let diagnose = {
        let ai2 = ai.clone();
        let (status, logs) = (status.clone(), logs.clone());
        ai.define_flow("diagnose", move |question: String, _ctx| {
            let (ai, status, logs) = (ai2.clone(), status.clone(), logs.clone());
            async move {
                let reply = ai
                    .generate(
                        GenerateOptions::prompt(question)
                            .system("You are an operations assistant. Use the tools, then answer briefly.")
                            .tool(&status)
                            .tool(&logs)
                            .max_turns(3),
                    )
                    .await?;
                Ok(reply.text())
            }
        })
    };

    let stream_diagnose = {
        let ai2 = ai.clone();
        ai.define_streaming_flow(
            "streamDiagnose",
            move |question: String, ctx: FlowContext<String>| {
                let (ai, status, logs) = (ai2.clone(), status.clone(), logs.clone());
                async move {
                    let mut stream = ai.generate_stream(
                        GenerateOptions::prompt(question).tool(&status).tool(&logs),
                    );
                    while let Some(chunk) = stream.next().await {
                        let text = chunk?.text();
                        if !text.is_empty() {
                            ctx.send_chunk(text);
                        }
                    }
                    Ok(stream.response().await?.text())
                }
            },
        )
    };
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
        let _dev = genkit_server::start_dev_tooling(ai.registry())
            .await
            .map_err(|e| Error::internal(e.to_string()))?;
        let port = std::env::var("PORT").unwrap_or_else(|_| "3400".into());
        println!("serving flows on http://127.0.0.1:{port} (Ctrl-C to stop)");
        return genkit_server::serve(ai.registry(), format!("127.0.0.1:{port}"))
            .await
            .map_err(|e| Error::internal(e.to_string()));
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
