//! The four tools, with Genkit JS's names, descriptions, schemas, outputs
//! and error messages.

use super::root::Root;
use super::{FilesystemOptions, MessageQueue};
use base64::Engine as _;
use genkit_core::{DynAction, Error, Result};
use genkit_model::tool::Tool;
use genkit_model::types::{Message, Part};
use serde::Deserialize;
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

const SCHEMA: &str = "http://json-schema.org/draft-07/schema#";

/// Shared state of the tools of one middleware instance.
pub(super) struct Ctx {
    pub root: Root,
    pub options: FilesystemOptions,
    pub queue: MessageQueue,
}

/// A Node-style message for an I/O failure (`ENOENT: no such file or
/// directory, open 'x'`), naming the path as the model gave it (Genkit JS
/// names the absolute path; we don't reveal where the root is).
fn io_error(e: &std::io::Error, op: &str, requested: &str) -> Error {
    use std::io::ErrorKind as K;
    let code = match e.kind() {
        K::NotFound => "ENOENT: no such file or directory",
        K::PermissionDenied => "EACCES: permission denied",
        K::IsADirectory => "EISDIR: illegal operation on a directory",
        K::NotADirectory => "ENOTDIR: not a directory",
        K::AlreadyExists => "EEXIST: file already exists",
        _ => return Error::internal(format!("{e}, {op} '{requested}'")),
    };
    Error::internal(format!("{code}, {op} '{requested}'"))
}

fn too_big(requested: &str, size: u64, max: u64) -> Error {
    Error::invalid_argument(format!(
        "File {requested} is {size} bytes, over the {max}-byte limit."
    ))
}

fn parse<T: for<'de> Deserialize<'de>>(input: Value) -> Result<T> {
    serde_json::from_value(input).map_err(|e| Error::invalid_argument(e.to_string()))
}

fn tool<F, Fut>(name: String, description: &str, input: Value, output: Value, f: F) -> DynAction
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Value>> + Send + 'static,
{
    Tool::from_json_schema(
        name,
        description,
        Some(input),
        Some(output),
        move |i, _ctx| f(i),
    )
    .map(|t| t.to_dyn())
    .unwrap_or_else(|e| panic!("the filesystem tools' fixed schemas compile: {e}"))
}

fn string_output() -> Value {
    json!({"type": "string", "$schema": SCHEMA})
}

fn file_path_schema() -> Value {
    json!({"type": "string", "description": "File path relative to root."})
}

/// Reads a whole file within the size cap.
fn read_capped(path: &Path, requested: &str, max: u64) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(&e, "open", requested))?;
    if meta.is_dir() {
        return Err(Error::internal(format!(
            "EISDIR: illegal operation on a directory, read '{requested}'"
        )));
    }
    if meta.len() > max {
        return Err(too_big(requested, meta.len(), max));
    }
    let bytes = std::fs::read(path).map_err(|e| io_error(&e, "open", requested))?;
    // The file may have grown since `metadata`.
    if bytes.len() as u64 > max {
        return Err(too_big(requested, bytes.len() as u64, max));
    }
    Ok(bytes)
}

/// Replaces `path` with `content` atomically: writes a temporary file in
/// the same directory, then renames it over the target (a rename replaces a
/// symlink at the target instead of writing through it).
fn write_atomic(path: &Path, content: &[u8], requested: &str) -> Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| Error::invalid_argument(format!("cannot write '{requested}'")))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".genkit-write-")
        .tempfile_in(parent)
        .map_err(|e| io_error(&e, "open", requested))?;
    tmp.write_all(content)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io_error(&e, "write", requested))?;
    // Keep an existing file's permissions; a new one gets the usual 0644
    // rather than the temporary file's 0600.
    let perms = match std::fs::metadata(path) {
        Ok(m) => Some(m.permissions()),
        Err(_) => default_permissions(),
    };
    if let Some(p) = perms {
        std::fs::set_permissions(tmp.path(), p).map_err(|e| io_error(&e, "chmod", requested))?;
    }
    tmp.persist(path)
        .map_err(|e| io_error(&e.error, "open", requested))?;
    Ok(())
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Some(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}

