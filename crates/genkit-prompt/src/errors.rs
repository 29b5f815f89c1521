//! Errors about prompt sources, naming the file (or prompt) and the line.
//!
//! Dotprompt reports lines relative to what it compiled: a prompt's template
//! body, or a partial. These become `path:line:column: message`, counting
//! lines from the start of the `.prompt` file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dotprompt::Location;
use genkit_core::{Error, StatusCode};

use super::env::PromptEnv;

/// Where a template came from: a prompt (from a file or from code) or a
/// partial.
#[derive(Debug, Clone)]
pub(crate) struct SourceRef {
    /// The prompt's registry key or the partial's name.
    name: String,
    /// Whether `name` is a partial.
    is_partial: bool,
    /// The file, for prompts and partials loaded from files.
    file: Option<PathBuf>,
    /// Lines in the file before the compiled text (the frontmatter).
    line_offset: usize,
    /// For prompts defined in code: which of its templates.
    template: Option<&'static str>,
}

impl SourceRef {
    /// A prompt defined in code; `template` is `system`, `prompt` or `messages`.
    pub(crate) fn code(key: &str, template: &'static str) -> Self {
        Self {
            name: key.to_owned(),
            is_partial: false,
            file: None,
            line_offset: 0,
            template: Some(template),
        }
    }

    /// A `.prompt` source (from `path`, if read from a file) whose
    /// compiled text starts after `line_offset` lines.
    pub(crate) fn file(key: &str, path: Option<&Path>, line_offset: usize) -> Self {
        Self {
            name: key.to_owned(),
            is_partial: false,
            file: path.map(Path::to_owned),
            line_offset,
            template: None,
        }
    }

    /// A prompt as a whole: its file, or its name.
    pub(crate) fn prompt(key: &str, file: Option<&Path>) -> Self {
        Self {
            name: key.to_owned(),
            is_partial: false,
            file: file.map(Path::to_owned),
            line_offset: 0,
            template: None,
        }
    }

    /// A partial loaded from `path`.
    pub(crate) fn partial_file(name: &str, path: &Path) -> Self {
        Self {
            file: Some(path.to_owned()),
            ..Self::partial(name)
        }
    }

    /// A partial registered by name.
    pub(crate) fn partial(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            is_partial: true,
            file: None,
            line_offset: 0,
            template: None,
        }
    }

    /// How the source is named in messages: its file, or `prompt \`x\``.
    pub(crate) fn label(&self) -> String {
        match (&self.file, self.is_partial, self.template) {
            (Some(file), _, _) => file.display().to_string(),
            (None, true, _) => format!("partial `{}`", self.name),
            (None, false, Some(template)) => {
                format!("prompt `{}` ({template} template)", self.name)
            }
            (None, false, None) => format!("prompt `{}`", self.name),
        }
    }

    /// An `INVALID_ARGUMENT` error about this source: `file:line:col: message`
    /// (line counted from the start of the file), or `prompt \`x\`: message
    /// (line L, column C)` without a file.
    pub(crate) fn error(&self, message: &str, line: Option<usize>, column: Option<usize>) -> Error {
        Error::new(
            StatusCode::InvalidArgument,
            locate(self, message, line.map(|l| l + self.line_offset), column),
        )
    }
}

/// Formats `message` at a position in `source`.
fn locate(source: &SourceRef, message: &str, line: Option<usize>, column: Option<usize>) -> String {
    let mut out = source.label();
    if source.file.is_some() {
        if let Some(line) = line {
            let _ = write!(out, ":{line}");
            if let Some(column) = column {
                let _ = write!(out, ":{column}");
            }
        }
        let _ = write!(out, ": {message}");
    } else {
        let _ = write!(out, ": {message}");
        if let Some(line) = line {
            let _ = write!(out, " (line {line}");
            if let Some(column) = column {
                let _ = write!(out, ", column {column}");
            }
            out.push(')');
        }
    }
    out
}

/// What went wrong, without Dotprompt's own location suffix, and where.
fn describe(error: &dotprompt::Error) -> (String, Option<&Location>) {
    use dotprompt::Error as E;
    match error {
        E::Frontmatter { message, location } => {
            (format!("malformed frontmatter: {message}"), Some(location))
        }
        E::TemplateSyntax { message, location } => {
            (format!("template syntax error: {message}"), Some(location))
        }
        E::UnknownHelper { name, location } => (format!("unknown helper `{name}`"), Some(location)),
        E::UnknownPartial { name, location } => {
            (format!("unknown partial `{name}`"), Some(location))
        }
        E::Picoschema { source, location } => {
            (format!("invalid Picoschema: {source}"), Some(location))
        }
        E::UnknownTool { name, location } => (format!("unknown tool `{name}`"), Some(location)),
        E::InvalidRole { role, location } => (
            format!("unknown role `{role}` (expected user, model, tool or system)"),
            Some(location),
        ),
        E::Render { message, location } => (format!("render error: {message}"), Some(location)),
        other => (other.to_string(), None),
    }
}

/// Converts a Dotprompt error about `source` to an `INVALID_ARGUMENT` error
/// naming the file (or prompt) and line; errors inside a partial name the
/// partial's file when it was loaded from one.
pub(crate) fn from_dotprompt(
    error: dotprompt::Error,
    source: &SourceRef,
    env: &PromptEnv,
) -> Error {
    let (message, location) = describe(&error);
    let line = location.and_then(|l| l.line);
    let column = location.and_then(|l| l.column);
    let text = match location.and_then(|l| l.partial.as_deref()) {
        Some(partial) if !(source.is_partial && source.name == partial) => {
            let within = SourceRef {
                file: env.partial_file(partial),
                ..SourceRef::partial(partial)
            };
            format!(
                "{} (in partial `{partial}`, used by {})",
                locate(&within, &message, line, column),
                source.label()
            )
        }
        Some(_) => {
            let within = SourceRef {
                line_offset: 0,
                ..source.clone()
            };
            locate(&within, &message, line, column)
        }
        None => locate(
            source,
            &message,
            line.map(|l| l + source.line_offset),
            column,
        ),
    };
    Error::new(StatusCode::InvalidArgument, text).with_source(error)
}
