// Records what Genkit JS 1.42's Agent API does in each scenario of
// scenarios.mjs — the chunks, outputs, errors and snapshots of every step, the
// requests its scripted model receives, and for the HTTP scenarios every
// request remoteAgent posts and every response body — as the expected
// behaviour of Genkit for Rust's agents. See README.md for the format.
//
//   cd crates/genkit-agent/tests/genkit_js_agent && npm ci && node record.mjs > recorded.jsonl
//
// Every scenario runs in a fresh Genkit instance (fresh in-memory stores)
// with the model, tools and agents of lib.mjs. Generated ids and timestamps
// are replaced by placeholders (lib.mjs, Normalizer).
import { FlowServer, withFlowOptions } from '@genkit-ai/express';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { genkit } from 'genkit/beta';
import { remoteAgent } from 'genkit/beta/client';
import { toJsonSchema } from 'genkit/schema';
import { toToolDefinition } from 'genkit/tool';
import { AGENTS, Normalizer, copy, defineAgents, defineScriptedModel, defineTools, errorRecord, gate, sleep } from './lib.mjs';
import { ReflectionServer } from '@genkit-ai/core';
import { rmSync } from 'node:fs';
import { HTTP, LOCAL, REFLECTION } from './scenarios.mjs';

const TERMINAL = new Set(['completed', 'failed', 'aborted', 'expired']);
// Steps are spaced so snapshots get distinct createdAt times (a session
// lookup picks the newest leaf by createdAt).
const STEP_SPACING_MS = 3;

function setup() {
  const ctx = { modelRequests: [], responses: [], streamChunks: [], gate: gate() };
  const ai = genkit({});
  defineScriptedModel(ai, ctx);
  const tools = defineTools(ai);
  const agents = defineAgents(ai, ctx);
  return { ai, ctx, tools, agents };
}

// Queues a step's scripted model responses (and the chunks streamed before each).
function script(ctx, step) {
  (step.modelResponses ?? []).forEach((response, i) => {
    ctx.responses.push(response);
    ctx.streamChunks.push(step.streamChunks?.[i] ?? []);
  });
}

// Replaces '{{name}}' strings by captured values.
function resolve(value, captures) {
  if (typeof value === 'string') {
    const m = /^\{\{(\w+)\}\}$/.exec(value);
    if (!m) return value;
    if (!(m[1] in captures)) throw new Error(`nothing captured as ${m[1]}`);
    return captures[m[1]];
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, captures));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, captures)]));
  }
  return value;
}

async function runAction(ai, key, input) {
  const action = await ai.registry.lookupAction(key);
  try {
    return { output: copy((await action.run(input)).result) };
  } catch (e) {
    return { error: errorRecord(e) };
  }
}

async function waitUntilTerminal(ai, agent, snapshotId) {
  for (let polls = 0; polls < 1000; polls++) {
    const { output, error } = await runAction(ai, `/agent-snapshot/${agent}`, { snapshotId });
    if (error) return { error };
    if (TERMINAL.has(output.status)) return { snapshot: output };
    await sleep(5);
  }
  throw new Error(`snapshot ${snapshotId} never finished`);
}

async function send(ai, ctx, agent, step, captures) {
  script(ctx, step);
  const action = await ai.registry.lookupAction(`/agent/${agent}`);
  const caller = step.abortAfterFirstChunk ? new AbortController() : undefined;
  const bidi = action.streamBidi(resolve(step.init, captures), { abortSignal: caller?.signal });
  for (const input of resolve(step.inputs, captures)) bidi.send(input);
  bidi.close();
  const chunks = [];
  const result = {};
  try {
    for await (const chunk of bidi.stream) {
      chunks.push(copy(chunk));
      if (caller && chunks.length === 1) {
        caller.abort();
        ctx.gate.open();
      }
    }
  } catch (e) {
    result.streamError = errorRecord(e);
  }
  try {
    result.output = copy(await bidi.output);
  } catch (e) {
    result.error = errorRecord(e);
  }
  const out = result.output;
  if (step.captureSnapshotId) captures[step.captureSnapshotId] = out?.snapshotId;
  if (step.captureSessionId) captures[step.captureSessionId] = out?.sessionId;
  if (step.captureState) captures[step.captureState] = out?.state;
  // The snapshots this step wrote, read back once it is over (not for a
  // detached step: its turn is still running).
  const def = AGENTS.find((a) => a.name === agent);
  const detached = resolve(step.inputs, captures).some((i) => i.detach);
  let snapshots;
  if (def.store && !detached) {
    const ids = [...chunks.map((c) => c.turnEnd?.snapshotId), out?.snapshotId].filter(Boolean);
    snapshots = [];
    for (const id of new Set(ids)) {
      const read = await runAction(ai, `/agent-snapshot/${agent}`, { snapshotId: id });
      snapshots.push(read.output ?? { snapshotId: id, error: read.error });
    }
  }
  return { chunks, ...result, ...(snapshots && { snapshots }) };
}

