// generate_stream: a model that streams 1000 one-char chunks; each op consumes
// the whole stream with for-await and then awaits the final response.
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';

const CHUNKS = 1000;
const opts = parseArgs();
const { genkit } = await loadGenkit(opts);

const ai = genkit({});
ai.defineModel(
  { name: 'streamer', apiVersion: 'v2' },
  async (_req, { sendChunk }) => {
    for (let i = 0; i < CHUNKS; i++) {
      sendChunk({ content: [{ text: 'x' }] });
    }
    return {
      message: { role: 'model', content: [{ text: 'x'.repeat(CHUNKS) }] },
      finishReason: 'stop',
    };
  }
);

async function op() {
  const { stream, response } = ai.generateStream({ model: 'streamer', prompt: 'hi' });
  let n = 0;
  for await (const _chunk of stream) n++;
  const res = await response;
  return [n, res];
}

{
  const [n, res] = await op();
  assert(n === CHUNKS, `expected ${CHUNKS} chunks, got ${n}`);
  assert(res.text === 'x'.repeat(CHUNKS), `unexpected final text length ${res.text.length}`);
}

await bench('generate_stream', op, opts, { chunks_per_op: CHUNKS });
