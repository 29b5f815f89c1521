// Rewrites a stored snapshot in place with Genkit JS's FirestoreSessionStore
// (as a Genkit JS worker's heartbeat does): sets `heartbeatAt`.
//
//   node upsert.mjs <collection> <snapshotId> <heartbeatAt>
//
// Prints the snapshot Genkit JS reads back as JSON.
import { store } from './common.mjs';

const [collection, snapshotId, heartbeatAt] = process.argv.slice(2);
const sessions = store({ collection });
await sessions.saveSnapshot(snapshotId, (current) => {
  if (!current) throw new Error(`snapshot ${snapshotId} not found`);
  return { ...current, heartbeatAt };
});
console.log(JSON.stringify(await sessions.getSnapshot({ snapshotId })));
process.exit(0);
