//! Loading `.prompt` files: a whole directory (sub-folders become name
//! prefixes, `name.variant.prompt` files are variants, `_name.prompt` files
//! are partials), one file, or a source text.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use genkit_core::{Error, Registry, Result, StatusCode};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::config::{PromptConfig, PromptMessages, SchemaSpec, SourceOrigin, registry_name};
use super::env::{define_partial_file, env};
use super::errors::{SourceRef, from_dotprompt};
use super::executable::ExecutablePrompt;
use genkit_model::model::ModelRef;
use genkit_model::tool::ToolArg;
use genkit_model::types::{MiddlewareRef, ToolChoice};

const EXTENSION: &str = ".prompt";

/// Deepest sub-folder nesting followed (guards against symlink loops).
const MAX_DEPTH: usize = 32;

/// Loads every `.prompt` file under `dir` into the registry and returns how
/// many prompts were defined (partials not counted).
///
/// - `dir/a/b/name.prompt` is the prompt `a/b/name` (`ns/a/b/name` with a
///   `namespace`), registered as `/prompt/a/b/name` and
///   `/executable-prompt/a/b/name`;
/// - `name.variant.prompt` is the variant `variant` of `name` (key
///   `name.variant`);
/// - `_name.prompt` is the partial `name` (in any sub-folder), usable as
///   `{{> name}}`; partials are registered before prompts.
///
/// A missing `dir` loads nothing (so a default `./prompts` may be absent).
/// Either way the folder is remembered, so that looking up a prompt that
/// does not exist names the folder searched and says whether it existed.
/// A malformed file fails the load with `INVALID_ARGUMENT` naming the file
/// and line (`prompts/x.prompt:4:9: malformed frontmatter: ...`); unknown
/// helpers, partials and schema names are reported when the prompt is
/// first used, as they may be defined after loading.
pub fn load_prompt_folder(
    registry: &Registry,
    dir: impl AsRef<Path>,
    namespace: Option<&str>,
) -> Result<usize> {
    let dir = dir.as_ref();
    match fs::metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            record_search(registry, dir, namespace, false);
            return Ok(0);
        }
        Err(e) => return Err(io_error(dir, e)),
        Ok(meta) if !meta.is_dir() => {
            return Err(Error::invalid_argument(format!(
                "prompt directory `{}` is not a directory",
                dir.display()
            )));
        }
        Ok(_) => {}
    }
    record_search(registry, dir, namespace, true);
    let mut files = Vec::new();
    walk(dir, "", 0, &mut files)?;

    let (partials, prompts): (Vec<_>, Vec<_>) = files.into_iter().partition(|f| f.is_partial());
    for file in &partials {
        let name = file.stem().trim_start_matches('_');
        if name.is_empty() {
            return Err(Error::invalid_argument(format!(
                "{}: a partial file needs a name after `_`",
                file.path.display()
            )));
        }
        let source = read(&file.path)?;
        define_partial_file(registry, name, &source, &file.path)?;
    }
    for file in &prompts {
        let source = read(&file.path)?;
        let (name, variant) = split_variant(file.stem());
        let name = prefixed(namespace, &file.folder, name);
        define_source(registry, name, variant, &source, Some(&file.path))?;
    }
    Ok(prompts.len())
}

/// Loads one `.prompt` file as the prompt named after it (`name.prompt` or
/// `name.variant.prompt`), under `namespace` if given.
pub fn load_prompt_file(
    registry: &Registry,
    path: impl AsRef<Path>,
    namespace: Option<&str>,
) -> Result<ExecutablePrompt> {
    let path = path.as_ref();
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let stem = file_name.strip_suffix(EXTENSION).unwrap_or(file_name);
    let (name, variant) = split_variant(stem);
    let source = read(path)?;
    define_source(
        registry,
        prefixed(namespace, "", name),
        variant,
        &source,
        Some(path),
    )
}

/// Defines a prompt from `.prompt` source text; `name` may carry a variant
/// (`name.variant`). Errors name the prompt and the line in `source`.
pub fn load_prompt_source(
    registry: &Registry,
    name: &str,
    source: &str,
    namespace: Option<&str>,
) -> Result<ExecutablePrompt> {
    let (name, variant) = split_variant(name);
    define_source(
        registry,
        prefixed(namespace, "", name),
        variant,
        source,
        None,
    )
}

