//! Dotprompt for Rust: executable prompt templates.
//!
//! A `.prompt` source is YAML frontmatter (model, config, input/output
//! schemas in Picoschema, tools, ...) followed by a Handlebars template. The
//! template's helpers (`{{role}}`, `{{history}}`, `{{media}}`,
//! `{{section}}`, `{{json}}`, `{{#ifEquals}}`, `{{#unlessEquals}}`) emit
//! markers that rendering turns into a list of [`Message`]s.
//!
//! This crate follows the reference implementation (`dotprompt` on npm) and
//! passes the language-independent Dotprompt spec suite.
//!
//! # As npm `dotprompt` does
//!
//! Templates render as npm `dotprompt` (Handlebars.js underneath) renders
//! them, and Picoschemas convert as it converts them, checked against cases
//! recorded from it (`tests/npm_dotprompt`). In templates, values print as
//! JavaScript prints them (arrays joined by `,`, objects as
//! `[object Object]`, `1e+21`), `{}` is true and `0` false in `{{#if}}`,
//! `length` and characters of strings and arrays can be looked up, a lone
//! `.` is `this`, `../` counts only contexts that changed, standalone lines
//! and (indented) partials behave the same, and so do block parameters
//! (`{{#each items as |item i|}}`), inline partials (`{{#*inline "x"}}`)
//! and partial blocks (`{{#> layout}}...{{/layout}}`, `{{> @partial-block}}`).
//! A partial that does not exist fails where the template includes it, as
//! in Handlebars.js.
//!
//! Templates are rendered by one renderer, for the Handlebars subset
//! prompts use (handlebars-rust only parses them). What it does not
//! support (decorators other than `inline`, dynamic partial names
//! (`{{> (name)}}`), block forms of helpers that are not block helpers,
//! ...) is refused when the prompt is compiled, with an
//! [`Error::TemplateSyntax`] naming the construct and its line. A helper
//! that fails fails the render, with an [`Error::Render`] that says where.
//!
//! Deliberate differences:
//! - Values are inserted as text: a Dotprompt marker
//!   (`<<<dotprompt:role:system>>>`, `media`, `history`, `section`) inside
//!   an inserted value (input, `@`-data, what `json`, `lookup` or a user
//!   helper returns) stays text, where npm `dotprompt` would make it a
//!   role, a media part or a section. Only markers written in a template
//!   (the prompt's or a partial's) or printed by the built-in `role`,
//!   `media`, `history` and `section` helpers count.
//! - Handlebars.js adds up values printed next to each other at the start
//!   of a block (`{{a}}{{b}}` with 1 and 2 prints `3`); here they are
//!   printed one after the other (`12`).
//! - `input.default` in the frontmatter applies when rendering (npm
//!   `dotprompt` applies only defaults passed in the options; Genkit passes
//!   them, so prompts behave as in Genkit).
//! - Picoschema: a top-level array and `x(enum)` with anything but a list
//!   are errors (the reference reads them as an empty object and writes
//!   `{"enum": value}`); a top-level `any` has no `type` (the reference
//!   writes `"type": "any"`); JSON Schema whose `type` lists several types
//!   passes through (the reference reads it as Picoschema).
//!
//! ```
//! use dotprompt::{DataArgument, Dotprompt};
//! use serde_json::json;
//!
//! # futures::executor::block_on(async {
//! let source = r#"---
//! model: googleai/gemini-2.5-flash
//! config:
//!   temperature: 0.2
//! input:
//!   schema:
//!     name: string, who to greet
//! ---
//! {{role "system"}}You are terse.
//! {{role "user"}}Say hello to {{name}}."#;
//!
//! let dotprompt = Dotprompt::default();
//! let parsed = dotprompt.parse(source)?;
//! assert_eq!(parsed.meta.model.as_deref(), Some("googleai/gemini-2.5-flash"));
//!
//! let data: DataArgument = serde_json::from_value(json!({"input": {"name": "Ada"}}))?;
//! let rendered = dotprompt.render(source, &data, None).await?;
//! assert_eq!(rendered.meta.config.as_ref().unwrap()["temperature"], json!(0.2));
//! assert_eq!(
//!     serde_json::to_value(&rendered.messages)?,
//!     json!([
//!         {"role": "system", "content": [{"text": "You are terse.\n"}]},
//!         {"role": "user", "content": [{"text": "Say hello to Ada."}]}
//!     ])
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! Rendering is `async` because partials, schemas and tools may come from
//! asynchronous [`Resolver`]s (files, a registry); the template itself is
//! rendered synchronously, and no runtime is required.

mod dotprompt;
mod error;
mod helpers;
mod js;
mod messages;
mod parse;
mod partials;
pub mod picoschema;
mod renderer;
mod resolver;
mod template;
mod types;

pub use crate::dotprompt::{Dotprompt, DotpromptOptions, PromptFunction};
pub use crate::error::{BoxError, Error, Location, PicoschemaError, Result};
pub use crate::helpers::HelperFn;
pub use crate::messages::to_messages;
pub use crate::parse::parse_document;
pub use crate::resolver::{BoxFuture, PartialResolver, Resolver, SchemaResolver, ToolResolver};
pub use crate::types::{
    DataArgument, DataPart, Document, JsonMap, Media, MediaPart, Message, ParsedPrompt, Part,
    PendingPart, PromptInput, PromptMetadata, PromptOutput, RenderedPrompt, Role, TextPart,
    ToolDefinition, ToolRequest, ToolRequestPart, ToolResponse, ToolResponsePart,
};

/// `JSON.stringify(value)`: compact JSON, numbers written as JavaScript
/// writes them (`1` for `1.0`, `1e+21`).
pub fn json_stringify(value: &serde_json::Value) -> String {
    // Serializing a `Value` into memory cannot fail.
    js::stringify(value, "").unwrap_or_default()
}
