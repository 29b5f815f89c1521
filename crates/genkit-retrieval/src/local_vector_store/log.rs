//! The store's data file: an append-only log of frames, one per `index`
//! call, each checksummed, written under a cross-process lock and synced
//! before the call returns. The layout is described in the module docs of
//! [`local_vector_store`](super).

use super::Record;
use genkit_core::{Error, Result};
use genkit_model::types::{DocumentData, Metadata};
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The file's first bytes: magic and format version.
pub(super) const FILE_MAGIC: &[u8; 8] = b"GKVSTOR\x01";
/// A frame's first bytes.
const FRAME_MAGIC: &[u8; 4] = b"GKVF";
/// Frame header: magic, payload length, CRC-32 of the payload.
const FRAME_HEADER: usize = 12;
/// The largest payload accepted (a longer length is damage, not data).
const MAX_PAYLOAD: u64 = 1 << 34;

/// Where a frame ends: how many records the log holds up to it, its byte
/// offset and the frame's checksum (the graph file names the frame it
/// covers up to by these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameEnd {
    pub records: usize,
    pub offset: u64,
    pub crc: u32,
}

/// A record's JSON part (the vector follows it in binary).
#[derive(Serialize, Deserialize)]
struct RecordJson {
    id: String,
    doc: DocumentData,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Metadata>,
}

/// The open data file and how far this handle has read it.
pub(super) struct Log {
    path: PathBuf,
    lock: fd_lock::RwLock<File>,
    /// End of the last whole frame read or written.
    end: u64,
    /// Every frame's end, in file order.
    pub frames: Vec<FrameEnd>,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    Error::failed_precondition(format!("{what} the vector store {}: {e}", path.display()))
        .with_source(e)
}

fn damaged(path: &Path, offset: u64, why: &str) -> Error {
    Error::failed_precondition(format!(
        "the vector store {} is damaged at byte {offset}: {why}; \
         move it away (or restore a backup) to start over",
        path.display()
    ))
}

/// Syncs the directory holding `path`, so a created or renamed file's
/// name is durable too (a no-op where directories cannot be opened).
pub(super) fn sync_dir(path: &Path) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The outcome of checking one frame at the read position.
enum Frame {
    /// A whole, valid frame: its records' payload and checksum.
    Valid(Vec<u8>, u32),
    /// Nothing more.
    End,
    /// An invalid frame (bad magic, length or checksum), with the reason.
    Invalid(&'static str),
}

fn read_frame(reader: &mut impl Read, remaining: u64) -> std::io::Result<Frame> {
    if remaining == 0 {
        return Ok(Frame::End);
    }
    if remaining < FRAME_HEADER as u64 {
        return Ok(Frame::Invalid("a frame header is cut short"));
    }
    let mut header = [0u8; FRAME_HEADER];
    reader.read_exact(&mut header)?;
    if &header[..4] != FRAME_MAGIC {
        return Ok(Frame::Invalid("no frame starts there"));
    }
    let len = u64::from(u32::from_le_bytes([
        header[4], header[5], header[6], header[7],
    ]));
    let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if len > MAX_PAYLOAD || len > remaining - FRAME_HEADER as u64 {
        return Ok(Frame::Invalid("a frame is cut short"));
    }
    let mut payload = vec![0u8; len as usize];
    reader.read_exact(&mut payload)?;
    if crc32fast::hash(&payload) != crc {
        return Ok(Frame::Invalid("a frame's checksum does not match"));
    }
    Ok(Frame::Valid(payload, crc))
}

/// Whether a valid frame starts anywhere in `bytes` (which follow an
/// invalid one): then the invalid frame is damage in the middle of the
/// file, not the torn tail of an interrupted append.
fn holds_a_valid_frame(bytes: &[u8]) -> bool {
    (0..bytes.len().saturating_sub(FRAME_HEADER - 1)).any(|at| {
        let rest = &bytes[at..];
        rest.starts_with(FRAME_MAGIC)
            && matches!(
                read_frame(&mut &rest[..], rest.len() as u64),
                Ok(Frame::Valid(..))
            )
    })
}

fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, tail) = bytes.split_at(n);
    *bytes = tail;
    Some(head)
}

