// Records what Genkit JS 1.42's test models (`genkit/testing`: echoModel,
// mockModel) answer, for the facade's tests/test_models.rs.
//
//   GENKIT_JS_MODULES=crates/genkit-server/tests/js/node_modules \
//     node crates/genkit/tests/genkit_js/record_test_models.mjs \
//     > crates/genkit/tests/fixtures/genkit_js_test_models.json
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const modules = process.env.GENKIT_JS_MODULES;
if (!modules) throw new Error('set GENKIT_JS_MODULES to a node_modules folder holding genkit 1.42');
const require = createRequire(resolve(modules) + '/');
const { genkit, z } = require('genkit');
const { echoModel, mockModel } = require('genkit/testing');

const ai = genkit({});
const echo = echoModel(ai);

// Each case: the generate options (JSON, the model added here) and what came back.
const echoCases = [
  { system: 'Be terse', prompt: 'hi' },
  { prompt: 'hi', config: { temperature: 0.5, topK: 3 } },
  {
    messages: [
      { role: 'user', content: [{ text: 'look at ' }, { media: { url: 'https://example.com/cat.png', contentType: 'image/png' } }] },
      { role: 'model', content: [{ toolRequest: { name: 'lookup', input: { id: 1 }, ref: 'r1' } }] },
      { role: 'tool', content: [{ toolResponse: { name: 'lookup', output: { ok: true }, ref: 'r1' } }] },
      { role: 'model', content: [{ reasoning: 'hmm' }, { data: { a: [1, 'b'] } }, { custom: { k: 'v' } }] },
    ],
    prompt: 'and?',
  },
  { prompt: 'shape this', output: { jsonSchema: { type: 'object', properties: { a: { type: 'string' } } } } },
];

async function run(model, options) {
  try {
    const response = await ai.generate({ model, ...options });
    return { message: response.message.toJSON(), finishReason: response.finishReason, text: response.text };
  } catch (e) {
    return { error: String(e.message) };
  }
}

const echoResults = [];
for (const options of echoCases) {
  const outcome = await run(echo, options);
  echoResults.push({ options, ...outcome, lastRequestText: echo.lastRequestText ?? null });
}

// mockModel: a queue whose last item repeats, errors in the queue, the
// object form with tool requests, inspection after a tool round.
const queued = mockModel(ai, { name: 'queued', respond: ['first', { text: 'second', finishReason: 'length' }, new Error('rate limited'), 'last'] });
const queue = [];
for (let i = 0; i < 5; i++) {
  queue.push(await run(queued, { prompt: `call ${i}` }));
}
const countAfterQueue = queued.requestCount;

ai.defineTool({ name: 'lookup', description: 'Looks up an id.', inputSchema: z.object({ id: z.number() }), outputSchema: z.object({ found: z.boolean() }) }, async ({ id }) => ({ found: id === 1 }));
const tooling = mockModel(ai, {
  name: 'tooling',
  respond: [{ text: 'checking', toolRequests: [{ name: 'lookup', input: { id: 1 }, ref: 'a' }] }, 'done'],
});
const toolRun = await run(tooling, { prompt: 'find 1', tools: ['lookup'] });
const toolInspection = {
  requestCount: tooling.requestCount,
  toolResponses: tooling.toolResponses,
  lastRequestText: tooling.lastRequestText,
  lastRequestMessage: tooling.lastRequestMessage?.toJSON() ?? null,
};
tooling.reset();
const afterReset = { requestCount: tooling.requestCount, again: await run(tooling, { prompt: 'x', tools: ['lookup'], returnToolRequests: true }) };

const full = mockModel(ai, { name: 'full', respond: { message: { role: 'model', content: [{ text: 'as is' }] }, usage: { inputTokens: 3 } } });
const fullRun = await run(full, { prompt: 'p' });
const empty = mockModel(ai, { name: 'empty' });
const emptyRun = await run(empty, { prompt: 'p' });

console.log(JSON.stringify({
  echo: echoResults,
  queue: { results: queue, requestCount: countAfterQueue },
  tools: { run: toolRun, inspection: toolInspection, afterReset },
  full: fullRun,
  empty: emptyRun,
}, null, 2));