/// Registry object kind under which the searched prompt folders are kept.
const SEARCHED_KIND: &str = "genkit-rs/promptFolders";

/// The prompt folders [`load_prompt_folder`] was pointed at, in order.
#[derive(Default)]
struct SearchedFolders(Mutex<Vec<SearchedFolder>>);

struct SearchedFolder {
    /// The folder as given (often the relative `./prompts`).
    given: PathBuf,
    /// The same, resolved against the working directory of the time.
    absolute: PathBuf,
    /// The working directory a relative folder was resolved against.
    working_dir: Option<PathBuf>,
    namespace: Option<String>,
    existed: bool,
}

fn record_search(registry: &Registry, dir: &Path, namespace: Option<&str>, existed: bool) {
    let folders = registry
        .lookup_object::<SearchedFolders>(SEARCHED_KIND, "")
        .unwrap_or_else(|| {
            let fresh = Arc::new(SearchedFolders::default());
            registry.register_object(SEARCHED_KIND, "", fresh.clone());
            fresh
        });
    folders.0.lock().push(SearchedFolder {
        given: dir.to_path_buf(),
        absolute: std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()),
        working_dir: dir
            .is_relative()
            .then(std::env::current_dir)
            .and_then(io::Result::ok),
        namespace: namespace.map(str::to_owned),
        existed,
    });
}

/// What to tell a user whose prompt `key` (`name` or `name.variant`) is not
/// defined: which folders were searched for which file, and which of them
/// did not exist. `None` when no folder was ever loaded.
pub(super) fn missing_prompt_hint(registry: &Registry, key: &str) -> Option<String> {
    let folders = registry.lookup_object::<SearchedFolders>(SEARCHED_KIND, "")?;
    let folders = folders.0.lock();
    let hints: Vec<String> = folders
        .iter()
        .map(|folder| {
            let relative = match folder.namespace.as_deref() {
                Some(ns) => key
                    .strip_prefix(ns)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .unwrap_or(key),
                None => key,
            };
            let file = folder.absolute.join(format!("{relative}{EXTENSION}"));
            let shown = match &folder.working_dir {
                Some(cwd) => format!(
                    "`{}` ({}, relative to the working directory {})",
                    folder.given.display(),
                    folder.absolute.display(),
                    cwd.display()
                ),
                None => format!("`{}`", folder.given.display()),
            };
            if folder.existed {
                format!("no file {} in the prompt folder {shown}", file.display())
            } else {
                format!(
                    "the prompt folder {shown} does not exist, so no prompt files were loaded: \
                     create {}, or point `prompt_dir` at your folder",
                    file.display()
                )
            }
        })
        .collect();
    (!hints.is_empty()).then(|| hints.join("; "))
}

/// A `.prompt` file found under the loaded directory.
struct Found {
    path: PathBuf,
    /// Sub-folder relative to the directory, `/`-separated (empty at the top).
    folder: String,
    file_name: String,
}

impl Found {
    fn stem(&self) -> &str {
        self.file_name
            .strip_suffix(EXTENSION)
            .unwrap_or(&self.file_name)
    }

    fn is_partial(&self) -> bool {
        self.file_name.starts_with('_')
    }
}

/// Collects `.prompt` files, in name order, depth first.
fn walk(root: &Path, folder: &str, depth: usize, out: &mut Vec<Found>) -> Result<()> {
    let dir = if folder.is_empty() {
        root.to_path_buf()
    } else {
        root.join(folder)
    };
    if depth > MAX_DEPTH {
        return Err(Error::invalid_argument(format!(
            "prompt directory `{}` is nested too deeply",
            dir.display()
        )));
    }
    let mut entries = fs::read_dir(&dir)
        .and_then(|entries| entries.collect::<io::Result<Vec<_>>>())
        .map_err(|e| io_error(&dir, e))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            tracing::warn!("skipping `{}`: its name is not UTF-8", path.display());
            continue;
        };
        let meta = fs::metadata(&path).map_err(|e| io_error(&path, e))?;
        if meta.is_dir() {
            let sub = if folder.is_empty() {
                name
            } else {
                format!("{folder}/{name}")
            };
            walk(root, &sub, depth + 1, out)?;
        } else if meta.is_file() && name.ends_with(EXTENSION) {
            out.push(Found {
                path,
                folder: folder.to_owned(),
                file_name: name,
            });
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, error: io::Error) -> Error {
    let status = match error.kind() {
        io::ErrorKind::NotFound => StatusCode::NotFound,
        io::ErrorKind::PermissionDenied => StatusCode::PermissionDenied,
        io::ErrorKind::InvalidData => StatusCode::InvalidArgument,
        _ => StatusCode::Internal,
    };
    Error::new(status, format!("reading `{}`: {error}", path.display())).with_source(error)
}