fn take_u32(bytes: &mut &[u8]) -> Option<u32> {
    take(bytes, 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The records of a frame's payload.
fn decode(mut payload: &[u8]) -> std::result::Result<Vec<Record>, String> {
    let bytes = &mut payload;
    let count = take_u32(bytes).ok_or("no record count")?;
    let mut records = Vec::with_capacity((count as usize).min(1 << 16));
    for i in 0..count {
        let json_len = take_u32(bytes).ok_or_else(|| format!("record {i}: cut short"))?;
        let json =
            take(bytes, json_len as usize).ok_or_else(|| format!("record {i}: cut short"))?;
        let json: RecordJson =
            serde_json::from_slice(json).map_err(|e| format!("record {i}: {e}"))?;
        let dims = take_u32(bytes).ok_or_else(|| format!("record {i}: cut short"))? as usize;
        let raw = dims
            .checked_mul(4)
            .and_then(|n| take(bytes, n))
            .ok_or_else(|| format!("record {i}: its vector is cut short"))?;
        let vector = raw
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        records.push(Record {
            id: json.id,
            doc: json.doc,
            metadata: json.metadata,
            vector,
        });
    }
    if !bytes.is_empty() {
        return Err("bytes after its records".into());
    }
    Ok(records)
}

/// A frame holding `records`: header and payload.
fn encode(records: &[Record]) -> Result<(Vec<u8>, u32)> {
    let mut payload = Vec::new();
    let count = u32::try_from(records.len())
        .map_err(|_| Error::invalid_argument("too many documents in one index call"))?;
    payload.extend_from_slice(&count.to_le_bytes());
    for r in records {
        let json = serde_json::to_vec(&RecordJson {
            id: r.id.clone(),
            doc: r.doc.clone(),
            metadata: r.metadata.clone(),
        })?;
        let too_big = || Error::invalid_argument("a document is too large for the vector store");
        payload.extend_from_slice(
            &u32::try_from(json.len())
                .map_err(|_| too_big())?
                .to_le_bytes(),
        );
        payload.extend_from_slice(&json);
        let dims = u32::try_from(r.vector.len()).map_err(|_| too_big())?;
        payload.extend_from_slice(&dims.to_le_bytes());
        for x in &r.vector {
            payload.extend_from_slice(&x.to_le_bytes());
        }
    }
    if payload.len() as u64 > MAX_PAYLOAD {
        return Err(Error::invalid_argument(
            "an index call's documents are too large for one write; index fewer at a time",
        ));
    }
    let crc = crc32fast::hash(&payload);
    let mut frame = Vec::with_capacity(FRAME_HEADER + payload.len());
    frame.extend_from_slice(FRAME_MAGIC);
    frame.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    frame.extend_from_slice(&crc.to_le_bytes());
    frame.extend_from_slice(&payload);
    Ok((frame, crc))
}

impl Log {
    /// Opens (creating) the data file at `path` and reads every record in
    /// it; a torn last frame (an append a crash interrupted) is cut off.
    /// When the file holds no records yet, `legacy` is asked for the
    /// records to start with (a JSON store being migrated) and they are
    /// written as the first frame.
    pub(super) fn open(
        path: &Path,
        legacy: impl FnOnce() -> Result<Vec<Record>>,
    ) -> Result<(Self, Vec<Record>)> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| io_error(path, "opening", e))?;
        let mut log = Self {
            path: path.to_path_buf(),
            lock: fd_lock::RwLock::new(file),
            end: 0,
            frames: Vec::new(),
        };
        let mut records = Vec::new();
        let path = log.path.clone();
        let mut guard = log
            .lock
            .write()
            .map_err(|e| io_error(&path, "locking", e))?;
        let file: &mut File = &mut guard;
        let len = file
            .metadata()
            .map_err(|e| io_error(&path, "reading", e))?
            .len();
        if len < FILE_MAGIC.len() as u64 {
            // New, or a crash cut its creation short: only a prefix of
            // the magic (or nothing) may be there.
            let mut head = Vec::new();
            file.read_to_end(&mut head)
                .map_err(|e| io_error(&path, "reading", e))?;
            if !FILE_MAGIC.starts_with(&head) {
                return Err(not_a_store(&path));
            }
            file.set_len(0)
                .and_then(|()| file.seek(SeekFrom::Start(0)))
                .and_then(|_| file.write_all(FILE_MAGIC))
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error(&path, "writing", e))?;
            sync_dir(&path);
            log.end = FILE_MAGIC.len() as u64;
        } else {
            let mut magic = [0u8; 8];
            file.read_exact(&mut magic)
                .map_err(|e| io_error(&path, "reading", e))?;
            if &magic != FILE_MAGIC {
                return Err(not_a_store(&path));
            }
            log.end = FILE_MAGIC.len() as u64;
            read_frames(
                &path,
                file,
                &mut log.end,
                &mut log.frames,
                &mut records,
                true,
            )?;
        }
        if records.is_empty() {
            let imported = legacy()?;
            if !imported.is_empty() {
                append_locked(&path, file, &mut log.end, &mut log.frames, &imported)?;
                records = imported;
            }
        }
        drop(guard);
        Ok((log, records))
    }

    /// Records other handles (or processes) appended since this one last
    /// read, if the file grew; `None` when it shrank or was replaced (the
    /// caller reopens it).
    pub(super) fn refresh(&mut self) -> Result<Option<Vec<Record>>> {
        let len = std::fs::metadata(&self.path)
            .map_err(|e| io_error(&self.path, "reading", e))?
            .len();
        if len == self.end {
            return Ok(Some(Vec::new()));
        }
        if len < self.end {
            return Ok(None);
        }
        let path = self.path.clone();
        let mut guard = self
            .lock
            .write()
            .map_err(|e| io_error(&path, "locking", e))?;
        let mut records = Vec::new();
        read_frames(
            &path,
            &mut guard,
            &mut self.end,
            &mut self.frames,
            &mut records,
            true,
        )?;
        Ok(Some(records))
    }

    /// Under the lock: reads what other handles appended (returned first,
    /// for the caller to take in before deduplicating), then lets `make`
    /// choose the records to append given them, appends those as one frame
    /// and syncs the file before returning.
    pub(super) fn append_with(
        &mut self,
        make: impl FnOnce(&[Record]) -> Result<Vec<Record>>,
    ) -> Result<(Vec<Record>, Vec<Record>)> {
        let path = self.path.clone();
        let mut guard = self
            .lock
            .write()
            .map_err(|e| io_error(&path, "locking", e))?;
        let file: &mut File = &mut guard;
        let len = file
            .metadata()
            .map_err(|e| io_error(&path, "reading", e))?
            .len();
        if len < self.end {
            return Err(Error::failed_precondition(format!(
                "the vector store {} shrank while open; retry",
                path.display()
            )));
        }
        let mut theirs = Vec::new();
        read_frames(
            &path,
            file,
            &mut self.end,
            &mut self.frames,
            &mut theirs,
            true,
        )?;
        let ours = make(&theirs)?;
        if !ours.is_empty() {
            append_locked(&path, file, &mut self.end, &mut self.frames, &ours)?;
        }
        Ok((theirs, ours))
    }
}

