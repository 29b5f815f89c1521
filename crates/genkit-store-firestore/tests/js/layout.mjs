// The layout test's Genkit JS side: replays the same writes the Rust store
// made into another collection with Genkit JS's FirestoreSessionStore, then
// compares every document of the two layouts (snapshots, pointers, shards).
//
//   node layout.mjs <rsCollection> <jsCollection> <checkpointInterval> <shardSize> < ops.json
//
// ops.json: [{"append": snapshot} | {"update": snapshot}, ...]. Prints the
// differences (JSON) and exits 1 when there are any. Pointers' `updatedAt`
// (the wall clock at write time) and the Rust store's `rs*` bookkeeping
// fields are left out.
import { readFileSync } from 'node:fs';
import { db, store } from './common.mjs';

const [rsCollection, jsCollection, interval, shardSize] = process.argv.slice(2);
const ops = JSON.parse(readFileSync(0, 'utf8'));
const js = store({
  collection: jsCollection,
  checkpointInterval: Number(interval),
  shardSize: Number(shardSize),
});
for (const op of ops) {
  if (op.append) {
    await js.saveSnapshot(undefined, () => op.append);
  } else {
    await js.saveSnapshot(op.update.snapshotId, () => op.update);
  }
}

function plain(value) {
  if (Buffer.isBuffer(value) || value instanceof Uint8Array) {
    return { bytes: Buffer.from(value).toString('utf8') };
  }
  if (Array.isArray(value)) return value.map(plain);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((k) => [k, plain(value[k])]));
  }
  return value;
}

async function dump(collection) {
  const out = {};
  for (const [suffix, sub] of [['', 'snapshots'], ['-pointers', 'pointers'], ['-shards', 'shards']]) {
    const snap = await db.collection(`${collection}${suffix}`).doc('global').collection(sub).get();
    for (const doc of snap.docs) {
      const data = plain(doc.data());
      if (sub === 'pointers') delete data.updatedAt;
      // The Rust store's own bookkeeping (revision counts, unset fields),
      // which Genkit JS neither writes nor reads.
      for (const k of Object.keys(data)) if (k.startsWith('rs')) delete data[k];
      out[`${sub}/${doc.id}`] = data;
    }
  }
  return out;
}

const [rs, jsDocs] = [await dump(rsCollection), await dump(jsCollection)];
const diffs = [];
for (const key of new Set([...Object.keys(rs), ...Object.keys(jsDocs)])) {
  const a = JSON.stringify(rs[key]);
  const b = JSON.stringify(jsDocs[key]);
  if (a !== b) diffs.push({ doc: key, rust: rs[key] ?? null, js: jsDocs[key] ?? null });
}
console.log(JSON.stringify({ documents: Object.keys(jsDocs).length, diffs }, null, 1));
process.exit(diffs.length ? 1 : 0);