/// `name.variant` into its parts (the variant is everything after the first dot).
fn split_variant(stem: &str) -> (&str, Option<String>) {
    match stem.split_once('.') {
        Some((name, variant)) => (name, Some(variant.to_owned())),
        None => (stem, None),
    }
}

/// `namespace/folder/name`, leaving out what is empty.
fn prefixed(namespace: Option<&str>, folder: &str, name: &str) -> String {
    [namespace.unwrap_or_default(), folder, name]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("/")
}

/// The line (1-based) of a `---` that opens frontmatter, when it is the
/// first line but blank and `#` comment lines: the caller asks only when
/// no frontmatter was found, i.e. no closing `---` line follows.
fn unclosed_frontmatter(source: &str) -> Option<usize> {
    let (index, line) = source
        .lines()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))?;
    (line.trim_end() == "---").then_some(index + 1)
}

/// Parses a `.prompt` source and defines the prompt `name` (variant
/// `variant`): frontmatter `model`, `config`, `description`, `input`
/// (`schema` in Picoschema, `default`), `output` (`format`, `schema`),
/// `tools`, `toolChoice`, `maxTurns`, `returnToolRequests`, `use` and
/// `metadata`; the body is the messages template.
fn define_source(
    registry: &Registry,
    name: String,
    variant: Option<String>,
    source: &str,
    path: Option<&Path>,
) -> Result<ExecutablePrompt> {
    let key = registry_name(&name, variant.as_deref());
    let env = env(registry);
    let whole = SourceRef::file(&key, path, 0);
    let parsed = env
        .dotprompt
        .check(source)
        .map_err(|e| from_dotprompt(e, &whole, &env))?;
    if parsed.meta.raw.is_none()
        && let Some(line) = unclosed_frontmatter(source)
    {
        // Dotprompt would send the whole file, frontmatter and all, to the
        // model as the template.
        return Err(whole.error(
            "the frontmatter opened by this `---` line has no closing `---` line",
            Some(line),
            Some(1),
        ));
    }
    let meta = parsed.meta;
    let raw = meta.raw.map(Arc::unwrap_or_clone).unwrap_or_default();
    let field = |key: &str| RawField {
        raw: &raw,
        source,
        at: &whole,
        key: key.to_owned(),
    };

    let mut config = PromptConfig::new(name);
    let def = &mut config.def;
    def.variant = variant;
    def.model = meta.model.map(ModelRef::new);
    def.config = meta.config.map(Value::Object);
    def.description = meta.description;
    if let Some(input) = meta.input {
        def.input_schema = input.schema.map(SchemaSpec::Picoschema);
        def.default_input = input.default.map(Value::Object);
    }
    if let Some(output) = meta.output {
        def.output.format = output.format;
        def.output.schema = output.schema.map(SchemaSpec::Picoschema);
    }
    def.tools = meta
        .tools
        .unwrap_or_default()
        .into_iter()
        .map(ToolArg::Name)
        .collect();
    def.tool_choice = field("toolChoice").get::<ToolChoice>("auto, required or none")?;
    def.max_turns = field("maxTurns").get::<u32>("a positive integer")?;
    def.return_tool_requests = field("returnToolRequests").get::<bool>("true or false")?;
    def.middleware = field("use").middleware()?;
    if let Some(metadata) = raw.get("metadata") {
        def.metadata.insert("metadata".into(), metadata.clone());
    }

    let prompt_metadata = &mut def.prompt_metadata;
    if let Some(version) = meta.version {
        prompt_metadata.insert("version".into(), Value::from(version));
    }
    if let Some(ext) = meta.ext
        && let Ok(ext) = serde_json::to_value(ext)
    {
        prompt_metadata.insert("ext".into(), ext);
    }
    prompt_metadata.insert("template".into(), Value::from(parsed.template.clone()));
    prompt_metadata.insert("raw".into(), Value::Object(raw.clone()));

    def.origin = Some(SourceOrigin {
        path: path.map(Path::to_owned),
        body_line_offset: body_line_offset(source, &parsed.template),
    });
    def.messages = Some(PromptMessages::Template(parsed.template));
    super::define_prompt(registry, config)
}

