//! [`ExecutablePrompt`]: a defined prompt, callable from Rust.

use std::marker::PhantomData;
use std::sync::Arc;

use futures::StreamExt;
use genkit_core::{ActionStream, Error, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::core::PromptCore;
use genkit_generate::{GenerateOptions, GenerateStream, generate, generate_stream};
use genkit_model::types::{GenerateRequest, GenerateResponse};

/// A prompt registered with [`define_prompt`](super::define_prompt) or
/// loaded from a `.prompt` file: renders its templates with an input and
/// generates with its model, config, tools and output options.
///
/// `I` is the input type (serialized to the JSON object the templates see;
/// `serde_json::Value` by default) and `O` the type of the structured
/// output [`run`](Self::run) returns. Cloning is cheap.
pub struct ExecutablePrompt<I = Value, O = Value> {
    core: Arc<PromptCore>,
    _types: PhantomData<fn(I) -> O>,
}

impl<I, O> Clone for ExecutablePrompt<I, O> {
    fn clone(&self) -> Self {
        Self::new(Arc::clone(&self.core))
    }
}

impl<I, O> std::fmt::Debug for ExecutablePrompt<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutablePrompt")
            .field("key", &self.core.key)
            .finish()
    }
}

impl<I, O> ExecutablePrompt<I, O> {
    pub(crate) fn new(core: Arc<PromptCore>) -> Self {
        Self {
            core,
            _types: PhantomData,
        }
    }

    /// The prompt's name (without variant).
    pub fn name(&self) -> &str {
        &self.core.def.name
    }

    /// The variant, if this is one.
    pub fn variant(&self) -> Option<&str> {
        self.core.def.variant.as_deref()
    }

    /// The name its actions are registered under: `name` or `name.variant`
    /// (`/prompt/<key>`, `/executable-prompt/<key>`).
    pub fn key(&self) -> &str {
        &self.core.key
    }

    /// The description, if any.
    pub fn description(&self) -> Option<&str> {
        self.core.def.description.as_deref()
    }

    /// The input's JSON Schema (named schemas resolved), if it has one.
    /// Fails if a named schema is not defined.
    pub fn input_schema(&self) -> Result<Option<Value>> {
        Ok(self.core.resolved()?.input_schema.clone())
    }

    /// The output's JSON Schema (named schemas resolved), if it has one.
    pub fn output_schema(&self) -> Result<Option<Value>> {
        Ok(self.core.resolved()?.output_schema.clone())
    }

    /// The same prompt with other input and output types.
    pub fn typed<I2, O2>(&self) -> ExecutablePrompt<I2, O2> {
        ExecutablePrompt::new(Arc::clone(&self.core))
    }
}

impl<I: Serialize, O> ExecutablePrompt<I, O> {
    /// Renders the prompt into options for [`generate`]: its messages,
    /// model, config, tools, output and tool-loop settings.
    ///
    /// Input that does not fit the prompt's input schema (with the default
    /// input applied) is `INVALID_ARGUMENT`, naming each offending field.
    pub async fn render(&self, input: I) -> Result<GenerateOptions> {
        self.render_with(input, GenerateOptions::default()).await
    }

    /// Renders with a caller's options: their `messages` are the
    /// conversation history (placed by `{{history}}`, or before the
    /// prompt's user message), their `config` is merged over the prompt's,
    /// and every other option they set replaces the prompt's.
    pub async fn render_with(
        &self,
        input: I,
        overrides: GenerateOptions,
    ) -> Result<GenerateOptions> {
        render(&self.core, to_json(&self.core, &input)?, overrides).await
    }

    /// Renders the model request `/prompt/<name>` returns (tool
    /// definitions included, format instructions in the messages).
    pub async fn render_request(&self, input: I) -> Result<GenerateRequest> {
        let core = &self.core;
        let resolved = core.resolved()?;
        let variables = core.prepare_input(to_json(core, &input)?, &resolved)?;
        let rendered = core
            .render(variables, &resolved, GenerateOptions::default())
            .await?;
        core.request(rendered).await
    }

    /// Renders the prompt and generates (running tools as the model asks).
    pub async fn call(&self, input: I) -> Result<GenerateResponse> {
        self.call_with(input, GenerateOptions::default()).await
    }

    /// Like [`call`](Self::call), with a caller's options (see
    /// [`render_with`](Self::render_with)).
    pub async fn call_with(
        &self,
        input: I,
        overrides: GenerateOptions,
    ) -> Result<GenerateResponse> {
        let options = self.render_with(input, overrides).await?;
        generate(&self.core.registry, options).await
    }

    /// Renders the prompt and generates, streaming: read the chunks, then
    /// call [`GenerateStream::response`]. Rendering errors end the stream.
    pub fn stream(&self, input: I) -> GenerateStream {
        self.stream_with(input, GenerateOptions::default())
    }

    /// Like [`stream`](Self::stream), with a caller's options (see
    /// [`render_with`](Self::render_with)).
    pub fn stream_with(&self, input: I, overrides: GenerateOptions) -> GenerateStream {
        let core = Arc::clone(&self.core);
        let input = to_json(&core, &input);
        // The chunk parser needs the output options before rendering.
        let output = match &overrides.output {
            Some(output) => Some(output.clone()),
            None => core
                .resolved()
                .ok()
                .and_then(|resolved| core.output_config(&resolved)),
        };
        let format = output.as_ref().and_then(|o| o.format.clone());
        let schema = output.and_then(|o| o.json_schema);
        let parser =
            genkit_generate::stream_parser(&core.registry, format.as_deref(), schema.as_ref());
        let inner = ActionStream::new(move |send| {
            Box::pin(async move {
                let options = render(&core, input?, overrides).await?;
                let mut stream = generate_stream(&core.registry, options);
                while let Some(chunk) = stream.next().await {
                    send(chunk?.into_chunk());
                }
                stream.response().await
            })
        });
        GenerateStream::new(inner, parser)
    }
}

impl<I: Serialize, O: DeserializeOwned> ExecutablePrompt<I, O> {
    /// Renders the prompt, generates, and returns the structured output as
    /// `O` (parsed with the prompt's output format, e.g. JSON, or a format
    /// defined in the registry).
    pub async fn run(&self, input: I) -> Result<O> {
        self.call(input).await?.output_in::<O>(&self.core.registry)
    }
}

/// The input as JSON.
fn to_json<I: Serialize>(core: &PromptCore, input: &I) -> Result<Value> {
    serde_json::to_value(input).map_err(|e| {
        Error::invalid_argument(format!(
            "the input of prompt `{}` is not JSON: {e}",
            core.key
        ))
        .with_source(e)
    })
}

/// Checks the input and renders generate options ready to run.
async fn render(
    core: &PromptCore,
    input: Value,
    overrides: GenerateOptions,
) -> Result<GenerateOptions> {
    let resolved = core.resolved()?;
    let variables = core.prepare_input(input, &resolved)?;
    let rendered = core.render(variables, &resolved, overrides).await?;
    core.generate_options(rendered)
}
