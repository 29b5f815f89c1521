//! The SmolLM2 GGUF for the tests, loaded once per test binary.
//!
//! The file comes from `tests-support/local-model/install-gguf.sh`
//! (`test.sh` runs it and exports `GENKIT_LOCAL_MODEL_GGUF`). Without it
//! the tests say so and pass, except under `CI=true`, where they fail.

use genkit_local_model::LocalModel;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// The GGUF file's path, or `None` (outside CI) when it is missing.
pub fn gguf_path() -> Option<PathBuf> {
    let path = std::env::var_os(genkit_local_model::MODEL_PATH_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(genkit_local_model::default_smollm2_path)
        .filter(|p| p.is_file());
    if path.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "SmolLM2-135M-Instruct is not installed: run tests-support/local-model/install-gguf.sh \
             and set GENKIT_LOCAL_MODEL_GGUF to the file it prints"
        );
        eprintln!(
            "SKIPPED: SmolLM2-135M-Instruct is not installed (tests-support/local-model/install-gguf.sh)"
        );
    }
    path
}

/// The model, loaded once for all tests of a binary.
#[allow(dead_code)] // not every test binary shares a loaded model
pub fn model() -> Option<Arc<LocalModel>> {
    static MODEL: OnceLock<Option<Arc<LocalModel>>> = OnceLock::new();
    MODEL
        .get_or_init(|| gguf_path().map(|p| Arc::new(LocalModel::load(p).expect("the GGUF loads"))))
        .clone()
}
