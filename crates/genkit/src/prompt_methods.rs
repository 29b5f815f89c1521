//! Prompts on the instance: defining them in code, looking up those loaded
//! from `.prompt` files, and the schemas and partials their templates use
//! (Genkit's `definePrompt`, `prompt`, `defineSchema`, `definePartial`).

use crate::prompt::{ExecutablePrompt, PromptConfig, define_prompt};
use genkit_core::Result;
use schemars::JsonSchema;
use serde_json::Value;

use crate::genkit::{Genkit, registered};

impl Genkit {
    /// Defines a prompt in code, registered as `/prompt/<name>` and
    /// `/executable-prompt/<name>`.
    ///
    /// # Panics
    /// If the prompt is invalid or its name is taken. The fallible path is
    /// [`genkit::prompt::define_prompt`](crate::prompt::define_prompt), which
    /// returns the error instead.
    #[track_caller]
    pub fn define_prompt<I, O>(&self, config: PromptConfig<I, O>) -> ExecutablePrompt<I, O> {
        let name = config.name().to_owned();
        registered("prompt", &name, define_prompt(self.registry(), config))
    }

    /// A prompt defined in code or loaded from a `.prompt` file; `NOT_FOUND`
    /// if there is none.
    pub fn prompt<I, O>(&self, name: &str) -> Result<ExecutablePrompt<I, O>> {
        crate::prompt::prompt(self.registry(), name, None)
    }

    /// A variant (`name.variant.prompt`) of a prompt.
    pub fn prompt_variant<I, O>(
        &self,
        name: &str,
        variant: &str,
    ) -> Result<ExecutablePrompt<I, O>> {
        crate::prompt::prompt(self.registry(), name, Some(variant))
    }

    /// Registers a named JSON schema usable from prompt frontmatter
    /// (`input: {schema: Person}`).
    ///
    /// # Panics
    /// If the name is taken or `schema` is not a JSON Schema (an object or a
    /// boolean). The fallible path is
    /// [`genkit::prompt::define_schema`](crate::prompt::define_schema), which
    /// returns the error instead.
    #[track_caller]
    pub fn define_schema(&self, name: &str, schema: Value) {
        registered(
            "schema",
            name,
            crate::prompt::define_schema(self.registry(), name, schema),
        )
    }

    /// Registers the JSON schema of `T` under `name`.
    ///
    /// # Panics
    /// If the name is taken. The fallible path is
    /// [`genkit::prompt::define_schema_for`](crate::prompt::define_schema_for),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_schema_for<T: JsonSchema>(&self, name: &str) {
        registered(
            "schema",
            name,
            crate::prompt::define_schema_for::<T>(self.registry(), name),
        )
    }

    /// Registers (or replaces) a Handlebars partial for prompts, usable as
    /// `{{> name}}`.
    ///
    /// # Panics
    /// If the partial does not parse or would make partials include each
    /// other in a cycle. The fallible path is
    /// [`genkit::prompt::define_partial`](crate::prompt::define_partial),
    /// which returns the error instead.
    #[track_caller]
    pub fn define_partial(&self, name: &str, source: &str) {
        registered(
            "partial",
            name,
            crate::prompt::define_partial(self.registry(), name, source),
        )
    }
}
