// Records what Genkit JS makes of the `.prompt` files in ./prompts — the
// `/prompt/<name>` action's output (the model request), the
// `/executable-prompt/<name>` action's output (generate options), the
// actions' metadata and input schema, and a generate run through the prompt
// (the requests a scripted model receives and the response) — as the
// expected behaviour of tests/genkit_js_prompts.rs.
//
//   cd crates/genkit-generate/tests/genkit_js && npm ci && node prompts.mjs > prompts.jsonl
//
// The instance has `programmableModel` as its default model (answering
// `modelResponses` in order) and the tool `add`, as in record.mjs.
import { genkit } from 'genkit/beta';
import { defineAddTool, defineScriptedModel } from './lib.mjs';

// Genkit JS 1.42 does not apply a prompt file's `input.default` (so
// `greet` without a style prints an empty style there); Genkit for Rust
// does, as the Dotprompt format documents. That case is left out.
const cases = [
  { prompt: 'greet', input: { name: 'Ada', style: 'formal' } },
  { prompt: 'greet', variant: 'formal', input: { name: 'Bo' }, context: { auth: { vip: true } } },
  { prompt: 'person', input: { about: 'sailing' }, modelResponses: ['{"name": "Cy", "tags": ["sea"]}'] },
  { prompt: 'pick', input: {}, modelResponses: ['GREEN'] },
  {
    prompt: 'tools',
    input: { a: 1, b: 2 },
    modelResponses: [{ toolRequest: { name: 'add', ref: 'r', input: { a: 1, b: 2 } } }, '3'],
  },
  {
    prompt: 'media',
    input: { url: 'https://example.com/a.png', items: [{ title: 'one', score: 2 }, { title: 'two' }] },
  },
  {
    prompt: 'history',
    input: {},
    messages: [
      { role: 'user', content: [{ text: 'first' }] },
      { role: 'model', content: [{ text: 'answer' }] },
    ],
  },
  { prompt: 'letter', input: { to: 'Di', sender: 'Ed' } },
  { prompt: 'support/triage', input: { ticket: 'site down' }, modelResponses: ['{"urgent": true}'] },
  { prompt: 'plain', input: {} },
];

const toResponse = (r) =>
  typeof r === 'string'
    ? { message: { role: 'model', content: [{ text: r }] }, finishReason: 'stop' }
    : { message: { role: 'model', content: [r] }, finishReason: 'stop' };

for (const c of cases) {
  const modelRequests = [];
  const responses = (c.modelResponses ?? ['ok']).map(toResponse);
  const ai = genkit({ promptDir: new URL('./prompts', import.meta.url).pathname, model: 'programmableModel' });
  defineScriptedModel(ai, { responses, requests: modelRequests });
  defineAddTool(ai);
  const key = c.variant ? `${c.prompt}.${c.variant}` : c.prompt;
  const run = async (what) => {
    try {
      return { ok: JSON.parse(JSON.stringify(await what())) };
    } catch (e) {
      return { error: String(e.message ?? e) };
    }
  };
  const promptAction = await ai.registry.lookupAction(`/prompt/${key}`);
  const executableAction = await ai.registry.lookupAction(`/executable-prompt/${key}`);
  const options = { context: c.context };
  const expect = {
    promptMetadata: promptAction.__action.metadata,
    promptInputSchema: promptAction.__action.inputJsonSchema ?? null,
    prompt: await run(async () => (await promptAction.run(c.input, options)).result),
    executable: await run(async () => (await executableAction.run(c.input, options)).result),
    generate: await run(async () => {
      const prompt = ai.prompt(c.prompt, c.variant ? { variant: c.variant } : undefined);
      return (await prompt(c.input, { messages: c.messages, context: c.context })).toJSON();
    }),
  };
  expect.modelRequests = modelRequests;
  console.log(JSON.stringify({ ...c, expect }));
}
