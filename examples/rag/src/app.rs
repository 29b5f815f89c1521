//! The app's Genkit instance: the local embedder, the local vector store
//! of the indexed chunks, the model, and the `answerQuestion` flow that
//! retrieves, generates and resolves the answer's citations.

use std::path::{Path, PathBuf};

use genkit::action::Action;
use genkit::flow::FlowContext;
use genkit::prelude::*;
use genkit::retrieval::indexer::IndexOptions;
use genkit::retrieval::local_vector_store::{LocalVectorStoreOptions, PLUGIN_NAME};
use genkit::retrieval::retriever::RetrieveOptions;
use genkit::types::CommonRetrieverOptions;
use genkit_local_embedder::{EMBEDDER, LocalEmbedder};

use crate::citations::{Citation, number_sources, resolve};
use crate::corpus::{SourceFile, markdown_files};
use crate::extractive::{EXTRACTIVE_MODEL, define_extractive_model};

/// The flow's name (`/flow/answerQuestion`).
pub const ANSWER_FLOW: &str = "answerQuestion";
/// The vector store's index name (`devLocalVectorstore/docs`).
pub const INDEX: &str = "docs";

/// The name the store's retriever and indexer are registered under.
fn store_action() -> String {
    format!("{PLUGIN_NAME}/{INDEX}")
}

/// Sources retrieved per question unless the input says `k`.
pub const DEFAULT_K: u32 = 4;
/// The most sources one question may ask for.
pub const MAX_K: u32 = 20;

const SYSTEM: &str = "Answer the question using only the numbered sources you are given. After \
each sentence, cite the sources it comes from by number in square brackets, like [1] or [1, 2]. \
If the sources do not contain the answer, say that the indexed documents do not answer the \
question, and cite nothing.";

/// The `answerQuestion` flow's input.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Question {
    /// What to answer.
    pub question: String,
    /// How many sources to retrieve (1 to 20; default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u32>,
}

/// The `answerQuestion` flow's output.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    /// The model's answer, with its `[n]` citation markers.
    pub answer: String,
    /// The sources the answer cites, in order of first citation.
    pub citations: Vec<Citation>,
    /// Numbers the answer cites that name no retrieved source (a model
    /// making up a citation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown_citations: Vec<u32>,
    /// How many sources were retrieved and given to the model.
    pub retrieved: usize,
}

/// The built app.
pub struct App {
    /// The Genkit instance.
    pub ai: Genkit,
    /// The `answerQuestion` flow.
    pub answer: Action<Question, Answer>,
}

/// Builds the app over the vector store file `store`, answering with
/// `model` (the extractive model, or `openai/<name>` on the OpenAI-compatible
/// server `OPENAI_BASE_URL` names).
pub fn build(store: &Path, model: &str) -> Result<App> {
    let mut builder = Genkit::builder()
        .no_prompt_dir()
        .plugin(LocalEmbedder::new())
        .default_model(model);
    match model.split('/').next().unwrap_or_default() {
        "offline" if model == EXTRACTIVE_MODEL => {}
        "openai" => builder = builder.plugin(genkit_openai::OpenAiCompatible::from_env()?),
        _ => {
            return Err(Error::invalid_argument(format!(
                "--model: `{model}` is not a model this app knows; use {EXTRACTIVE_MODEL} or \
                 openai/<name> (with OPENAI_API_KEY, and OPENAI_BASE_URL for a local server)"
            )));
        }
    }
    let ai = builder.build()?;
    define_extractive_model(&ai);
    ai.define_local_vector_store(LocalVectorStoreOptions::new(INDEX, EMBEDDER).path(store));
    let model_name = model.to_owned();
    let answer_flow = ai.define_flow(ANSWER_FLOW, move |input: Question, ctx: FlowContext| {
        let model = model_name.clone();
        async move { answer(&ctx.genkit()?, &model, input).await }
    });
    Ok(App {
        ai,
        answer: answer_flow,
    })
}

