// Records JSON Patch diffs exactly as Genkit JS computes them (the
// `customPatch` chunks an agent streams), as the expected behaviour of
// tests/genkit_js_json_patch.rs, which requires the same operations, in the
// same order, from genkit_agent::json_patch::diff.
//
//   cd crates/genkit-agent/tests/genkit_js_agent && npm ci && node json_patch.mjs > json_patch.jsonl
//
// Output: a header line {genkit, seed, cases}, then one line per case:
//   {"name", "from", "to", "patch"}   a diff: patch = diff(from, to); a
//                                       hand-written one also has the JSON
//                                       text of both sides as written
//                                       (`fromText`, `toText`)
//   {"name", "doc", "apply", "result"} a hand-written valid patch applied by
//                                       applyPatch (move, copy, test, ...)
// The pairs are generated from a fixed seed (the script is deterministic):
// nested objects and arrays, values changed in place, keys added and removed,
// array items inserted and dropped, type changes, key order shuffled, and keys
// that JavaScript orders specially (integer-like keys come first) or that
// JSON Pointer escapes (`~`, `/`, the empty key).
import { readFileSync } from 'node:fs';
import { applyPatch, diff } from 'genkit/beta';

const SEED = 20261201;
const GENERATED = 400;

// mulberry32: a small seeded generator, so the cases never change.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(SEED);
const int = (n) => Math.floor(random() * n);
const pick = (items) => items[int(items.length)];
const KEYS = ['a', 'b', 'c', 'name', 'status', 'count', 'items', '10', '2', '0', 'x/y', 'm~n', '', 'z'];

function scalar() {
  switch (int(7)) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return int(20) - 5;
    case 3:
      return Math.round(random() * 1000) / 8;
    case 4:
      return pick(['', 'x', 'hello', 'working', 'done', '~/']);
    default:
      return int(4);
  }
}

// A JSON value; `container` forces an object or an array (custom state is
// usually an object).
function value(depth, container = false) {
  const r = container ? 0.4 + random() * 0.6 : random();
  if (depth <= 0 || r < 0.4) return scalar();
  if (r < 0.8) {
    const obj = {};
    const n = int(5);
    for (let i = 0; i < n; i++) obj[pick(KEYS)] = value(depth - 1);
    return obj;
  }
  const n = int(5);
  return Array.from({ length: n }, () => value(depth - 1));
}

// A changed copy of `v`: most of it kept, a few edits at random depths.
function mutate(v, depth) {
  if (depth < 4 && random() < 0.12) return value(depth); // a type or value change
  if (Array.isArray(v)) {
    let out = v.map((item) => (random() < 0.3 ? mutate(item, depth - 1) : structuredClone(item)));
    const r = random();
    if (r < 0.2) out.splice(int(out.length + 1), 0, value(depth - 1));
    else if (r < 0.35 && out.length) out.splice(int(out.length), 1);
    else if (r < 0.45) out.push(value(depth - 1), value(depth - 1));
    else if (r < 0.5) out = out.slice(0, int(out.length + 1));
    else if (r < 0.55 && out.length > 1) out.reverse(); // a move, which diff does not detect
    return out;
  }
  if (v !== null && typeof v === 'object') {
    let entries = Object.entries(v).map(([k, item]) => [k, random() < 0.35 ? mutate(item, depth - 1) : structuredClone(item)]);
    const r = random();
    if (r < 0.2 && entries.length) entries.splice(int(entries.length), 1);
    else if (r < 0.4) entries.push([pick(KEYS), value(depth - 1)]);
    if (random() < 0.25) entries = entries.reverse(); // key order alone is no change
    return Object.fromEntries(entries);
  }
  return random() < 0.5 ? v : scalar();
}

