// Records Genkit JS's `agents` and `artifacts` middleware (@genkit-ai/middleware)
// on scripted conversations: the tool definitions and system prompt the
// supervisor's model sees, and every tool response it gets back. Writes
// crates/genkit-agent/tests/fixtures/middleware_agents_js.json.
// Run: node record.mjs (after npm ci here).
import { genkit, z } from 'genkit/beta';
import { agents, artifacts } from '@genkit-ai/middleware';
import { writeFileSync } from 'node:fs';

const ai = genkit({});
const seen = {};

// A model answering from a script: one response per call, recording requests.
function scripted(name, responses) {
  let i = 0;
  seen[name] = [];
  ai.defineModel({ name, supports: { tools: true, multiturn: true, systemRole: true } }, async (req) => {
    seen[name].push(req);
    // Scripts repeat, so an agent run twice answers the same way.
    const r = responses[i++ % responses.length];
    if (r.error) throw new Error(r.error);
    const calls = r.tools ?? (r.tool ? [[r.tool, r.input]] : null);
    const content = calls
      ? calls.map(([name, input], j) => ({ toolRequest: { name, ref: `r${i}.${j}`, input } }))
      : [{ text: r.text }];
    return { message: { role: 'model', content }, finishReason: 'stop' };
  });
}

ai.defineTool({ name: 'search', description: 'Searches.', inputSchema: z.object({ q: z.string() }) },
  async ({ q }) => `Result for ${q}: Rust 1.0 was released in 2015.`);
ai.defineTool({ name: 'ask_user', description: 'Asks the user.', inputSchema: z.object({ q: z.string() }) },
  async (_i, { interrupt }) => interrupt({ why: 'need input' }));

scripted('researcherModel', [
  { tool: 'search', input: { q: 'rust release' } },
  { text: 'Rust 1.0 shipped in 2015.' },
]);
scripted('writerModel', [
  { tool: 'write_artifact', input: { name: 'draft.md', content: '# Rust\nReleased 2015.' } },
  { text: 'Draft written.' },
]);
scripted('failingModel', [{ error: 'model exploded' }]);
scripted('askingModel', [{ tool: 'ask_user', input: { q: 'which year?' } }]);
scripted('supervisorModel', [
  { tool: 'delegate_to_researcher', input: { task: 'Find when Rust 1.0 shipped.' } },
  { tool: 'delegate_to_writer', input: { task: 'Write a draft about it.' } },
  { tools: [
    ['read_artifact', { name: 'missing.md' }],
    ['delegate_to_failing', { task: 'Fail.' }],
    ['delegate_to_asking', { task: 'Ask.' }],
    ['delegate_to_ghost', { task: 'Anyone?' }],
  ] },
  { text: 'All done.' },
]);

ai.defineAgent({ name: 'researcher', model: 'researcherModel', description: 'Researches facts.', system: 'You research.', tools: ['search'] });
ai.defineAgent({ name: 'writer', model: 'writerModel', system: 'You write.', use: [artifacts()] });
ai.defineAgent({ name: 'failing', model: 'failingModel', system: 'You fail.' });
ai.defineAgent({ name: 'asking', model: 'askingModel', system: 'You ask.', tools: ['ask_user'] });
const supervisor = ai.defineAgent({
  name: 'supervisor', model: 'supervisorModel', system: 'You supervise.',
  use: [
    agents({ agents: ['researcher', { name: 'writer', description: 'Writes drafts.' }, 'failing', 'asking', 'ghost'] }),
    artifacts({ readonly: true }),
  ],
});

scripted('limitedModel', [
  { tool: 'ask_writer', input: { task: 'Write a draft.' } },
  { tool: 'ask_writer', input: { task: 'Write another.' } },
  { text: 'Limited done.' },
]);
const limited = ai.defineAgent({
  name: 'limited', model: 'limitedModel', system: 'You are limited.',
  use: [agents({ agents: ['writer'], toolPrefix: 'ask', maxDelegations: 1, artifactStrategy: 'session' })],
});

// historyLength: the last user/model texts go to a client-managed sub-agent
// as its starting history.
scripted('listenerModel', [{ text: 'Heard.' }]);
ai.defineAgent({ name: 'listener', model: 'listenerModel', system: 'You listen.' });
scripted('historianModel', [
  { text: 'Noted.' },
  { tool: 'delegate_to_listener', input: { task: 'Summarize.' } },
  { text: 'Historian done.' },
]);
const historian = ai.defineAgent({
  name: 'historian', model: 'historianModel', system: 'You keep history.',
  use: [agents({ agents: ['listener'], historyLength: 2 })],
});

const out = await supervisor.run({ message: { role: 'user', content: [{ text: 'Report on Rust 1.0.' }] } }, { init: {} });
const result = out.result;

const reqs = seen.supervisorModel;
const limitedOut = (await limited.run({ message: { role: 'user', content: [{ text: 'Go.' }] } }, { init: {} })).result;
const lreqs = seen.limitedModel;
const hchat = historian.chat();
await hchat.send('First fact: Rust 1.0 shipped in 2015.');
await hchat.send('Delegate a summary.');
const fixture = {
  note: 'Recorded from Genkit JS (genkit 1.42, @genkit-ai/middleware 0.7) by tests-support/middleware-agents-js/record.mjs.',
  supervisorTools: reqs[0].tools,
  systemFirstTurn: reqs[0].messages.find((m) => m.role === 'system'),
  systemLastTurn: reqs[reqs.length - 1].messages.find((m) => m.role === 'system'),
  toolResponses: reqs[reqs.length - 1].messages
    .flatMap((m) => m.content)
    .filter((p) => p.toolResponse)
    .map((p) => ({ name: p.toolResponse.name, output: p.toolResponse.output })),
  limited: {
    tools: lreqs[0].tools,
    system: lreqs[0].messages.find((m) => m.role === 'system'),
    toolResponses: lreqs[lreqs.length - 1].messages
      .flatMap((m) => m.content)
      .filter((p) => p.toolResponse)
      .map((p) => ({ name: p.toolResponse.name, output: p.toolResponse.output })),
    finalText: limitedOut.message?.content?.map((p) => p.text).join(''),
    finalArtifacts: limitedOut.artifacts ?? [],
  },
  listenerRequests: seen.listenerModel.map((r) => r.messages),
  researcherRequests: seen.researcherModel.map((r) => r.messages),
  finalText: result.message?.content?.map((p) => p.text).join(''),
  finalArtifacts: (result.artifacts ?? result.state?.artifacts ?? []),
  // What the Reflection API lists for each (MiddlewareDesc).
  configSchemas: { agents: agents.toJson(), artifacts: artifacts.toJson() },
};
const out_path = process.argv[2]
  ?? new URL('../../crates/genkit-agent/tests/fixtures/middleware_agents_js.json', import.meta.url);
writeFileSync(out_path, JSON.stringify(fixture, null, 2) + '\n');
