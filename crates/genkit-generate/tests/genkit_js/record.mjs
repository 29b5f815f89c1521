// Records what Genkit JS's `/util/generate` does for each scenario below —
// the requests its scripted model receives turn by turn, the chunks it
// streams, and the response (or the error) — as the expected behaviour of
// tests/genkit_js.rs, which runs the same scenarios through Genkit for Rust.
//
//   cd crates/genkit-generate/tests/genkit_js && npm ci && node record.mjs > recorded.jsonl
//
// Every scenario runs in a fresh Genkit instance with a model named
// `programmableModel` that answers with the scenario's `modelResponses` in
// order (streaming `streamChunks[i]` on turn i when asked to stream; an
// `{error}` response throws that message), and these tools:
//   add(a, b)         returns a + b
//   echo(any)         returns its input
//   failing(any)      throws "tool failed"
//   ask(question)     an interrupt
//   lookup(key)       interrupts when key is "secret", else returns "value of <key>"
//   pics(n)           a multipart tool: output {count: n}, content [text "part one"]
//   nothing(any)      returns nothing
// Output: a header line {genkit, tools: [tool definitions]}, then one line
// per scenario: the scenario, plus {expect: {modelRequests, chunks, response}
// | {modelRequests, error: {status, message}}}. A scenario with a
// `deviation` is one where Genkit JS fails by a fault of its own: the error
// given there is expected instead of Genkit JS's.
import { readFileSync } from 'node:fs';
import { genkit, z } from 'genkit/beta';
import { defineAddTool, defineScriptedModel } from './lib.mjs';

const personSchema = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'number' } },
  required: ['name'],
  additionalProperties: false,
};
const user = (text) => ({ role: 'user', content: [{ text }] });
const modelText = (text, finishReason = 'stop') => ({
  message: { role: 'model', content: [{ text }] },
  finishReason,
});
// A conversation whose last model turn was interrupted by `lookup`.
const interruptedLookup = () => [
  user('go'),
  {
    role: 'model',
    content: [{ toolRequest: { name: 'lookup', ref: 'l', input: { key: 'secret' } }, metadata: { interrupt: true } }],
  },
];
const toolCall = (...requests) => ({
  message: { role: 'model', content: requests.map((toolRequest) => ({ toolRequest })) },
  finishReason: 'stop',
});

