//! The local store's approximate index: an HNSW graph (hierarchical
//! navigable small world, Malkov & Yashunin) over the stored vectors, used
//! once a store holds [`HnswOptions::threshold`] entries or more.
//!
//! The graph is this crate's own, small, so that it can be kept beside the
//! data file and grown as records are appended: nodes are the store's
//! entry numbers, distances are cosine distances (`1 - cos`) computed from
//! the store's own vectors and norms (no second copy of the vectors), and
//! a node's level comes from a hash of its number, so the graph depends
//! only on the vectors and the batches they were inserted in, not on the
//! number of cores. Vectors of zero or non-finite norm stay out of it (exact
//! search scores them 0, so they rank last there too).
//!
//! The graph file (`<store>.hnsw`) is a snapshot, written to a unique
//! temporary name and renamed over the old one. It names the data-file
//! frame it covers up to (record count, byte offset, checksum); on open
//! it is used when that frame is still there, its parameters are the
//! options' and its own checksum holds, and the records after it are
//! inserted. Otherwise (missing, stale, damaged, other parameters) the
//! graph is rebuilt from the records: it is a cache, never a reason for a
//! query to fail. Layout, little-endian: `GKHNSW\0\x01`, u32 M, u32
//! efConstruction, u32 dimensions, u64 nodes, u64 frame offset, u32 frame
//! checksum, u32 entry node (`u32::MAX`: none), u8 top level; per node a u8
//! level (255: not in the graph) and per level 0..=level a u16 count and
//! that many u32 neighbours; then a CRC-32 of everything before it.

use super::log::{FrameEnd, sync_dir};
use super::{dot, dot4};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::Write;
use std::path::Path;

/// How the local store's approximate (HNSW) index is built and searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswOptions {
    threshold: usize,
    max_connections: usize,
    ef_construction: usize,
    ef_search: usize,
}

impl Default for HnswOptions {
    /// Approximate search from 50,000 entries; 16 links a node (32 on the
    /// bottom layer), candidate lists of 200 when building and when
    /// searching. Below the threshold an exact scan is cheap (0.08-0.1 µs
    /// of CPU per 384-dimensional entry with AVX2, so 4-5 ms at 50,000). On all-MiniLM-L6-v2 embeddings of 100,000 sentences these
    /// defaults gave recall@10 0.998 against exact search (1.000 at 10,000)
    /// and 0.8-1.0 ms of CPU a query against the scan's 7.5-9.6 ms; the
    /// build is the cost, 0.8-1.0 ms of CPU per entry at 100,000
    /// (candidate lists of 100 when building: 0.5 ms, recall 0.995).
    /// bench/RESULTS.md, "The local store's graph on real MiniLM
    /// embeddings".
    fn default() -> Self {
        Self {
            threshold: 50_000,
            max_connections: 16,
            ef_construction: 200,
            ef_search: 200,
        }
    }
}

impl HnswOptions {
    /// Options that never build the index: exact search at every size.
    pub fn disabled() -> Self {
        Self {
            threshold: usize::MAX,
            ..Self::default()
        }
    }

    /// From how many stored entries the index is built and searched.
    pub fn threshold(mut self, entries: usize) -> Self {
        self.threshold = entries;
        self
    }

    /// Links per node in the graph (`M`; 1 to 256).
    pub fn max_connections(mut self, m: usize) -> Self {
        self.max_connections = m.clamp(1, 256);
        self
    }

    /// Candidate list size while inserting (`efConstruction`).
    pub fn ef_construction(mut self, ef: usize) -> Self {
        self.ef_construction = ef.max(1);
        self
    }

    /// Candidate list size while searching (`ef`; at least `k` is used).
    pub fn ef_search(mut self, ef: usize) -> Self {
        self.ef_search = ef.max(1);
        self
    }

    pub(super) fn applies(&self, entries: usize) -> bool {
        entries >= self.threshold
    }
}

/// Whether a vector of norm `n` has a direction to compare.
fn usable_norm(n: f32) -> bool {
    n.is_finite() && n > 0.0
}

/// The store's vectors as the graph reads them.
pub(super) struct Vectors<'a> {
    /// Entry `i`'s vector is `data[i * dims..(i + 1) * dims]`.
    pub data: &'a [f32],
    pub dims: usize,
    pub norms: &'a [f32],
}

