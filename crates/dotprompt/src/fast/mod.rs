//! The renderer for the Handlebars subset Dotprompt templates use, with
//! Handlebars.js' semantics.
//!
//! handlebars-rust parses templates (see `template.rs` for the source
//! rewrites that make it read them as Handlebars.js does), but renders with
//! its own semantics (values printed as `[a, b]`, `{}` false, an error on a
//! name looked up in an array, ...) from an owned JSON context it clones
//! into every partial. Templates made of text, expressions, helper calls,
//! `if`/`unless`/`each`/`with`/`ifEquals`/`unlessEquals` blocks (with block
//! parameters), partial inclusions (standalone ones indented), inline
//! partials and partial blocks are instead turned into a [`Plan`] once
//! (partials resolved and helpers bound), which renders straight from the
//! caller's data without copying it, as Handlebars.js renders: JavaScript's
//! printing of values and truthiness, own-property lookups (`length`,
//! string characters), `../` counted over contexts that changed, registered
//! partials without outer contexts (blocks and inline partials keep their
//! template's).
//!
//! Anything else — other decorators, dynamic partial names, custom block
//! helpers — has no plan, and a helper that fails while rendering a plan
//! stops it with [`Stop::Abort`]: the caller then renders with handlebars,
//! which also produces the canonical error. A partial that does not exist
//! stops it with [`Stop::MissingPartial`] where it renders.

mod eval;
mod plan;
#[cfg(test)]
mod tests;

pub(crate) use eval::{Data, MAX_PARTIAL_NESTING, render};
pub(crate) use plan::{Plan, plan};

/// The fast renderer cannot produce this output; render with handlebars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abort;

/// Why a plan did not render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Render with handlebars instead (it also words the errors).
    Abort,
    /// The template includes, where it renders, a partial that does not
    /// exist (handlebars-rust, whose inline partials outlive their block,
    /// may not fail there, and Handlebars.js does).
    MissingPartial(String),
    /// Partials nest deeper than [`MAX_PARTIAL_NESTING`]: a partial
    /// includes itself without end (handlebars would overflow the stack).
    TooDeep,
}