/// `list_files`.
pub(super) fn list_files(ctx: Arc<Ctx>) -> DynAction {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Input {
        // Genkit JS declares these defaults but does not apply them (its
        // tool fails on `{}`); we do.
        #[serde(default)]
        dir_path: String,
        #[serde(default)]
        recursive: bool,
    }
    let input_schema = json!({
        "type": "object",
        "properties": {
            "dirPath": {"type": "string", "description": "Directory path relative to root.", "default": ""},
            "recursive": {"type": "boolean", "description": "Whether to list files recursively.", "default": false}
        },
        "additionalProperties": true,
        "$schema": SCHEMA
    });
    let output_schema = json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "isDirectory": {"type": "boolean"}},
            "required": ["path", "isDirectory"],
            "additionalProperties": true
        },
        "$schema": SCHEMA
    });
    tool(
        format!("{}list_files", ctx.options.prefix()),
        "Lists files and directories in a given path. Returns a list of objects with path and type.",
        input_schema,
        output_schema,
        move |input| {
            let ctx = ctx.clone();
            async move {
                let input: Input = parse(input)?;
                let dir = ctx.root.resolve(&input.dir_path)?;
                let mut out = Vec::new();
                list(
                    &dir,
                    "",
                    input.recursive,
                    &input.dir_path,
                    &mut out,
                    ctx.options.max_list_entries,
                )?;
                Ok(Value::Array(out))
            }
        },
    )
}

/// Lists `dir` into `out`, sorted by name (Genkit JS keeps the OS's order,
/// which varies). Directory symlinks are listed but not descended into, as
/// in Genkit JS (a dirent of a symlink is not a directory).
fn list(
    dir: &Path,
    base: &str,
    recursive: bool,
    requested: &str,
    out: &mut Vec<Value>,
    max: usize,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io_error(&e, "scandir", requested))?
        .collect::<std::io::Result<_>>()
        .map_err(|e| io_error(&e, "scandir", requested))?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = if base.is_empty() {
            name
        } else {
            format!("{base}/{name}")
        };
        let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if out.len() >= max {
            return Err(Error::invalid_argument(format!(
                "More than {max} entries; list a subdirectory or list non-recursively."
            )));
        }
        out.push(json!({"path": path, "isDirectory": is_dir}));
        if is_dir && recursive {
            list(&entry.path(), &path, true, requested, out, max)?;
        }
    }
    Ok(())
}

/// The MIME type of an image file, by extension (what Genkit JS's
/// `mime-types` says for the image types models take).
fn image_mime(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" | "jpe" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "bmp" => "image/bmp",
        "svg" | "svgz" => "image/svg+xml",
        "ico" => "image/vnd.microsoft.icon",
        "tif" | "tiff" => "image/tiff",
        "avif" => "image/avif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        _ => return None,
    })
}

