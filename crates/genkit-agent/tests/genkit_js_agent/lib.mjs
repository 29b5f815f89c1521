// What the agent recording scripts share: the scripted model, the tools and
// agents the scenarios name, and the normalization of generated ids.
import { InMemorySessionStore, ToolInterruptError, z } from 'genkit/beta';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const copy = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

// A gate a scenario opens with a `release` step; agents and the model wait on it.
export function gate() {
  let open;
  const opened = new Promise((resolve) => (open = resolve));
  return { opened, open: () => open() };
}

// Defines `programmableModel`: it records each request into `ctx.modelRequests`
// and answers with the responses the running step queued (`ctx.responses`),
// streaming the step's `streamChunks[i]` on its i-th call first. A response
// `{error}` throws that message; `{waitForGate: true, ...}` streams its chunks,
// then waits for the scenario's gate before answering.
export function defineScriptedModel(ai, ctx) {
  ai.defineModel(
    {
      name: 'programmableModel',
      apiVersion: 'v2',
      supports: { multiturn: true, media: true, tools: true, systemRole: true, toolChoice: true },
    },
    async (req, { sendChunk }) => {
      ctx.modelRequests.push(copy(req));
      const chunks = ctx.streamChunks.shift() ?? [];
      for (const chunk of chunks) sendChunk(chunk);
      const response = ctx.responses.shift();
      if (!response) throw new Error('no scripted response left');
      if (response.waitForGate) {
        await ctx.gate.opened;
        const { waitForGate, ...rest } = response;
        return rest;
      }
      if (response.error) throw new Error(response.error);
      return response;
    },
  );
}

// The tools of agent.yaml's harness.
export function defineTools(ai) {
  return [
    ai.defineTool({ name: 'testTool', description: 'A simple test tool' }, async () => 'tool called'),
    ai.defineInterrupt({
      name: 'interruptTool',
      description: 'An interrupt tool',
      inputSchema: z.object({ query: z.string() }),
      outputSchema: z.object({ answer: z.string() }),
    }),
    ai.defineTool(
      {
        name: 'restartTool',
        description: 'A tool that requires confirmation before executing',
        inputSchema: z.object({ action: z.string() }),
        outputSchema: z.object({ result: z.string() }),
      },
      async (input, { resumed }) => {
        if (!resumed) throw new ToolInterruptError({ requiresConfirmation: true });
        return { result: `confirmed: ${input.action}` };
      },
    ),
  ];
}

const modelText = (text) => ({ role: 'model', content: [{ text }] });
const inputText = (input) => (input?.message?.content ?? []).map((p) => p.text ?? '').join('');

// Every agent the scenarios use, as data (the header of recorded.jsonl) and as
// code. `prompt` agents are `ai.defineAgent` on the scripted model with
// `config: {temperature: 1}`; `custom` agents are `ai.defineCustomAgent` with
// the `behaviour` described.
export const AGENTS = [
  { name: 'promptAgent', kind: 'prompt', store: false, prompt: {} },
  { name: 'promptAgentWithStore', kind: 'prompt', store: true, prompt: {} },
  { name: 'promptAgentWithSystem', kind: 'prompt', store: false, prompt: { system: 'You are terse.' } },
  { name: 'promptAgentWithTools', kind: 'prompt', store: false, prompt: { tools: ['testTool'] } },
  { name: 'promptAgentWithInterrupt', kind: 'prompt', store: true, prompt: { tools: ['interruptTool'] } },
  { name: 'promptAgentWithInterruptClient', kind: 'prompt', store: false, prompt: { tools: ['interruptTool'] } },
  { name: 'promptAgentWithRestartTool', kind: 'prompt', store: true, prompt: { tools: ['restartTool'] } },
  {
    name: 'customAgentBlocking',
    kind: 'custom',
    store: true,
    behaviour: 'each turn waits until the agent is aborted, then ends normally; returns message "unblocked"',
  },
  {
    name: 'customAgentGated',
    kind: 'custom',
    store: true,
    behaviour:
      'each turn waits for the scenario gate (opened by a `release` step), then adds model message "released: <input text>"; returns the last message',
  },
  {
    name: 'customAgentFailing',
    kind: 'custom',
    store: true,
    behaviour: 'each turn throws Error("intentional failure"); returns message "unreachable"',
  },
  {
    name: 'customAgentFailingClient',
    kind: 'custom',
    store: false,
    behaviour: 'customAgentFailing without a store',
  },
  {
    name: 'customAgentFailOnDemand',
    kind: 'custom',
    store: true,
    behaviour:
      'a turn whose input text is "fail" adds custom {touched: true} and throws Error("failed on demand"); any other turn adds model message "ok: <input text>"; returns the last message',
  },
  {
    name: 'customAgentFailOnDemandClient',
    kind: 'custom',
    store: false,
    behaviour: 'customAgentFailOnDemand without a store',
  },
  {
    name: 'customAgentWithArtifacts',
    kind: 'custom',
    store: false,
    behaviour:
      'each turn adds artifact doc1 [text v1], replaces it with doc1 [text v2], adds doc2 [text other]; returns all artifacts and message "done"',
  },
  {
    name: 'customAgentWithArtifactsStore',
    kind: 'custom',
    store: true,
    behaviour:
      'each turn adds artifact doc<N+1> [text content<N+1>] (N = artifacts so far) and model message "done"; returns all artifacts and the last message',
  },
  {
    name: 'customAgentWithCustomState',
    kind: 'custom',
    store: false,
    behaviour: 'each turn sets custom to {counter: previous counter (or 0) + 1}; returns message "done"',
  },
  {
    name: 'customAgentWithCustomStateStore',
    kind: 'custom',
    store: true,
    behaviour: 'customAgentWithCustomState with a store',
  },
  {
    name: 'customAgentWithMultiCustomState',
    kind: 'custom',
    store: false,
    behaviour:
      'each turn updates custom three times: {counter: 1, status: "working"}, then counter 2, then status "done" (each update spreads the previous value); returns message "done"',
  },
  {
    name: 'customAgentTypedState',
    kind: 'custom',
    store: false,
    stateSchema: { counter: 'number (required)', label: 'string (optional)' },
    behaviour:
      'stateSchema z.object({counter: z.number(), label: z.string().optional()}); each turn sets custom.counter to previous counter (or 0) + 1, keeping label; returns message "done"',
  },
  {
    name: 'customAgentTypedStateStore',
    kind: 'custom',
    store: true,
    stateSchema: { counter: 'number (required)', label: 'string (optional)' },
    behaviour: 'customAgentTypedState with a store',
  },
  {
    name: 'customAgentWithClientTransform',
    kind: 'custom',
    store: true,
    clientTransform: {
      state: 'the state without custom.secret',
      chunk: 'artifact chunks dropped; others unchanged',
    },
    behaviour:
      'each turn sets custom to {visible: previous visible (or 0) + 1, secret: "s<visible>"}, adds artifact note [text "n<visible>"] and model message "done <visible>"; returns the last message',
  },
  {
    name: 'customAgentStreaming',
    kind: 'custom',
    store: false,
    behaviour:
      'each turn sends modelChunk {role: model, content: [text "echo "]} then {role: model, content: [text <input text>]}, adds model message "echo <input text>" and ends the turn with finishReason "stop"; returns the last message and no finishReason',
  },
];

