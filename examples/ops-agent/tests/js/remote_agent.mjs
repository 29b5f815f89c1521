// Genkit JS's own agent client (`remoteAgent` from `genkit/beta/client`)
// talking to `ops-agent --serve`: refused without the bearer token (401) or
// with another one (403); with it, a question answered from the tools, a
// follow-up that needs the earlier turn, a restart that waits for approval
// and runs once the client approves it, the stored snapshot, and a detached
// turn aborted while it runs.
//
// Run by tests/remote_agent.rs with the agent's URL in OPS_AGENT_URL and its
// token in OPS_AGENT_TOKEN, from crates/genkit-server/tests/js (where the npm
// packages are). Exits non-zero if any check fails.
import { remoteAgent } from 'genkit/beta/client';

const url = process.env.OPS_AGENT_URL;
const token = process.env.OPS_AGENT_TOKEN;
if (!url || !token) {
  console.error('OPS_AGENT_URL and OPS_AGENT_TOKEN must be set');
  process.exit(2);
}
// remoteAgent sends `headers` with each of its requests (turns, getSnapshot, abort).
const agent = remoteAgent({ url, headers: { Authorization: `Bearer ${token}` } });

function eq(got, want, what) {
  const g = JSON.stringify(got);
  const w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}
function ok(cond, what) {
  if (!cond) throw new Error(what);
}

async function refused(client, status) {
  try {
    await client.chat().send('Why is the scheduler down?');
  } catch (e) {
    // The client reports `Server returned: <status>: <body>`.
    ok(String(e?.message).includes(`Server returned: ${status}:`), `want ${status}, got: ${e?.message}`);
    return;
  }
  throw new Error(`a turn ran without a valid token (want ${status})`);
}

try {
  await refused(remoteAgent({ url }), 401);
  await refused(remoteAgent({ url, headers: { Authorization: 'Bearer not-the-token' } }), 403);
  // Headers may also come from a function (called for each request).
  const tokenFromFn = remoteAgent({ url, headers: async () => ({ Authorization: `Bearer ${token}` }) });
  eq((await tokenFromFn.chat().send('Is the api ok?')).finishReason, 'stop', 'headers from a function');

  const chat = agent.chat();
  const first = await chat.send('Why is the scheduler down?');
  eq(first.finishReason, 'stop', 'first finishReason');
  ok(first.text.includes('scheduler is DOWN'), `first text: ${first.text}`);
  ok(first.text.includes('exited with code 137'), `first text: ${first.text}`);

  const turn = chat.sendStream('restart it');
  let streamedInterrupt = false;
  const seen = [];
  for await (const chunk of turn.stream) {
    seen.push(chunk);
    // The client wraps chunks; their JSON carries the interrupt as sent.
    const json = JSON.stringify(chunk);
    if (json.includes('"restartService"') && json.includes('"interrupt"')) {
      streamedInterrupt = true;
    }
  }
  const asked = await turn.response;
  eq(asked.finishReason, 'interrupted', 'restart waits for approval');
  ok(streamedInterrupt, `the restart request was streamed: ${JSON.stringify(seen)}`);
  eq(asked.interrupts.length, 1, 'one interrupt');
  const interrupt = asked.interrupts[0];
  eq(interrupt.name, 'restartService', 'interrupted tool');
  eq(interrupt.input.service, 'scheduler', '"it" is the scheduler');

  const done = await chat.resume({
    restart: [
      {
        toolRequest: { name: interrupt.name, ref: interrupt.ref, input: interrupt.input },
        metadata: { resumed: { toolApproved: true } },
      },
    ],
  });
  eq(done.finishReason, 'stop', 'resumed finishReason');
  ok(done.text.includes('Restarted scheduler: scheduler is healthy'), `resumed text: ${done.text}`);
  eq(done.sessionId, first.sessionId, 'one session');

  const snapshot = await agent.getSnapshot({ snapshotId: done.snapshotId });
  eq(snapshot.status, 'completed', 'snapshot status');
  eq(
    snapshot.state.messages.filter((m) => m.role === 'user').map((m) => m.content[0].text),
    ['Why is the scheduler down?', 'restart it'],
    'stored questions',
  );

  // A detached question, aborted while its tools run: the turn stops there.
  const background = agent.chat();
  const task = await background.detach('Why is the api slow?');
  ok(task.snapshotId, 'a detached turn has a snapshot');
  eq(await agent.abort(task.snapshotId), 'pending', 'status when aborted');
  const aborted = await agent.getSnapshot({ snapshotId: task.snapshotId });
  eq(aborted.status, 'aborted', 'status after the abort');
  eq(await agent.abort(task.snapshotId), 'aborted', 'a second abort');
  console.log('remoteAgent: all checks passed');
} catch (e) {
  console.log(`remoteAgent: ${e?.stack ?? e}`);
  process.exit(1);
}
