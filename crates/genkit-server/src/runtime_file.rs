//! The runtime file: how the `genkit` CLI discovers a running app.
//!
//! In dev mode the app writes `<projectRoot>/.genkit/runtimes/<id>-<epochMillis>.json`
//! describing its Reflection API, and deletes it on exit. The CLI watches that
//! folder under the project root *it* computes, so the app must find the same
//! root: the nearest folder (from the working directory up) holding one of the
//! CLI's [`PROJECT_MARKERS`], else the working directory. The CLI does not
//! know `Cargo.toml`, so a Rust project puts a `package.json` (holding the
//! CLI as a dev dependency) at its root.

use crate::error::ServerError;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The files the `genkit` CLI (1.43) looks for to find the project root.
pub const PROJECT_MARKERS: [&str; 8] = [
    "package.json",
    "go.mod",
    "pyproject.toml",
    "requirements.txt",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "pubspec.yaml",
];

/// The project root as the CLI computes it, starting from `start`: the first
/// folder from `start` upwards (the filesystem root excluded, as in the CLI)
/// that holds a marker, else `start`.
pub fn find_project_root(start: &Path) -> PathBuf {
    let mut dir = Some(start);
    while let Some(d) = dir {
        // The CLI stops before the filesystem root.
        if d.parent().is_none() {
            break;
        }
        if PROJECT_MARKERS.iter().any(|m| d.join(m).exists()) {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    start.to_path_buf()
}

/// The content of a runtime file.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeInfo {
    /// The runtime id, `<pid>-<port>` (or `GENKIT_RUNTIME_ID`).
    pub id: String,
    /// This process.
    pub pid: u32,
    /// A display name for the tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `http://localhost:<port>`.
    pub reflection_server_url: String,
    /// When the runtime started, ISO 8601 UTC with milliseconds.
    pub timestamp: String,
    /// `rust/<version>`.
    pub genkit_version: String,
    /// Always 1.
    pub reflection_api_spec_version: u32,
}

/// A written runtime file, deleted when dropped (or by [`remove`](Self::remove)).
#[derive(Debug)]
pub struct RuntimeFile {
    path: Option<PathBuf>,
    pid: u32,
}

impl RuntimeFile {
    /// No file (the Reflection API v2 announces the runtime over its
    /// connection instead).
    pub(crate) fn none() -> Self {
        Self {
            path: None,
            pid: std::process::id(),
        }
    }

    /// Writes `info` under `<root>/.genkit/runtimes/`, named
    /// `<id>-<epochMillis>.json`. The file appears complete: it is written
    /// beside the folder, then renamed into it.
    pub fn write(root: &Path, info: &RuntimeInfo, epoch_millis: u128) -> Result<Self, ServerError> {
        let genkit_dir = root.join(".genkit");
        let dir = genkit_dir.join("runtimes");
        let name = format!("{}-{}.json", info.id, epoch_millis);
        let path = dir.join(&name);
        let err = |source| ServerError::RuntimeFile {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(err)?;
        let json = serde_json::to_vec_pretty(info).map_err(|e| err(e.into()))?;
        let tmp = genkit_dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, json).map_err(err)?;
        if let Err(e) = std::fs::rename(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(err(e));
        }
        Ok(Self {
            path: Some(path),
            pid: info.pid,
        })
    }

    /// The file's path, until removed.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Deletes the file if it still describes this process (as Genkit JS
    /// does). Safe to call more than once.
    pub fn remove(&mut self) {
        let Some(path) = self.path.take() else {
            return;
        };
        let ours = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("pid").and_then(serde_json::Value::as_u64))
            .is_some_and(|pid| pid == u64::from(self.pid));
        if ours && let Err(e) = std::fs::remove_file(&path) {
            ::tracing::warn!("could not remove the runtime file {}: {e}", path.display());
        }
    }
}

impl Drop for RuntimeFile {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Milliseconds since the Unix epoch.
pub fn epoch_millis(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// `2026-11-29T20:15:04.956Z` (what JavaScript's `Date.toISOString` prints).
pub fn iso8601_utc(t: SystemTime) -> String {
    let ms = epoch_millis(t);
    let secs = (ms / 1000) as i64;
    let millis = ms % 1000;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn iso_timestamps() {
        assert_eq!(iso8601_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_983_304_956);
        assert_eq!(iso8601_utc(t), "2026-11-29T20:15:04.956Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(iso8601_utc(leap), "2000-02-29T00:00:00.000Z");
    }
}