async function runLocal(scenario) {
  const { ai, ctx } = setup();
  const captures = {};
  const results = [];
  for (const step of scenario.steps) {
    const agent = step.agent ?? scenario.agent;
    switch (step.type) {
      case 'send':
        results.push(await send(ai, ctx, agent, step, captures));
        break;
      case 'getSnapshot': {
        const { output, error } = await runAction(ai, `/agent-snapshot/${agent}`, resolve(step.lookup, captures));
        if (step.captureSnapshotId) captures[step.captureSnapshotId] = output?.snapshotId;
        results.push(error ? { error } : { snapshot: output });
        break;
      }
      case 'abort':
        results.push(await runAction(ai, `/agent-abort/${agent}`, { snapshotId: resolve(step.snapshotId, captures) }));
        break;
      case 'waitUntilCompleted':
        results.push(await waitUntilTerminal(ai, agent, resolve(step.snapshotId, captures)));
        break;
      case 'release':
        ctx.gate.open();
        results.push({});
        break;
      case 'wait':
        await sleep(step.ms);
        results.push({});
        break;
      default:
        throw new Error(`unknown step type ${step.type}`);
    }
    await sleep(STEP_SPACING_MS);
  }
  return { steps: results, modelRequests: ctx.modelRequests, captures };
}

// ── HTTP ────────────────────────────────────────────────────────────────

async function freePort() {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.listen(0, () => {
      const { port } = server.address();
      server.close(() => ok(port));
    });
    server.on('error', fail);
  });
}

// Serves every agent the way remoteAgent expects: /<name>, /<name>/getSnapshot, /<name>/abort.
async function serve(agents) {
  const flows = Object.entries(agents).flatMap(([name, agent]) => [
    withFlowOptions(agent, { path: name }),
    withFlowOptions(agent.getSnapshotDataAction, { path: `${name}/getSnapshot` }),
    withFlowOptions(agent.abortAgentAction, { path: `${name}/abort` }),
  ]);
  const server = new FlowServer({ flows, port: await freePort() });
  await server.start();
  if (!server.server.listening) await new Promise((ok) => server.server.once('listening', ok));
  return server;
}

const RECORDED_HEADERS = ['content-type', 'transfer-encoding'];

// A response body read the way Genkit's client reads it: server-sent events
// (`data: <json>` or `error: <json>` frames, each ending in a blank line) as
// [{field, value}], any other body as JSON, or null when it is neither.
function parseBody(body) {
  const frames = body.split('\n\n').filter(Boolean);
  const sse = frames.map((frame) => /^(data|error): (.*)$/s.exec(frame));
  if (frames.length && sse.every(Boolean) && body.endsWith('\n\n')) {
    return sse.map(([, field, json]) => ({ field, value: JSON.parse(json) }));
  }
  try {
    return JSON.parse(body);
  } catch {
    return null;
  }
}

