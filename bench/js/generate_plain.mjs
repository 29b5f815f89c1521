// generate_plain: ai.generate() against a scripted model that returns 'hello'.
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';

const opts = parseArgs();
const { genkit } = await loadGenkit(opts);

const ai = genkit({});
ai.defineModel(
  { name: 'scripted', apiVersion: 'v2' },
  async (_req, _ctx) => ({
    message: { role: 'model', content: [{ text: 'hello' }] },
    finishReason: 'stop',
  })
);

{
  const res = await ai.generate({ model: 'scripted', prompt: 'hi' });
  assert(res.text === 'hello', `expected 'hello', got ${JSON.stringify(res.text)}`);
}

await bench('generate_plain', () => ai.generate({ model: 'scripted', prompt: 'hi' }), opts);
