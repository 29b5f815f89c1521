//! Retrievers, indexers and rerankers through the facade: typed options,
//! errors, calls by name and over JSON, and retrieved documents reaching
//! the model through `generate`.

use genkit::action::RunOptions;
use genkit::prelude::*;
use genkit::retrieval::indexer::{IndexOptions, IndexerOptions};
use genkit::retrieval::reranker::{RerankOptions, RerankerOptions};
use genkit::retrieval::retriever::{RetrieveOptions, RetrieverOptions};
use genkit::status::StatusCode;
use genkit::testing::ProgrammableModel;
use genkit::types::{
    CommonRetrieverOptions, DocumentData, RankedDocumentData, RerankerResponse, RetrieverResponse,
};
use std::sync::Arc;

fn instance() -> Genkit {
    Genkit::builder().no_prompt_dir().build().expect("instance")
}

/// A word-overlap store: an indexer and a retriever over one shared list.
fn define_store(ai: &Genkit) {
    let docs: Arc<word_store::Store> = Arc::default();
    let d = docs.clone();
    ai.define_indexer(
        IndexerOptions::new("words"),
        move |documents, _o: Option<Value>, _c| {
            let d = d.clone();
            async move {
                d.add(documents);
                Ok(())
            }
        },
    );
    ai.define_retriever(
        RetrieverOptions::new("words").label("Word overlap"),
        move |query: DocumentData, options: Option<CommonRetrieverOptions>, _c| {
            let docs = docs.clone();
            async move {
                let k = options.and_then(|o| o.k).unwrap_or(10) as usize;
                Ok(RetrieverResponse::new(docs.search(&query.text(), k)))
            }
        },
    );
}

mod word_store {
    use genkit::types::DocumentData;
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Store(Mutex<Vec<DocumentData>>);

    impl Store {
        pub fn add(&self, docs: Vec<DocumentData>) {
            self.0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(docs);
        }

        /// Documents sharing a word with `query`, most shared words first.
        pub fn search(&self, query: &str, k: usize) -> Vec<DocumentData> {
            let words: Vec<String> = query
                .to_lowercase()
                .split_whitespace()
                .map(String::from)
                .collect();
            let docs = self.0.lock().unwrap_or_else(|e| e.into_inner());
            let mut scored: Vec<(usize, &DocumentData)> = docs
                .iter()
                .map(|d| {
                    let text = d.text().to_lowercase();
                    (
                        words.iter().filter(|w| text.contains(w.as_str())).count(),
                        d,
                    )
                })
                .filter(|(n, _)| *n > 0)
                .collect();
            scored.sort_by_key(|s| std::cmp::Reverse(s.0));
            scored.into_iter().take(k).map(|(_, d)| d.clone()).collect()
        }
    }
}

fn texts(docs: &[DocumentData]) -> Vec<String> {
    docs.iter().map(DocumentData::text).collect()
}

#[tokio::test]
async fn index_then_retrieve_with_typed_options() {
    let ai = instance();
    define_store(&ai);
    ai.index(IndexOptions::new(
        "words",
        ["the cat sat", "a dog ran", "the cat and the dog"].map(DocumentData::from_text),
    ))
    .await
    .expect("indexed");
    let all = ai
        .retrieve(RetrieveOptions::new("words", "cat dog"))
        .await
        .expect("retrieved");
    assert_eq!(
        texts(&all),
        ["the cat and the dog", "the cat sat", "a dog ran"]
    );
    let one = ai
        .retrieve(
            RetrieveOptions::new("words", "cat dog").options(CommonRetrieverOptions { k: Some(1) }),
        )
        .await
        .expect("retrieved");
    assert_eq!(texts(&one), ["the cat and the dog"]);
    // The retriever's key works as well as its name.
    let by_key = ai
        .retrieve(RetrieveOptions::new("/retriever/words", "sat").options(json!({"k": 5})))
        .await
        .expect("retrieved");
    assert_eq!(texts(&by_key), ["the cat sat"]);
}