// Written as JSON text: JavaScript puts integer-like keys first whatever the
// text says, and the Rust side must order them the same way, so the record
// keeps the text as written (`fromText`, `toText`).
const handWritten = [
  ['equal documents', { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }],
  ['root scalar change', 1, 2],
  ['root type change, object to array', { a: 1 }, [1]],
  ['root null to object', null, { counter: 1 }],
  ['the agent.yaml counter', { counter: 1, status: 'working' }, { counter: 2, status: 'working' }],
  ['a key added', { counter: 2, status: 'working' }, { counter: 2, status: 'done' }],
  ['key removed and key added', { a: 1, b: 2 }, { b: 2, c: 3 }],
  ['new keys after old ones, in the new order', { z: 1 }, { y: 2, x: 3, z: 1 }],
  ['integer-like keys come first', '{"b": 1, "10": 1, "a": 1, "2": 1}', '{"b": 2, "10": 2, "a": 2, "2": 2}'],
  ['an integer-like key added after string keys', '{"b": 1}', '{"b": 1, "5": 1, "a": 1}'],
  ['keys that only look like integers keep their place', '{"b": 1, "01": 1, "-1": 1, "1.5": 1, "4294967295": 1, "4294967294": 1}', '{"b": 2, "01": 2, "-1": 2, "1.5": 2, "4294967295": 2, "4294967294": 2}'],
  ['escaped keys', { 'a/b': 1, 'c~d': 1, '': 1 }, { 'a/b': 2, 'c~d': 2, '': 2 }],
  ['null is a value, not an absence', { a: null }, { a: 0 }],
  ['a key set to null', { a: 1 }, { a: null }],
  ['array grows', [1, 2], [1, 2, 3, 4]],
  ['array shrinks', [1, 2, 3, 4], [1]],
  ['array item inserted at the front', [1, 2, 3], [0, 1, 2, 3]],
  ['array item removed at the front', [0, 1, 2, 3], [1, 2, 3]],
  ['array reversed', [1, 2, 3], [3, 2, 1]],
  ['nested arrays', { a: [[1], [2, 3]] }, { a: [[1, 4], [2]] }],
  ['array to object at a key', { a: [1] }, '{"a": {"0": 1}}'],
  ['empty object to full', {}, { a: { b: { c: 1 } } }],
  ['full object to empty', { a: { b: { c: 1 } } }, {}],
  ['string to number', { a: '1' }, { a: 1 }],
  ['boolean flip', { ok: true }, { ok: false }],
  ['artifacts list', { artifacts: [{ name: 'doc1', parts: [{ text: 'v1' }] }] }, { artifacts: [{ name: 'doc1', parts: [{ text: 'v2' }] }, { name: 'doc2', parts: [{ text: 'other' }] }] }],
];

const applyCases = [
  ['add to an object', { a: 1 }, [{ op: 'add', path: '/b', value: 2 }]],
  ['add replaces an existing key', { a: 1 }, [{ op: 'add', path: '/a', value: 2 }]],
  ['add inserts into an array', { a: [1, 3] }, [{ op: 'add', path: '/a/1', value: 2 }]],
  ['add appends with -', { a: [1] }, [{ op: 'add', path: '/a/-', value: 2 }]],
  ['replace in an array', [1, 2, 3], [{ op: 'replace', path: '/1', value: 9 }]],
  ['remove from an array', [1, 2, 3], [{ op: 'remove', path: '/0' }]],
  ['remove a key', { a: 1, b: 2 }, [{ op: 'remove', path: '/a' }]],
  ['replace the root', { a: 1 }, [{ op: 'replace', path: '', value: [1] }]],
  ['move a key', { a: { b: 1 }, c: {} }, [{ op: 'move', from: '/a/b', path: '/c/d' }]],
  ['move an array item', [1, 2, 3], [{ op: 'move', from: '/0', path: '/2' }]],
  ['copy a value', { a: [1, 2] }, [{ op: 'copy', from: '/a', path: '/b' }]],
  ['test that passes', { a: { b: [1, { c: null }] } }, [{ op: 'test', path: '/a/b/1', value: { c: null } }, { op: 'add', path: '/ok', value: true }]],
  ['escaped pointer', { 'a/b': { 'c~d': 1 } }, [{ op: 'replace', path: '/a~1b/c~0d', value: 2 }]],
  ['empty key', { '': 1 }, [{ op: 'replace', path: '/', value: 2 }]],
  ['a sequence', { list: [] }, [{ op: 'add', path: '/list/-', value: 'a' }, { op: 'add', path: '/list/0', value: 'b' }, { op: 'replace', path: '/list/1', value: 'c' }, { op: 'remove', path: '/list/0' }]],
];

const version = JSON.parse(readFileSync(new URL('./node_modules/genkit/package.json', import.meta.url), 'utf8')).version;
const lines = [];
const text = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
for (const [name, fromSource, toSource] of handWritten) {
  const [fromText, toText] = [text(fromSource), text(toSource)];
  const [from, to] = [JSON.parse(fromText), JSON.parse(toText)];
  lines.push({ name, fromText, toText, from, to, patch: diff(from, to) });
}
for (let i = 0; i < GENERATED; i++) {
  const from = value(4, true);
  // Most pairs are a document and an edited copy; a few are unrelated. An
  // edit that changed nothing is drawn again (at most three times).
  let to;
  for (let attempt = 0; attempt < 3; attempt++) {
    to = random() < 0.9 ? mutate(from, 4) : value(4, true);
    if (diff(from, to).length) break;
  }
  lines.push({ name: `generated ${i}`, from, to, patch: diff(from, to) });
}
for (const [name, doc, patch] of applyCases) lines.push({ name, doc, apply: patch, result: applyPatch(doc, patch) });
console.log(JSON.stringify({ genkit: version, seed: SEED, cases: lines.length }));
for (const line of lines) console.log(JSON.stringify(line));