fn not_a_store(path: &Path) -> Error {
    Error::failed_precondition(format!(
        "the vector store {} is not a store file (it does not start with this store's header)",
        path.display()
    ))
}

/// Reads the frames from `*end` to the end of the file into `records`,
/// advancing `*end`. An invalid frame with no valid frame after it is the
/// torn tail of an interrupted append: it is cut off (`truncate`, under
/// the write lock). One with valid frames after it is damage: an error.
fn read_frames(
    path: &Path,
    file: &mut File,
    end: &mut u64,
    frames: &mut Vec<FrameEnd>,
    records: &mut Vec<Record>,
    truncate: bool,
) -> Result<()> {
    let len = file
        .metadata()
        .map_err(|e| io_error(path, "reading", e))?
        .len();
    file.seek(SeekFrom::Start(*end))
        .map_err(|e| io_error(path, "reading", e))?;
    let mut reader = BufReader::with_capacity(1 << 20, &mut *file);
    let mut total = frames.last().map_or(0, |f| f.records);
    loop {
        let at = *end;
        match read_frame(&mut reader, len - at).map_err(|e| io_error(path, "reading", e))? {
            Frame::End => return Ok(()),
            Frame::Valid(payload, crc) => {
                let batch = decode(&payload).map_err(|why| damaged(path, at, &why))?;
                *end = at + (FRAME_HEADER + payload.len()) as u64;
                total += batch.len();
                frames.push(FrameEnd {
                    records: total,
                    offset: *end,
                    crc,
                });
                records.extend(batch);
            }
            Frame::Invalid(why) => {
                drop(reader);
                let mut rest = Vec::new();
                file.seek(SeekFrom::Start(at))
                    .and_then(|_| file.read_to_end(&mut rest))
                    .map_err(|e| io_error(path, "reading", e))?;
                if holds_a_valid_frame(rest.get(1..).unwrap_or_default()) {
                    return Err(damaged(path, at, why));
                }
                if truncate {
                    tracing::warn!(
                        "vector store {}: dropping {} bytes at its end ({why}), \
                         the part of an append a crash interrupted",
                        path.display(),
                        rest.len()
                    );
                    file.set_len(at)
                        .and_then(|()| file.sync_all())
                        .map_err(|e| io_error(path, "repairing", e))?;
                }
                return Ok(());
            }
        }
    }
}