/// A frontmatter key Dotprompt keeps only in `raw`.
struct RawField<'a> {
    raw: &'a Map<String, Value>,
    source: &'a str,
    at: &'a SourceRef,
    key: String,
}

impl RawField<'_> {
    fn value(&self) -> Option<&Value> {
        self.raw.get(&self.key).filter(|v| !v.is_null())
    }

    fn error(&self, message: &str) -> Error {
        self.at
            .error(message, key_line(self.source, &self.key), None)
    }

    /// The value as `T`, or an error naming the file, line and what was expected.
    fn get<T: DeserializeOwned>(&self, expected: &str) -> Result<Option<T>> {
        let Some(value) = self.value() else {
            return Ok(None);
        };
        serde_json::from_value(value.clone())
            .map(Some)
            .map_err(|_| {
                self.error(&format!(
                    "malformed frontmatter: `{}` must be {expected}, got {value}",
                    self.key
                ))
            })
    }

    /// `use`: a list of middleware names or `{name, config}` objects.
    fn middleware(&self) -> Result<Vec<MiddlewareRef>> {
        let Some(value) = self.value() else {
            return Ok(Vec::new());
        };
        let invalid = || {
            self.error(&format!(
                "malformed frontmatter: `use` must list middleware names or {{name, config}} objects, got {value}"
            ))
        };
        let Value::Array(items) = value else {
            return Err(invalid());
        };
        items
            .iter()
            .map(|item| match item {
                Value::String(name) => Ok(MiddlewareRef {
                    name: name.clone(),
                    config: None,
                }),
                other => serde_json::from_value(other.clone()).map_err(|_| invalid()),
            })
            .collect()
    }
}

/// The 1-based line where the top-level frontmatter key `key` is written.
fn key_line(source: &str, key: &str) -> Option<usize> {
    source
        .lines()
        .position(|line| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|index| index + 1)
}

/// Lines before the template body: `template` is the trimmed end of
/// `source` when the source has frontmatter, else the whole source.
fn body_line_offset(source: &str, template: &str) -> usize {
    if template.is_empty() {
        return 0;
    }
    let end = source.trim_end().len();
    match end.checked_sub(template.len()) {
        Some(start) if source.get(start..end) == Some(template) => count_lines(&source[..start]),
        _ => 0,
    }
}

/// Counts line breaks (`\r\n`, `\n` or `\r`), as Dotprompt does.
fn count_lines(s: &str) -> usize {
    s.matches('\n').count() + s.matches('\r').count() - s.matches("\r\n").count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_and_prefixes() {
        assert_eq!(split_variant("greet"), ("greet", None));
        assert_eq!(
            split_variant("greet.formal"),
            ("greet", Some("formal".into()))
        );
        assert_eq!(prefixed(Some("ns"), "a/b", "x"), "ns/a/b/x");
        assert_eq!(prefixed(None, "", "x"), "x");
        assert_eq!(prefixed(Some(""), "a", "x"), "a/x");
    }

    #[test]
    fn body_offsets() {
        let source = "---\nmodel: m\n---\n\nHello {{name}}\n\n";
        assert_eq!(body_line_offset(source, "Hello {{name}}"), 4);
        assert_eq!(body_line_offset("Hi {{x}}  \n", "Hi {{x}}  \n"), 0);
        assert_eq!(body_line_offset("---\r\na: 1\r\n---\r\nX", "X"), 3);
    }

    #[test]
    fn frontmatter_key_lines() {
        let source = "---\nmodel: m\nmaxTurns : x\n---\n";
        assert_eq!(key_line(source, "maxTurns"), Some(3));
        assert_eq!(key_line(source, "toolChoice"), None);
    }
}
