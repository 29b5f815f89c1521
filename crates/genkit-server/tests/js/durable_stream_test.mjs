// Genkit JS's client resuming a durable stream served by genkit-server
// (`streamFlow({ url, streamId })` from `genkit/beta/client`).
//
// usage: node durable_stream_test.mjs <urlA> <urlB>
// Both URLs are the `ticks` flow (a chunk every 100 ms, output = input) on
// two servers sharing one stream store. Exits non-zero if a check fails.
import { streamFlow } from 'genkit/beta/client';

const [urlA, urlB] = process.argv.slice(2);
if (!urlA || !urlB) {
  console.error('usage: node durable_stream_test.mjs <urlA> <urlB>');
  process.exit(2);
}

// Aborting a `streamFlow` leaves a rejected promise inside the client (its
// chunk channel) that nothing can await; the cut is deliberate here.
process.on('unhandledRejection', (e) => {
  if (e?.name === 'AbortError') return;
  throw e;
});

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e?.stack ?? e}`);
  }
}
function eq(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

let streamId;
await check('streamFlow gets a stream id, and its connection is cut after two chunks', async () => {
  const abort = new AbortController();
  const first = streamFlow({ url: urlA, input: 10, abortSignal: abort.signal });
  streamId = await first.streamId;
  if (typeof streamId !== 'string' || streamId.length !== 36) {
    throw new Error(`stream id: ${JSON.stringify(streamId)}`);
  }
  const seen = [];
  for await (const c of first.stream) {
    seen.push(c);
    if (seen.length === 2) break;
  }
  abort.abort();
  first.output.catch(() => {});
  eq(seen, [0, 1], 'chunks before the cut');
});

await check('streamFlow({ streamId }) on the other server replays the stream and its output', async () => {
  const resumed = streamFlow({ url: urlB, input: 10, streamId });
  const chunks = [];
  for await (const c of resumed.stream) chunks.push(c);
  eq(chunks, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'chunks');
  eq(await resumed.output, 10, 'output');
});

await check('an unknown stream id is "Stream not found"', async () => {
  const r = streamFlow({ url: urlB, input: 1, streamId: 'no-such-stream' });
  r.stream[Symbol.asyncIterator]().next().catch(() => {});
  try {
    await r.output;
  } catch (e) {
    if (!/NOT_FOUND: Stream not found/.test(String(e?.message ?? e))) throw e;
    return;
  }
  throw new Error('expected an error');
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