/// Appends `records` as one frame at `*end` and syncs the file.
fn append_locked(
    path: &Path,
    file: &mut File,
    end: &mut u64,
    frames: &mut Vec<FrameEnd>,
    records: &[Record],
) -> Result<()> {
    let (frame, crc) = encode(records)?;
    let written = file
        .seek(SeekFrom::Start(*end))
        .and_then(|_| file.write_all(&frame))
        .and_then(|()| file.sync_data());
    if let Err(e) = written {
        // Leave no partial frame behind for the next append to follow.
        let _ = file.set_len(*end);
        return Err(io_error(path, "writing", e));
    }
    *end += frame.len() as u64;
    frames.push(FrameEnd {
        records: frames.last().map_or(0, |f| f.records) + records.len(),
        offset: *end,
        crc,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(i: usize) -> Record {
        Record {
            id: format!("id{i}"),
            doc: DocumentData::from_text(format!("doc {i}")),
            metadata: None,
            vector: vec![i as f32, 1.0, -2.5],
        }
    }

    #[test]
    fn frames_round_trip_and_reject_damage() {
        let (frame, crc) = encode(&[record(1), record(2)]).expect("encoded");
        let Frame::Valid(payload, c) =
            read_frame(&mut &frame[..], frame.len() as u64).expect("read")
        else {
            panic!("not valid");
        };
        assert_eq!(c, crc);
        let back = decode(&payload).expect("decoded");
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].id, "id2");
        assert_eq!(back[1].vector, vec![2.0, 1.0, -2.5]);
        let mut bad = frame.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(matches!(
            read_frame(&mut &bad[..], bad.len() as u64),
            Ok(Frame::Invalid(_))
        ));
        assert!(matches!(
            read_frame(&mut &frame[..20], 20),
            Ok(Frame::Invalid(_))
        ));
        assert!(holds_a_valid_frame(&[&[0u8; 5][..], &frame].concat()));
        assert!(!holds_a_valid_frame(&bad));
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    fn batch(start: usize, len: usize) -> Vec<Record> {
        (start..start + len)
            .map(|i| Record {
                id: format!("id{i}"),
                doc: DocumentData::from_text(format!("doc {i}")),
                metadata: None,
                vector: vec![i as f32, 0.5],
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever length a crash leaves the file at, opening it gives
        /// the records of the frames wholly written, in order, and the
        /// file cut back to them.
        #[test]
        fn any_cut_keeps_exactly_the_whole_frames(
            sizes in proptest::collection::vec(1usize..5, 1..5),
            cut in 0.0f64..1.0,
        ) {
            let dir = std::env::temp_dir().join(format!(
                "genkit-log-prop-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            ));
            std::fs::create_dir_all(&dir).expect("dir");
            let path = dir.join("s.vdb");
            let (mut log, _) = Log::open(&path, || Ok(Vec::new())).expect("opened");
            let mut ends = vec![(0usize, log.end)];
            let mut total = 0;
            for n in &sizes {
                let ours = batch(total, *n);
                log.append_with(|_| Ok(ours)).expect("appended");
                total += n;
                ends.push((total, log.end));
            }
            drop(log);
            let full = std::fs::metadata(&path).expect("len").len();
            let at = (full as f64 * cut) as u64;
            let file = OpenOptions::new().write(true).open(&path).expect("open");
            file.set_len(at).expect("cut");
            drop(file);
            let (log, records) = Log::open(&path, || Ok(Vec::new())).expect("reopened");
            let (kept, end) = ends
                .iter()
                .rev()
                .find(|(_, e)| *e <= at.max(FILE_MAGIC.len() as u64))
                .copied()
                .unwrap_or((0, FILE_MAGIC.len() as u64));
            prop_assert_eq!(records.len(), kept);
            for (i, r) in records.iter().enumerate() {
                prop_assert_eq!(&r.id, &format!("id{i}"));
            }
            prop_assert_eq!(log.end, end);
            prop_assert_eq!(std::fs::metadata(&path).expect("len").len(), end);
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
