//! A fast renderer for the Handlebars subset Dotprompt templates use.
//!
//! handlebars-rust renders from an owned JSON context, clones the whole
//! context into every partial, allocates a path vector per lookup and a
//! block context per `{{#each}}`. Templates made only of text, expressions,
//! helper calls, `if`/`unless`/`each`/`with`/`ifEquals`/`unlessEquals`
//! blocks and partial inclusions are instead turned into a [`Plan`] once
//! (partials resolved and helpers bound), which renders straight from the
//! caller's data without copying it.
//!
//! The plan follows handlebars-rust's semantics exactly (path resolution,
//! `../`, block-local `@index`/`@first`/`@last`/`@key`, truthiness, value
//! printing). Anything else — block parameters, decorators and inline
//! partials, partial blocks, indented (standalone) partials, dynamic
//! partial names, custom block helpers — has no plan, and any error while
//! rendering a plan is reported as [`Abort`]: the caller then renders with
//! handlebars, which also produces the canonical error message.

mod eval;
mod plan;
#[cfg(test)]
mod tests;

pub(crate) use eval::{Data, render};
pub(crate) use plan::{Plan, plan};

/// The fast renderer cannot produce this output; render with handlebars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abort;
