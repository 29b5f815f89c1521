//! The built-in middleware registered by name with Genkit JS's names,
//! descriptions and config schemas, so a request or a prompt file can say
//! `use: [{name: retry, config: {maxRetries: 2}}]` and the Dev UI can list
//! them with a config form.

use crate::{Retry, Skills, fallback, filesystem::Filesystem, retry};
use genkit_core::{Error, Registry, Result, StatusCode};
use genkit_model::middleware::{MiddlewareDesc, define_middleware_desc};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Genkit JS's config schemas, as its `toJson()` lists them.
pub(crate) mod schemas {
    use serde_json::Value;
    use std::sync::LazyLock;

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("bundled schema parses: {e}"))
    }

    pub static FILESYSTEM: LazyLock<Value> =
        LazyLock::new(|| parse(include_str!("schemas/filesystem.json")));
    pub static SKILLS: LazyLock<Value> =
        LazyLock::new(|| parse(include_str!("schemas/skills.json")));
    pub static RETRY: LazyLock<Value> = LazyLock::new(|| parse(include_str!("schemas/retry.json")));
    pub static FALLBACK: LazyLock<Value> =
        LazyLock::new(|| parse(include_str!("schemas/fallback.json")));
}

/// The listing of `retry` (name, description, config schema).
pub fn retry_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(
        "retry",
        "Retries a request a specified number of times when a specific set of errors occurs",
    )
    .with_config_schema(schemas::RETRY.clone())
}

/// The listing of `fallback`.
pub fn fallback_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(
        "fallback",
        "Fallback to a different model on specific error statuses.",
    )
    .with_config_schema(schemas::FALLBACK.clone())
}

/// The listing of `filesystem`.
pub fn filesystem_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(
        "filesystem",
        "Injects tools for reading, writing, and searching files in a directory.",
    )
    .with_config_schema(schemas::FILESYSTEM.clone())
}

/// The listing of `skills`.
pub fn skills_desc() -> MiddlewareDesc {
    MiddlewareDesc::new(
        "skills",
        "Injects system instructions and tools for using skills.",
    )
    .with_config_schema(schemas::SKILLS.clone())
}

/// Registers `retry`, `fallback`, `filesystem` and `skills` by name with
/// Genkit JS's config schemas (`toolApproval` is registered by
/// [`define_tool_approval`](crate::define_tool_approval)).
pub fn define_builtin_middleware(registry: &Registry) -> Result<()> {
    define_middleware_desc(registry, retry_desc(), |config| {
        Ok(Arc::new(Retry::from_config(config)?))
    })?;
    let reg = registry.clone();
    define_middleware_desc(registry, fallback_desc(), move |config| {
        Ok(Arc::new(fallback_from_config(&reg, config)?))
    })?;
    define_middleware_desc(registry, filesystem_desc(), |config| {
        Ok(Arc::new(Filesystem::from_config(config)?))
    })?;
    define_middleware_desc(registry, skills_desc(), |config| {
        Ok(Arc::new(Skills::from_config(config)?))
    })?;
    Ok(())
}

fn statuses(names: &[String]) -> Result<Vec<StatusCode>> {
    names
        .iter()
        .map(|n| {
            StatusCode::from_name(n)
                .ok_or_else(|| Error::invalid_argument(format!("unknown status `{n}`")))
        })
        .collect()
}

fn millis(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::ZERO)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetryConfig {
    max_retries: Option<f64>,
    statuses: Option<Vec<String>>,
    initial_delay_ms: Option<f64>,
    max_delay_ms: Option<f64>,
    backoff_factor: Option<f64>,
    no_jitter: Option<bool>,
}

impl Retry {
    /// Builds retry from Genkit JS's config keys (`maxRetries`, `statuses`,
    /// `initialDelayMs`, `maxDelayMs`, `backoffFactor`, `noJitter`); absent
    /// keys keep [`retry`]'s defaults.
    pub fn from_config(config: Option<&Value>) -> Result<Self> {
        let mut r = retry();
        let Some(config) = config else {
            return Ok(r);
        };
        let c: RetryConfig = serde_json::from_value(config.clone())
            .map_err(|e| Error::invalid_argument(format!("retry middleware config: {e}")))?;
        if let Some(n) = c.max_retries {
            r = r.max_retries(n.max(0.0).min(u32::MAX as f64) as u32);
        }
        if let Some(s) = &c.statuses {
            r = r.statuses(statuses(s)?);
        }
        if let Some(ms) = c.initial_delay_ms {
            r = r.initial_delay(millis(ms));
        }
        if let Some(ms) = c.max_delay_ms {
            r = r.max_delay(millis(ms));
        }
        if let Some(f) = c.backoff_factor {
            r = r.backoff_factor(f);
        }
        if let Some(no) = c.no_jitter {
            r = r.jitter(!no);
        }
        Ok(r)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ModelRef {
    Name(String),
    WithConfig { name: String, config: Option<Value> },
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FallbackConfig {
    #[serde(default)]
    models: Vec<ModelRef>,
    statuses: Option<Vec<String>>,
    isolate_config: Option<bool>,
}

/// Builds fallback from Genkit JS's config keys (`models` as
/// `[{name, config}]` or plain names, `statuses`, `isolateConfig`).
pub fn fallback_from_config(
    registry: &Registry,
    config: Option<&Value>,
) -> Result<crate::Fallback> {
    let c: FallbackConfig = match config {
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| Error::invalid_argument(format!("fallback middleware config: {e}")))?,
        None => FallbackConfig {
            models: Vec::new(),
            statuses: None,
            isolate_config: None,
        },
    };
    let mut f = fallback(registry, Vec::<String>::new());
    for m in c.models {
        f = match m {
            ModelRef::Name(name) | ModelRef::WithConfig { name, config: None } => f.model(name),
            ModelRef::WithConfig {
                name,
                config: Some(config),
            } => f.model_with_config(name, config),
        };
    }
    if let Some(s) = &c.statuses {
        f = f.statuses(statuses(s)?);
    }
    if let Some(on) = c.isolate_config {
        f = f.isolate_config(on);
    }
    Ok(f)
}
