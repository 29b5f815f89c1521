// agent_turn: one turn of a prompt agent (scripted model, in-memory store) on a
// fresh session per operation.
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';
import { defineAssistant, turn, replyText } from './lib/agent.mjs';

const opts = parseArgs();
await loadGenkit(opts);
const action = await defineAssistant();

{
  const out = await turn(action, {});
  assert(replyText(out) === 'hello', `expected 'hello', got ${JSON.stringify(out)}`);
  assert(typeof out.snapshotId === 'string', 'expected a stored snapshot');
}

await bench('agent_turn', () => turn(action, {}), opts);