/// `read_file`: answers with a short note and queues the content as a user
/// message for the next turn, as Genkit JS does.
pub(super) fn read_file(ctx: Arc<Ctx>) -> DynAction {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Input {
        file_path: String,
    }
    let name = format!("{}read_file", ctx.options.prefix());
    let input_schema = json!({
        "type": "object",
        "properties": {"filePath": file_path_schema()},
        "required": ["filePath"],
        "additionalProperties": true,
        "$schema": SCHEMA
    });
    let tool_name = name.clone();
    tool(
        name,
        "Reads the contents of a file",
        input_schema,
        string_output(),
        move |input| {
            let ctx = ctx.clone();
            let tool_name = tool_name.clone();
            async move {
                let input: Input = parse(input)?;
                let requested = input.file_path;
                let target = ctx.root.resolve(&requested)?;
                let bytes = read_capped(&target, &requested, ctx.options.max_file_bytes)?;
                let parts: Vec<Value> = match image_mime(&target) {
                    Some(mime) => {
                        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
                        vec![
                            json!({"text": format!("\n\nread_file result {mime} {requested}")}),
                            json!({"media": {"url": format!("data:{mime};base64,{b64}"), "contentType": mime}}),
                        ]
                    }
                    None => {
                        let text = String::from_utf8_lossy(&bytes);
                        vec![json!({
                            "text": format!("<read_file path=\"{requested}\">\n{text}\n</read_file>"),
                            "metadata": {"filePath": requested, "filesystemMiddlewareTool": tool_name}
                        })]
                    }
                };
                let parts: Vec<Part> = serde_json::from_value(Value::Array(parts))?;
                let mut queue = ctx.queue.lock();
                match queue.last_mut() {
                    Some(last) if last.role == genkit_model::types::Role::User => {
                        last.content.extend(parts)
                    }
                    _ => queue.push(serde_json::from_value::<Message>(json!({
                        "role": "user",
                        "content": parts,
                        "metadata": {"filesystemMiddlewareTool": tool_name}
                    }))?),
                }
                Ok(Value::from(format!(
                    "File {requested} read successfully, see contents below"
                )))
            }
        },
    )
}

/// `write_file` (only with write access).
pub(super) fn write_file(ctx: Arc<Ctx>) -> DynAction {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Input {
        file_path: String,
        content: String,
    }
    let input_schema = json!({
        "type": "object",
        "properties": {
            "filePath": file_path_schema(),
            "content": {"type": "string", "description": "Content to write to the file."}
        },
        "required": ["filePath", "content"],
        "additionalProperties": true,
        "$schema": SCHEMA
    });
    tool(
        format!("{}write_file", ctx.options.prefix()),
        "Writes content to a file, overwriting it if it exists. Use this tool to create new files.",
        input_schema,
        string_output(),
        move |input| {
            let ctx = ctx.clone();
            async move {
                let input: Input = parse(input)?;
                let requested = input.file_path;
                let max = ctx.options.max_file_bytes;
                if input.content.len() as u64 > max {
                    return Err(too_big(&requested, input.content.len() as u64, max));
                }
                let target = ctx.root.resolve(&requested)?;
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|e| io_error(&e, "mkdir", &requested))?;
                    // Creating the parents must not have let anything swap
                    // a link in: check again on the now-existing path.
                    ctx.root.resolve(&requested)?;
                }
                write_atomic(&target, input.content.as_bytes(), &requested)?;
                Ok(Value::from(format!(
                    "File {requested} written successfully."
                )))
            }
        },
    )
}

/// Applies one `SEARCH/REPLACE` block to `content`, as Genkit JS does:
/// of the candidate splits at each separator, the longest search text found
/// in the file wins, and its first occurrence is replaced.
pub(super) fn apply_edit(content: &str, block: &str, requested: &str) -> Result<String> {
    const START: &str = "<<<<<<< SEARCH\n";
    const END: &str = "\n>>>>>>> REPLACE";
    const SEP: &str = "\n=======\n";
    if !block.starts_with(START) || !block.ends_with(END) {
        return Err(Error::invalid_argument(
            "Invalid edit block format. Block must start with \"<<<<<<< SEARCH\\n\" and end with \"\\n>>>>>>> REPLACE\"",
        ));
    }
    // The markers can overlap in a very short block; nothing is inside then.
    let inner = block
        .get(START.len()..block.len() - END.len())
        .unwrap_or("");
    let mut splits = Vec::new();
    let mut from = 0;
    while let Some(at) = inner.get(from..).and_then(|s| s.find(SEP)) {
        splits.push(from + at);
        // The separator starts with a one-byte '\n', so this is a char boundary.
        from += at + 1;
    }
    if splits.is_empty() {
        return Err(Error::invalid_argument(
            "Invalid edit block format. Missing separator \"\\n=======\\n\"",
        ));
    }
    let best = splits
        .iter()
        .map(|&i| (&inner[..i], &inner[i + SEP.len()..]))
        .filter(|(search, _)| content.contains(search))
        .fold(None::<(&str, &str)>, |best, cand| match best {
            Some(b) if b.0.len() >= cand.0.len() => Some(b),
            _ => Some(cand),
        });
    let Some((search, replace)) = best else {
        return Err(Error::invalid_argument(format!(
            "Search content not found in file {requested}. Make sure the search block matches the file content exactly, including whitespace and indentation."
        )));
    };
    Ok(content.replacen(search, replace, 1))
}

