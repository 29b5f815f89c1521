// flow_echo / flow_echo_direct: a trivial flow that returns its input.
//   flow_echo        : registry path  -> (await ai.registry.lookupAction('/flow/echo')).run('hello')
//   flow_echo_direct : direct call    -> await echo('hello')
// Both lines come from the same process (flow_echo runs first).
import { parseArgs, loadGenkit, bench, assert } from './lib/harness.mjs';

const opts = parseArgs();
const { genkit } = await loadGenkit(opts);

const ai = genkit({});
const echo = ai.defineFlow('echo', async (s) => s);

// Verify both call shapes once.
{
  const action = await ai.registry.lookupAction('/flow/echo');
  const res = await action.run('hello');
  assert(res && res.result === 'hello', `registry run returned ${JSON.stringify(res)}`);
  const direct = await echo('hello');
  assert(direct === 'hello', `direct call returned ${JSON.stringify(direct)}`);
}

await bench(
  'flow_echo',
  async () => {
    // Lookup is part of each op (mirrors the Rust registry-lookup + run path).
    const action = await ai.registry.lookupAction('/flow/echo');
    await action.run('hello');
  },
  opts
);

await bench('flow_echo_direct', () => echo('hello'), opts);
