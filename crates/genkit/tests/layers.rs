//! The crates keep their layers: a crate depends only on crates of lower
//! layers (the compiler then keeps a lower layer from reaching up), and
//! inside `genkit-model` a module imports only from modules of its layer or
//! below. A new crate or module must be placed in a layer here.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every workspace crate by layer, lowest first.
const CRATE_LAYERS: &[&[&str]] = &[
    &[
        "genkit-core",
        "dotprompt",
        "genkit-conformance",
        "genkit-local-model-exact",
    ],
    &["genkit-model", "genkit-server"],
    &[
        "genkit-generate",
        "genkit-middleware",
        "genkit-retrieval",
        "genkit-session",
        "genkit-provider",
    ],
    &[
        "genkit-prompt",
        "genkit-evaluator",
        "genkit-pgvector",
        "genkit-store-sql",
        "genkit-store-firestore",
        "genkit-openai",
        "genkit-anthropic",
        "genkit-google-genai",
        "genkit-ollama",
        "genkit-local-embedder",
        "genkit-mcp",
        "genkit-local-model",
    ],
    &["genkit-agent"],
    &["genkit-rs"],
    &["ops-agent", "rag", "genkit-bench"],
];

/// Crates that must not be linked by provider plugins and session stores
/// (they build without the agent runtime, retrieval or evaluators).
const HEAVY: &[&str] = &[
    "genkit-agent",
    "genkit-retrieval",
    "genkit-evaluator",
    "genkit-prompt",
    "genkit-generate",
];

/// `genkit-model`'s top-level modules by layer, lowest first.
const MODEL_MODULE_LAYERS: &[&[&str]] = &[
    &["extract", "canonical", "action_support"],
    &["types"],
    &["formats", "tool", "embedder", "resource"],
    &["middleware", "span_record"],
    &["model"],
    &["testing"],
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn layer_of(layers: &[&[&str]], name: &str) -> Option<usize> {
    layers.iter().position(|layer| layer.contains(&name))
}

/// Each workspace crate's normal (not dev or build) dependencies on other
/// workspace crates, from `cargo metadata`.
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_owned)
                .collect();
            (p["name"].as_str().unwrap_or_default().to_owned(), deps)
        })
        .collect()
}

#[test]
fn no_crate_depends_on_a_crate_of_its_layer_or_above() {
    let mut wrong = Vec::new();
    for (name, deps) in workspace_dependencies() {
        let Some(layer) = layer_of(CRATE_LAYERS, &name) else {
            wrong.push(format!("{name} is in no layer: place it in CRATE_LAYERS"));
            continue;
        };
        for dep in deps {
            match layer_of(CRATE_LAYERS, &dep) {
                Some(l) if l < layer => {}
                _ => wrong.push(format!("{name} (layer {layer}) depends on {dep}")),
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn provider_plugins_and_session_stores_link_no_agent_retrieval_or_evaluator_code() {
    let deps = workspace_dependencies();
    let light = [
        "genkit-provider",
        "genkit-openai",
        "genkit-anthropic",
        "genkit-google-genai",
        "genkit-ollama",
        "genkit-local-embedder",
        "genkit-local-model",
        "genkit-store-sql",
        "genkit-store-firestore",
        "genkit-mcp",
    ];
    for name in light {
        // Everything the crate links, transitively.
        let mut seen: Vec<String> = Vec::new();
        let mut todo = vec![name.to_owned()];
        while let Some(next) = todo.pop() {
            for dep in deps.get(&next).into_iter().flatten() {
                if !seen.contains(dep) {
                    seen.push(dep.clone());
                    todo.push(dep.clone());
                }
            }
        }
        let heavy: Vec<&String> = seen
            .iter()
            .filter(|d| HEAVY.contains(&d.as_str()))
            .collect();
        assert!(heavy.is_empty(), "{name} links {heavy:?}");
    }
}

/// The `crate::<module>` paths a source file names outside its tests (by
/// convention, and clippy's `items_after_test_module`, a file's test module
/// comes last) and comments.
fn crate_paths(source: &str) -> Vec<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let module: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                .collect();
            if !module.is_empty() {
                out.push(module);
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn genkit_model_modules_import_only_from_their_layer_or_below() {
    let src = workspace_root().join("crates/genkit-model/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or_default()
            .trim_end_matches(".rs")
            .to_owned();
        if top == "lib" {
            continue;
        }
        let Some(layer) = layer_of(MODEL_MODULE_LAYERS, &top) else {
            wrong.push(format!(
                "module {top} is in no layer: place it in MODEL_MODULE_LAYERS"
            ));
            continue;
        };
        let source = std::fs::read_to_string(&file).expect("a source file");
        for module in crate_paths(&source) {
            match layer_of(MODEL_MODULE_LAYERS, &module) {
                Some(l) if l <= layer => {}
                Some(_) => wrong.push(format!(
                    "{} (module {top}) imports crate::{module}, a higher layer",
                    relative.display()
                )),
                // Macros exported at the crate root (`crate::as_generate_middleware`).
                None => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// One module layout: a module with submodules is a folder with `mod.rs`
/// (the style most of the workspace used), never `name.rs` beside `name/`.
#[test]
fn modules_with_submodules_live_in_their_folders_mod_rs() {
    let root = workspace_root();
    let mut files = Vec::new();
    for group in ["crates", "plugins", "examples"] {
        let Ok(entries) = std::fs::read_dir(root.join(group)) else {
            continue;
        };
        for entry in entries.flatten() {
            let src = entry.path().join("src");
            if src.is_dir() {
                rust_files(&src, &mut files);
            }
        }
    }
    assert!(
        !files.is_empty(),
        "no sources found under {}",
        root.display()
    );
    let mixed: Vec<String> = files
        .iter()
        .filter(|file| file.file_name().is_some_and(|name| name != "mod.rs"))
        .filter(|file| file.with_extension("").is_dir())
        .map(|file| {
            file.strip_prefix(&root)
                .unwrap_or(file)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        mixed.is_empty(),
        "move these modules into their folders as mod.rs: {mixed:?}"
    );
}
