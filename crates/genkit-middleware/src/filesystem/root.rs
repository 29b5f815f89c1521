//! Confinement of tool paths to the root directory.
//!
//! Genkit JS resolves a requested path lexically against the root and
//! checks the prefix. We do that and more: absolute paths and NUL bytes are
//! refused outright, and every existing component is checked after
//! resolving symlinks, so a link inside the root that points out of it
//! cannot be followed. For a path that does not exist yet (a file about to
//! be written), the deepest existing ancestor is resolved and checked, and
//! the rest must be plain names.

use genkit_core::{Error, Result};
use std::path::{Component, Path, PathBuf};

/// Genkit JS's message for any path that leaves the root.
pub const ACCESS_DENIED: &str = "Access denied: Path is outside of root directory.";

/// A root directory, canonicalized once.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

fn denied() -> Error {
    Error::new(genkit_core::StatusCode::PermissionDenied, ACCESS_DENIED)
}

impl Root {
    /// The root at `dir`, which must exist and be a directory.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let canonical = dir.canonicalize().map_err(|e| {
            Error::invalid_argument(format!(
                "filesystem middleware root directory `{}`: {e}",
                dir.display()
            ))
        })?;
        if !canonical.is_dir() {
            return Err(Error::invalid_argument(format!(
                "filesystem middleware root directory `{}` is not a directory",
                dir.display()
            )));
        }
        Ok(Self { dir: canonical })
    }

    /// The canonical root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Resolves `requested` (relative to the root) to a real path inside
    /// the root, with every symlink along it resolved, or fails with
    /// [`ACCESS_DENIED`]. The returned path may not exist yet; when it does
    /// not, its deepest existing ancestor is inside the root and what
    /// follows is plain names.
    pub fn resolve(&self, requested: &str) -> Result<PathBuf> {
        if requested.contains('\0') {
            return Err(denied());
        }
        let requested = Path::new(requested);
        // Lexical pass: `a/../b` stays allowed (Genkit JS allows it), but
        // climbing above the root or starting from `/` does not.
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for c in requested.components() {
            match c {
                Component::Normal(name) => parts.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(denied());
                    }
                }
                Component::RootDir | Component::Prefix(_) => return Err(denied()),
            }
        }
        // Physical pass: follow each component as the OS would, checking
        // after every symlink that we are still inside.
        let mut current = self.dir.clone();
        for (i, name) in parts.iter().enumerate() {
            let next = current.join(name);
            match std::fs::symlink_metadata(&next) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    // A dangling link could be made to point anywhere
                    // later; refuse it like one pointing out.
                    let target = next.canonicalize().map_err(|_| denied())?;
                    if !target.starts_with(&self.dir) {
                        return Err(denied());
                    }
                    current = target;
                }
                Ok(_) => current = next,
                Err(_) => {
                    // Not there (or unreadable): the rest are plain names
                    // under an ancestor already checked.
                    let mut rest = next;
                    for name in &parts[i + 1..] {
                        rest.push(name);
                    }
                    return Ok(rest);
                }
            }
        }
        Ok(current)
    }
}
