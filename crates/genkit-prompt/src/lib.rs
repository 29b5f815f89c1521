//! Prompts: Dotprompt templates as executable prompt actions.
//!
//! A prompt is defined in code with [`define_prompt`] or loaded from
//! `.prompt` files with [`load_prompt_folder`]. Either way it is registered
//! twice: `/prompt/<name>` renders the model request (`GenerateRequest`) and
//! `/executable-prompt/<name>` the generate options
//! (`GenerateActionOptions`), both listed with Genkit's prompt metadata and
//! taking the prompt's input. [`prompt`] finds it again as an
//! [`ExecutablePrompt`], which renders and generates (or streams) with the
//! prompt's model, config, tools, output format and schema, tool choice and
//! turn limit.
//!
//! Helpers ([`define_helper`]), partials ([`define_partial`], `_name.prompt`
//! files) and named schemas ([`define_schema`]) belong to the registry and
//! are visible to every prompt in it.
//!
//! ```
//! use genkit_prompt::{PromptConfig, define_prompt, prompt};
//! use genkit_model::testing::define_echo_model;
//! use genkit_core::Registry;
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> genkit_core::Result<()> {
//! let registry = Registry::new();
//! define_echo_model(&registry, "echo")?;
//! define_prompt(
//!     &registry,
//!     PromptConfig::new("greet")
//!         .model("echo")
//!         .input_picoschema(json!({"name": "string"}))
//!         .system("You are terse.")
//!         .prompt("Say hello to {{name}}."),
//! )?;
//!
//! let greet = prompt::<serde_json::Value, serde_json::Value>(&registry, "greet", None)?;
//! let response = greet.call(json!({"name": "Ada"})).await?;
//! assert_eq!(response.text(), "system: You are terse.\nuser: Say hello to Ada.");
//!
//! // Input is checked against the prompt's schema.
//! let err = greet.call(json!({"name": 7})).await.unwrap_err();
//! assert!(err.message().contains("- name:"), "{}", err.message());
//! # Ok(()) }
//! ```

mod action;
mod config;
mod convert;
mod core;
mod env;
mod errors;
mod executable;
mod folder;
mod metadata;

use genkit_core::{Error, Registry, Result};

pub use config::PromptConfig;
pub use env::{define_helper, define_partial, define_schema, define_schema_for};
pub use executable::ExecutablePrompt;
pub use folder::{load_prompt_file, load_prompt_folder, load_prompt_source};

/// The directory prompt files are loaded from by default.
pub const DEFAULT_PROMPT_DIR: &str = "./prompts";

/// Defines a prompt and registers its actions, `/prompt/<key>` and
/// `/executable-prompt/<key>` (`key` is `name` or `name.variant`).
///
/// Fails with `INVALID_ARGUMENT` on an invalid name, config or default
/// input, invalid Picoschema, an input or output JSON Schema that does not
/// compile, or a template that does not parse; with `ALREADY_EXISTS` if the
/// key is taken. Named schemas, helpers and partials may be defined later:
/// they are looked up when the prompt is first used.
pub fn define_prompt<I, O>(
    registry: &Registry,
    config: PromptConfig<I, O>,
) -> Result<ExecutablePrompt<I, O>> {
    let core = core::PromptCore::new(registry, config.def)?;
    action::register(&core)?;
    Ok(ExecutablePrompt::new(core))
}

/// Finds a prompt defined in code or loaded from a file, by name and
/// optional variant, as an [`ExecutablePrompt`] taking `I` and returning
/// `O`. A missing prompt is `NOT_FOUND`; when prompt folders were loaded,
/// the message names the file looked for in each and says which folder did
/// not exist.
pub fn prompt<I, O>(
    registry: &Registry,
    name: &str,
    variant: Option<&str>,
) -> Result<ExecutablePrompt<I, O>> {
    let key = config::registry_name(name, variant);
    registry
        .lookup_object::<core::PromptCore>(action::PROMPT_OBJECT_KIND, &key)
        .map(ExecutablePrompt::new)
        .ok_or_else(|| {
            let which = match variant {
                Some(v) => format!("{name} (variant {v})"),
                None => name.to_owned(),
            };
            match folder::missing_prompt_hint(registry, &key) {
                Some(hint) => Error::not_found(format!("Prompt {which} not found: {hint}")),
                None => Error::not_found(format!("Prompt {which} not found")),
            }
        })
}