const scenarios = [
  {
    name: 'plain text',
    input: { model: 'programmableModel', messages: [user('hi')] },
    modelResponses: [modelText('hello')],
  },
  {
    name: 'system prompt, history and config pass through',
    input: {
      model: 'programmableModel',
      messages: [
        { role: 'system', content: [{ text: 'be brief' }] },
        user('one'),
        { role: 'model', content: [{ text: 'two' }] },
        user('three'),
      ],
      config: { temperature: 0.5, topK: 3 },
    },
    modelResponses: [modelText('four')],
  },
  {
    name: 'one tool call then an answer',
    input: { model: 'programmableModel', messages: [user('add 1 and 2')], tools: ['add'] },
    modelResponses: [toolCall({ name: 'add', ref: 'r1', input: { a: 1, b: 2 } }), modelText('3')],
  },
  {
    name: 'two tools in one turn keep their order',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add', 'echo'] },
    modelResponses: [
      toolCall(
        { name: 'echo', ref: 'e', input: { x: [1, 2] } },
        { name: 'add', ref: 'a', input: { a: 2, b: 3 } },
      ),
      modelText('done'),
    ],
  },
  {
    name: 'tool request without a ref',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [toolCall({ name: 'add', input: { a: 5, b: 5 } }), modelText('10')],
  },
  {
    name: 'three turns of tools',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [
      toolCall({ name: 'add', ref: '1', input: { a: 1, b: 1 } }),
      toolCall({ name: 'add', ref: '2', input: { a: 2, b: 2 } }),
      toolCall({ name: 'add', ref: '3', input: { a: 3, b: 3 } }),
      modelText('done'),
    ],
  },
  {
    name: 'max turns exceeded',
    input: { model: 'programmableModel', messages: [user('loop')], tools: ['add'], maxTurns: 2 },
    modelResponses: [
      toolCall({ name: 'add', ref: '1', input: { a: 1, b: 1 } }),
      toolCall({ name: 'add', ref: '2', input: { a: 1, b: 1 } }),
      toolCall({ name: 'add', ref: '3', input: { a: 1, b: 1 } }),
      modelText('never'),
    ],
  },
  {
    name: 'return tool requests',
    input: {
      model: 'programmableModel',
      messages: [user('go')],
      tools: ['add'],
      returnToolRequests: true,
    },
    modelResponses: [toolCall({ name: 'add', ref: 'r', input: { a: 1, b: 2 } })],
  },
  {
    name: 'the model asks for an unknown tool',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [toolCall({ name: 'nope', ref: 'n', input: {} }), modelText('x')],
  },
  {
    name: 'a failing tool fails the call',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['failing'] },
    modelResponses: [toolCall({ name: 'failing', ref: 'f', input: {} }), modelText('x')],
  },
  {
    name: 'an interrupt ends the turn',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['ask', 'add'] },
    modelResponses: [toolCall({ name: 'ask', ref: 'q', input: { question: 'sure?' } })],
  },
  {
    name: 'an interrupt beside a finished tool keeps its output pending',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['ask', 'add'] },
    modelResponses: [
      toolCall(
        { name: 'add', ref: 'a', input: { a: 1, b: 2 } },
        { name: 'ask', ref: 'q', input: { question: 'sure?' } },
      ),
    ],
  },
  {
    name: 'a tool that interrupts from inside',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['lookup'] },
    modelResponses: [toolCall({ name: 'lookup', ref: 'l', input: { key: 'secret' } })],
  },
  {
    name: 'resume with respond',
    input: {
      model: 'programmableModel',
      tools: ['ask', 'add'],
      messages: [
        user('go'),
        {
          role: 'model',
          content: [
            { toolRequest: { name: 'add', ref: 'a', input: { a: 1, b: 2 } }, metadata: { pendingOutput: 3 } },
            { toolRequest: { name: 'ask', ref: 'q', input: { question: 'sure?' } }, metadata: { interrupt: true } },
          ],
        },
      ],
      resume: { respond: [{ toolResponse: { name: 'ask', ref: 'q', output: 'yes' } }] },
    },
    modelResponses: [modelText('thanks')],
  },
  {
    name: 'resume with restart',
    input: {
      model: 'programmableModel',
      tools: ['lookup'],
      messages: interruptedLookup(),
      resume: { restart: [{ toolRequest: { name: 'lookup', ref: 'l', input: { key: 'public' } } }] },
    },
    modelResponses: [modelText('ok')],
  },
  {
    name: 'json output with a schema',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema },
    },
    modelResponses: [modelText('```json\n{"name": "Ada", "age": 36}\n```')],
  },
  {
    name: 'a schema without a format means json',
    input: { model: 'programmableModel', messages: [user('who?')], output: { jsonSchema: personSchema } },
    modelResponses: [modelText('{"name": "Bo"}')],
  },
  {
    name: 'json output, model constrains natively',
    supports: { constrained: 'all', output: ['json', 'text'] },
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema, constrained: true },
    },
    modelResponses: [modelText('{"name": "Cy"}')],
  },
  {
    name: 'array output',
    input: {
      model: 'programmableModel',
      messages: [user('list')],
      output: { format: 'array', jsonSchema: { type: 'array', items: personSchema } },
    },
    modelResponses: [modelText('[{"name": "A"}, {"name": "B"}]')],
  },
  {
    name: 'enum output',
    input: {
      model: 'programmableModel',
      messages: [user('pick')],
      output: { format: 'enum', jsonSchema: { type: 'string', enum: ['RED', 'GREEN'] } },
    },
    modelResponses: [modelText('GREEN')],
  },
  {
    name: 'jsonl output',
    input: {
      model: 'programmableModel',
      messages: [user('lines')],
      output: { format: 'jsonl', jsonSchema: { type: 'array', items: personSchema } },
    },
    modelResponses: [modelText('{"name": "A"}\n{"name": "B"}\n')],
  },
  {
    name: 'text output',
    input: { model: 'programmableModel', messages: [user('say')], output: { format: 'text' } },
    modelResponses: [modelText('plain')],
  },
  {
    name: 'json output after a tool turn',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      tools: ['add'],
      output: { format: 'json', jsonSchema: personSchema },
    },
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 1, b: 1 } }), modelText('{"name": "D"}')],
  },
  {
    name: 'tool choice passes through',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'], toolChoice: 'required' },
    modelResponses: [modelText('fine')],
  },
  {
    name: 'documents are given to the model',
    input: {
      model: 'programmableModel',
      messages: [user('what is in the docs?')],
      docs: [{ content: [{ text: 'doc one' }] }, { content: [{ text: 'doc two' }], metadata: { ref: 'x' } }],
    },
    modelResponses: [modelText('they say one and two')],
  },
  {
    name: 'documents stay in the history across a tool turn',
    input: {
      model: 'programmableModel',
      messages: [user('add and cite')],
      tools: ['add'],
      docs: [{ content: [{ text: 'doc one' }], metadata: { id: 'd1' } }],
    },
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 1, b: 1 } }), modelText('2, see d1')],
  },
  {
    name: 'a model that takes documents gets them as they are',
    supports: { context: true, multiturn: true, tools: true, systemRole: true },
    input: {
      model: 'programmableModel',
      messages: [user('what is in the docs?')],
      docs: [{ content: [{ text: 'doc one' }] }],
    },
    modelResponses: [modelText('one')],
  },
  {
    name: 'an unknown model',
    input: { model: 'nope', messages: [user('hi')] },
    modelResponses: [],
  },
  {
    name: 'an unknown tool in the request',
    input: { model: 'programmableModel', messages: [user('hi')], tools: ['nope'] },
    modelResponses: [modelText('x')],
  },
  {
    name: 'json output that does not match the schema',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema },
    },
    modelResponses: [modelText('{"age": "old"}')],
  },
  {
    name: 'a model without a system role gets the system prompt as a user turn',
    supports: { systemRole: false, multiturn: true, tools: true },
    input: {
      model: 'programmableModel',
      messages: [{ role: 'system', content: [{ text: 'be brief' }] }, user('hi')],
    },
    modelResponses: [modelText('hi')],
  },
  {
    name: 'streamed text',
    stream: true,
    input: { model: 'programmableModel', messages: [user('hi')] },
    streamChunks: [[{ content: [{ text: 'he' }] }, { content: [{ text: 'llo' }] }]],
    modelResponses: [modelText('hello')],
  },
  {
    name: 'streamed tool loop carries message indexes',
    stream: true,
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    streamChunks: [
      [{ content: [{ toolRequest: { name: 'add', ref: 'a', input: { a: 1, b: 2 } } }] }],
      [{ content: [{ text: 'thr' }] }, { content: [{ text: 'ee' }] }],
    ],
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 1, b: 2 } }), modelText('three')],
  },
  {
    name: 'streamed json output',
    stream: true,
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema },
    },
    streamChunks: [[{ content: [{ text: '{"name": "A' }] }, { content: [{ text: 'da"}' }] }]],
    modelResponses: [modelText('{"name": "Ada"}')],
  },
  {
    name: 'max turns allows exactly that many tool turns',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'], maxTurns: 1 },
    modelResponses: [toolCall({ name: 'add', ref: '1', input: { a: 1, b: 1 } }), modelText('2')],
  },
  {
    name: 'text beside tool requests',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [
      {
        message: {
          role: 'model',
          content: [{ text: 'let me add' }, { toolRequest: { name: 'add', ref: 'a', input: { a: 2, b: 2 } } }],
        },
        finishReason: 'stop',
      },
      modelText('4'),
    ],
  },
  {
    name: 'usage, custom and finish message pass through',
    input: { model: 'programmableModel', messages: [user('hi')] },
    modelResponses: [
      {
        message: { role: 'model', content: [{ text: 'cut' }] },
        finishReason: 'length',
        finishMessage: 'too long',
        usage: { inputTokens: 3, outputTokens: 5, totalTokens: 8 },
        custom: { id: 'x1' },
      },
    ],
  },
  {
    name: 'a blocked response',
    input: { model: 'programmableModel', messages: [user('hi')] },
    modelResponses: [{ message: { role: 'model', content: [] }, finishReason: 'blocked', finishMessage: 'unsafe' }],
  },
  {
    name: 'tool choice none',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'], toolChoice: 'none' },
    modelResponses: [modelText('no tools')],
  },
  {
    name: 'history with earlier tool turns',
    input: {
      model: 'programmableModel',
      tools: ['add'],
      messages: [
        user('add 1 and 1'),
        { role: 'model', content: [{ toolRequest: { name: 'add', ref: 'x', input: { a: 1, b: 1 } } }] },
        { role: 'tool', content: [{ toolResponse: { name: 'add', ref: 'x', output: 2 } }] },
        { role: 'model', content: [{ text: '2' }] },
        user('and 2 and 2?'),
      ],
    },
    modelResponses: [modelText('4')],
  },
  {
    name: 'return tool requests with json output',
    input: {
      model: 'programmableModel',
      messages: [user('go')],
      tools: ['add'],
      returnToolRequests: true,
      output: { format: 'json', jsonSchema: personSchema },
    },
    modelResponses: [toolCall({ name: 'add', ref: 'r', input: { a: 1, b: 2 } })],
  },
  {
    name: 'custom output instructions',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema, instructions: 'Answer as JSON, please.' },
    },
    modelResponses: [modelText('{"name": "E"}')],
  },
  {
    name: 'output instructions turned off',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema, instructions: false },
    },
    modelResponses: [modelText('{"name": "F"}')],
  },
  {
    name: 'constrained output asked of a model that cannot',
    input: {
      model: 'programmableModel',
      messages: [user('who?')],
      output: { format: 'json', jsonSchema: personSchema, constrained: true },
    },
    modelResponses: [modelText('{"name": "G"}')],
  },
  {
    name: 'an interrupt while restarting',
    // Genkit JS 1.42 fails here with a TypeError of its own; Genkit's design
    // (and this crate) say FAILED_PRECONDITION.
    deviation: {
      reason: 'Genkit JS fails with a TypeError',
      error: {
        status: 'FAILED_PRECONDITION',
        message: 'One or more tools triggered an interrupt during a restarted execution.',
      },
    },
    input: {
      model: 'programmableModel',
      tools: ['lookup'],
      messages: interruptedLookup(),
      resume: { restart: [{ toolRequest: { name: 'lookup', ref: 'l', input: { key: 'secret' } } }] },
    },
    modelResponses: [modelText('never')],
  },
  {
    name: 'resume without a model message to resume',
    input: {
      model: 'programmableModel',
      tools: ['ask'],
      messages: [user('go')],
      resume: { respond: [{ toolResponse: { name: 'ask', ref: 'q', output: 'yes' } }] },
    },
    modelResponses: [modelText('x')],
  },
  {
    name: 'resume metadata goes on the tool message',
    input: {
      model: 'programmableModel',
      tools: ['ask'],
      messages: [
        user('go'),
        {
          role: 'model',
          content: [{ toolRequest: { name: 'ask', ref: 'q', input: { question: 'sure?' } }, metadata: { interrupt: true } }],
        },
      ],
      resume: {
        respond: [{ toolResponse: { name: 'ask', ref: 'q', output: 'yes' } }],
        metadata: { by: 'operator' },
      },
    },
    modelResponses: [modelText('thanks')],
  },
  {
    name: 'streamed interrupt',
    stream: true,
    input: { model: 'programmableModel', messages: [user('go')], tools: ['ask', 'add'] },
    streamChunks: [[{ content: [{ text: 'asking' }] }]],
    modelResponses: [
      toolCall(
        { name: 'add', ref: 'a', input: { a: 1, b: 2 } },
        { name: 'ask', ref: 'q', input: { question: 'sure?' } },
      ),
    ],
  },
  {
    name: 'streamed array output',
    stream: true,
    input: {
      model: 'programmableModel',
      messages: [user('list')],
      output: { format: 'array', jsonSchema: { type: 'array', items: personSchema } },
    },
    streamChunks: [[{ content: [{ text: '[{"name": "A"}, ' }] }, { content: [{ text: '{"name": "B"}]' }] }]],
    modelResponses: [modelText('[{"name": "A"}, {"name": "B"}]')],
  },
  {
    name: 'streamed jsonl output',
    stream: true,
    input: {
      model: 'programmableModel',
      messages: [user('lines')],
      output: { format: 'jsonl', jsonSchema: { type: 'array', items: personSchema } },
    },
    streamChunks: [[{ content: [{ text: '{"name": "A"}\n{"na' }] }, { content: [{ text: 'me": "B"}\n' }] }]],
    modelResponses: [modelText('{"name": "A"}\n{"name": "B"}\n')],
  },
  {
    name: 'streamed three tool turns',
    stream: true,
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add', 'echo'] },
    streamChunks: [
      [{ content: [{ text: 'one' }] }],
      [{ content: [{ text: 'two' }] }],
      [{ content: [{ text: 'three' }] }],
    ],
    modelResponses: [
      toolCall({ name: 'add', ref: '1', input: { a: 1, b: 1 } }, { name: 'echo', ref: 'e', input: 'hi' }),
      toolCall({ name: 'add', ref: '2', input: { a: 2, b: 2 } }),
      modelText('three'),
    ],
  },
  {
    name: 'a multipart tool returns content',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['pics'] },
    modelResponses: [toolCall({ name: 'pics', ref: 'p', input: { n: 2 } }), modelText('seen')],
  },
  {
    name: 'tool input that does not match its schema',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 'one', b: 2 } }), modelText('x')],
  },
  {
    name: 'a tool that returns nothing',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['nothing'] },
    modelResponses: [toolCall({ name: 'nothing', ref: 'n', input: {} }), modelText('ok')],
  },
  {
    name: 'media for a model without media support',
    supports: { multiturn: true, tools: true, systemRole: true, media: false },
    input: {
      model: 'programmableModel',
      messages: [{ role: 'user', content: [{ text: 'look' }, { media: { url: 'https://example.com/a.png' } }] }],
    },
    modelResponses: [modelText('cannot see')],
  },
  {
    name: 'json output without a schema',
    input: { model: 'programmableModel', messages: [user('json please')], output: { format: 'json' } },
    modelResponses: [modelText('{"any": "thing"}')],
  },
  {
    name: 'streamed return tool requests',
    stream: true,
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'], returnToolRequests: true },
    streamChunks: [[{ content: [{ toolRequest: { name: 'add', ref: 'a', input: { a: 1, b: 2 } } }] }]],
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 1, b: 2 } })],
  },
  {
    name: 'the model fails',
    input: { model: 'programmableModel', messages: [user('hi')] },
    modelResponses: [{ error: 'model failed' }],
  },
  {
    name: 'the model fails after a tool turn',
    input: { model: 'programmableModel', messages: [user('go')], tools: ['add'] },
    modelResponses: [toolCall({ name: 'add', ref: 'a', input: { a: 1, b: 1 } }), { error: 'model failed' }],
  },
];

