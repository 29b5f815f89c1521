//! Fetching GGUF files by name from a model hub with Hugging Face's URL
//! layout (feature `download`).
//!
//! A file is named by repository, revision and path in the repository and
//! fetched from `<endpoint>/<repo>/resolve/<revision>/<file>`. The cache uses
//! the same folders as Hugging Face's own client (`models--<org>--<name>/
//! snapshots/<commit>/<file>`, `refs/<revision>`), so a file either client
//! downloaded is found by the other's lookups of the same revision.
//!
//! Why each step:
//! - a `HEAD` without following redirects first: the hub answers the
//!   resolve URL with the commit (`X-Repo-Commit`), the file's SHA-256
//!   (`X-Linked-Etag` for large files) and size (`X-Linked-Size`), and a
//!   redirect to its CDN, whose own headers carry none of these;
//! - the body goes to `blobs/<etag>.incomplete`, never to the final path:
//!   an interrupted download leaves only that partial file, which the next
//!   attempt resumes with a `Range` request (or restarts if the server
//!   ignores ranges);
//! - the size and, when the hub gives one, the SHA-256 are checked before an
//!   atomic rename into `snapshots/`: the cache never holds a damaged file
//!   under its final name.

use genkit_core::{Error, Result, StatusCode};
use reqwest::header::{self, HeaderMap};
use sha2::{Digest, Sha256};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The hub used when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// One file of a hub repository, e.g. `HubFile::new("HuggingFaceTB/SmolLM2-135M-Instruct-GGUF",
/// "smollm2-135m-instruct-q8_0.gguf")`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubFile {
    repo: String,
    file: String,
    revision: String,
}

impl HubFile {
    /// `file` (a path inside the repository) of `repo` (`owner/name`) at
    /// revision `main`.
    pub fn new(repo: impl Into<String>, file: impl Into<String>) -> Self {
        Self {
            repo: repo.into(),
            file: file.into(),
            revision: "main".to_owned(),
        }
    }

    /// The branch, tag or commit to fetch (default `main`). A 40-digit
    /// commit pins the file: once cached it is never fetched again.
    pub fn revision(mut self, revision: impl Into<String>) -> Self {
        self.revision = revision.into();
        self
    }

    /// Parses `owner/name/path/in/repo.gguf`, optionally followed by
    /// `@revision`.
    pub fn parse(spec: &str) -> Result<Self> {
        let (path, revision) = match spec.rsplit_once('@') {
            Some((path, rev)) => (path, Some(rev)),
            None => (spec, None),
        };
        let mut parts = path.splitn(3, '/');
        let (Some(owner), Some(name), Some(file)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(Error::invalid_argument(format!(
                "hub file {spec:?}: expected owner/name/file.gguf[@revision]"
            )));
        };
        let file = Self::new(format!("{owner}/{name}"), file);
        let file = match revision {
            Some(rev) => file.revision(rev),
            None => file,
        };
        file.validate()?;
        Ok(file)
    }

    /// The repository, `owner/name`.
    pub fn repo(&self) -> &str {
        &self.repo
    }

    /// The path of the file in the repository.
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Rejects names that would escape the cache folder or the URL path.
    fn validate(&self) -> Result<()> {
        let bad = |what: &str, value: &str| {
            Error::invalid_argument(format!("hub file {self}: invalid {what} {value:?}"))
        };
        let segment_ok = |s: &str| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && !s.contains(['\\', '?', '#', '%'])
                && !s.chars().any(char::is_control)
        };
        let repo: Vec<&str> = self.repo.split('/').collect();
        if repo.len() != 2 || !repo.iter().all(|s| segment_ok(s)) {
            return Err(bad("repository (expected owner/name)", &self.repo));
        }
        if !self.file.split('/').all(segment_ok) {
            return Err(bad("file path", &self.file));
        }
        if !segment_ok(&self.revision) || self.revision.contains('/') && !self.revision_is_ref() {
            return Err(bad("revision", &self.revision));
        }
        Ok(())
    }

    /// Branch names like `refs/pr/1` are the only revisions with slashes.
    fn revision_is_ref(&self) -> bool {
        self.revision
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
    }

    fn revision_is_commit(&self) -> bool {
        is_hex(&self.revision, 40)
    }
}