impl Vectors<'_> {
    fn row(&self, i: u32) -> &[f32] {
        let at = i as usize * self.dims;
        &self.data[at..at + self.dims]
    }

    /// The cosine distance from `q` (of norm `qn`) to entry `j`.
    fn distance_to(&self, q: &[f32], qn: f32, j: u32) -> f32 {
        1.0 - dot(q, self.row(j)) / (qn * self.norms[j as usize])
    }

    /// The cosine distances from `q` (of norm `qn`) to the entries `ids`,
    /// in order, into `out`: four at a time, so that their rows' loads
    /// overlap (see [`dot4`]).
    fn distances_to(&self, q: &[f32], qn: f32, ids: &[u32], out: &mut Vec<f32>) {
        out.clear();
        let mut quads = ids.chunks_exact(4);
        for c in &mut quads {
            let rows = [
                self.row(c[0]),
                self.row(c[1]),
                self.row(c[2]),
                self.row(c[3]),
            ];
            for (d, &j) in dot4(q, rows).into_iter().zip(c) {
                out.push(1.0 - d / (qn * self.norms[j as usize]));
            }
        }
        for &j in quads.remainder() {
            out.push(self.distance_to(q, qn, j));
        }
    }
}

/// A candidate: distance and node, ordered by distance then node.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored(f32, u32);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

/// Which nodes a search has seen: a stamp per node, so clearing is O(1).
#[derive(Default)]
struct Visited {
    marks: Vec<u32>,
    stamp: u32,
}

impl Visited {
    fn reset(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            self.marks.fill(0);
            self.stamp = 1;
        }
    }

    /// Marks `i`; false when it already was.
    fn insert(&mut self, i: u32) -> bool {
        let mark = &mut self.marks[i as usize];
        if *mark == self.stamp {
            return false;
        }
        *mark = self.stamp;
        true
    }
}

/// A node's level for "not in the graph".
const ABSENT: u8 = u8::MAX;
/// The highest level a node gets.
const MAX_LEVEL: u8 = 15;
const GRAPH_MAGIC: &[u8; 8] = b"GKHNSW\0\x01";

/// How a graph came to be (for logs and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Origin {
    /// Built from the records.
    Built,
    /// Read from the graph file.
    Loaded,
}

/// The graph over the store's entries `0..len()`.
pub(super) struct Graph {
    m: usize,
    m0: usize,
    ef_construction: usize,
    ef_search: usize,
    level_scale: f64,
    levels: Vec<u8>,
    /// `links[i][l]`: node `i`'s neighbours on level `l`.
    links: Vec<Vec<Vec<u32>>>,
    entry: Option<u32>,
    top: u8,
    /// How many entries the graph file holds.
    persisted: usize,
    pub origin: Origin,
}

/// How long a neighbour list of capacity `cap` may grow before it is
/// pruned back to `cap`.
fn slack(cap: usize) -> usize {
    cap + cap / 2
}

