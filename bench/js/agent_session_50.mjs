// agent_session_50: one session of 50 turns per operation (history growing),
// each turn continuing the previous turn's snapshot; reported per turn too.
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';
import { defineAssistant, session, SESSION_TURNS } from './lib/agent.mjs';

const opts = parseArgs();
await loadGenkit(opts);
const action = await defineAssistant();

{
  const answered = await session(action);
  assert(answered === SESSION_TURNS, `expected ${SESSION_TURNS} answers, got ${answered}`);
}

await bench('agent_session_50', () => session(action), opts, { turns_per_op: SESSION_TURNS });
