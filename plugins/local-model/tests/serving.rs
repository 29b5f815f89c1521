//! The model action over SmolLM2: streaming, cancellation by dropping the
//! stream, concurrent requests on one loaded model, config and usage.

mod common;

use futures::StreamExt;
use genkit::types::{FinishReason, GenerateRequest, Message};
use genkit_local_model::model_action;
use serde_json::json;
use std::time::{Duration, Instant};

fn request(prompt: &str, config: serde_json::Value) -> GenerateRequest {
    GenerateRequest::new(vec![Message::user(prompt)]).with_config(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_token_by_token_with_usage_and_config() {
    let Some(model) = common::model() else { return };
    let action = model_action("gguf/smollm2", model);
    let mut stream = action.action().stream(request(
        "What is the capital of France?",
        json!({"temperature": 0, "maxOutputTokens": 8}),
    ));
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.unwrap().text());
    }
    let response = stream.output().await.unwrap();
    // Greedy: llama.cpp's first 8 tokens for this prompt (see
    // fixtures/llama_cpp_reference.json, case 0).
    assert_eq!(response.text(), "L'Étoile, la Mar");
    assert_eq!(chunks.concat(), response.text());
    assert!(chunks.len() >= 6, "one chunk per token or so: {chunks:?}");
    assert_eq!(response.finish_reason(), Some(FinishReason::Length));
    let usage = response.usage.as_ref().unwrap();
    assert_eq!(usage.input_tokens, Some(37));
    assert_eq!(usage.output_tokens, Some(8));
    assert_eq!(usage.total_tokens, Some(45));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_sequences_end_the_answer_before_them() {
    let Some(model) = common::model() else { return };
    let action = model_action("gguf/smollm2", model);
    let response = action
        .action()
        .run(request(
            "What is the capital of France?",
            json!({"temperature": 0, "maxOutputTokens": 16, "stopSequences": [", la"]}),
        ))
        .await
        .unwrap();
    assert_eq!(response.text(), "L'Étoile");
    assert_eq!(response.finish_reason(), Some(FinishReason::Stop));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_stops_decoding_within_one_token() {
    // A model of its own: the counters must see this request only, not
    // the other tests' running alongside.
    let Some(path) = common::gguf_path() else {
        return;
    };
    let model = std::sync::Arc::new(genkit_local_model::LocalModel::load(path).unwrap());
    let action = model_action("gguf/smollm2", model.clone());
    let mut stream = action.action().stream(request(
        "Write a long story about a dragon.",
        json!({"temperature": 0, "maxOutputTokens": 200}),
    ));
    for _ in 0..3 {
        stream.next().await.unwrap().unwrap();
    }
    let at_drop = model.positions_computed();
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(30);
    while model.active_requests() > 0 {
        assert!(Instant::now() < deadline, "decoding did not stop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let after = model.positions_computed();
    assert!(
        after - at_drop <= 1,
        "{} tokens were computed after the stream was dropped",
        after - at_drop
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_share_one_loaded_model() {
    let Some(model) = common::model() else { return };
    let action = model_action("gguf/smollm2", model.clone());
    let prompts = [
        "What is the capital of France?",
        "Write a haiku about the sea.",
        "List three colors of the rainbow.",
        "Tell me a fun fact about cats.",
    ];
    // Each prompt alone first, then all four at once: the same answers.
    let config = json!({"temperature": 0, "maxOutputTokens": 6});
    let mut alone = Vec::new();
    for p in prompts {
        let r = action.action().run(request(p, config.clone()));
        alone.push(r.await.unwrap().text());
    }
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let watcher = {
        let (model, peak) = (model.clone(), peak.clone());
        tokio::spawn(async move {
            loop {
                peak.fetch_max(model.active_requests(), std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let together = futures::future::join_all(prompts.iter().map(|p| {
        let r = action.action().run(request(p, config.clone()));
        async move { r.await.unwrap().text() }
    }))
    .await;
    watcher.abort();
    assert_eq!(together, alone);
    assert!(
        peak.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "the requests never decoded at the same time"
    );
}

#[tokio::test]
async fn missing_damaged_and_unsupported_files_fail_clearly() {
    use genkit_core::StatusCode;
    use genkit_local_model::LocalModel;
    let dir = std::env::temp_dir().join(format!("genkit-local-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    let missing = LocalModel::load(dir.join("nope.gguf")).unwrap_err();
    assert_eq!(
        missing.status(),
        StatusCode::FailedPrecondition,
        "{missing}"
    );

    std::fs::write(dir.join("garbage.gguf"), b"this is not a model at all").unwrap();
    let garbage = LocalModel::load(dir.join("garbage.gguf")).unwrap_err();
    assert_eq!(garbage.status(), StatusCode::InvalidArgument, "{garbage}");
    assert!(
        garbage.message().contains("not a readable GGUF"),
        "{garbage}"
    );

    if let Some(path) = common::gguf_path() {
        // The real file cut in half: the tensor directory points past the end.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(dir.join("truncated.gguf"), &bytes[..bytes.len() / 2]).unwrap();
        let truncated = LocalModel::load(dir.join("truncated.gguf")).unwrap_err();
        assert_eq!(
            truncated.status(),
            StatusCode::InvalidArgument,
            "{truncated}"
        );
        assert!(truncated.message().contains("truncated"), "{truncated}");

        // The real file with another architecture name in its metadata.
        let at = bytes
            .windows(5)
            .position(|w| w == b"llama")
            .expect("the architecture value");
        let mut other = bytes.clone();
        other[at..at + 5].copy_from_slice(b"gemma");
        std::fs::write(dir.join("gemma.gguf"), &other).unwrap();
        let unsupported = LocalModel::load(dir.join("gemma.gguf")).unwrap_err();
        assert_eq!(
            unsupported.status(),
            StatusCode::InvalidArgument,
            "{unsupported}"
        );
        assert!(
            unsupported
                .message()
                .contains("unsupported model architecture `gemma`"),
            "{unsupported}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_serves_its_models_through_generate() {
    use genkit::Genkit;
    use genkit::generate::GenerateOptions;
    use genkit_core::StatusCode;
    use genkit_local_model::LocalModels;
    let Some(model) = common::model() else { return };
    let ai = Genkit::builder()
        .plugin(
            LocalModels::new()
                .loaded("smollm2", model)
                .model("absent", "/nonexistent/model.gguf"),
        )
        .build()
        .unwrap();
    let answer = ai
        .generate(
            GenerateOptions::prompt("What is the capital of France?")
                .model("gguf/smollm2")
                .config(json!({"temperature": 0, "maxOutputTokens": 5})),
        )
        .await
        .unwrap();
    assert_eq!(answer.text(), "L'Étoile");
    let absent = ai
        .generate(GenerateOptions::prompt("Hi").model("gguf/absent"))
        .await
        .unwrap_err();
    assert_eq!(absent.status(), StatusCode::FailedPrecondition, "{absent}");
    assert!(
        absent.message().contains("/nonexistent/model.gguf"),
        "{absent}"
    );
}
