// What the agent benches share: a prompt agent `assistant` on a scripted model
// that always answers 'hello', its sessions in an in-memory store (server
// managed), and one streamed turn (every chunk consumed), as the Rust peer
// does in bench/rust/src/lib.rs.

export const SESSION_TURNS = 50;

export async function defineAssistant() {
  // Imported after loadGenkit(), so --no-otel takes effect first.
  const { genkit, InMemorySessionStore } = await import('genkit/beta');
  const ai = genkit({});
  ai.defineModel({ name: 'scripted', apiVersion: 'v2' }, async (_req, _ctx) => ({
    message: { role: 'model', content: [{ text: 'hello' }] },
    finishReason: 'stop',
  }));
  ai.defineAgent({ name: 'assistant', model: 'scripted', store: new InMemorySessionStore() });
  return ai.registry.lookupAction('/agent/assistant');
}

const HI = { message: { role: 'user', content: [{ text: 'hi' }] } };

// One turn from `init` ({} for a fresh session, {snapshotId} to continue);
// returns the output ({message, snapshotId, ...}).
export async function turn(action, init) {
  const bidi = action.streamBidi(init);
  bidi.send(HI);
  bidi.close();
  for await (const _chunk of bidi.stream) {
    // consumed, like the Rust peer
  }
  return bidi.output;
}

export const replyText = (output) => (output?.message?.content ?? []).map((p) => p.text ?? '').join('');

// One session of SESSION_TURNS turns, each continuing the previous snapshot;
// returns how many turns answered 'hello'.
export async function session(action) {
  let init = {};
  let answered = 0;
  for (let i = 0; i < SESSION_TURNS; i++) {
    const out = await turn(action, init);
    if (replyText(out) === 'hello') answered++;
    init = { snapshotId: out.snapshotId };
  }
  return answered;
}
