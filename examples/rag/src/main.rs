//! rag: answers questions about a folder of Markdown, with citations.
//!
//! ```sh
//! cargo run -p rag -- index examples/rag/docs
//! cargo run -p rag -- ask "How do I change the port?"
//! ```
//!
//! `index` chunks every `.md` file along its sections, embeds the chunks
//! in-process with all-MiniLM-L6-v2 (`genkit-local-embedder`) and stores
//! them in a local vector store file. `ask` runs the `answerQuestion` flow:
//! it retrieves the closest chunks, numbers them as sources, has the model
//! answer from them citing `[n]`, and lists the sources the answer cites.
//! No API key and no server are needed: the default model quotes the
//! best-matching source sentences; `--model openai/<name>` asks any
//! OpenAI-compatible server instead.

mod app;
mod citations;
mod corpus;
mod extractive;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use genkit::prelude::*;

use crate::app::{Answer, Question};
use crate::extractive::EXTRACTIVE_MODEL;

/// Answers questions about a folder of Markdown files, citing them.
#[derive(Debug, Parser)]
#[command(name = "rag", version)]
struct Args {
    /// The vector store (its data goes to this path with the extension
    /// `.vdb`).
    #[arg(
        long,
        global = true,
        value_name = "FILE",
        env = "RAG_STORE",
        default_value = ".rag/index.json"
    )]
    store: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// (Re)builds the index from every .md file under FOLDER.
    Index {
        /// The folder of Markdown files.
        folder: PathBuf,
    },
    /// Answers QUESTION from the indexed files.
    Ask {
        /// The question.
        question: String,
        /// How many chunks to retrieve as sources (1 to 20).
        #[arg(short, long, default_value_t = app::DEFAULT_K)]
        k: u32,
        /// The model: offline/extractive, or openai/<name> on the server
        /// OPENAI_BASE_URL names (with OPENAI_API_KEY).
        #[arg(long, value_name = "NAME", env = "RAG_MODEL", default_value = EXTRACTIVE_MODEL)]
        model: String,
        /// Print the flow's output as JSON: {answer, citations, retrieved}.
        #[arg(long)]
        json: bool,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Index { folder } => {
            let report = app::rebuild_index(&args.store, &folder, |file| {
                let n = file.chunks.len();
                let s = if n == 1 { "" } else { "s" };
                eprintln!("indexed {} ({n} chunk{s})", file.source);
            })
            .await?;
            println!(
                "{} files, {} chunks indexed into {}",
                report.files,
                report.chunks,
                args.store.display()
            );
            Ok(())
        }
        Command::Ask {
            question,
            k,
            model,
            json,
        } => {
            if !app::index_exists(&args.store) {
                return Err(Error::failed_precondition(format!(
                    "no index at {}: run `rag index <folder>` first",
                    args.store.display()
                )));
            }
            let app = app::build(&args.store, &model)?;
            let input = Question {
                question,
                k: Some(k),
            };
            let answer: Answer = app.answer.run(input).await?;
            if json {
                let text = serde_json::to_string_pretty(&answer).map_err(|e| {
                    Error::internal(format!("encoding the answer: {e}")).with_source(e)
                })?;
                println!("{text}");
            } else {
                print_answer(&answer);
            }
            Ok(())
        }
    }
}

fn print_answer(answer: &Answer) {
    println!("{}\n", answer.answer);
    if answer.citations.is_empty() {
        println!("(no sources cited; {} retrieved)", answer.retrieved);
    } else {
        println!("Sources:");
        for c in &answer.citations {
            let place = std::iter::once(c.source.as_str())
                .chain(c.headings.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" › ");
            println!("  [{}] {place}", c.number);
        }
    }
    for n in &answer.unknown_citations {
        eprintln!("warning: the answer cites [{n}], which is not one of the sources");
    }
}
