// Records what Genkit JS makes of retrievers, indexers, rerankers, simple
// retrievers and evaluators — the action metadata the Reflection API lists
// (what the Dev UI reads), what `defineSimpleRetriever` makes of a search
// function's items, and an evaluator's responses — as the expected
// behaviour of tests/retrieval_genkit_js.rs.
//
//   cd crates/genkit-generate/tests/genkit_js && npm ci && node retrieval.mjs > retrieval.jsonl
//
// One JSON line per record: {what: "metadata", key, metadata}, {what:
// "simpleRetriever", case, query, documents | error} and {what: "evaluate",
// case, dataset, response} (trace and span ids replaced by "<id>").
import { genkit, z } from 'genkit/beta';

const out = (record) => console.log(JSON.stringify(record));
const ai = genkit({});

const Options = z.object({ k: z.number().optional(), filter: z.string().optional() });

ai.defineRetriever({ name: 'plain' }, async () => ({ documents: [] }));
ai.defineRetriever(
  { name: 'withOptions', configSchema: Options, info: { label: 'With options', supports: { media: true } } },
  async () => ({ documents: [] }),
);
ai.defineIndexer({ name: 'store' }, async () => {});
ai.defineIndexer({ name: 'storeWithOptions', configSchema: Options, embedderInfo: { label: 'E', dimensions: 3 } }, async () => {});
ai.defineReranker({ name: 'rank' }, async () => ({ documents: [] }));
ai.defineReranker(
  { name: 'rankWithOptions', configSchema: Options, info: { label: 'Rank' } },
  async () => ({ documents: [] }),
);
ai.defineEvaluator({ name: 'exact', displayName: 'Exact', definition: 'output equals reference' }, async (d) => ({
  testCaseId: d.testCaseId,
  evaluation: { score: d.output === d.reference, status: d.output === d.reference ? 'PASS' : 'FAIL' },
}));
ai.defineEvaluator(
  { name: 'free', displayName: 'Free', definition: 'never billed', isBilled: false, configSchema: Options },
  async (d) => ({ testCaseId: d.testCaseId, evaluation: [{ id: 'a', score: 1 }, { id: 'b', score: 'x' }] }),
);
ai.defineEvaluator({ name: 'failing', displayName: 'Failing', definition: 'always throws' }, async () => {
  throw new Error('judge unavailable');
});

const actions = await ai.registry.listResolvableActions();
for (const key of Object.keys(actions).sort()) {
  if (/^\/(retriever|indexer|reranker|evaluator)\//.test(key)) {
    out({ what: 'metadata', key, metadata: JSON.parse(JSON.stringify(actions[key].metadata)) });
  }
}

const items = [
  { id: 1, text: 'one', tag: 'a' },
  { id: 2, text: 'two', tag: 'b' },
];
const simpleCases = [
  { case: 'contentKey', options: { content: 'text' }, items },
  { case: 'contentKeyMetadataKeys', options: { content: 'text', metadata: ['tag'] }, items },
  { case: 'strings', options: {}, items: ['alpha', 'beta'] },
  { case: 'contentFn', options: { content: (i) => `#${i.id}: ${i.text}`, metadata: (i) => ({ n: i.id }) }, items },
  { case: 'contentFnParts', options: { content: (i) => [{ text: i.text }, { text: '!' }] }, items },
  { case: 'noContentOption', options: {}, items },
  { case: 'nullItem', options: { content: 'text' }, items: [items[0], null] },
];
for (const c of simpleCases) {
  const name = `simple-${c.case}`;
  ai.defineSimpleRetriever({ name, ...c.options }, async () => c.items);
  let record;
  try {
    const docs = await ai.retrieve({ retriever: name, query: 'q' });
    record = { documents: JSON.parse(JSON.stringify(docs.map((d) => d.toJSON()))) };
  } catch (e) {
    record = { error: { status: e.status, message: e.message } };
  }
  out({ what: 'simpleRetriever', case: c.case, items: c.items, ...record });
}

const ids = (v) =>
  JSON.parse(JSON.stringify(v), (k, x) => (k === 'traceId' || k === 'spanId' ? '<id>' : x));
const dataset = [
  { testCaseId: 't1', input: 'q1', output: 'a', reference: 'a' },
  { testCaseId: 't2', input: 'q2', output: 'a', reference: 'b' },
];
for (const evaluator of ['exact', 'free', 'failing']) {
  // An evaluator with a configSchema requires `options` in Genkit JS.
  const options = evaluator === 'free' ? { k: 1 } : undefined;
  const response = await ai.evaluate({ evaluator, dataset, evalRunId: 'run1', options });
  out({ what: 'evaluate', case: evaluator, dataset, response: ids(response) });
}
const batched = await ai.registry.lookupAction('/evaluator/exact');
const response = await batched({ dataset, evalRunId: 'run2', batchSize: 2 });
out({ what: 'evaluate', case: 'exactBatch2', batchSize: 2, dataset, response: ids(response) });
