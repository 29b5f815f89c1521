//! `filesystem`: tools to list, read, write and edit files under one root
//! directory (Genkit JS's `filesystem` from `@genkit-ai/middleware`).
//!
//! The tools are `list_files` and `read_file`, plus `write_file` and
//! `search_and_replace` with write access; their names, schemas, outputs
//! and error messages are Genkit JS's. As there, `read_file` answers with a
//! short note and adds the file's content to the conversation as a user
//! message before the next model turn (images as media parts), and a tool
//! failure is answered to the model as `Tool '<name>' failed: <message>`
//! rather than ending the generate call.
//!
//! Paths are confined to the root more strictly than Genkit JS does (see
//! [`Root::resolve`]): `..` above the root, absolute paths, NUL bytes and
//! symlinks leading out of the root are all refused with Genkit JS's
//! `Access denied: Path is outside of root directory.` Files are capped at
//! [`DEFAULT_MAX_FILE_BYTES`] and listings at [`DEFAULT_MAX_LIST_ENTRIES`]
//! (Genkit JS has no caps). Writes are atomic (a temporary file renamed over
//! the target). Differences from Genkit JS, all deliberate: `list_files`
//! applies its declared defaults (JS fails on `{}`) and sorts entries by
//! name (JS keeps the OS's order); I/O errors name the path as given, not
//! the absolute path. A check and the operation that follows are not one
//! atomic step: a process that can change the tree under the root while a
//! tool runs can still race it.

mod root;
mod tools;

pub use root::{ACCESS_DENIED, Root};

use async_trait::async_trait;
use genkit_core::{DynAction, Error, Result};
use genkit_model::middleware::{
    GenerateCallCtx, GenerateEnvelope, GenerateMiddleware, GenerateNext, ToolCallCtx, ToolNext,
};
use genkit_model::tool::is_interrupt;
use genkit_model::types::{GenerateResponse, GenerateResponseChunk, Message, Part, PartKind};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest file the tools read or write unless told otherwise (10 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;

/// The most entries `list_files` returns unless told otherwise.
pub const DEFAULT_MAX_LIST_ENTRIES: usize = 10_000;

/// Messages `read_file` queued for the next turn.
type MessageQueue = Arc<Mutex<Vec<Message>>>;

/// Options of the [`filesystem`] middleware; the config keys are Genkit
/// JS's (`rootDirectory`, `allowWriteAccess`, `toolNamePrefix`), plus our
/// caps (`maxFileBytes`, `maxListEntries`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilesystemOptions {
    /// The directory all operations are confined to.
    pub root_directory: PathBuf,
    /// Whether `write_file` and `search_and_replace` are offered.
    #[serde(default)]
    pub allow_write_access: bool,
    /// Prefix of the tools' names (`fs_` gives `fs_read_file`, ...).
    #[serde(default)]
    pub tool_name_prefix: Option<String>,
    /// The largest file read or written, in bytes.
    #[serde(default = "default_max_file_bytes")]
    pub max_file_bytes: u64,
    /// The most entries one `list_files` call returns.
    #[serde(default = "default_max_list_entries")]
    pub max_list_entries: usize,
}

fn default_max_file_bytes() -> u64 {
    DEFAULT_MAX_FILE_BYTES
}

fn default_max_list_entries() -> usize {
    DEFAULT_MAX_LIST_ENTRIES
}

impl FilesystemOptions {
    /// Read-only access to `root_directory`, default caps.
    pub fn new(root_directory: impl Into<PathBuf>) -> Self {
        Self {
            root_directory: root_directory.into(),
            allow_write_access: false,
            tool_name_prefix: None,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_list_entries: DEFAULT_MAX_LIST_ENTRIES,
        }
    }

    /// Offers `write_file` and `search_and_replace` too.
    pub fn allow_write_access(mut self, on: bool) -> Self {
        self.allow_write_access = on;
        self
    }

