// An MCP server written with the official TypeScript SDK, for plugins/mcp's
// tests. `node server.mjs stdio` serves one client on stdin/stdout;
// `node server.mjs http` serves Streamable HTTP on a free 127.0.0.1 port and
// prints its endpoint URL as the first line of stdout.
//
// It offers tools that succeed (`add`), fail (`fail`, isError), report
// progress (`count`), return an image and an embedded resource (`picture`),
// add a tool at run time (`add_tool`, which makes the server send
// tools/list_changed), never answer (`hang`) and kill the process mid-call
// (`die`); a prompt (`greet`), a resource (`test://readme`) and a resource
// template (`test://greeting/{name}`).

import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

// A 1x1 red PNG.
const RED_PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';

function buildServer() {
  const server = new McpServer({ name: 'genkit-rs-test-peer', version: '1.0.0' });

  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
    },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] })
  );

  server.registerTool(
    'fail',
    { description: 'Always fails.', inputSchema: { reason: z.string() } },
    async ({ reason }) => ({
      isError: true,
      content: [{ type: 'text', text: `refused: ${reason}` }],
    })
  );

  server.registerTool(
    'count',
    {
      description: 'Counts to `to`, reporting progress at each step.',
      inputSchema: { to: z.number().int() },
    },
    async ({ to }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= to; i++) {
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: to, message: `step ${i}` },
          });
        }
      }
      // rmcp hands notifications to its handler on separate tasks, so a
      // report sent right before the answer could be seen after it: pause.
      await new Promise((r) => setTimeout(r, 100));
      return { content: [{ type: 'text', text: `counted to ${to}` }] };
    }
  );

  server.registerTool(
    'picture',
    { description: 'Returns a picture and its caption file.' },
    async () => ({
      content: [
        { type: 'text', text: 'a red pixel' },
        { type: 'image', data: RED_PIXEL, mimeType: 'image/png' },
        {
          type: 'resource',
          resource: { uri: 'test://caption.txt', mimeType: 'text/plain', text: 'red' },
        },
      ],
    })
  );

  server.registerTool(
    'add_tool',
    {
      description: 'Adds a tool named `name` that answers `late`.',
      inputSchema: { name: z.string() },
    },
    async ({ name }) => {
      server.registerTool(name, { description: 'Added at run time.' }, async () => ({
        content: [{ type: 'text', text: 'late' }],
      }));
      return { content: [{ type: 'text', text: `added ${name}` }] };
    }
  );

  server.registerTool('hang', { description: 'Never answers.' }, () => new Promise(() => {}));

  server.registerTool('die', { description: 'Exits the server process mid-call.' }, async () => {
    process.exit(3);
  });

  server.registerPrompt(
    'greet',
    { description: 'Greets someone.', argsSchema: { name: z.string() } },
    ({ name }) => ({
      description: 'A greeting',
      messages: [{ role: 'user', content: { type: 'text', text: `Say hello to ${name}.` } }],
    })
  );

  server.registerResource(
    'readme',
    'test://readme',
    { description: 'A short text', mimeType: 'text/plain' },
    async (uri) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'This is the readme.' }],
    })
  );

  server.registerResource(
    'greeting',
    new ResourceTemplate('test://greeting/{name}', { list: undefined }),
    { description: 'A greeting for `name`', mimeType: 'text/plain' },
    async (uri, { name }) => ({
      contents: [{ uri: uri.href, mimeType: 'text/plain', text: `Hello, ${decodeURIComponent(name)}!` }],
    })
  );

  return server;
}

async function serveStdio() {
  await buildServer().connect(new StdioServerTransport());
}

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch (e) {
        reject(e);
      }
    });
    req.on('error', reject);
  });
}

// Stateful Streamable HTTP: one transport and server per session, so the
// server can push tools/list_changed on the session's GET stream.
async function serveHttp() {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    try {
      const sessionId = req.headers['mcp-session-id'];
      let transport = sessionId ? sessions.get(sessionId) : undefined;
      const body = req.method === 'POST' ? await readJson(req) : undefined;
      if (!transport) {
        if (req.method !== 'POST' || !isInitializeRequest(body)) {
          res.writeHead(400, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify({
              jsonrpc: '2.0',
              error: { code: -32000, message: 'no valid session' },
              id: null,
            })
          );
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => {
          if (transport.sessionId) sessions.delete(transport.sessionId);
        };
        await buildServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(e));
    }
  });
  http.listen(0, '127.0.0.1', () => {
    const { port } = http.address();
    process.stdout.write(`http://127.0.0.1:${port}/mcp\n`);
  });
}

const mode = process.argv[2];
if (mode === 'stdio') {
  await serveStdio();
} else if (mode === 'http') {
  await serveHttp();
} else {
  process.stderr.write('usage: node server.mjs stdio|http\n');
  process.exit(2);
}
