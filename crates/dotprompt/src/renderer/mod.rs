//! The renderer for the Handlebars subset Dotprompt templates use, with
//! Handlebars.js' semantics. It is the only one: there is no second engine.
//!
//! handlebars-rust parses templates (see `template.rs` for the source
//! rewrites that make it read them as Handlebars.js does); its renderer is
//! not used. A parsed template is turned into a [`Plan`] once (partials
//! resolved, helpers bound, paths pre-parsed), which renders straight from
//! the caller's data without copying it, as Handlebars.js renders:
//! JavaScript's printing of values and truthiness, own-property lookups
//! (`length`, string characters), `../` counted over contexts that changed,
//! registered partials without outer contexts (blocks and inline partials
//! keep their template's).
//!
//! An `{{#each}}` body that only prints (text, fields of the item, the
//! loop's `@`-variables, `if`/`unless` on those) is also laid out flat (see
//! `fast.rs`) and renders its object items without contexts or values.
//!
//! Plans cover text, expressions, helper calls (built-in and user helpers,
//! subexpressions), `if`/`unless`/`each`/`with`/`ifEquals`/`unlessEquals`
//! blocks (with block parameters), partial inclusions (standalone ones
//! indented), inline partials and partial blocks. Anything else (other
//! decorators, dynamic partial names, custom block helpers, ...) is refused
//! when the plan is made, with a [`Fault`] naming the construct and where
//! it is. A helper that fails, or a partial that does not exist, stops the
//! render where it happens, also with a [`Fault`].

mod eval;
mod fast;
mod plan;
#[cfg(test)]
mod tests;

use std::sync::Arc;

pub(crate) use eval::{Data, MAX_PARTIAL_NESTING, Rendered, render};
pub(crate) use plan::{Plan, plan};

/// Where a construct is in its template source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Site {
    /// The partial it is in (`None`: the prompt's own template).
    pub(crate) partial: Option<Arc<str>>,
    /// 1-based line and column in that template, when known.
    pub(crate) pos: Option<(usize, usize)>,
}

/// Why a template could not be planned or rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The template uses something the renderer does not do (found when
    /// the plan is made).
    Unsupported {
        /// What it is, in words.
        construct: String,
        /// Where.
        site: Site,
    },
    /// A helper that is not registered is called.
    UnknownHelper {
        /// The helper's name.
        name: String,
        /// Where it is called.
        site: Site,
    },
    /// A partial that does not exist is included where the template
    /// renders.
    MissingPartial {
        /// The partial's name.
        name: String,
        /// Where it is included.
        site: Site,
    },
    /// A helper failed.
    Helper {
        /// The helper's error, with its name.
        message: String,
        /// Where it is called.
        site: Site,
    },
    /// Partials or blocks nest deeper than the renderer goes (a partial
    /// that includes itself without end).
    TooDeep,
}