#[tokio::test]
async fn options_that_do_not_fit_are_refused_naming_the_field() {
    let ai = instance();
    define_store(&ai);
    let err = ai
        .retrieve(RetrieveOptions::new("words", "cat").options(json!({"k": "three"})))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    assert!(
        err.message().contains("retriever words"),
        "{}",
        err.message()
    );
    assert!(err.message().contains("- k:"), "{}", err.message());
    // CommonRetrieverOptions has no other fields (additionalProperties: false).
    let err = ai
        .retrieve(RetrieveOptions::new("words", "cat").options(json!({"top": 1})))
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
}

#[tokio::test]
async fn unknown_actions_are_not_found() {
    let ai = instance();
    let err = ai
        .retrieve(RetrieveOptions::new("nope", "q"))
        .await
        .expect_err("missing");
    assert_eq!(err.status(), StatusCode::NotFound);
    assert!(err.message().contains("retriever nope"));
    let err = ai
        .index(IndexOptions::new("nope", []))
        .await
        .expect_err("missing");
    assert_eq!(err.status(), StatusCode::NotFound);
    let err = ai
        .rerank(RerankOptions::new("nope", "q", []))
        .await
        .expect_err("missing");
    assert_eq!(err.status(), StatusCode::NotFound);
}

#[tokio::test]
async fn a_retriever_runs_over_json_as_the_dev_ui_calls_it() {
    let ai = instance();
    define_store(&ai);
    ai.index(IndexOptions::new(
        "words",
        [DocumentData::from_text("hello world")],
    ))
    .await
    .expect("indexed");
    let action = ai
        .registry()
        .lookup_action("/retriever/words")
        .await
        .expect("lookup")
        .expect("found");
    let out = action
        .run_json(
            json!({"query": {"content": [{"text": "hello"}]}, "options": {"k": 1}}),
            RunOptions::default(),
        )
        .await
        .expect("ran");
    assert_eq!(
        out.output,
        json!({"documents": [{"content": [{"text": "hello world"}]}]})
    );
    // Its input schema lists the typed options.
    let desc = action.desc().to_descriptor();
    assert!(
        desc["inputSchema"]["properties"]["options"]["properties"]["k"].is_object(),
        "{desc}"
    );
    assert_eq!(desc["metadata"]["info"], json!({"label": "Word overlap"}));
    assert!(desc["metadata"]["retriever"]["customOptions"]["properties"]["k"].is_object());
    // A malformed request is refused with the failing path.
    let err = action
        .run_json(
            json!({"query": {"content": "hello"}}),
            RunOptions::default(),
        )
        .await
        .expect_err("refused");
    assert_eq!(err.status(), StatusCode::InvalidArgument);
    // The indexer's output is null, as Genkit JS's `z.void()`.
    let indexer = ai
        .registry()
        .lookup_action("/indexer/words")
        .await
        .expect("lookup")
        .expect("found");
    let out = indexer
        .run_json(
            json!({"documents": [{"content": [{"text": "more"}]}]}),
            RunOptions::default(),
        )
        .await
        .expect("ran");
    assert_eq!(out.output, Value::Null);
}

#[tokio::test]
async fn rerank_scores_documents() {
    let ai = instance();
    let reranker = ai.define_reranker(
        RerankerOptions::new("byLength"),
        |query: DocumentData, documents: Vec<DocumentData>, _o: Option<Value>, _c| async move {
            // Closer in length to the query ranks higher.
            let q = query.text().len() as f64;
            let mut ranked: Vec<RankedDocumentData> = documents
                .into_iter()
                .map(|d| {
                    let score = -(d.text().len() as f64 - q).abs();
                    RankedDocumentData::new(d, score)
                })
                .collect();
            ranked.sort_by(|a, b| b.score().total_cmp(&a.score()));
            Ok(RerankerResponse::from(ranked))
        },
    );
    let ranked = ai
        .rerank(RerankOptions::new(
            "byLength",
            "abcd",
            ["a", "abc", "abcdefgh"].map(DocumentData::from_text),
        ))
        .await
        .expect("reranked");
    let order: Vec<(String, f64)> = ranked
        .iter()
        .map(|r| (r.clone().into_document().text(), r.score()))
        .collect();
    assert_eq!(
        order,
        [
            ("abc".to_string(), -1.0),
            ("a".to_string(), -3.0),
            ("abcdefgh".to_string(), -4.0)
        ]
    );
    // The typed handle calls the same action.
    let again = reranker
        .rerank("abcd", vec![DocumentData::from_text("abcd")], None)
        .await
        .expect("reranked");
    assert_eq!(again[0].score(), 0.0);
}

