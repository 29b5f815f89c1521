// Drives an agent served by genkit-server's flow server with Genkit JS's own
// agent client (`remoteAgent` from `genkit/beta/client`): a multi-turn
// conversation (sent and streamed), an interrupt and its resume, a detached
// turn and its abort, and an unknown snapshot.
//
// usage: node agent_client_test.mjs <agentUrl> <blockingAgentUrl>
// The agents are the test's (see tests/agent_serving.rs): a prompt agent on a
// model scripted for the checks below, in order (`echo: <text>`, the second
// streamed in two chunks; an `interruptTool` call; `answered: <output JSON>`),
// and a custom agent whose turns run until aborted; both keep server-managed
// sessions.
// Exits non-zero if any check fails.
import { remoteAgent } from 'genkit/beta/client';

const [url, blockingUrl] = process.argv.slice(2);
if (!url || !blockingUrl) {
  console.error('usage: node agent_client_test.mjs <agentUrl> <blockingAgentUrl>');
  process.exit(2);
}
const agent = remoteAgent({ url });
const blocking = remoteAgent({ url: blockingUrl });

let passed = 0;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    passed++;
    console.log(`ok - ${name}`);
  } catch (e) {
    failed++;
    console.log(`not ok - ${name}: ${e?.stack ?? e}`);
  }
}
function eq(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}
function ok(cond, what) {
  if (!cond) throw new Error(what);
}

await check('a multi-turn conversation: send, sendStream, then the snapshot', async () => {
  const chat = agent.chat();
  const first = await chat.send('hi');
  eq(first.text, 'echo: hi', 'first text');
  eq(first.finishReason, 'stop', 'first finishReason');
  ok(first.snapshotId, 'first snapshotId');
  ok(first.sessionId, 'first sessionId');

  const turn = chat.sendStream('again');
  const texts = [];
  for await (const chunk of turn.stream) {
    if (chunk.text) texts.push(chunk.text);
  }
  const second = await turn.response;
  eq(texts, ['echo: ', 'again'], 'streamed texts');
  eq(second.text, 'echo: again', 'second text');
  eq(second.sessionId, first.sessionId, 'same session');
  ok(second.snapshotId && second.snapshotId !== first.snapshotId, 'a new snapshot');
  eq(
    second.messages.map((m) => m.content[0].text),
    ['hi', 'echo: hi', 'again', 'echo: again'],
    'client-side messages',
  );

  const snapshot = await agent.getSnapshot({ snapshotId: second.snapshotId });
  eq(snapshot.status, 'completed', 'snapshot status');
  eq(snapshot.parentId, first.snapshotId, 'snapshot parent');
  eq(snapshot.sessionId, first.sessionId, 'snapshot session');
  eq(snapshot.state.messages.length, 4, 'stored messages');

  const loaded = await agent.loadChat({ snapshotId: second.snapshotId });
  const third = await loaded.send('more');
  eq(third.text, 'echo: more', 'continued after loadChat');
  eq(third.sessionId, first.sessionId, 'loadChat keeps the session');
});

await check('an interrupt, then its resume in a second call', async () => {
  const chat = agent.chat();
  const asked = await chat.send('please interrupt');
  eq(asked.finishReason, 'interrupted', 'finishReason');
  eq(asked.interrupts.length, 1, 'one interrupt');
  const interrupt = asked.interrupts[0];
  eq(interrupt.name, 'interruptTool', 'interrupt tool');
  eq(interrupt.input, { query: 'please interrupt' }, 'interrupt input');
  const answered = await chat.resume({
    respond: [{ toolResponse: { name: interrupt.name, ref: interrupt.ref, output: { answer: 'yes' } } }],
  });
  eq(answered.finishReason, 'stop', 'resumed finishReason');
  eq(answered.text, 'answered: {"answer":"yes"}', 'resumed text');
  eq(answered.sessionId, asked.sessionId, 'same session');
  const snapshot = await agent.getSnapshot({ snapshotId: answered.snapshotId });
  eq(snapshot.parentId, asked.snapshotId, 'resume continues the interrupted snapshot');
});

await check('a detached turn, then its abort', async () => {
  const chat = blocking.chat();
  const task = await chat.detach('do work');
  ok(task.snapshotId, 'detached snapshotId');
  const pending = await blocking.getSnapshot({ snapshotId: task.snapshotId });
  eq(pending.status, 'pending', 'status while running');
  eq(await blocking.abort(task.snapshotId), 'pending', 'status before the abort');
  const aborted = await blocking.getSnapshot({ snapshotId: task.snapshotId });
  eq(aborted.status, 'aborted', 'status after the abort');
  eq(await blocking.abort(task.snapshotId), 'aborted', 'a second abort');
});

await check('errors: an unknown snapshot', async () => {
  const chat = agent.chat({ snapshotId: 'no-such-snapshot' });
  let failedTurn;
  try {
    await chat.send('hi');
  } catch (e) {
    failedTurn = e;
  }
  ok(failedTurn, 'a turn on an unknown snapshot fails');
  eq(failedTurn.name, 'AgentError', 'as an AgentError');
  eq(failedTurn.status, 'NOT_FOUND', 'its status');
  eq(failedTurn.response?.finishReason, 'failed', 'its finishReason');
  let threw;
  try {
    await agent.getSnapshot({ snapshotId: 'no-such-snapshot' });
  } catch (e) {
    threw = String(e?.message ?? e);
  }
  // Genkit JS answers 500 INTERNAL here; the Rust agent runtime makes an
  // unknown snapshot a user-facing NOT_FOUND (404).
  ok(threw && /404/.test(threw) && /NOT_FOUND/.test(threw), `getSnapshot of an unknown id throws a 404: ${threw}`);
  eq(await agent.abort('no-such-snapshot'), undefined, 'abort of an unknown id');
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
