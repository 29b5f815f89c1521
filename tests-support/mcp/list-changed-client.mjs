// The official TypeScript SDK's MCP client waiting for the server's
// list_changed notifications, for plugins/mcp's tests/list_changed.rs.
//
//   node list-changed-client.mjs <url>
//
// It connects over Streamable HTTP, calls the tool `grow` (which registers
// a tool, a prompt and a resource in the server's registry), waits for
// notifications/{tools,prompts,resources}/list_changed, lists again and
// prints one JSON object with what it saw.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [url] = process.argv.slice(2);
const client = new Client({ name: 'sdk-list-changed-client', version: '1.0.0' });
const notified = new Set();
client.setNotificationHandler(ToolListChangedNotificationSchema, () => notified.add('tools'));
client.setNotificationHandler(PromptListChangedNotificationSchema, () => notified.add('prompts'));
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => notified.add('resources'));
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const before = (await client.listTools()).tools.map((t) => t.name);
// Give the standalone SSE stream (where notifications arrive) time to open.
await new Promise((r) => setTimeout(r, 300));
await client.callTool({ name: 'grow', arguments: {} });
for (let i = 0; i < 100 && notified.size < 3; i++) {
  await new Promise((r) => setTimeout(r, 50));
}
const out = {
  capabilities: client.getServerCapabilities(),
  before,
  notified: [...notified].sort(),
  tools: (await client.listTools()).tools.map((t) => t.name),
  prompts: (await client.listPrompts()).prompts.map((p) => p.name),
  resources: (await client.listResources()).resources.map((r) => r.uri),
};
await client.close();
console.log(JSON.stringify(out));
