// Genkit JS's side of the interop test: agent `assistant` on a scripted model
// (replies "reply to: <last user text>"), sessions in FirestoreSessionStore
// on the emulator.
//
//   node interop.mjs <collection> <sessionId|-> <text>...
//
// Runs one turn per <text> ("-": a new session; else continues the session's
// latest snapshot) and prints {sessionId, snapshotId, messages} as JSON.
import { genkit } from 'genkit/beta';
import { store } from './common.mjs';

const [collection, sessionArg, ...texts] = process.argv.slice(2);
const ai = genkit({});
ai.defineModel({ name: 'scripted', apiVersion: 'v2' }, async (req) => {
  const last = [...req.messages].reverse().find((m) => m.role === 'user');
  const said = (last?.content ?? []).map((p) => p.text ?? '').join('');
  return { message: { role: 'model', content: [{ text: `reply to: ${said}` }] }, finishReason: 'stop' };
});
const sessions = store({ collection });
ai.defineAgent({ name: 'assistant', model: 'scripted', store: sessions });
const agent = ai.registry.lookupAction('/agent/assistant');
const action = await agent;

let sessionId = sessionArg === '-' ? undefined : sessionArg;
let snapshotId;
for (const text of texts) {
  const bidi = action.streamBidi(sessionId ? { sessionId } : {});
  bidi.send({ message: { role: 'user', content: [{ text }] } });
  bidi.close();
  for await (const _chunk of bidi.stream) {
    // drained
  }
  const out = await bidi.output;
  if (out.finishReason === 'failed') {
    throw new Error(`turn failed: ${JSON.stringify(out.error)}`);
  }
  sessionId = out.sessionId;
  snapshotId = out.snapshotId;
}
const latest = await sessions.getSnapshot({ sessionId });
console.log(JSON.stringify({ sessionId, snapshotId, latest }));
process.exit(0);