/// Retrieves the question's sources, asks `model`, and resolves the
/// citations of its answer.
async fn answer(ai: &Genkit, model: &str, input: Question) -> Result<Answer> {
    let question = input.question.trim();
    if question.is_empty() {
        return Err(Error::invalid_argument("question: must not be empty"));
    }
    let k = input.k.unwrap_or(DEFAULT_K);
    if !(1..=MAX_K).contains(&k) {
        return Err(Error::invalid_argument(format!(
            "k: must be between 1 and {MAX_K}, not {k}"
        )));
    }
    let docs = ai
        .retrieve(
            RetrieveOptions::new(store_action(), question)
                .options(CommonRetrieverOptions { k: Some(k) }),
        )
        .await?;
    if docs.is_empty() {
        return Err(Error::failed_precondition(
            "nothing is indexed: run `rag index <folder>` first",
        ));
    }
    let sources = number_sources(docs);
    let response = ai
        .generate(
            GenerateOptions::prompt(question)
                .model(model)
                .system(SYSTEM)
                .docs(sources.clone()),
        )
        .await?;
    let text = response.text();
    let (citations, unknown_citations) = resolve(&text, &sources);
    Ok(Answer {
        answer: text,
        citations,
        unknown_citations,
        retrieved: sources.len(),
    })
}

/// What indexing a folder did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexReport {
    /// Markdown files indexed.
    pub files: usize,
    /// Chunks embedded and stored.
    pub chunks: usize,
}

/// Rebuilds the index at `store` from every Markdown file under `dir`.
/// The new index is written beside the old one and renamed over it only
/// once complete, so a failure (an unreadable file, the embedder missing)
/// leaves the previous index as it was. `progress` hears of each file.
pub async fn rebuild_index(
    store: &Path,
    dir: &Path,
    mut progress: impl FnMut(&SourceFile),
) -> Result<IndexReport> {
    let files = markdown_files(dir)?;
    if files.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} has no Markdown (.md) files",
            dir.display()
        )));
    }
    if let Some(parent) = store.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            Error::invalid_argument(format!("creating the folder {}: {e}", parent.display()))
        })?;
    }
    // The new index is built under another name (`<name>.partial.json`,
    // so its files are `<name>.partial.vdb` and `.hnsw`) and its files
    // renamed over the store's once complete.
    let partial = partial_path(store);
    let (from, to) = (store_files(&partial), store_files(store));
    for f in &from {
        remove_if_present(f)?;
    }
    let result = index_into(&partial, &files, &mut progress).await;
    match result {
        Ok(report) => {
            for (f, t) in from.iter().zip(&to) {
                let moved = if f.exists() {
                    std::fs::rename(f, t)
                } else {
                    // No graph was built (a small index): drop the old one.
                    remove_if_present(t).map_err(std::io::Error::other)
                };
                moved.map_err(|e| {
                    Error::internal(format!(
                        "moving the new index {} to {}: {e}",
                        f.display(),
                        t.display()
                    ))
                })?;
            }
            Ok(report)
        }
        Err(e) => {
            // Nothing of the failed run stays behind; the old index is untouched.
            for f in &from {
                let _ = std::fs::remove_file(f);
            }
            Err(e)
        }
    }
}

/// The files of the store at `store`: its data file, then its graph file.
fn store_files(store: &Path) -> [PathBuf; 2] {
    let opts = LocalVectorStoreOptions::new(INDEX, EMBEDDER).path(store);
    [opts.data_file(), opts.graph_file()]
}

/// Whether there is an index at `store`: its data file, or a JSON store
/// (which the vector store imports on first use).
pub fn index_exists(store: &Path) -> bool {
    store_files(store)[0].is_file() || store.is_file()
}

async fn index_into(
    partial: &Path,
    files: &[SourceFile],
    progress: &mut impl FnMut(&SourceFile),
) -> Result<IndexReport> {
    // Indexing needs no model: the extractive one keeps the build offline.
    let app = build(partial, EXTRACTIVE_MODEL)?;
    let indexer = store_action();
    let mut chunks = 0;
    for file in files.iter().filter(|f| !f.chunks.is_empty()) {
        app.ai
            .index(IndexOptions::new(indexer.as_str(), file.chunks.clone()))
            .await?;
        chunks += file.chunks.len();
        progress(file);
    }
    if chunks == 0 {
        return Err(Error::invalid_argument(
            "the Markdown files hold no text to index",
        ));
    }
    Ok(IndexReport {
        files: files.len(),
        chunks,
    })
}

fn partial_path(store: &Path) -> PathBuf {
    let stem = store.file_stem().unwrap_or_default().to_string_lossy();
    store.with_file_name(format!("{stem}.partial.json"))
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::internal(format!("removing {}: {e}", path.display()))),
    }
}