function setup(scenario, modelRequests) {
  const ai = genkit({});
  defineScriptedModel(ai, {
    responses: scenario.modelResponses,
    requests: modelRequests,
    supports: scenario.supports,
    streamChunks: scenario.streamChunks,
  });
  const tools = [
    defineAddTool(ai),
    ai.defineTool({ name: 'echo', description: 'returns its input', inputSchema: z.any() }, async (input) => input),
    ai.defineTool({ name: 'failing', description: 'always fails', inputSchema: z.any() }, async () => {
      throw new Error('tool failed');
    }),
    ai.defineTool(
      {
        name: 'pics',
        description: 'returns parts',
        multipart: true,
        inputSchema: z.object({ n: z.number() }),
      },
      async ({ n }) => ({ output: { count: n }, content: [{ text: 'part one' }] }),
    ),
    ai.defineTool({ name: 'nothing', description: 'returns nothing', inputSchema: z.any() }, async () => undefined),
    ai.defineInterrupt({
      name: 'ask',
      description: 'asks the user',
      inputSchema: z.object({ question: z.string() }),
      outputSchema: z.string(),
    }),
    ai.defineTool(
      {
        name: 'lookup',
        description: 'looks a key up',
        inputSchema: z.object({ key: z.string() }),
        outputSchema: z.string(),
      },
      async ({ key }, { interrupt }) => {
        if (key === 'secret') interrupt({ reason: 'needs approval' });
        return `value of ${key}`;
      },
    ),
  ];
  return { ai, tools };
}

const version = JSON.parse(
  readFileSync(new URL('./node_modules/genkit/package.json', import.meta.url), 'utf8'),
).version;
{
  const { tools } = setup({ modelResponses: [] }, []);
  const { toToolDefinition } = await import('genkit/tool');
  console.log(JSON.stringify({ genkit: version, tools: tools.map((t) => toToolDefinition(t)) }));
}

for (const scenario of scenarios) {
  const modelRequests = [];
  const { ai } = setup(scenario, modelRequests);
  const action = await ai.registry.lookupAction('/util/generate');
  const chunks = [];
  let expect;
  try {
    // Genkit JS changes the options it is given (markers on the messages):
    // run a copy, record the scenario as written.
    const { result } = await action.run(structuredClone(scenario.input), {
      onChunk: scenario.stream ? (c) => chunks.push(JSON.parse(JSON.stringify(c))) : undefined,
    });
    expect = { modelRequests, chunks, response: JSON.parse(JSON.stringify(result)) };
  } catch (e) {
    expect = { modelRequests, chunks, error: { status: e.status ?? null, message: String(e.message ?? e) } };
  }
  console.log(JSON.stringify({ ...scenario, expect }));
}
