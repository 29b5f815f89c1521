//! Where the conformance test vectors published by Genkit and Dotprompt are
//! read from, for every test harness of the workspace:
//!
//! 1. the folder named by the environment variable (`GENKIT_CONFORMANCE_DIR`,
//!    `DOTPROMPT_SPEC_DIR`), so a newer release of the spec runs with no code
//!    change;
//! 2. else `../shared/conformance/<suite>` beside the repository, when present;
//! 3. else the copy kept in the repository under `conformance/<suite>`
//!    (unchanged, with its LICENSE and SOURCE.txt), so a clone runs its tests
//!    anywhere.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    // This crate lives in `<repo>/crates/genkit-conformance`.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn locate(env_var: &str, suite: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os(env_var) {
        return PathBuf::from(dir);
    }
    let root = repo_root();
    let shared = root.join("../shared/conformance").join(suite);
    if shared.is_dir() {
        return shared;
    }
    root.join("conformance").join(suite)
}

/// The folder of Genkit's vectors (`genkit-schema.json`, `generate.yaml`, ...).
pub fn genkit_dir() -> PathBuf {
    locate("GENKIT_CONFORMANCE_DIR", "genkit")
}

/// The folder of Dotprompt's spec cases (`*.yaml`).
pub fn dotprompt_dir() -> PathBuf {
    locate("DOTPROMPT_SPEC_DIR", "dotprompt")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_suites_are_found() {
        assert!(super::genkit_dir().join("genkit-schema.json").is_file());
        assert!(super::dotprompt_dir().join("picoschema.yaml").is_file());
    }
}
