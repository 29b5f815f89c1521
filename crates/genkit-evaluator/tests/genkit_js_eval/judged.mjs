// Records what @genkit-ai/evaluator 1.42's model-judged metrics
// (FAITHFULNESS, ANSWER_RELEVANCY) do for fixed data points with a scripted
// judge model and a scripted embedder, as the expected behaviour of
// tests/evaluators_genkit_js.rs:
//
//   cd crates/genkit-evaluator/tests/genkit_js_eval && npm ci && node judged.mjs > judged.jsonl
//
// One JSON line per metric: {metric, evaluator, metadata, judgeConfig,
// embedderOptions, dataset, judgeResponses, vectors, response,
// judgeRequests, embedRequests}. The judge answers `judgeResponses` in
// order (one model call after another: the dataset runs one test case at a
// time); the embedder maps each text to `vectors[text]`. Trace and span ids
// are replaced by "<id>".
import { createRequire } from 'node:module';

// The package's ES module build looks for its prompts with `__dirname`,
// which ES modules lack: load the CommonJS builds, as a CommonJS app would.
const require = createRequire(import.meta.url);
const { genkitEval, GenkitMetric } = require('@genkit-ai/evaluator');
const { genkit } = require('genkit');

const text = (t) => ({ message: { role: 'model', content: [{ text: t }] }, finishReason: 'stop' });
const json = (v) => text(JSON.stringify(v));
const verdict = (statement, verdict, reason) => ({ statement, verdict, reason });

const faithfulness = {
  dataset: [
    {
      testCaseId: 'allSupported',
      input: 'What is the capital of France?',
      output: 'Paris is the capital of France. It lies on the Seine.',
      context: ['Paris, the capital of France, lies on the Seine.'],
    },
    {
      testCaseId: 'half',
      input: 'Tell me about Paris.',
      output: 'Paris has 2 million people and 40 bridges.',
      context: ['Paris has about 2 million inhabitants.', 'The Seine flows through Paris.'],
    },
    {
      testCaseId: 'twoThirds',
      input: { question: 'Where is the Louvre?', lang: 'en' },
      output: { answer: 'In Paris, by the Seine, since 1793.' },
      context: [{ text: 'The Louvre is in Paris.' }, 'It sits on the right bank of the Seine.'],
    },
    {
      testCaseId: 'fenced',
      input: 'Is water wet?',
      output: 'Yes.',
      context: ['Water makes things wet.'],
    },
    {
      testCaseId: 'noStatements',
      input: 'Were they of the same nationality?',
      output: 'Sorry, I cannot answer that.',
      context: ['Some context.'],
    },
    { testCaseId: 'noContext', input: 'q', output: 'a', context: [] },
    { testCaseId: 'noInput', output: 'a', context: ['c'] },
    { testCaseId: 'noOutput', input: 'q', context: ['c'] },
    { testCaseId: 'judgeFails', input: 'q', output: 'a', context: ['c'] },
  ],
  judgeResponses: [
    json({ statements: ['Paris is the capital of France.', 'Paris lies on the Seine.'] }),
    json({
      responses: [
        verdict('Paris is the capital of France.', true, 'The context calls Paris the capital.'),
        verdict('Paris lies on the Seine.', true, 'The context says so.'),
      ],
    }),
    json({ statements: ['Paris has 2 million people.', 'Paris has 40 bridges.'] }),
    json({
      responses: [
        verdict('Paris has 2 million people.', true, 'About 2 million inhabitants.'),
        verdict('Paris has 40 bridges.', false, 'Bridges are not mentioned.'),
      ],
    }),
    json({ statements: ['The Louvre is in Paris.', 'It is by the Seine.', 'It opened in 1793.'] }),
    json({
      responses: [
        verdict('The Louvre is in Paris.', true, 'Stated.'),
        verdict('It is by the Seine.', true, 'Right bank of the Seine.'),
        verdict('It opened in 1793.', false, 'No date is given.'),
      ],
    }),
    text('Here you go:\n```json\n{"statements": ["Water is wet."]}\n```'),
    text('```json\n{"responses": [{"statement": "Water is wet.", "reason": "It makes things wet", "verdict": true}]}\n```'),
    json({ statements: [] }),
    { error: 'judge unavailable' },
  ],
};

