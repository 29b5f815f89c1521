// The official TypeScript SDK's MCP client driving an MCP server, for
// plugins/mcp's server tests (tests/server.rs).
//
//   node sdk-client.mjs stdio <command> [args...]   starts the server as a child
//   node sdk-client.mjs http <url>                  reaches it over Streamable HTTP
//
// It lists and calls tools (one that succeeds, one that fails, one with bad
// input, one that does not exist, one reporting progress, one it cancels), lists and gets prompts, lists resources
// and templates and reads them, and prints one JSON object with every answer
// (errors as {error: {code, message}}) for the Rust test to check.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, target, ...rest] = process.argv.slice(2);
const transport =
  mode === 'stdio'
    ? new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' })
    : new StreamableHTTPClientTransport(new URL(target));
const client = new Client({ name: 'sdk-test-client', version: '1.0.0' });
await client.connect(transport);

async function attempt(f) {
  try {
    return await f();
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
}

// A tool that streams reports progress when asked to.
async function countWithProgress() {
  const progress = [];
  const result = await client.callTool({ name: 'count', arguments: { to: 3 } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  return { result, progress };
}

// A call the client gives up on: the server must cancel the tool's run,
// which a resource then reports.
async function cancelWait() {
  const aborter = new AbortController();
  const call = client.callTool({ name: 'wait', arguments: {} }, undefined, { signal: aborter.signal });
  setTimeout(() => aborter.abort('giving up'), 300);
  const wait = await attempt(() => call);
  for (let i = 0; i < 50; i++) {
    const state = await client.readResource({ uri: 'state://cancelled' });
    if (state.contents[0]?.text === 'true') return { wait, cancelled: state };
    await new Promise((r) => setTimeout(r, 100));
  }
  return { wait, cancelled: await client.readResource({ uri: 'state://cancelled' }) };
}

const out = {
  server: client.getServerVersion(),
  capabilities: client.getServerCapabilities(),
  tools: (await client.listTools()).tools,
  add: await attempt(() => client.callTool({ name: 'add', arguments: { a: 2, b: 3 } })),
  fail: await attempt(() => client.callTool({ name: 'fail', arguments: { reason: 'testing' } })),
  badInput: await attempt(() => client.callTool({ name: 'add', arguments: { a: 'two' } })),
  picture: await attempt(() => client.callTool({ name: 'picture', arguments: {} })),
  unknownTool: await attempt(() => client.callTool({ name: 'nope', arguments: {} })),
  count: await attempt(countWithProgress),
  prompts: (await client.listPrompts()).prompts,
  greet: await attempt(() => client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } })),
  unknownPrompt: await attempt(() => client.getPrompt({ name: 'nope' })),
  resources: (await client.listResources()).resources,
  templates: (await client.listResourceTemplates()).resourceTemplates,
  readme: await attempt(() => client.readResource({ uri: 'docs://readme' })),
  user: await attempt(() => client.readResource({ uri: 'users://42/profile' })),
  unknownResource: await attempt(() => client.readResource({ uri: 'nothing://here' })),
  ...(await cancelWait()),
};
console.log(JSON.stringify(out));
await client.close();