// Wraps fetch so every exchange with `base` is recorded.
function recordExchanges(base) {
  const exchanges = [];
  const pending = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    const u = new URL(url);
    const headers = Object.fromEntries(Object.entries(init?.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
    const exchange = {
      request: { method: init?.method ?? 'GET', path: u.pathname, headers, body: JSON.parse(init.body) },
    };
    exchanges.push(exchange);
    const response = await realFetch(url, init);
    pending.push(
      response
        .clone()
        .text()
        .then((body) => {
          const responseHeaders = {};
          for (const name of RECORDED_HEADERS) {
            if (response.headers.has(name)) responseHeaders[name] = response.headers.get(name);
          }
          const genkitHeaders = [...response.headers.keys()].filter((k) => k.startsWith('x-genkit-')).sort();
          exchange.response = { status: response.status, headers: responseHeaders, genkitHeaders, body, parsed: parseBody(body) };
        }),
    );
    return response;
  };
  return {
    exchanges,
    done: async () => {
      globalThis.fetch = realFetch;
      await Promise.all(pending);
      return exchanges;
    },
    base,
  };
}

// What a remoteAgent call gave back.
function responseRecord(response) {
  return {
    text: response.text,
    finishReason: response.finishReason,
    snapshotId: response.snapshotId,
    sessionId: response.sessionId,
    message: response.message,
    messages: response.messages,
    state: response.state,
    artifacts: response.artifacts,
    interrupts: response.interrupts.map((i) => ({ name: i.name, ref: i.ref, input: i.input })),
    raw: response.raw,
  };
}

function clientErrorRecord(e) {
  return { name: e?.name ?? null, ...errorRecord(e) };
}

async function runHttp(scenario) {
  const { ai, ctx, agents } = setup();
  const server = await serve(agents);
  const url = `http://localhost:${server.port}`;
  const recorder = recordExchanges(url);
  const api = remoteAgent({ url: `${url}/${scenario.agent}` });
  let chat = api.chat();
  const captures = {};
  let task;
  const results = [];
  try {
    for (const call of scenario.calls) {
      script(ctx, call);
      let result;
      try {
        switch (call.call) {
          case 'send':
            result = { response: responseRecord(await chat.send(call.input)) };
            break;
          case 'sendStream': {
            const turn = chat.sendStream(call.input);
            const chunks = [];
            for await (const chunk of turn.stream) {
              chunks.push({ raw: copy(chunk.raw), text: chunk.text, accumulatedText: chunk.accumulatedText, custom: copy(chunk.custom) });
            }
            result = { chunks, response: responseRecord(await turn.response) };
            break;
          }
          case 'resume':
            result = { response: responseRecord(await chat.resume(call.resume)) };
            break;
          case 'detach':
            task = await chat.detach(call.input);
            result = { snapshotId: task.snapshotId };
            break;
          case 'waitDetached':
            // Wait on the server side first, so the client polls exactly once.
            await waitUntilTerminal(ai, scenario.agent, task.snapshotId);
            result = { snapshot: copy(await task.wait({ intervalMs: 5 })) };
            break;
          case 'getSnapshot':
            result = { snapshot: copy(await api.getSnapshot(resolve(call.lookup, captures))) };
            break;
          case 'abort':
            result = { status: (await api.abort(resolve(call.snapshotId, captures))) ?? null };
            break;
          case 'release':
            ctx.gate.open();
            result = {};
            break;
          case 'newChat':
            chat = api.chat(call.init);
            result = {};
            break;
          case 'loadChat':
            chat = await api.loadChat(resolve(call.lookup, captures));
            result = { snapshotId: chat.snapshotId, sessionId: chat.sessionId, messages: copy(chat.messages) };
            break;
          case 'post': {
            const response = await fetch(`${url}${call.path}`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', ...(call.accept && { Accept: call.accept }) },
              body: JSON.stringify(call.body),
            });
            result = { status: response.status, body: await response.text() };
            break;
          }
          default:
            throw new Error(`unknown call ${call.call}`);
        }
      } catch (e) {
        result = { error: clientErrorRecord(e) };
      }
      captures.last = chat.snapshotId;
      results.push(copy(result));
      await sleep(STEP_SPACING_MS);
    }
  } finally {
    await recorder.done();
    await server.stop();
  }
  return { calls: results, exchanges: recorder.exchanges, modelRequests: ctx.modelRequests };
}

// ── Reflection API ──────────────────────────────────────────────────────

// A reflection response body: JSON lines when streamed (each chunk, then the
// result or error line), else one JSON value (or the text when it is not
// JSON). Stack traces become `<stack>`, trace and span ids `<traceId>`,
// schema validation messages are cut as errorRecord cuts them.
function parseReflectionBody(body, streamed) {
  const parse = (text) => {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  };
  return streamed ? body.split('\n').filter(Boolean).map(parse) : parse(body);
}