const relevancy = {
  dataset: [
    {
      testCaseId: 'relevant',
      input: 'What is the capital of France?',
      output: 'Paris.',
      context: ['Paris is the capital of France.'],
    },
    {
      testCaseId: 'notAnswered',
      input: 'How tall is the Eiffel Tower?',
      output: 'It is made of iron.',
      context: ['The Eiffel Tower is 330 m tall.', 'It is made of wrought iron.'],
    },
    {
      testCaseId: 'noncommittal',
      input: 'When did it open?',
      output: 'I am not sure.',
      context: ['It opened in 1889.'],
    },
    {
      testCaseId: 'opposite',
      input: { q: 'Is it red?' },
      output: { a: 'It is blue.' },
      context: [{ colour: 'blue' }],
    },
    {
      testCaseId: 'penaltyBelowZero',
      input: 'Why is the sky blue?',
      output: 'Skies vary.',
      context: ['Rayleigh scattering.'],
    },
    {
      testCaseId: 'orthogonal',
      input: 'Who wrote it?',
      output: 'Hugo.',
      context: ['Victor Hugo wrote it.'],
    },
    {
      testCaseId: 'emptyQuestion',
      input: 'q?',
      output: 'a.',
      context: ['c.'],
    },
    { testCaseId: 'noContext', input: 'q', output: 'a' },
    {
      testCaseId: 'badJudgeOutput',
      input: 'q',
      output: 'a',
      context: ['c'],
    },
  ],
  judgeResponses: [
    json({ question: 'Which city is the capital of France?', answered: true, noncommittal: false }),
    json({ question: 'What is the Eiffel Tower made of?', answered: false, noncommittal: false }),
    json({ question: 'When did it open?', answered: false, noncommittal: true }),
    json({ question: 'Is it blue?', answered: true, noncommittal: false }),
    json({ question: 'Do skies vary?', answered: false, noncommittal: false }),
    json({ question: 'Who was Hugo?', answered: true, noncommittal: false }),
    json({ question: '', answered: true, noncommittal: false }),
    json({ question: 'what?', answered: 'yes' }),
  ],
  vectors: {
    'What is the capital of France?': [0.1, 0.7, 0.2],
    'Which city is the capital of France?': [0.12, 0.69, 0.25],
    'How tall is the Eiffel Tower?': [0.9, 0.1, 0.3],
    'What is the Eiffel Tower made of?': [0.6, 0.5, 0.4],
    'When did it open?': [0.3, 0.3, 0.3],
    '{"q":"Is it red?"}': [1, -2, 0.5],
    'Is it blue?': [-1, 2.1, -0.4],
    'Why is the sky blue?': [1, 0, 0],
    'Do skies vary?': [0.3, 0.95, 0],
    'Who wrote it?': [1, 0, 0],
    'Who was Hugo?': [0, 1, 0],
  },
};

const judgeConfig = { temperature: 0.25 };
const embedderOptions = { dimensions: 3 };
let queue = [];
const judgeRequests = [];
const embedRequests = [];
let vectors = {};

const ai = genkit({
  plugins: [
    genkitEval({
      metrics: [GenkitMetric.FAITHFULNESS, GenkitMetric.ANSWER_RELEVANCY],
      judge: 'judge',
      judgeConfig,
      embedder: 'embedder',
      embedderOptions,
    }),
  ],
});
ai.defineModel({ name: 'judge', apiVersion: 'v2', supports: { multiturn: true, systemRole: true } }, async (req) => {
  judgeRequests.push(JSON.parse(JSON.stringify(req)));
  const response = queue.shift();
  if (!response) throw new Error('no scripted response left');
  if (response.error) throw new Error(response.error);
  return response;
});
ai.defineEmbedder({ name: 'embedder' }, async (input, options) => {
  embedRequests.push(JSON.parse(JSON.stringify({ input, options })));
  return { embeddings: input.map((d) => ({ embedding: vectors[d.content[0].text] ?? [] })) };
});

const ids = (v) =>
  JSON.parse(JSON.stringify(v), (k, x) => (k === 'traceId' || k === 'spanId' ? '<id>' : x));
const actions = await ai.registry.listResolvableActions();
// Genkit JS logs each failed test case with console.debug: keep stdout for records.
console.debug = () => {};
for (const [metric, c] of [
  ['FAITHFULNESS', faithfulness],
  ['ANSWER_RELEVANCY', relevancy],
]) {
  queue = [...c.judgeResponses];
  vectors = c.vectors ?? {};
  judgeRequests.length = 0;
  embedRequests.length = 0;
  const evaluator = `genkitEval/${metric.toLowerCase()}`;
  const response = await ai.evaluate({ evaluator, dataset: c.dataset, evalRunId: 'run' });
  const metadata = actions[`/evaluator/${evaluator}`].metadata;
  console.log(
    JSON.stringify({
      metric,
      evaluator,
      metadata,
      judgeConfig,
      embedderOptions,
      dataset: c.dataset,
      judgeResponses: c.judgeResponses,
      vectors: c.vectors,
      response: ids(response),
      judgeRequests,
      embedRequests,
    }),
  );
}