    /// Prefixes the tools' names.
    pub fn tool_name_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_name_prefix = Some(prefix.into());
        self
    }

    /// Caps the size of files read or written.
    pub fn max_file_bytes(mut self, max: u64) -> Self {
        self.max_file_bytes = max;
        self
    }

    /// Caps the entries of one listing.
    pub fn max_list_entries(mut self, max: usize) -> Self {
        self.max_list_entries = max;
        self
    }

    fn prefix(&self) -> &str {
        self.tool_name_prefix.as_deref().unwrap_or("")
    }
}

/// The `filesystem` middleware; build it with [`filesystem`].
pub struct Filesystem {
    tools: Vec<DynAction>,
    names: Vec<String>,
    queue: MessageQueue,
}

/// The `filesystem` middleware over `options.root_directory`, which must
/// exist.
pub fn filesystem(options: FilesystemOptions) -> Result<Filesystem> {
    let root = Root::new(&options.root_directory)?;
    let allow_write = options.allow_write_access;
    let queue = MessageQueue::default();
    let ctx = Arc::new(tools::Ctx {
        root,
        options,
        queue: queue.clone(),
    });
    let mut tools = vec![
        tools::list_files(ctx.clone()),
        tools::read_file(ctx.clone()),
    ];
    if allow_write {
        tools.push(tools::write_file(ctx.clone()));
        tools.push(tools::search_and_replace(ctx));
    }
    let names = tools.iter().map(|t| t.name().to_owned()).collect();
    Ok(Filesystem {
        tools,
        names,
        queue,
    })
}

impl Filesystem {
    /// Builds the middleware from a request's config (Genkit JS's keys).
    pub fn from_config(config: Option<&Value>) -> Result<Self> {
        let missing =
            || Error::invalid_argument("filesystem middleware requires a rootDirectory option");
        let config = config.ok_or_else(missing)?;
        if config
            .get("rootDirectory")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(missing());
        }
        let options: FilesystemOptions = serde_json::from_value(config.clone())
            .map_err(|e| Error::invalid_argument(format!("filesystem middleware config: {e}")))?;
        filesystem(options)
    }
}

/// The config schema listed for `filesystem` (Genkit JS's
/// `FilesystemOptionsSchema`).
pub fn filesystem_config_schema() -> Value {
    crate::named::schemas::FILESYSTEM.clone()
}

#[async_trait]
impl GenerateMiddleware for Filesystem {
    fn name(&self) -> &str {
        "filesystem"
    }

    fn tools(&self) -> Vec<DynAction> {
        self.tools.clone()
    }

    async fn tool(&self, part: Part, ctx: ToolCallCtx, next: ToolNext) -> Result<Option<Part>> {
        let (name, reference) = match &part.kind {
            PartKind::ToolRequest(r) => (r.name.clone(), r.reference.clone()),
            _ => return next.run(part, ctx).await,
        };
        match next.run(part, ctx).await {
            Err(e) if !is_interrupt(&e) && self.names.contains(&name) => {
                let output = format!("Tool '{name}' failed: {}", e.message());
                Ok(Some(serde_json::from_value(serde_json::json!({
                    "toolResponse": {"name": name, "ref": reference, "output": output}
                }))?))
            }
            other => other,
        }
    }

    async fn generate(
        &self,
        mut env: GenerateEnvelope,
        ctx: GenerateCallCtx,
        next: GenerateNext,
    ) -> Result<GenerateResponse> {
        let queued = std::mem::take(&mut *self.queue.lock());
        if !queued.is_empty() {
            for msg in queued {
                if let Some(on_chunk) = &ctx.on_chunk {
                    on_chunk(GenerateResponseChunk {
                        role: Some(msg.role),
                        index: Some(env.message_index),
                        content: msg.content.clone(),
                        ..Default::default()
                    });
                }
                env.message_index += 1;
                env.request.messages.push(msg);
            }
        }
        next.run(env, ctx).await
    }
}
