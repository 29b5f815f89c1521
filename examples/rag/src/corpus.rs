//! The folder being indexed: every Markdown file under it, chunked along
//! its sections into documents that remember where they came from.

use std::path::{Path, PathBuf};

use genkit::prelude::*;
use genkit::retrieval::chunk::{ChunkOptions, markdown_documents};
use genkit::types::DocumentData;

/// Chunks of at most this many characters: a section or two of prose, well
/// under all-MiniLM-L6-v2's 256-token window.
pub const CHUNK_SIZE: usize = 800;
/// Characters consecutive chunks of one section share, so a sentence cut
/// at a chunk's end is whole in the next one.
pub const CHUNK_OVERLAP: usize = 100;

/// One Markdown file, chunked.
#[derive(Debug)]
pub struct SourceFile {
    /// The path relative to the folder, with `/` separators (the citation).
    pub source: String,
    /// Its chunks, each with metadata `source`, `chunk` and `headings`.
    pub chunks: Vec<DocumentData>,
}

/// Every `.md` file under `dir` (hidden folders and files skipped), in path
/// order, chunked. An unreadable folder or file, or one that is not UTF-8,
/// is an error naming it.
pub fn markdown_files(dir: &Path) -> Result<Vec<SourceFile>> {
    let opts = ChunkOptions::new(CHUNK_SIZE, CHUNK_OVERLAP)?;
    let mut paths = Vec::new();
    collect(dir, &mut paths)?;
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::invalid_argument(format!("reading {}: {e}", path.display())))?;
            let source = relative(dir, &path);
            let chunks = markdown_documents(&source, &text, &opts);
            Ok(SourceFile { source, chunks })
        })
        .collect()
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Error::invalid_argument(format!("reading the folder {}: {e}", dir.display()))
    })?;
    for entry in entries {
        let entry = entry.map_err(|e| {
            Error::invalid_argument(format!("reading the folder {}: {e}", dir.display()))
        })?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        // `metadata` follows symlinks, so a linked folder or file counts.
        let meta = std::fs::metadata(&path)
            .map_err(|e| Error::invalid_argument(format!("reading {}: {e}", path.display())))?;
        if meta.is_dir() {
            collect(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("md"))
        {
            out.push(path);
        }
    }
    Ok(())
}

fn relative(dir: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use genkit::status::StatusCode;

    #[test]
    fn markdown_files_are_found_recursively_in_path_order() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("b/.hidden")).unwrap();
        std::fs::write(dir.path().join("b/z.md"), "# Z\n\nzed").unwrap();
        std::fs::write(dir.path().join("b/.hidden/h.md"), "# H").unwrap();
        std::fs::write(dir.path().join("a.MD"), "# A\n\nalpha").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not markdown").unwrap();
        let files = markdown_files(dir.path()).unwrap();
        let sources: Vec<&str> = files.iter().map(|f| f.source.as_str()).collect();
        assert_eq!(sources, ["a.MD", "b/z.md"]);
        let meta = files[1].chunks[0].metadata.as_ref().unwrap();
        assert_eq!(meta["source"], "b/z.md");
        assert_eq!(meta["headings"], json!(["Z"]));
    }

    #[test]
    fn a_missing_folder_or_a_file_that_is_not_text_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let err = markdown_files(&missing).unwrap_err();
        assert_eq!(err.status(), StatusCode::InvalidArgument);
        assert!(err.message().contains("nope"), "{}", err.message());
        std::fs::write(dir.path().join("bad.md"), [0xff, 0xfe, 0x00]).unwrap();
        let err = markdown_files(dir.path()).unwrap_err();
        assert!(err.message().contains("bad.md"), "{}", err.message());
    }
}
