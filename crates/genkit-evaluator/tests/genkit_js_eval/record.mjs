// Records what @genkit-ai/evaluator 1.42's model-free metrics (REGEX,
// DEEP_EQUAL) score for fixed data points, as the expected behaviour of
// tests/evaluators_genkit_js.rs:
//
//   cd crates/genkit-evaluator/tests/genkit_js_eval && npm ci && node record.mjs > recorded.jsonl
//
// One JSON line per metric: {metric, evaluator, metadata, dataset,
// response} (trace and span ids replaced by "<id>"). The model-judged
// metrics are recorded by judged.mjs.
import { genkitEval, GenkitMetric } from '@genkit-ai/evaluator';
import { genkit } from 'genkit';

const ai = genkit({ plugins: [genkitEval({ metrics: [GenkitMetric.REGEX, GenkitMetric.DEEP_EQUAL] })] });

const datasets = {
  REGEX: [
    { testCaseId: 'match', input: 'q', output: 'Paris is the capital', reference: '^Paris' },
    { testCaseId: 'noMatch', input: 'q', output: 'It is Paris', reference: '^Paris' },
    { testCaseId: 'json', input: 'q', output: { city: 'Paris' }, reference: '"city":"Paris"' },
    { testCaseId: 'digits', input: 'q', output: 'order 66', reference: '\\d+$' },
    { testCaseId: 'noOutput', input: 'q', reference: 'x' },
    { testCaseId: 'emptyOutput', input: 'q', output: '', reference: 'x' },
    { testCaseId: 'noReference', input: 'q', output: 'x' },
    { testCaseId: 'numberReference', input: 'q', output: 'x', reference: 5 },
  ],
  DEEP_EQUAL: [
    { testCaseId: 'equal', input: 'q', output: { a: [1, { b: 'c' }] }, reference: { a: [1, { b: 'c' }] } },
    { testCaseId: 'keyOrder', input: 'q', output: { a: 1, b: 2 }, reference: { b: 2, a: 1 } },
    { testCaseId: 'differ', input: 'q', output: { a: [1, 2] }, reference: { a: [1, 3] } },
    { testCaseId: 'types', input: 'q', output: '1', reference: 1 },
    { testCaseId: 'strings', input: 'q', output: 'same', reference: 'same' },
    { testCaseId: 'extraKey', input: 'q', output: { a: 1 }, reference: { a: 1, b: 2 } },
    { testCaseId: 'noOutput', input: 'q', reference: 'x' },
  ],
};

const ids = (v) =>
  JSON.parse(JSON.stringify(v), (k, x) => (k === 'traceId' || k === 'spanId' ? '<id>' : x));
const actions = await ai.registry.listResolvableActions();
for (const [metric, dataset] of Object.entries(datasets)) {
  const evaluator = `genkitEval/${metric.toLowerCase()}`;
  const response = await ai.evaluate({ evaluator, dataset, evalRunId: 'run' });
  const metadata = actions[`/evaluator/${evaluator}`].metadata;
  console.log(JSON.stringify({ metric, evaluator, metadata, dataset, response: ids(response) }));
}
