// Genkit JS's @genkit-ai/dev-local-vectorstore doing the scripted work of
// bench/rust/src/bin/vector_bench.rs: index N documents (384-dim vectors
// looked up by a table embedder, so no embedding cost) in batches of 1,000,
// then 100 queries with k = 10. The vectors: from a fixed-seed xorshift32
// (the same as the Rust side) by default; with `--vectors FILE` the first N
// vectors of FILE (little-endian float32s, 384 a vector, the MiniLM
// embeddings of bench/vectors/run.sh) are the documents and the 100 after
// them the queries, as in vector_bench.
// Prints one JSON line per size, with wall and CPU time of each phase and
// the process's peak RSS (run one size per process for a per-size peak).
//
// The store writes its whole file with JSON.stringify(data, null, 2) on
// every index call; at 384 dimensions an entry is about 11 KB of JSON, so
// past about 47,000 entries the string exceeds V8's maximum string length
// and index() throws. When indexing fails, the line says how many documents
// were stored (`indexed`) and the queries run, fewer of them (FALLBACK_QUERIES,
// each query re-reads and parses the whole file), against what the file holds.
// Usage: node bench.mjs [--vectors FILE] 10000 [100000 ...]
import { genkit } from 'genkit';
import { devLocalVectorstore, devLocalIndexerRef, devLocalRetrieverRef } from '@genkit-ai/dev-local-vectorstore';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const DIMS = 384, BATCH = 1000, QUERIES = 100, FALLBACK_QUERIES = 10, K = 10;

const cpuMs = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };

// The same generator as the Rust side: xorshift32 from a seed, [-1, 1).
function vectors(seed, count) {
  let x = seed >>> 0;
  const out = [];
  for (let i = 0; i < count; i++) {
    const v = new Array(DIMS);
    for (let j = 0; j < DIMS; j++) {
      x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
      v[j] = (x / 4294967296) * 2 - 1;
    }
    out.push(v);
  }
  return out;
}

// The first `count` vectors of a file of little-endian float32s.
function fileVectors(path, count) {
  const bytes = readFileSync(path);
  const row = DIMS * 4;
  const available = Math.floor(bytes.length / row);
  if (count > available) throw new Error(`${path}: ${available} vectors, ${count} needed`);
  const out = [];
  for (let i = 0; i < count; i++) {
    const v = new Array(DIMS);
    for (let j = 0; j < DIMS; j++) v[j] = bytes.readFloatLE(i * row + j * 4);
    out.push(v);
  }
  return out;
}

async function run(n, file) {
  let docs, queries;
  if (file) {
    docs = fileVectors(file, n + QUERIES);
    queries = docs.splice(n);
  } else {
    docs = vectors(0x9e3779b9, n);
    queries = vectors(0x85ebca6b, QUERIES);
  }
  const dir = mkdtempSync(join(tmpdir(), 'genkit-js-vectors-'));
  process.chdir(dir);
  const ai = genkit({ plugins: [devLocalVectorstore([{ indexName: `bench${n}`, embedder: 'table' }])] });
  ai.defineEmbedder({ name: 'table' }, async (input) => ({
    embeddings: input.map((d) => {
      const t = d.text;
      const table = t[0] === 'q' ? queries : docs;
      return { embedding: table[Number(t.slice(1))] };
    }),
  }));
  const indexer = devLocalIndexerRef(`bench${n}`);
  const retriever = devLocalRetrieverRef(`bench${n}`);
  const c0 = cpuMs();
  const t0 = performance.now();
  let indexed = 0, indexError;
  for (let s = 0; s < n; s += BATCH) {
    const batch = [];
    for (let i = s; i < Math.min(s + BATCH, n); i++) batch.push({ content: [{ text: `d${i}` }] });
    try {
      await ai.index({ indexer, documents: batch });
    } catch (e) {
      indexError = String((e && e.message) || e).slice(0, 200);
      break;
    }
    indexed += batch.length;
    if (indexed % 10000 === 0) console.error(`# js n=${n}: ${indexed} indexed, ${Math.round(performance.now() - t0)} ms`);
  }
  const indexMs = performance.now() - t0;
  const c1 = cpuMs();
  const nQueries = indexError ? FALLBACK_QUERIES : QUERIES;
  const t1 = performance.now();
  const tops = [];
  for (let q = 0; q < nQueries; q++) {
    const found = await ai.retrieve({ retriever, query: { content: [{ text: `q${q}` }] }, options: { k: K } });
    tops.push(found.map((d) => d.content[0].text));
  }
  const queryMs = (performance.now() - t1) / nQueries;
  const queryCpuMs = (cpuMs() - c1) / nQueries;
  let fileMb = null;
  try { fileMb = Math.round(statSync(join(dir, `__db_bench${n}.json`)).size / 1e6); } catch {}
  process.chdir(tmpdir());
  rmSync(dir, { recursive: true, force: true });
  const line = {
    side: 'js', n, vectors: file ? 'minilm' : 'random', indexed, index_ms: Math.round(indexMs), index_cpu_ms: Math.round(c1 - c0),
    queries: nQueries, query_ms: +queryMs.toFixed(2), query_cpu_ms: +queryCpuMs.toFixed(2),
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 1024), file_mb: fileMb, first_top: tops[0],
  };
  if (indexError) line.index_error = indexError;
  console.log(JSON.stringify(line));
}

const args = process.argv.slice(2);
let file;
const at = args.indexOf('--vectors');
if (at >= 0) file = args.splice(at, 2)[1];
for (const arg of args) {
  try {
    await run(Number(arg), file);
  } catch (e) {
    console.log(JSON.stringify({ side: 'js', n: Number(arg), error: String(e && e.message || e).slice(0, 300) }));
  }
}