#[tokio::test]
async fn retrieved_documents_reach_the_model_as_context() {
    let ai = Genkit::builder()
        .default_model("scripted")
        .no_prompt_dir()
        .build()
        .expect("instance");
    define_store(&ai);
    let model = ProgrammableModel::define(ai.registry(), "scripted").respond_text("Paris [0].");
    ai.index(IndexOptions::new(
        "words",
        [
            DocumentData::from_text("The capital of France is Paris."),
            DocumentData::from_text("Bananas are yellow."),
        ],
    ))
    .await
    .expect("indexed");
    let docs = ai
        .retrieve(
            RetrieveOptions::new("words", "capital France")
                .options(CommonRetrieverOptions { k: Some(1) }),
        )
        .await
        .expect("retrieved");
    assert_eq!(docs.len(), 1);
    let reply = ai
        .generate(GenerateOptions::prompt("What is the capital of France?").docs(docs))
        .await
        .expect("generated");
    assert_eq!(reply.text(), "Paris [0].");
    let request = &model.requests()[0];
    // The model does not take documents natively: the context middleware
    // put them into the last user message, cited by index.
    let last = request.messages.last().expect("a message");
    let text = last.text();
    assert!(text.starts_with("What is the capital of France?"), "{text}");
    assert!(
        text.contains("Use the following information to complete your task:"),
        "{text}"
    );
    assert!(
        text.contains("- [0]: The capital of France is Paris."),
        "{text}"
    );
    assert!(!text.contains("Bananas"), "{text}");
    assert_eq!(request.docs.as_ref().map(Vec::len), Some(1));
}

#[tokio::test]
#[should_panic(expected = "defining retriever `twice`")]
async fn defining_a_retriever_twice_panics() {
    let ai = instance();
    let body = |_q, _o: Option<Value>, _c| async { Ok(RetrieverResponse::default()) };
    ai.define_retriever(RetrieverOptions::new("twice"), body);
    ai.define_retriever(RetrieverOptions::new("twice"), body);
}

#[tokio::test]
async fn evaluate_a_dataset_through_the_facade() {
    use genkit::evaluator::builtin::{GenkitMetric, define_genkit_evaluators};
    use genkit::evaluator::{EvaluateOptions, EvaluatorOptions};
    use genkit::types::{BaseDataPoint, EvalStatus, Evaluation, Score};
    let ai = instance();
    ai.define_evaluator(
        EvaluatorOptions::new("mentionsParis", "Mentions Paris", "The output names Paris")
            .is_billed(false),
        |point, _o: Option<Value>, _c| async move {
            let text = point
                .output
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default();
            Ok(Score::pass_fail(text.contains("Paris")))
        },
    );
    define_genkit_evaluators(ai.registry(), &[GenkitMetric::JsonSchema]).expect("defined");
    let dataset = [
        BaseDataPoint::new("capital of France?").output("Paris"),
        BaseDataPoint::new("capital of Italy?").output("Rome"),
    ];
    let results = ai
        .evaluate(EvaluateOptions::new("mentionsParis", dataset))
        .await
        .expect("evaluated");
    let statuses: Vec<Option<EvalStatus>> = results
        .iter()
        .map(|r| match &r.evaluation {
            Evaluation::One(s) => s.status,
            Evaluation::Many(_) => None,
        })
        .collect();
    assert_eq!(statuses, [Some(EvalStatus::Pass), Some(EvalStatus::Fail)]);
    let schema = json!({"type": "object", "required": ["answer"]});
    let results = ai
        .evaluate(EvaluateOptions::new(
            "genkitEval/json_schema",
            [BaseDataPoint::new("q")
                .output("{\"answer\": 1}")
                .reference(schema)],
        ))
        .await
        .expect("evaluated");
    assert_eq!(
        results[0].evaluation,
        Evaluation::One(Score::pass_fail(true))
    );
}

