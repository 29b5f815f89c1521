// Writes (or overwrites, merging) one document's fields, given as JSON on
// stdin: a test's way to write what another writer would.
//
//   node set_doc.mjs <document path> < fields.json
import { db } from './common.mjs';

let input = '';
for await (const chunk of process.stdin) input += chunk;
await db.doc(process.argv[2]).set(JSON.parse(input), { merge: true });
process.exit(0);