/// splitmix64: the hash a node's level is drawn from.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Graph {
    /// An empty graph.
    pub(super) fn new(opts: &HnswOptions) -> Self {
        let m = opts.max_connections.max(2);
        Self {
            m,
            m0: 2 * m,
            ef_construction: opts.ef_construction,
            ef_search: opts.ef_search,
            level_scale: 1.0 / (m as f64).ln(),
            levels: Vec::new(),
            links: Vec::new(),
            entry: None,
            top: 0,
            persisted: 0,
            origin: Origin::Built,
        }
    }

    /// How many store entries the graph covers.
    pub(super) fn len(&self) -> usize {
        self.levels.len()
    }

    fn level_for(&self, i: u32) -> u8 {
        let u = (mix(u64::from(i)) >> 11) as f64 / (1u64 << 53) as f64;
        let level = (-(1.0 - u).ln() * self.level_scale).floor();
        if level.is_finite() && level >= 0.0 {
            (level as u8).min(MAX_LEVEL)
        } else {
            0
        }
    }

    fn neighbours(&self, i: u32, level: usize) -> &[u32] {
        self.links[i as usize]
            .get(level)
            .map_or(&[][..], Vec::as_slice)
    }

    /// The `ef` nodes nearest by `dists` (distances of a list of nodes)
    /// reachable on `level` from `eps`, nearest first.
    fn search_level(
        &self,
        dists: &impl Fn(&[u32], &mut Vec<f32>),
        eps: &[Scored],
        ef: usize,
        level: usize,
        visited: &mut Visited,
    ) -> Vec<Scored> {
        let mut candidates: BinaryHeap<Reverse<Scored>> = BinaryHeap::new();
        let mut results: BinaryHeap<Scored> = BinaryHeap::new();
        for &e in eps {
            if visited.insert(e.1) {
                candidates.push(Reverse(e));
                results.push(e);
            }
        }
        while results.len() > ef {
            results.pop();
        }
        // A node's unseen neighbours, measured together (as `dists` can
        // overlap their loads), then taken in order as one at a time.
        let (mut fresh, mut measured) = (Vec::new(), Vec::new());
        while let Some(Reverse(c)) = candidates.pop() {
            if results.len() >= ef && results.peek().is_some_and(|w| c.0 > w.0) {
                break;
            }
            fresh.clear();
            fresh.extend(
                self.neighbours(c.1, level)
                    .iter()
                    .copied()
                    .filter(|&n| visited.insert(n)),
            );
            dists(&fresh, &mut measured);
            for (&n, &d) in fresh.iter().zip(&measured) {
                if results.len() < ef || results.peek().is_some_and(|w| d < w.0) {
                    candidates.push(Reverse(Scored(d, n)));
                    results.push(Scored(d, n));
                    if results.len() > ef {
                        results.pop();
                    }
                }
            }
        }
        results.into_sorted_vec()
    }

    /// Walks down from the entry point to `level + 1` greedily.
    fn descend(&self, dists: &impl Fn(&[u32], &mut Vec<f32>), level: u8) -> Option<Scored> {
        let entry = self.entry?;
        let mut measured = Vec::new();
        dists(&[entry], &mut measured);
        let mut best = Scored(measured[0], entry);
        let mut l = self.top;
        while l > level {
            loop {
                let mut moved = false;
                let ns = self.neighbours(best.1, l as usize);
                dists(ns, &mut measured);
                for (&n, &d) in ns.iter().zip(&measured) {
                    if d < best.0 {
                        best = Scored(d, n);
                        moved = true;
                    }
                }
                if !moved {
                    break;
                }
            }
            l -= 1;
        }
        Some(best)
    }

    /// Up to `m` of `candidates` (nearest first) as neighbours, keeping a
    /// candidate only when it is nearer the new node than every one kept
    /// (the paper's heuristic: links spread in all directions).
    fn select(v: &Vectors<'_>, candidates: &[Scored], m: usize) -> Vec<u32> {
        let mut kept: Vec<u32> = Vec::with_capacity(m);
        for c in candidates {
            if kept.len() >= m {
                break;
            }
            let row = v.row(c.1);
            let cn = v.norms[c.1 as usize];
            if kept.iter().all(|&r| v.distance_to(row, cn, r) > c.0) {
                kept.push(c.1);
            }
        }
        kept
    }

    /// Node `i`'s candidate neighbours on each of its levels (index `l`:
    /// level `l`) that the graph as it stands reaches, nearest first:
    /// searched without changing the graph, so several threads can search
    /// for the nodes of one chunk at once. Empty for levels the graph does
    /// not have yet.
    fn candidates(
        &self,
        v: &Vectors<'_>,
        i: u32,
        level: u8,
        visited: &mut Visited,
    ) -> Vec<Vec<Scored>> {
        let q = v.row(i);
        let qn = v.norms[i as usize];
        let dists = |ids: &[u32], out: &mut Vec<f32>| v.distances_to(q, qn, ids, out);
        let mut out = vec![Vec::new(); level as usize + 1];
        let Some(start) = self.descend(&dists, level) else {
            return out;
        };
        let mut eps = vec![start];
        for l in (0..=level.min(self.top) as usize).rev() {
            visited.reset(self.levels.len());
            let found = self.search_level(&dists, &eps, self.ef_construction, l, visited);
            eps.clone_from(&found);
            out[l] = found;
        }
        out
    }

    /// Links node `i` (the next one) given its `candidates` in the graph
    /// before its chunk (which began at node `chunk`): the chunk's earlier
    /// nodes, which that search could not see, are candidates too.
    fn commit(&mut self, v: &Vectors<'_>, level: u8, mut candidates: Vec<Vec<Scored>>, chunk: u32) {
        let i = self.levels.len() as u32;
        self.levels.push(level);
        self.links.push(vec![Vec::new(); level as usize + 1]);
        let q = v.row(i);
        let qn = v.norms[i as usize];
        let (mut earlier, mut measured) = (Vec::new(), Vec::new());
        for (l, found) in candidates.iter_mut().enumerate() {
            earlier.clear();
            earlier.extend((chunk..i).filter(|&j| {
                let lj = self.levels[j as usize];
                lj != ABSENT && usize::from(lj) >= l
            }));
            v.distances_to(q, qn, &earlier, &mut measured);
            found.extend(earlier.iter().zip(&measured).map(|(&j, &d)| Scored(d, j)));
            found.sort_unstable();
            found.truncate(self.ef_construction);
            let chosen = Self::select(v, found, self.m);
            let cap = if l == 0 { self.m0 } else { self.m };
            for &c in &chosen {
                let links = &mut self.links[c as usize][l];
                links.push(i);
                // A full list is pruned back to `cap` only once it has
                // grown by half again: pruning (the heuristic over every
                // pair) was most of an insertion's cost when it ran on
                // every link added to a full list.
                if links.len() > slack(cap) {
                    let row = v.row(c);
                    let cn = v.norms[c as usize];
                    let mut scored: Vec<Scored> = links
                        .iter()
                        .map(|&n| Scored(v.distance_to(row, cn, n), n))
                        .collect();
                    scored.sort_unstable();
                    *links = Self::select(v, &scored, cap);
                }
            }
            self.links[i as usize][l] = chosen;
        }
        if self.entry.is_none() || level > self.top {
            self.entry = Some(i);
            self.top = level;
        }
    }

    /// Inserts the store's entries from `len()` to the end of `v`, in
    /// chunks: the searches of a chunk's nodes run on all cores against
    /// the graph before the chunk, then its nodes are linked in order
    /// (each also considering the chunk's earlier nodes). Linking stays
    /// sequential, so the graph and its file are the same whatever the
    /// number of cores.
    pub(super) fn extend(&mut self, v: &Vectors<'_>) {
        const CHUNK: usize = 128;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        while self.len() < v.norms.len() {
            let first = self.len();
            let end = (first + CHUNK).min(v.norms.len());
            let levels: Vec<u8> = (first..end)
                .map(|i| {
                    if usable_norm(v.norms[i]) {
                        self.level_for(i as u32)
                    } else {
                        ABSENT
                    }
                })
                .collect();
            let mut found: Vec<Vec<Vec<Scored>>> = vec![Vec::new(); end - first];
            let this = &*self;
            let per = (end - first).div_ceil(threads);
            std::thread::scope(|scope| {
                for (t, slots) in found.chunks_mut(per.max(1)).enumerate() {
                    let levels = &levels;
                    scope.spawn(move || {
                        let mut visited = Visited::default();
                        for (k, slot) in slots.iter_mut().enumerate() {
                            let off = t * per + k;
                            let level = levels[off];
                            if level != ABSENT {
                                *slot =
                                    this.candidates(v, (first + off) as u32, level, &mut visited);
                            }
                        }
                    });
                }
            });
            for (off, candidates) in found.into_iter().enumerate() {
                let level = levels[off];
                if level == ABSENT {
                    self.levels.push(ABSENT);
                    self.links.push(Vec::new());
                } else {
                    self.commit(v, level, candidates, first as u32);
                }
            }
        }
    }

    /// About the `k` entries nearest `query` with their cosine similarity,
    /// best first; `None` when the query has no direction (the caller
    /// searches exactly).
    pub(super) fn search(
        &self,
        v: &Vectors<'_>,
        query: &[f32],
        k: usize,
    ) -> Option<Vec<(f32, usize)>> {
        let qn = super::norm(query);
        if !usable_norm(qn) {
            return None;
        }
        let dists = |ids: &[u32], out: &mut Vec<f32>| v.distances_to(query, qn, ids, out);
        let Some(start) = self.descend(&dists, 0) else {
            return Some(Vec::new());
        };
        let mut visited = Visited::default();
        visited.reset(self.len());
        let found = self.search_level(&dists, &[start], self.ef_search.max(k), 0, &mut visited);
        Some(
            found
                .into_iter()
                .take(k)
                .map(|s| (1.0 - s.0, s.1 as usize))
                .collect(),
        )
    }

    /// Whether the graph file lags far enough behind to be rewritten: when
    /// the entries it misses are an eighth of those it holds, so writing
    /// it costs O(n) over a store's life and a restart inserts at most
    /// about a ninth of the entries again.
    pub(super) fn wants_saving(&self) -> bool {
        let new = self.len() - self.persisted.min(self.len());
        new > 0 && new >= self.persisted / 8
    }

    /// Writes the graph to `path` (a unique temporary file renamed over
    /// it). `frame` is the data-file frame the graph covers up to.
    pub(super) fn save(
        &mut self,
        path: &Path,
        frame: FrameEnd,
        dims: usize,
    ) -> std::io::Result<()> {
        debug_assert_eq!(frame.records, self.len());
        let mut out = Vec::with_capacity(64 + self.len() * (1 + 2 + 4 * self.m));
        out.extend_from_slice(GRAPH_MAGIC);
        for n in [self.m, self.ef_construction, dims] {
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        out.extend_from_slice(&frame.offset.to_le_bytes());
        out.extend_from_slice(&frame.crc.to_le_bytes());
        out.extend_from_slice(&self.entry.unwrap_or(u32::MAX).to_le_bytes());
        out.push(self.top);
        for (level, links) in self.levels.iter().zip(&self.links) {
            out.push(*level);
            for l in links {
                out.extend_from_slice(&(l.len() as u16).to_le_bytes());
                for n in l {
                    out.extend_from_slice(&n.to_le_bytes());
                }
            }
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        let tmp = unique_temp(path);
        let written = std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&out).and_then(|()| f.sync_data()))
            .and_then(|()| std::fs::rename(&tmp, path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        } else {
            sync_dir(path);
            self.persisted = self.len();
        }
        written
    }

    /// The graph in `bytes` (a graph file), if it was built with `opts`
    /// over vectors of `dims` dimensions and covers up to one of `frames`;
    /// otherwise why not.
    pub(super) fn load(
        bytes: &[u8],
        opts: &HnswOptions,
        dims: usize,
        frames: &[FrameEnd],
    ) -> Result<Self, String> {
        let body_len = bytes.len().checked_sub(4).ok_or("too short")?;
        let (body, crc) = bytes.split_at(body_len);
        if crc32fast::hash(body) != u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]) {
            return Err("its checksum does not match".into());
        }
        let mut r = Reader(body);
        if r.take(8)? != GRAPH_MAGIC {
            return Err("not a graph file".into());
        }
        let mut g = Self::new(opts);
        if r.u32()? as usize != g.m || r.u32()? as usize != g.ef_construction {
            return Err("built with other parameters".into());
        }
        if r.u32()? as usize != dims {
            return Err("built over vectors of another length".into());
        }
        let nodes = r.u64()?;
        let frame = FrameEnd {
            records: usize::try_from(nodes).map_err(|_| "too many nodes")?,
            offset: r.u64()?,
            crc: r.u32()?,
        };
        if !frames.contains(&frame) {
            return Err("it covers records the data file does not hold (stale)".into());
        }
        let entry = r.u32()?;
        g.top = r.u8()?;
        g.entry = (entry != u32::MAX).then_some(entry);
        let n = frame.records;
        g.levels.reserve(n);
        g.links.reserve(n);
        for _ in 0..n {
            let level = r.u8()?;
            g.levels.push(level);
            if level == ABSENT {
                g.links.push(Vec::new());
                continue;
            }
            if level > MAX_LEVEL {
                return Err("a node's level is out of range".into());
            }
            let mut links = Vec::with_capacity(level as usize + 1);
            for l in 0..=level {
                let count = usize::from(r.u16()?);
                if count > slack(if l == 0 { g.m0 } else { g.m }) {
                    return Err("a node has too many links".into());
                }
                let mut ns = Vec::with_capacity(count);
                for _ in 0..count {
                    ns.push(r.u32()?);
                }
                links.push(ns);
            }
            g.links.push(links);
        }
        if !r.0.is_empty() {
            return Err("bytes after the graph".into());
        }
        let linked = |n: u32, l: usize| {
            g.levels
                .get(n as usize)
                .is_some_and(|&lv| lv != ABSENT && usize::from(lv) >= l)
        };
        for links in &g.links {
            for (l, ns) in links.iter().enumerate() {
                if !ns.iter().all(|&x| linked(x, l)) {
                    return Err("a link points at no node".into());
                }
            }
        }
        match g.entry {
            Some(e) if !(linked(e, 0) && g.levels[e as usize] == g.top) => {
                return Err("its entry point is not a top-level node".into());
            }
            None if g.levels.iter().any(|&l| l != ABSENT) => {
                return Err("it has nodes but no entry point".into());
            }
            _ => {}
        }
        g.persisted = n;
        g.origin = Origin::Loaded;
        Ok(g)
    }
}

