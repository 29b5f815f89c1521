//! Error types returned by the crate.

use std::fmt;

/// A boxed error returned by user-supplied resolvers and helpers.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Result alias for fallible Dotprompt operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where in a prompt an error happened, as far as it is known.
///
/// Lines and columns are 1-based and count from the start of the prompt source
/// (frontmatter included) when the error is in the prompt itself, or from the
/// start of the partial when `partial` is set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Location {
    /// The prompt's `name` from its frontmatter, if any.
    pub prompt: Option<String>,
    /// The partial the error occurred in, if not the prompt itself.
    pub partial: Option<String>,
    /// 1-based line number.
    pub line: Option<usize>,
    /// 1-based column number.
    pub column: Option<usize>,
}

impl Location {
    /// A location naming only the prompt.
    pub fn prompt(name: Option<&str>) -> Self {
        Self {
            prompt: name.map(str::to_owned),
            ..Self::default()
        }
    }

    fn is_empty(&self) -> bool {
        self.prompt.is_none() && self.partial.is_none() && self.line.is_none()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return Ok(());
        }
        f.write_str(" (")?;
        let mut sep = "";
        if let Some(prompt) = &self.prompt {
            write!(f, "prompt `{prompt}`")?;
            sep = ", ";
        }
        if let Some(partial) = &self.partial {
            write!(f, "{sep}partial `{partial}`")?;
            sep = ", ";
        }
        if let Some(line) = self.line {
            write!(f, "{sep}line {line}")?;
            if let Some(column) = self.column {
                write!(f, ", column {column}")?;
            }
        }
        f.write_str(")")
    }
}

/// An invalid Picoschema definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PicoschemaError {
    /// A type name is neither a scalar type nor a schema the resolver knows.
    #[error("Picoschema: could not find schema with name '{0}'")]
    UnknownSchema(String),
    /// A parenthetical type other than `array`, `object` or `enum`.
    #[error("Picoschema: parenthetical types must be 'object', 'array' or 'enum', got: {0}")]
    InvalidParenthetical(String),
    /// An `(enum)` field whose value is not a list.
    #[error("Picoschema: enum field '{0}' must list its values")]
    InvalidEnum(String),
    /// A value that is neither a mapping nor a string.
    #[error("Picoschema: only consists of objects and strings. Got: {0}")]
    InvalidValue(String),
}

/// Every error the crate can return.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The YAML frontmatter could not be parsed or has a field of the wrong type.
    #[error("malformed frontmatter: {message}{location}")]
    Frontmatter {
        /// What is wrong.
        message: String,
        /// Where (the line counts from the start of the source).
        location: Location,
    },
    /// The template body is not valid Handlebars.
    #[error("template syntax error: {message}{location}")]
    TemplateSyntax {
        /// What is wrong.
        message: String,
        /// Where.
        location: Location,
    },
    /// The template calls a helper that is not registered.
    #[error("unknown helper `{name}`{location}")]
    UnknownHelper {
        /// The helper's name.
        name: String,
        /// Where it is called.
        location: Location,
    },
    /// The template includes a partial that is neither registered nor resolvable.
    #[error("unknown partial `{name}`{location}")]
    UnknownPartial {
        /// The partial's name.
        name: String,
        /// Where it is included.
        location: Location,
    },
    /// Partials include each other in a cycle.
    #[error("partial cycle: {}", .cycle.join(" -> "))]
    PartialCycle {
        /// The partial names along the cycle; the first and last are the same.
        cycle: Vec<String>,
    },
    /// An input or output schema is not valid Picoschema.
    #[error("{source}{location}")]
    Picoschema {
        /// The underlying problem.
        source: PicoschemaError,
        /// The prompt it occurred in.
        location: Location,
    },
    /// A tool named in `tools` could not be resolved by the tool resolver.
    #[error("unable to resolve tool '{name}' to a recognized tool definition{location}")]
    UnknownTool {
        /// The tool's name.
        name: String,
        /// The prompt naming it.
        location: Location,
    },
    /// A `{{role}}` marker names a role Dotprompt does not know.
    #[error("unknown role `{role}` (expected user, model, tool or system){location}")]
    InvalidRole {
        /// The role as written.
        role: String,
        /// The prompt it occurred in.
        location: Location,
    },
    /// A user-supplied resolver failed.
    #[error("{kind} resolver failed for `{name}`: {source}")]
    Resolver {
        /// Which resolver: "partial", "schema" or "tool".
        kind: &'static str,
        /// The name being resolved.
        name: String,
        /// The resolver's error.
        source: BoxError,
    },
    /// Rendering failed (a helper error, a bad argument, ...).
    #[error("render error: {message}{location}")]
    Render {
        /// What went wrong.
        message: String,
        /// Where.
        location: Location,
    },
}