/// `search_and_replace` (only with write access).
pub(super) fn search_and_replace(ctx: Arc<Ctx>) -> DynAction {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Input {
        file_path: String,
        edits: Vec<String>,
    }
    let input_schema = json!({
        "type": "object",
        "properties": {
            "filePath": file_path_schema(),
            "edits": {
                "type": "array",
                "items": {
                    "type": "string",
                    "description": "A search and replace block string in the format:\n<<<<<<< SEARCH\n[search content]\n=======\n[replace content]\n>>>>>>> REPLACE"
                }
            }
        },
        "required": ["filePath", "edits"],
        "additionalProperties": true,
        "$schema": SCHEMA
    });
    tool(
        format!("{}search_and_replace", ctx.options.prefix()),
        "Replaces text in a file using search and replace blocks. Use this tool to edit existing files.",
        input_schema,
        string_output(),
        move |input| {
            let ctx = ctx.clone();
            async move {
                let input: Input = parse(input)?;
                let requested = input.file_path;
                let max = ctx.options.max_file_bytes;
                let target = ctx.root.resolve(&requested)?;
                let bytes = read_capped(&target, &requested, max)?;
                let mut content = String::from_utf8_lossy(&bytes).into_owned();
                for block in &input.edits {
                    content = apply_edit(&content, block, &requested)?;
                }
                if content.len() as u64 > max {
                    return Err(too_big(&requested, content.len() as u64, max));
                }
                write_atomic(&target, content.as_bytes(), &requested)?;
                Ok(Value::from(format!(
                    "Successfully applied {} edit(s) to {requested}.",
                    input.edits.len()
                )))
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::apply_edit;

    fn block(search: &str, replace: &str) -> String {
        format!("<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE")
    }

    #[test]
    fn edits_replace_the_first_occurrence_literally() {
        let out = apply_edit("a b a", &block("a", "$1 & $&"), "f").unwrap();
        assert_eq!(out, "$1 & $& b a");
    }

    #[test]
    fn the_longest_search_found_wins_when_the_separator_repeats() {
        // Split at the first separator: search "x", replace "y\n=======\nz";
        // at the second: search "x\n=======\ny", replace "z". Both are in
        // the file; the longer search wins.
        let content = "x\n=======\ny!";
        let edit = "<<<<<<< SEARCH\nx\n=======\ny\n=======\nz\n>>>>>>> REPLACE";
        assert_eq!(apply_edit(content, edit, "f").unwrap(), "z!");
    }

    #[test]
    fn malformed_blocks_fail_with_genkit_js_messages() {
        let e = apply_edit("x", "nope", "f").unwrap_err();
        assert!(
            e.message()
                .starts_with("Invalid edit block format. Block must start")
        );
        let e = apply_edit("x", "<<<<<<< SEARCH\n>>>>>>> REPLACE", "f").unwrap_err();
        assert!(e.message().contains("Missing separator"));
        let e = apply_edit("x", &block("q", "r"), "f.txt").unwrap_err();
        assert!(
            e.message()
                .starts_with("Search content not found in file f.txt.")
        );
    }
}