/// Words hashed into 64 dimensions: texts sharing words are close.
fn define_word_embedder(ai: &Genkit) {
    use genkit::embedder::EmbedderOptions;
    use genkit::types::{EmbedResponse, Embedding};
    ai.define_embedder(EmbedderOptions::new("words64"), |req, _ctx| async move {
        let embeddings = req
            .input
            .iter()
            .map(|d| {
                let mut v = vec![0.0f32; 64];
                for w in d
                    .text()
                    .to_lowercase()
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 2)
                {
                    let h = w
                        .bytes()
                        .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
                    v[(h % 64) as usize] += 1.0;
                }
                Embedding {
                    embedding: v,
                    metadata: None,
                }
            })
            .collect();
        Ok(EmbedResponse { embeddings })
    });
}

#[tokio::test]
async fn rag_over_a_folder_of_markdown() {
    use genkit::retrieval::chunk::{ChunkOptions, markdown_documents};
    use genkit::retrieval::local_vector_store::LocalVectorStoreOptions;
    let dir = std::env::temp_dir().join(format!(
        "genkit-rag-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let docs_dir = dir.join("docs");
    std::fs::create_dir_all(&docs_dir).expect("dir");
    std::fs::write(
        docs_dir.join("install.md"),
        "# Installing\n\nRun the installer with cargo install widget.\n\n## Upgrading\n\nUpgrading keeps your settings.",
    )
    .expect("written");
    std::fs::write(
        docs_dir.join("colors.md"),
        "# Colors\n\nThe widget comes in red and blue.",
    )
    .expect("written");

    let ai = Genkit::builder()
        .default_model("scripted")
        .no_prompt_dir()
        .build()
        .expect("instance");
    define_word_embedder(&ai);
    let store = ai.define_local_vector_store(
        LocalVectorStoreOptions::new("docs", "words64").path(dir.join("db.json")),
    );
    let model = ProgrammableModel::define(ai.registry(), "scripted")
        .respond_text("Use cargo install widget [install.md#0].");

    // Index the folder: a few lines.
    let opts = ChunkOptions::new(200, 20).expect("options");
    let mut entries: Vec<_> = std::fs::read_dir(&docs_dir)
        .expect("read")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path).expect("read");
        ai.index(IndexOptions::new(
            store.indexer.name(),
            markdown_documents(&name, &text, &opts),
        ))
        .await
        .expect("indexed");
    }

    let question = "How do I install the widget with cargo?";
    let docs = ai
        .retrieve(
            RetrieveOptions::new(store.retriever.name(), question)
                .options(CommonRetrieverOptions { k: Some(1) }),
        )
        .await
        .expect("retrieved");
    assert_eq!(docs.len(), 1);
    let meta = docs[0].metadata.clone().expect("metadata");
    assert_eq!(meta["source"], "install.md");
    assert_eq!(meta["headings"], json!(["Installing"]));
    // Cite each document by its source and chunk.
    let docs: Vec<DocumentData> = docs
        .into_iter()
        .map(|mut d| {
            if let Some(m) = d.metadata.as_mut() {
                let cite = format!(
                    "{}#{}",
                    m["source"].as_str().unwrap_or_default(),
                    m["chunk"]
                );
                m.insert("ref".into(), json!(cite));
            }
            d
        })
        .collect();
    let reply = ai
        .generate(GenerateOptions::prompt(question).docs(docs))
        .await
        .expect("generated");
    assert_eq!(reply.text(), "Use cargo install widget [install.md#0].");
    let prompt = model.requests()[0].messages.last().expect("message").text();
    assert!(
        prompt.contains(
            "- [install.md#0]: # Installing\n\nRun the installer with cargo install widget."
        ),
        "{prompt}"
    );
    assert!(!prompt.contains("red and blue"), "{prompt}");
    let _ = std::fs::remove_dir_all(dir);
}
