// Genkit JS's FirestoreStreamManager on the emulator, for the durable
// stream interop tests.
//
//   node streams.mjs subscribe <collection> <streamId>
//     prints one JSON line per callback: {"chunk": …}, then {"done": …} or
//     {"error": …}
//   node streams.mjs write <collection> <streamId> < {"chunks": [...], "output": …}
//     open(), write() each chunk, then done(output) (or error({message})
//     when the input has "error" instead of "output")
//   node streams.mjs doc <collection> <streamId>
//     prints the stream document's data as JSON (timestamps as
//     {"timestamp": true})
import { FirestoreStreamManager } from '@genkit-ai/firebase/beta';
import { Timestamp } from 'firebase-admin/firestore';
import { db } from './common.mjs';

const [command, collection, streamId] = process.argv.slice(2);
const manager = new FirestoreStreamManager({ db, collection, timeout: 30000 });
const print = (value) => process.stdout.write(JSON.stringify(value) + '\n');

if (command === 'subscribe') {
  await new Promise((resolve, reject) => {
    manager
      .subscribe(streamId, {
        onChunk: (chunk) => print({ chunk }),
        onDone: (output) => {
          print({ done: output === undefined ? null : output });
          resolve();
        },
        onError: (err) => {
          print({ error: err instanceof Error ? { message: err.message, status: err.status } : err });
          resolve();
        },
      })
      .catch(reject);
  });
} else if (command === 'write') {
  let input = '';
  for await (const chunk of process.stdin) input += chunk;
  const { chunks, output, error } = JSON.parse(input);
  const stream = await manager.open(streamId);
  for (const chunk of chunks) await stream.write(chunk);
  if (error !== undefined) {
    await stream.error(new Error(error));
  } else {
    await stream.done(output);
  }
} else if (command === 'doc') {
  const snap = await db.collection(collection).doc(streamId).get();
  // The replacer sees values after toJSON(): look at the raw one.
  const data = JSON.stringify(snap.data() ?? null, function (key, value) {
    return this[key] instanceof Timestamp ? { timestamp: true } : value;
  });
  process.stdout.write(data + '\n');
} else {
  throw new Error(`unknown command ${command}`);
}
process.exit(0);