impl std::fmt::Display for HubFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}@{}", self.repo, self.file, self.revision)
    }
}

/// A model hub client: where files come from and where they are kept.
#[derive(Debug, Clone)]
pub struct Hub {
    endpoint: String,
    cache_dir: PathBuf,
    token: Option<String>,
}

impl Hub {
    /// The hub and cache that Hugging Face's client would use: endpoint
    /// `HF_ENDPOINT` (default [`DEFAULT_ENDPOINT`]); cache `HF_HUB_CACHE`,
    /// else `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else
    /// `~/.cache/huggingface/hub`; token `HF_TOKEN` (gated or private
    /// repositories), if set.
    pub fn from_env() -> Result<Self> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let cache_dir = var("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| var("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .or_else(|| var("XDG_CACHE_HOME").map(|c| PathBuf::from(c).join("huggingface/hub")))
            .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub")))
            .ok_or_else(|| {
                Error::failed_precondition(
                    "no cache folder for hub downloads: set HF_HUB_CACHE, HF_HOME or HOME",
                )
            })?;
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_owned());
        let token = std::env::var("HF_TOKEN").ok().filter(|v| !v.is_empty());
        Ok(Self::new(endpoint, cache_dir).with_token(token))
    }

    /// A hub at `endpoint` (e.g. `https://huggingface.co`) caching into
    /// `cache_dir`, without a token.
    pub fn new(endpoint: impl Into<String>, cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            endpoint: endpoint.into().trim_end_matches('/').to_owned(),
            cache_dir: cache_dir.into(),
            token: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` to the hub (not to the CDN it
    /// redirects to).
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    /// The cache folder.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The file's path if it is already in the cache for its revision (no
    /// network).
    pub fn cached(&self, file: &HubFile) -> Option<PathBuf> {
        file.validate().ok()?;
        let repo_dir = self.repo_dir(file);
        let commit = if file.revision_is_commit() {
            file.revision.clone()
        } else {
            let commit =
                std::fs::read_to_string(repo_dir.join("refs").join(&file.revision)).ok()?;
            let commit = commit.trim().to_owned();
            is_safe_segment(&commit).then_some(commit)?
        };
        let path = snapshot_path(&repo_dir, &commit, &file.file);
        path.is_file().then_some(path)
    }

    /// The file's local path: from the cache if there, else downloaded
    /// (resuming an earlier partial download), checked and cached first.
    pub async fn fetch(&self, file: &HubFile) -> Result<PathBuf> {
        file.validate()?;
        if let Some(path) = self.cached(file) {
            return Ok(path);
        }
        self.download(file).await
    }

    async fn download(&self, file: &HubFile) -> Result<PathBuf> {
        let url = format!(
            "{}/{}/resolve/{}/{}",
            self.endpoint,
            file.repo,
            file.revision.replace('/', "%2F"),
            file.file
        );
        let meta = self.metadata(file, &url).await?;
        let repo_dir = self.repo_dir(file);
        let commit = meta
            .commit
            .clone()
            .unwrap_or_else(|| file.revision.replace('/', "--"));
        let blobs = repo_dir.join("blobs");
        let partial = blobs.join(format!(
            "{}.incomplete",
            match &meta.etag {
                Some(etag) => etag.clone(),
                None => format!("{commit}--{}", file.file.replace('/', "--")),
            }
        ));
        create_dir(&blobs).await?;
        self.download_body(file, &meta, &partial).await?;
        check_and_install(file, &meta, &partial, &repo_dir, &commit).await
    }

    /// The `HEAD` of the resolve URL, redirects not followed, except those
    /// within the hub that carry no file metadata (a renamed repository
    /// redirects to its new name first).
    async fn metadata(&self, file: &HubFile, url: &str) -> Result<Metadata> {
        let mut current = url.to_owned();
        let mut meta = self.metadata_at(file, &current).await?;
        for _ in 0..5 {
            let same_hub = meta.url.starts_with(&format!("{}/", self.endpoint));
            if meta.commit.is_some() || meta.url == current || !same_hub {
                break;
            }
            current = meta.url.clone();
            meta = self.metadata_at(file, &current).await?;
        }
        Ok(meta)
    }

    async fn metadata_at(&self, file: &HubFile, url: &str) -> Result<Metadata> {
        let client = client(reqwest::redirect::Policy::none())?;
        let response = self
            .authorized(client.head(url))
            .send()
            .await
            .map_err(|e| unreachable_hub(file, url, &e))?;
        let status = response.status();
        let headers = response.headers();
        if !(status.is_success() || status.is_redirection()) {
            return Err(http_error(file, url, status, headers));
        }
        let text = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let etag = text("x-linked-etag")
            .or_else(|| text(header::ETAG.as_str()))
            .map(|e| e.trim_start_matches("W/").trim_matches('"').to_owned())
            .filter(|e| is_safe_segment(e));
        let size = text("x-linked-size")
            .or_else(|| {
                status
                    .is_success()
                    .then(|| text(header::CONTENT_LENGTH.as_str()))
                    .flatten()
            })
            .and_then(|s| s.parse::<u64>().ok());
        let commit = text("x-repo-commit").filter(|c| is_safe_segment(c));
        let location = if status.is_redirection() {
            let location = text(header::LOCATION.as_str()).ok_or_else(|| {
                Error::new(
                    StatusCode::Unavailable,
                    format!("{file}: the hub answered {status} without a Location ({url})"),
                )
            })?;
            let base = reqwest::Url::parse(url)
                .map_err(|e| Error::invalid_argument(format!("hub URL {url}: {e}")))?;
            base.join(&location)
                .map_err(|e| {
                    Error::new(
                        StatusCode::Unavailable,
                        format!("{file}: the hub redirected to a bad URL {location:?}: {e}"),
                    )
                })?
                .to_string()
        } else {
            url.to_owned()
        };
        Ok(Metadata {
            url: location,
            commit,
            sha256: etag.clone().filter(|e| is_hex(e, 64)),
            etag,
            size,
        })
    }

    /// Streams the body into `partial`, from its current length when the
    /// server honours the range.
    async fn download_body(&self, file: &HubFile, meta: &Metadata, partial: &Path) -> Result<()> {
        let mut offset = tokio::fs::metadata(partial)
            .await
            .map(|m| m.len())
            .unwrap_or(0);
        if meta.size.is_some_and(|size| offset > size) {
            remove(partial).await?;
            offset = 0;
        }
        if meta.size == Some(offset) && offset > 0 {
            // A previous attempt got every byte but failed later (or was
            // killed before its rename): only the checks are left.
            return Ok(());
        }
        let client = client(reqwest::redirect::Policy::limited(10))?;
        let mut request = client.get(&meta.url);
        if meta.url.starts_with(&self.endpoint) {
            request = self.authorized(request);
        }
        if offset > 0 {
            request = request.header(header::RANGE, format!("bytes={offset}-"));
        }
        let mut response = request
            .send()
            .await
            .map_err(|e| unreachable_hub(file, &meta.url, &e))?;
        let status = response.status();
        let append = match status {
            reqwest::StatusCode::PARTIAL_CONTENT if offset > 0 => {
                let start = response
                    .headers()
                    .get(header::CONTENT_RANGE)
                    .and_then(|v| v.to_str().ok())
                    .and_then(range_start);
                if start != Some(offset) {
                    return Err(Error::new(
                        StatusCode::Unavailable,
                        format!(
                            "{file}: asked for bytes from {offset}, the server sent a range \
                             starting at {start:?}; retry"
                        ),
                    ));
                }
                true
            }
            reqwest::StatusCode::RANGE_NOT_SATISFIABLE if offset > 0 => {
                // The partial file no longer fits the remote one: start over.
                remove(partial).await?;
                return Box::pin(self.download_body(file, meta, partial)).await;
            }
            s if s.is_success() => false,
            s => return Err(http_error(file, &meta.url, s, response.headers())),
        };
        let mut out = tokio::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(partial)
            .await
            .map_err(|e| io_error("opening", partial, &e))?;
        let mut received = if append { offset } else { 0 };
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) => {
                    out.flush().await.ok();
                    return Err(Error::new(
                        StatusCode::Unavailable,
                        format!(
                            "{file}: the download broke off after {received}{} bytes ({e}); \
                             the partial file {} is kept and the next attempt resumes it",
                            of_size(meta.size),
                            partial.display()
                        ),
                    ));
                }
            };
            out.write_all(&chunk)
                .await
                .map_err(|e| io_error("writing", partial, &e))?;
            received += chunk.len() as u64;
        }
        out.flush()
            .await
            .map_err(|e| io_error("writing", partial, &e))?;
        out.sync_all()
            .await
            .map_err(|e| io_error("syncing", partial, &e))?;
        Ok(())
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    fn repo_dir(&self, file: &HubFile) -> PathBuf {
        self.cache_dir
            .join(format!("models--{}", file.repo.replace('/', "--")))
    }
}

/// What the hub says about a file before it is downloaded.
#[derive(Debug)]
struct Metadata {
    /// Where the bytes are (the CDN the hub redirects to, or the hub).
    url: String,
    commit: Option<String>,
    etag: Option<String>,
    /// The etag when it is a SHA-256 (large files).
    sha256: Option<String>,
    size: Option<u64>,
}

/// Checks the complete partial file and renames it into `snapshots/`.
async fn check_and_install(
    file: &HubFile,
    meta: &Metadata,
    partial: &Path,
    repo_dir: &Path,
    commit: &str,
) -> Result<PathBuf> {
    let len = tokio::fs::metadata(partial)
        .await
        .map_err(|e| io_error("reading", partial, &e))?
        .len();
    if let Some(size) = meta.size
        && len != size
    {
        if len > size {
            remove(partial).await?;
        }
        return Err(Error::new(
            StatusCode::Unavailable,
            format!(
                "{file}: the download ended after {len} of {size} bytes; {}",
                if len > size {
                    "the file was discarded, retry".to_owned()
                } else {
                    format!(
                        "the partial file {} is kept and the next attempt resumes it",
                        partial.display()
                    )
                }
            ),
        ));
    }
    if let Some(expected) = &meta.sha256 {
        let actual = sha256_of(partial.to_owned()).await?;
        if &actual != expected {
            remove(partial).await?;
            return Err(Error::new(
                StatusCode::DataLoss,
                format!(
                    "{file}: the downloaded file's SHA-256 is {actual}, the hub says {expected}; \
                     the file was discarded"
                ),
            ));
        }
    }
    let target = snapshot_path(repo_dir, commit, &file.file);
    if let Some(parent) = target.parent() {
        create_dir(parent).await?;
    }
    tokio::fs::rename(partial, &target)
        .await
        .map_err(|e| io_error("moving into place", &target, &e))?;
    if !file.revision_is_commit() && meta.commit.is_some() {
        let refs = repo_dir.join("refs").join(&file.revision);
        if let Some(parent) = refs.parent() {
            create_dir(parent).await?;
        }
        write_atomically(&refs, commit.as_bytes()).await?;
    }
    Ok(target)
}

fn snapshot_path(repo_dir: &Path, commit: &str, file: &str) -> PathBuf {
    let mut path = repo_dir.join("snapshots").join(commit);
    path.extend(file.split('/'));
    path
}

async fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    tokio::fs::write(&tmp, bytes)
        .await
        .map_err(|e| io_error("writing", &tmp, &e))?;
    tokio::fs::rename(&tmp, path)
        .await
        .map_err(|e| io_error("writing", path, &e))
}

async fn sha256_of(path: PathBuf) -> Result<String> {
    tokio::task::spawn_blocking(move || {
        let mut reader = std::fs::File::open(&path).map_err(|e| io_error("reading", &path, &e))?;
        let mut hasher = Sha256::new();
        std::io::copy(&mut reader, &mut hasher).map_err(|e| io_error("reading", &path, &e))?;
        Ok(hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect())
    })
    .await
    .map_err(|e| Error::internal(format!("hashing a download: {e}")))?
}

fn client(redirects: reqwest::redirect::Policy) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(redirects)
        .connect_timeout(Duration::from_secs(30))
        // Between two reads of the body, not for the whole download.
        .read_timeout(Duration::from_secs(60))
        .user_agent(concat!("genkit-local-model/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::internal(format!("building the HTTP client: {e}")))
}

fn http_error(
    file: &HubFile,
    url: &str,
    status: reqwest::StatusCode,
    headers: &HeaderMap,
) -> Error {
    // The hub says which part of the name is wrong.
    let detail = headers
        .get("x-error-code")
        .or_else(|| headers.get("x-error-message"))
        .and_then(|v| v.to_str().ok())
        .map(|v| format!(" ({v})"))
        .unwrap_or_default();
    let (code, what) = match status.as_u16() {
        404 => (
            StatusCode::NotFound,
            "no such repository, revision or file".to_owned(),
        ),
        401 | 403 => (
            StatusCode::PermissionDenied,
            "the repository is gated or private: accept its terms and set HF_TOKEN".to_owned(),
        ),
        _ => (
            StatusCode::Unavailable,
            "the hub refused the request".to_owned(),
        ),
    };
    Error::new(
        code,
        format!("{file}: {what}{detail}: HTTP {status} from {url}"),
    )
}

fn unreachable_hub(file: &HubFile, url: &str, e: &reqwest::Error) -> Error {
    Error::new(
        StatusCode::Unavailable,
        format!("{file}: cannot reach {url}: {e} (set HF_ENDPOINT for a mirror)"),
    )
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::internal(format!("{what} {}: {e}", path.display()))
}

async fn create_dir(dir: &Path) -> Result<()> {
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| io_error("creating", dir, &e))
}

async fn remove(path: &Path) -> Result<()> {
    match tokio::fs::remove_file(path).await {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error("removing", path, &e)),
        _ => Ok(()),
    }
}

fn of_size(size: Option<u64>) -> String {
    size.map(|s| format!(" of {s}")).unwrap_or_default()
}

/// The first byte of `bytes <start>-<end>/<total>`.
fn range_start(content_range: &str) -> Option<u64> {
    content_range
        .strip_prefix("bytes ")?
        .split_once('-')?
        .0
        .trim()
        .parse()
        .ok()
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A header value usable as one file name.
fn is_safe_segment(s: &str) -> bool {
    let mut components = Path::new(s).components();
    matches!(components.next(), Some(Component::Normal(_)))
        && components.next().is_none()
        && !s.contains(['/', '\\'])
        && s.len() <= 200
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        let f = HubFile::parse("org/repo/dir/model.gguf@v1.0").unwrap();
        assert_eq!(f.repo(), "org/repo");
        assert_eq!(f.file(), "dir/model.gguf");
        assert_eq!(f.revision, "v1.0");
        assert_eq!(HubFile::parse("org/repo/m.gguf").unwrap().revision, "main");
        for bad in [
            "org/m.gguf",
            "org/repo/../x.gguf",
            "org/repo/a//b",
            "org/repo/x@..",
            "",
        ] {
            assert!(HubFile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_content_ranges() {
        assert_eq!(range_start("bytes 100-199/200"), Some(100));
        assert_eq!(range_start("bytes */200"), None);
    }

    #[test]
    fn cache_paths_follow_the_hub_layout() {
        let hub = Hub::new("http://h/", "/c");
        let f = HubFile::new("org/repo", "sub/m.gguf");
        assert_eq!(hub.repo_dir(&f), Path::new("/c/models--org--repo"));
        assert_eq!(
            snapshot_path(&hub.repo_dir(&f), "abc", f.file()),
            Path::new("/c/models--org--repo/snapshots/abc/sub/m.gguf")
        );
        assert!(!is_safe_segment(".."));
        assert!(!is_safe_segment("a/b"));
        assert!(is_safe_segment("0123abcd"));
    }
}