// Registers the agents of AGENTS on `ai`; `ctx.gate` is the scenario's gate.
export function defineAgents(ai, ctx) {
  const agents = {};
  const store = (def) => (def.store ? { store: new InMemorySessionStore() } : {});
  const typed = z.object({ counter: z.number(), label: z.string().optional() });
  const withoutSecret = (state) => {
    if (!state.custom) return state;
    const { secret, ...custom } = state.custom;
    return { ...state, custom };
  };
  const extras = {
    customAgentTypedState: { stateSchema: typed },
    customAgentTypedStateStore: { stateSchema: typed },
    customAgentWithClientTransform: {
      clientTransform: { state: withoutSecret, chunk: (chunk) => (chunk.artifact ? undefined : chunk) },
    },
  };
  const custom = (def, fn) => ai.defineCustomAgent({ name: def.name, ...store(def), ...extras[def.name] }, fn);
  const lastMessage = (sess) => sess.getMessages().at(-1);
  const behaviours = {
    customAgentBlocking: async (sess, { abortSignal }) => {
      await sess.run(async () => {
        await new Promise((resolve) => {
          if (abortSignal?.aborted) return resolve();
          abortSignal?.addEventListener('abort', () => resolve(), { once: true });
        });
      });
      return { message: modelText('unblocked') };
    },
    customAgentGated: async (sess) => {
      await sess.run(async (input) => {
        await ctx.gate.opened;
        sess.addMessages([modelText(`released: ${inputText(input)}`)]);
      });
      return { message: lastMessage(sess) };
    },
    customAgentFailing: async (sess) => {
      await sess.run(async () => {
        throw new Error('intentional failure');
      });
      return { message: modelText('unreachable') };
    },
    customAgentFailOnDemand: async (sess) => {
      await sess.run(async (input) => {
        if (inputText(input) === 'fail') {
          sess.updateCustom((prev) => ({ ...prev, touched: true }));
          throw new Error('failed on demand');
        }
        sess.addMessages([modelText(`ok: ${inputText(input)}`)]);
      });
      return { message: lastMessage(sess) };
    },
    customAgentWithArtifacts: async (sess) => {
      await sess.run(async () => {
        sess.addArtifacts([{ name: 'doc1', parts: [{ text: 'v1' }] }]);
        sess.addArtifacts([{ name: 'doc1', parts: [{ text: 'v2' }] }]);
        sess.addArtifacts([{ name: 'doc2', parts: [{ text: 'other' }] }]);
      });
      return { artifacts: sess.getArtifacts(), message: modelText('done') };
    },
    customAgentWithArtifactsStore: async (sess) => {
      await sess.run(async () => {
        const n = sess.getArtifacts().length + 1;
        sess.addArtifacts([{ name: `doc${n}`, parts: [{ text: `content${n}` }] }]);
        sess.addMessages([modelText('done')]);
      });
      return { artifacts: sess.getArtifacts(), message: lastMessage(sess) };
    },
    customAgentWithCustomState: async (sess) => {
      await sess.run(async () => {
        const counter = (sess.getCustom()?.counter ?? 0) + 1;
        sess.updateCustom(() => ({ counter }));
      });
      return { message: modelText('done') };
    },
    customAgentWithMultiCustomState: async (sess) => {
      await sess.run(async () => {
        sess.updateCustom(() => ({ counter: 1, status: 'working' }));
        sess.updateCustom((prev) => ({ ...prev, counter: 2 }));
        sess.updateCustom((prev) => ({ ...prev, status: 'done' }));
      });
      return { message: modelText('done') };
    },
    customAgentTypedState: async (sess) => {
      await sess.run(async () => {
        sess.updateCustom((prev) => ({ ...prev, counter: (prev?.counter ?? 0) + 1 }));
      });
      return { message: modelText('done') };
    },
    customAgentWithClientTransform: async (sess) => {
      await sess.run(async () => {
        const visible = (sess.getCustom()?.visible ?? 0) + 1;
        sess.updateCustom(() => ({ visible, secret: `s${visible}` }));
        sess.addArtifacts([{ name: 'note', parts: [{ text: `n${visible}` }] }]);
        sess.addMessages([modelText(`done ${visible}`)]);
      });
      return { message: lastMessage(sess) };
    },
    customAgentStreaming: async (sess, { sendChunk }) => {
      await sess.run(async (input) => {
        sendChunk({ modelChunk: { role: 'model', content: [{ text: 'echo ' }] } });
        sendChunk({ modelChunk: { role: 'model', content: [{ text: inputText(input) }] } });
        sess.addMessages([modelText(`echo ${inputText(input)}`)]);
        return { finishReason: 'stop' };
      });
      return { message: lastMessage(sess) };
    },
  };
  behaviours.customAgentFailingClient = behaviours.customAgentFailing;
  behaviours.customAgentFailOnDemandClient = behaviours.customAgentFailOnDemand;
  behaviours.customAgentWithCustomStateStore = behaviours.customAgentWithCustomState;
  behaviours.customAgentTypedStateStore = behaviours.customAgentTypedState;
  for (const def of AGENTS) {
    agents[def.name] =
      def.kind === 'prompt'
        ? ai.defineAgent({
            name: def.name,
            model: 'programmableModel',
            config: { temperature: 1 },
            ...def.prompt,
            ...store(def),
          })
        : custom(def, behaviours[def.name]);
  }
  return agents;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const TIMESTAMP = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g;
const TIMESTAMP_KEYS = new Set(['createdAt', 'updatedAt', 'heartbeatAt']);
const ID_KINDS = { snapshotId: 'snapshotId', parentId: 'snapshotId', sessionId: 'sessionId' };

// Replaces generated ids by stable placeholders, per scenario: the first
// snapshot id seen becomes `<snapshotId:1>`, and so on; the same id always
// gets the same placeholder, also inside messages and raw HTTP bodies.
// Timestamps become `<timestamp>`.
export class Normalizer {
  ids = new Map();
  counts = { snapshotId: 0, sessionId: 0, id: 0 };

  placeholder(id, kind) {
    if (!this.ids.has(id)) this.ids.set(id, `<${kind}:${++this.counts[kind]}>`);
    return this.ids.get(id);
  }

  // First pass: learn ids from the fields that name their kind.
  learn(value, key) {
    if (typeof value === 'string') {
      if (ID_KINDS[key] && UUID.test(value)) {
        UUID.lastIndex = 0;
        for (const id of value.match(UUID)) this.placeholder(id, ID_KINDS[key]);
      }
      UUID.lastIndex = 0;
    } else if (Array.isArray(value)) {
      value.forEach((item) => this.learn(item));
    } else if (value && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) this.learn(v, k);
    }
  }

  apply(value, key) {
    if (typeof value === 'string') {
      if (TIMESTAMP_KEYS.has(key)) return '<timestamp>';
      return value.replace(UUID, (id) => this.placeholder(id, 'id')).replace(TIMESTAMP, '<timestamp>');
    }
    if (Array.isArray(value)) return value.map((item) => this.apply(item));
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.apply(v, k)]));
    }
    return value;
  }

  normalize(value) {
    this.learn(value);
    return this.apply(value);
  }
}

// An error as recorded: its status and message (GenkitError's message without
// the status prefix, as `originalMessage`; otherwise the whole message).
// A schema validation message is cut after its parse errors (the rest is the
// data and the whole JSON schema, as Genkit JS prints them).
export function errorRecord(e) {
  const message = String(e?.originalMessage ?? e?.message ?? e);
  return {
    status: e?.status ?? null,
    message: message.split('\n\nProvided data:')[0],
  };
}