function scrubTelemetry(value, key) {
  if (key === 'stack') return '<stack>';
  if (key === 'traceId' || key === 'spanId') return '<traceId>';
  if (key === 'message' && typeof value === 'string') return value.split('\n\nProvided data:')[0];
  if (Array.isArray(value)) return value.map((v) => scrubTelemetry(v));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, scrubTelemetry(v, k)]));
  }
  return value;
}

async function runReflection(scenario) {
  const { ai, ctx } = setup();
  const server = new ReflectionServer(ai.registry, { port: await freePort() });
  await server.start();
  const captures = {};
  const exchanges = [];
  try {
    for (const request of scenario.requests) {
      script(ctx, request);
      const body = request.body && resolve(request.body, captures);
      const response = await fetch(`http://localhost:${server.port}${request.path}`, {
        method: request.method,
        headers: body ? { 'Content-Type': 'application/json' } : {},
        body: body && JSON.stringify(body),
      });
      let parsed = scrubTelemetry(parseReflectionBody(await response.text(), request.path.includes('stream=true')));
      if (request.onlyKeys) parsed = Object.fromEntries(request.onlyKeys.map((k) => [k, parsed[k]]));
      const result = Array.isArray(parsed) ? parsed.at(-1)?.result : parsed?.result;
      if (request.captureSnapshotId) captures[request.captureSnapshotId] = result?.snapshotId;
      const genkitHeaders = [...response.headers.keys()].filter((k) => k.startsWith('x-genkit-')).sort();
      exchanges.push({
        status: response.status,
        contentType: response.headers.get('content-type'),
        genkitHeaders,
        body: parsed,
      });
      await sleep(STEP_SPACING_MS);
    }
  } finally {
    await server.stop();
    // The server registers itself under .genkit/runtimes of this folder.
    rmSync(new URL('./.genkit', import.meta.url), { recursive: true, force: true });
  }
  return { exchanges, modelRequests: ctx.modelRequests, captures };
}

// ── Output ──────────────────────────────────────────────────────────────

const version = JSON.parse(readFileSync(new URL('./node_modules/genkit/package.json', import.meta.url), 'utf8')).version;
{
  const { ai, tools } = setup();
  const actions = await ai.registry.listResolvableActions();
  const descriptor = (key) => {
    const a = actions[key];
    return { key, name: a.name, description: a.description, metadata: a.metadata };
  };
  const agentKeys = (name) => [`/agent/${name}`, `/agent-snapshot/${name}`, `/agent-abort/${name}`];
  // Every agent's actions have the same schemas: those of one agent, as JSON
  // schemas (init and stream schemas too, which the Reflection API of 1.42
  // does not list).
  const schemas = {};
  for (const key of agentKeys('promptAgentWithStore')) {
    const a = actions[key];
    schemas[key] = Object.fromEntries(
      ['inputSchema', 'outputSchema', 'initSchema', 'streamSchema']
        .filter((field) => a[field])
        .map((field) => [field, toJsonSchema({ schema: a[field] })]),
    );
  }
  console.log(
    JSON.stringify({
      kind: 'header',
      genkit: version,
      agents: AGENTS,
      tools: tools.map((t) => toToolDefinition(t)),
      actions: AGENTS.flatMap((a) => agentKeys(a.name)).map(descriptor),
      schemas,
    }),
  );
}

for (const scenario of LOCAL) {
  const expect = await runLocal(scenario);
  const captures = expect.captures;
  delete expect.captures;
  const record = new Normalizer().normalize({ kind: 'local', ...scenario, expect: { ...expect, captures } });
  console.log(JSON.stringify(record));
}
for (const scenario of HTTP) {
  const expect = await runHttp(scenario);
  console.log(JSON.stringify(new Normalizer().normalize({ kind: 'http', ...scenario, expect })));
}
for (const scenario of REFLECTION) {
  const expect = await runReflection(scenario);
  console.log(JSON.stringify(new Normalizer().normalize({ kind: 'reflection', ...scenario, expect })));
}
process.exit(0);
