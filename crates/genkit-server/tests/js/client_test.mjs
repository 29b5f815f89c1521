// Drives a genkit-server flow server with the official Genkit JS client
// (`runFlow`, `streamFlow` from `genkit/beta/client`).
//
// usage: node client_test.mjs <baseUrl> '<flow_server_tests.yaml as JSON>'
// The server is the test runtime's (flows hello, streamy, fail, denied,
// whoami behind apiKey('test-key')). Exits non-zero if any check fails.
import { runFlow, streamFlow } from 'genkit/beta/client';

const [baseUrl, casesJson] = process.argv.slice(2);
if (!baseUrl || !casesJson) {
  console.error('usage: node client_test.mjs <baseUrl> <casesJson>');
  process.exit(2);
}
const suite = JSON.parse(casesJson);

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
async function rejects(promise, pattern, what) {
  try {
    await promise;
  } catch (e) {
    if (!pattern.test(String(e?.message ?? e))) {
      throw new Error(`${what}: error ${JSON.stringify(String(e?.message ?? e))} does not match ${pattern}`);
    }
    return;
  }
  throw new Error(`${what}: expected an error`);
}
async function collect(response) {
  const chunks = [];
  for await (const c of response.stream) chunks.push(c);
  return { chunks, output: await response.output };
}

await check('runFlow returns the result', async () => {
  eq(await runFlow({ url: `${baseUrl}/hello`, input: 'Ada' }), 'Hello, Ada!', 'result');
});

await check('streamFlow streams chunks then the output', async () => {
  const { chunks, output } = await collect(streamFlow({ url: `${baseUrl}/streamy`, input: 3 }));
  eq(chunks, [{ count: 0 }, { count: 1 }, { count: 2 }], 'chunks');
  eq(output, 'done 3, streamed: 3 times', 'output');
});

for (const test of suite.tests) {
  await check(`flow_server_tests.yaml: ${test.path}`, async () => {
    const { chunks, output } = await collect(
      streamFlow({ url: `${baseUrl}/${test.path}`, input: test.post.data })
    );
    eq(chunks.length, test.post.data, 'chunk count');
    chunks.forEach((c, i) =>
      eq(JSON.stringify(c), test.response.message.replace('{count}', String(i)), `chunk ${i}`)
    );
    eq(output, test.response.result.replace(/\{count\}/g, String(chunks.length)), 'output');
  });
}

await check('runFlow surfaces an internal error without details', async () => {
  await rejects(
    runFlow({ url: `${baseUrl}/fail`, input: {} }),
    /^Server returned: 500: \{"status":"INTERNAL","message":"Internal Error"\}$/,
    'fail'
  );
});

await check('runFlow surfaces a user-facing error', async () => {
  await rejects(
    runFlow({ url: `${baseUrl}/denied`, input: {} }),
    /^Server returned: 403: \{"status":"PERMISSION_DENIED","message":"not for you"\}$/,
    'denied'
  );
});

await check('streamFlow surfaces an error frame', async () => {
  const r = streamFlow({ url: `${baseUrl}/fail`, input: {} });
  const drained = (async () => {
    for await (const _ of r.stream) {
      // no chunks expected
    }
  })();
  await rejects(r.output, /^INTERNAL: Internal Error/, 'stream fail');
  await drained.catch(() => {});
});

await check('apiKey: missing key is 401', async () => {
  await rejects(runFlow({ url: `${baseUrl}/whoami`, input: null }), /^Server returned: 401: .*UNAUTHENTICATED/, '401');
});

await check('apiKey: wrong key is 403', async () => {
  await rejects(
    runFlow({ url: `${baseUrl}/whoami`, input: null, headers: { Authorization: 'nope' } }),
    /^Server returned: 403: .*PERMISSION_DENIED/,
    '403'
  );
});

await check('apiKey: right key is 200 with the auth context', async () => {
  const out = await runFlow({ url: `${baseUrl}/whoami`, input: null, headers: { Authorization: 'test-key' } });
  eq(out, { auth: { apiKey: 'test-key' } }, 'context');
});

await check('apiKey: streaming with the right key', async () => {
  const { output } = await collect(
    streamFlow({ url: `${baseUrl}/whoami`, input: null, headers: { Authorization: 'test-key' } })
  );
  eq(output, { auth: { apiKey: 'test-key' } }, 'context');
});

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
