//! Reading a GGUF file's header: metadata and tensor directory, checked
//! against the file's length so a truncated or damaged file fails with a
//! clear error before any weight is read.

use candle_core::quantized::gguf_file::{Content, Value};
use genkit_core::{Error, Result};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

/// The architectures this plugin can run (GGUF `general.architecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    /// Llama and its relatives with the same tensors (SmolLM2, Mistral…).
    Llama,
    /// Qwen2 and Qwen2.5.
    Qwen2,
}

impl Architecture {
    fn parse(name: &str) -> Option<Self> {
        match name {
            "llama" => Some(Self::Llama),
            "qwen2" => Some(Self::Qwen2),
            _ => None,
        }
    }

    /// The GGUF name of the architecture.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
        }
    }
}

/// An open GGUF file: its parsed header and a reader for the weights.
pub(crate) struct GgufFile {
    pub content: Content,
    pub reader: BufReader<File>,
    pub architecture: Architecture,
}

impl GgufFile {
    /// Opens `path` and checks what can be checked without reading the
    /// weights: the magic and version, the metadata, that every tensor lies
    /// inside the file, and that the architecture is one this plugin runs.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| {
            let message = format!("cannot open the GGUF model {}: {e}", path.display());
            if e.kind() == std::io::ErrorKind::NotFound {
                Error::failed_precondition(message)
            } else {
                Error::internal(message)
            }
        })?;
        let length = file
            .metadata()
            .map_err(|e| Error::internal(format!("cannot stat {}: {e}", path.display())))?
            .len();
        let mut reader = BufReader::new(file);
        let content = Content::read(&mut reader).map_err(|e| damaged(path, e))?;
        check_tensors_in_file(path, &content, length)?;
        let name = metadata_str(&content, "general.architecture")
            .ok_or_else(|| damaged(path, "no general.architecture in the metadata"))?;
        let architecture = Architecture::parse(name).ok_or_else(|| {
            Error::invalid_argument(format!(
                "{}: unsupported model architecture `{name}` (supported: llama, qwen2)",
                path.display()
            ))
        })?;
        Ok(Self {
            content,
            reader,
            architecture,
        })
    }
}

fn damaged(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::invalid_argument(format!(
        "{} is not a readable GGUF model (damaged or not GGUF): {e}",
        path.display()
    ))
}

/// Every tensor's bytes must end inside the file: a truncated download
/// otherwise fails deep inside weight loading with a bare "unexpected EOF".
fn check_tensors_in_file(path: &Path, content: &Content, length: u64) -> Result<()> {
    for (name, info) in &content.tensor_infos {
        let elems = info.shape.elem_count() as u64;
        let block = info.ggml_dtype.block_size() as u64;
        let bytes = (elems / block.max(1)).saturating_mul(info.ggml_dtype.type_size() as u64);
        let end = content
            .tensor_data_offset
            .saturating_add(info.offset)
            .saturating_add(bytes);
        if end > length {
            return Err(damaged(
                path,
                format!(
                    "tensor `{name}` ends at byte {end} but the file has {length} bytes (truncated?)"
                ),
            ));
        }
    }
    Ok(())
}

/// A string metadata value.
pub(crate) fn metadata_str<'a>(content: &'a Content, key: &str) -> Option<&'a str> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .map(String::as_str)
}

/// An integer metadata value (any integer width).
pub(crate) fn metadata_u32(content: &Content, key: &str) -> Option<u32> {
    let v = content.metadata.get(key)?;
    v.to_u32()
        .ok()
        .or_else(|| v.to_i32().ok().and_then(|i| u32::try_from(i).ok()))
        .or_else(|| v.to_u64().ok().and_then(|i| u32::try_from(i).ok()))
}

/// A boolean metadata value.
pub(crate) fn metadata_bool(content: &Content, key: &str) -> Option<bool> {
    content.metadata.get(key).and_then(|v| v.to_bool().ok())
}

/// An array metadata value.
pub(crate) fn metadata_array<'a>(content: &'a Content, key: &str) -> Option<&'a [Value]> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_vec().ok())
        .map(Vec::as_slice)
}
