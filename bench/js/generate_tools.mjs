// generate_tools: one ai.generate() = 4 model calls, 3 tool turns, 6 tool executions.
// The scripted model decides its turn from the number of 'tool' messages in
// req.messages, so every generate() call starts fresh.
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';

const opts = parseArgs();
const { genkit, z } = await loadGenkit(opts);

const ai = genkit({});

let toolExecutions = 0;
const toolA = ai.defineTool(
  {
    name: 'toolA',
    description: 'tool A',
    inputSchema: z.object({ x: z.number() }),
    outputSchema: z.string(),
  },
  async ({ x }) => {
    toolExecutions++;
    return `a${x}`;
  }
);
const toolB = ai.defineTool(
  {
    name: 'toolB',
    description: 'tool B',
    inputSchema: z.object({ x: z.number() }),
    outputSchema: z.string(),
  },
  async ({ x }) => {
    toolExecutions++;
    return `b${x}`;
  }
);

let modelCalls = 0;
ai.defineModel(
  { name: 'scripted', apiVersion: 'v2', supports: { tools: true, multiturn: true } },
  async (req, _ctx) => {
    modelCalls++;
    // Each tool turn appends one 'tool' message (holding both toolResponses).
    const toolMsgs = req.messages.filter((m) => m.role === 'tool').length;
    if (toolMsgs < 3) {
      const turn = toolMsgs + 1;
      return {
        message: {
          role: 'model',
          content: [
            { toolRequest: { name: 'toolA', ref: `a${turn}`, input: { x: turn } } },
            { toolRequest: { name: 'toolB', ref: `b${turn}`, input: { x: turn } } },
          ],
        },
        finishReason: 'stop',
      };
    }
    return {
      message: { role: 'model', content: [{ text: 'done' }] },
      finishReason: 'stop',
    };
  }
);

const req = () => ({ model: 'scripted', prompt: 'hi', tools: [toolA, toolB] });

{
  modelCalls = 0;
  toolExecutions = 0;
  const res = await ai.generate(req());
  assert(res.text === 'done', `expected 'done', got ${JSON.stringify(res.text)}`);
  assert(modelCalls === 4, `expected 4 model calls, got ${modelCalls}`);
  assert(toolExecutions === 6, `expected 6 tool executions, got ${toolExecutions}`);
  const toolMsgs = res.messages.filter((m) => m.role === 'tool').length;
  assert(toolMsgs === 3, `expected 3 tool messages in history, got ${toolMsgs}`);
}

await bench('generate_tools', () => ai.generate(req()), opts);
