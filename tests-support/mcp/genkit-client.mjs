// Genkit JS's MCP client (@genkit-ai/mcp's createMcpClient) driving an MCP
// server, for plugins/mcp's server tests (tests/server.rs).
//
//   node genkit-client.mjs stdio <command> [args...]   starts the server as a child
//   node genkit-client.mjs http <url>                  reaches it over Streamable HTTP
//
// It uses the server's tools, prompt and resources the way a Genkit JS app
// does (as Genkit actions) and prints one JSON object with the results.

import { createMcpClient } from '@genkit-ai/mcp';
import { genkit } from 'genkit';

const [mode, target, ...rest] = process.argv.slice(2);
const ai = genkit({});
const client = createMcpClient({
  name: 'genkit-test-client',
  serverName: 'rs',
  mcpServer: mode === 'stdio' ? { command: target, args: rest, stderr: 'inherit' } : { url: target },
});
await client.ready();

async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: { status: e.status, message: e.message } };
  }
}

const tools = await client.getActiveTools(ai);
const tool = (name) => tools.find((t) => t.__action.name === `rs/${name}`);
const resources = await client.getActiveResources(ai);
const read = (uri) => {
  const r = resources.find((r) => r.matches({ uri }));
  return r ? r({ uri }) : { error: { message: `no resource matches ${uri}` } };
};
const greet = await client.getPrompt(ai, 'greet');

const out = {
  tools: tools.map((t) => ({ name: t.__action.name, inputSchema: t.__action.inputJsonSchema })),
  add: await attempt(() => tool('add')({ a: 2, b: 3 })),
  fail: await attempt(() => tool('fail')({ reason: 'testing' })),
  greet: greet ? await attempt(async () => (await greet.render({ name: 'Ada' })).messages) : null,
  resources: resources.map((r) => r.__action.name),
  readme: await attempt(() => read('docs://readme')),
  user: await attempt(() => read('users://42/profile')),
};
console.log(JSON.stringify(out));
await client.disable();
process.exit(0);
