//! Which model the agent talks to: the one named by `--model`
//! (`OPS_AGENT_MODEL`), else the first provider whose key or address is in
//! the environment, else the offline rule-based model.

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

/// Picks the model: `explicit` if given, else from `env` (a lookup, so
/// tests need not touch the process environment).
pub fn choose(explicit: Option<&str>, env: impl Fn(&str) -> Option<String>) -> ModelChoice {
    if let Some(name) = explicit.map(str::trim).filter(|n| !n.is_empty()) {
        return ModelChoice {
            name: name.to_owned(),
            reason: "from --model".into(),
        };
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
            };
        }
    }
    ModelChoice {
        name: OFFLINE_MODEL.into(),
        reason: "rule-based, offline: no API key or OLLAMA_HOST set".into(),
    }
}

/// Adds the plugin `model` needs to `builder` (none for the offline model).
/// A provider named without its key is refused here, before any chat starts.
pub fn with_provider(builder: GenkitBuilder, model: &str) -> Result<GenkitBuilder> {
    let prefix = model.split('/').next().unwrap_or_default();
    Ok(match prefix {
        "openai" => builder.plugin(genkit_openai::OpenAiCompatible::from_env()?),
        "googleai" => builder.plugin(genkit_google_genai::GoogleAi::from_env()?),
        "anthropic" => builder.plugin(genkit_anthropic::Anthropic::from_env()?),
        "ollama" => builder.plugin(genkit_ollama::Ollama::from_env()?),
        "offline" => builder,
        other => {
            return Err(Error::invalid_argument(format!(
                "--model: unknown provider `{other}` in `{model}`; use openai/…, googleai/…, anthropic/…, ollama/… or {OFFLINE_MODEL}"
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

    #[test]
    fn the_environment_picks_the_provider_and_no_key_means_offline() {
        assert_eq!(choose(None, env(&[])).name, OFFLINE_MODEL);
        assert_eq!(
            choose(None, env(&[("OLLAMA_HOST", "127.0.0.1:11434")])).name,
            "ollama/llama3.2"
        );
        let both = [("ANTHROPIC_API_KEY", "k"), ("GEMINI_API_KEY", "k")];
        let chosen = choose(None, env(&both));
        assert_eq!(chosen.name, "googleai/gemini-2.5-flash");
        assert_eq!(chosen.reason, "GEMINI_API_KEY is set");
        assert_eq!(
            choose(None, env(&[("OPENAI_API_KEY", " ")])).name,
            OFFLINE_MODEL
        );
        let proxied = [
            ("OPENAI_API_KEY", "k"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
        ];
        assert_eq!(
            choose(None, env(&proxied)).reason,
            "OPENAI_API_KEY is set, at http://127.0.0.1:8080/v1 (OPENAI_BASE_URL)"
        );
        assert_eq!(
            choose(Some("anthropic/claude-sonnet-4-5"), env(&both)).name,
            "anthropic/claude-sonnet-4-5"
        );
    }

    #[test]
    fn an_unknown_provider_is_refused_by_name() {
        let err = with_provider(Genkit::builder(), "mystery/model").err();
        let message = err.map(|e| e.message().to_owned()).unwrap_or_default();
        assert!(
            message.starts_with("--model: unknown provider `mystery`"),
            "{message}"
        );
    }
}
