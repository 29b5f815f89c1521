//! The renderer for the Handlebars subset Dotprompt templates use, with
//! Handlebars.js' semantics.
//!
//! handlebars-rust parses templates (see `template.rs` for the source
//! rewrites that make it read them as Handlebars.js does), but renders with
//! its own semantics (values printed as `[a, b]`, `{}` false, an error on a
//! name looked up in an array, ...) from an owned JSON context it clones
//! into every partial. Templates made of text, expressions, helper calls,
//! `if`/`unless`/`each`/`with`/`ifEquals`/`unlessEquals` blocks (with block
//! parameters) and partial inclusions (standalone ones indented) are
//! instead turned into a [`Plan`] once (partials resolved and helpers
//! bound), which renders straight from the caller's data without copying
//! it, as Handlebars.js renders: JavaScript's printing of values and
//! truthiness, own-property lookups (`length`, string characters), `../`
//! counted over contexts that changed, partials without outer contexts.
//!
//! Anything else — inline partials, partial blocks, decorators, dynamic
//! partial names, custom block helpers — has no plan, and a helper that
//! fails while rendering a plan is reported as [`Abort`]: the caller then
//! renders with handlebars, which also produces the canonical error.

mod eval;
mod plan;
#[cfg(test)]
mod tests;

pub(crate) use eval::{Data, render};
pub(crate) use plan::{Plan, plan};

/// The fast renderer cannot produce this output; render with handlebars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abort;
