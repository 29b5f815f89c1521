// A scripted MCP server that misbehaves, for plugins/mcp's bad-input tests.
// No SDK: it speaks just enough JSON-RPC by hand to get past the handshake,
// then breaks the protocol as `mode` says.
//
//   node misbehaving-server.mjs <mode>           (stdio)
//   node misbehaving-server.mjs http-<mode>      (Streamable HTTP on a free
//                                                 127.0.0.1 port, URL printed
//                                                 as the first line of stdout)
//
// Modes:
//   bad-handshake  answers `initialize` with a line that is not JSON
//   malformed      answers every later request with broken JSON, JSON that is
//                  not JSON-RPC, and a reply of the right id but the wrong shape
//   flood          answers no later request; floods stdout with garbage lines
//                  and one line of 256 MiB (stdio only)
//   silent         answers no later request (it reads them and says nothing)

import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

const mode = process.argv[2] ?? '';

const INIT_RESULT = {
  protocolVersion: '2025-11-25',
  capabilities: { tools: {}, prompts: {}, resources: {} },
  serverInfo: { name: 'misbehaving', version: '0.0.0' },
};

/** The lines this server answers `message` with, by mode. */
function answer(message, mode) {
  if (message.id === undefined) return []; // a notification
  if (message.method === 'initialize') {
    if (mode === 'bad-handshake') return ['{"jsonrpc": "2.0", "id": ' + message.id + ', "result": {oops'];
    return [JSON.stringify({ jsonrpc: '2.0', id: message.id, result: INIT_RESULT })];
  }
  if (mode === 'malformed') {
    return [
      '{"jsonrpc":"2.0","id":' + message.id + ',"result":{"tools":[',
      'this is not JSON at all',
      JSON.stringify({ hello: 'not JSON-RPC' }),
      JSON.stringify([1, 2, 3]),
      JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { tools: 'not-a-list', content: 7 } }),
    ];
  }
  return [];
}

function write(chunk) {
  return new Promise((resolve) => {
    if (process.stdout.write(chunk)) resolve();
    else process.stdout.once('drain', resolve);
  });
}

let flooding = false;
async function flood() {
  if (flooding) return;
  flooding = true;
  const garbage = 'x'.repeat(1024 * 1024 - 1) + '\n';
  // One line of 256 MiB, written in 1 MiB pieces with no newline between.
  const piece = 'y'.repeat(1024 * 1024);
  for (let i = 0; i < 256; i++) await write(piece);
  await write('\n');
  // Then garbage lines, forever.
  for (;;) await write(garbage);
}

function serveStdio(mode) {
  const lines = createInterface({ input: process.stdin });
  lines.on('line', async (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    for (const reply of answer(message, mode)) await write(reply + '\n');
    if (mode === 'flood' && message.id !== undefined && message.method !== 'initialize') flood();
  });
  lines.on('close', () => process.exit(0));
}

function serveHttp(mode) {
  const http = createServer((req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let message;
      try {
        message = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        res.writeHead(400).end();
        return;
      }
      if (message.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const lines = answer(message, mode);
      if (lines.length === 0) return; // never answers: the request hangs
      res.writeHead(200, { 'content-type': 'application/json' });
      // The first line is the one a JSON response carries.
      res.end(lines[0]);
    });
  });
  http.listen(0, '127.0.0.1', () => {
    process.stdout.write(`http://127.0.0.1:${http.address().port}/mcp\n`);
  });
}

if (mode.startsWith('http-')) serveHttp(mode.slice('http-'.length));
else if (['bad-handshake', 'malformed', 'flood', 'silent'].includes(mode)) serveStdio(mode);
else {
  process.stderr.write('usage: node misbehaving-server.mjs [http-]bad-handshake|malformed|flood|silent\n');
  process.exit(2);
}