/// A name beside `path` no other writer uses: process id, time and a
/// counter.
fn unique_temp(path: &Path) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = path
        .file_name()
        .map_or_else(|| "graph".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(
        ".{name}.{}.{nanos}.{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Bounds-checked little-endian reads.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err("cut short".into());
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors(count: usize, dims: usize) -> (Vec<f32>, Vec<f32>) {
        let mut x = 0x2545_f491_u32;
        let data: Vec<f32> = (0..count * dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as f32 / u32::MAX as f32 * 2.0 - 1.0
            })
            .collect();
        let norms = data.chunks_exact(dims).map(super::super::norm).collect();
        (data, norms)
    }

    fn frame(records: usize) -> FrameEnd {
        FrameEnd {
            records,
            offset: 1234,
            crc: 99,
        }
    }

    #[test]
    fn a_saved_graph_loads_as_it_was_and_bad_files_are_refused() {
        let dims = 16;
        let (data, mut norms) = vectors(300, dims);
        norms[7] = 0.0; // stays out of the graph
        let v = Vectors {
            data: &data,
            dims,
            norms: &norms,
        };
        let opts = HnswOptions::default()
            .max_connections(8)
            .ef_construction(40);
        let mut g = Graph::new(&opts);
        g.extend(&v);
        assert_eq!(g.len(), 300);
        assert_eq!(g.levels[7], ABSENT);
        let dir = std::env::temp_dir().join(format!("genkit-graph-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("g.hnsw");
        g.save(&path, frame(300), dims).expect("saved");
        assert!(!g.wants_saving());
        let bytes = std::fs::read(&path).expect("read");
        let back = Graph::load(&bytes, &opts, dims, &[frame(300)]).expect("loaded");
        assert_eq!(back.origin, Origin::Loaded);
        assert_eq!(back.links, g.links);
        assert_eq!(back.levels, g.levels);
        let q = &data[dims * 3..dims * 4];
        assert_eq!(back.search(&v, q, 5), g.search(&v, q, 5));
        assert_eq!(g.search(&v, q, 1).map(|f| f[0].1), Some(3));

        // Stale, other parameters, other dimensions, damaged, cut short.
        let stale = FrameEnd {
            crc: 98,
            ..frame(300)
        };
        assert!(Graph::load(&bytes, &opts, dims, &[stale]).is_err());
        assert!(Graph::load(&bytes, &HnswOptions::default(), dims, &[frame(300)]).is_err());
        assert!(Graph::load(&bytes, &opts, dims + 1, &[frame(300)]).is_err());
        for at in [0, 9, bytes.len() / 2, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(
                Graph::load(&bad, &opts, dims, &[frame(300)]).is_err(),
                "{at}"
            );
        }
        for len in [0, 3, 40, bytes.len() - 1] {
            assert!(Graph::load(&bytes[..len], &opts, dims, &[frame(300)]).is_err());
        }
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn graph_search_finds_the_exact_neighbours_of_a_small_set() {
        let dims = 24;
        let (data, norms) = vectors(500, dims);
        let v = Vectors {
            data: &data,
            dims,
            norms: &norms,
        };
        let mut g = Graph::new(&HnswOptions::default());
        g.extend(&v);
        let (queries, _) = vectors(520, dims);
        let mut hits = 0;
        for q in queries[500 * dims..].chunks_exact(dims) {
            let qn = super::super::norm(q);
            let mut exact: Vec<(f32, usize)> = (0..500)
                .map(|i| (1.0 - v.distance_to(q, qn, i as u32), i))
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0));
            let truth: Vec<usize> = exact[..10].iter().map(|e| e.1).collect();
            let found = g.search(&v, q, 10).expect("searched");
            hits += found.iter().filter(|f| truth.contains(&f.1)).count();
        }
        assert!(hits >= 190, "recall {hits}/200");
    }
}
