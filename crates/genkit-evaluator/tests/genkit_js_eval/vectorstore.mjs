// Records what @genkit-ai/dev-local-vectorstore 1.42 writes to its file and
// retrieves, with a deterministic embedder (letter counts, 26 dimensions),
// as the expected behaviour of tests/local_vector_store.rs, which reads the
// file with the Rust store and asks the same queries:
//
//   cd crates/genkit-evaluator/tests/genkit_js_eval && npm ci && node vectorstore.mjs > vectorstore.json
//
// Output: {db: <the file's contents>, queries: [{query, k, documents}]}.
import { devLocalIndexerRef, devLocalRetrieverRef, devLocalVectorstore } from '@genkit-ai/dev-local-vectorstore';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Document, genkit } from 'genkit';

// The store writes __db_<index>.json in the working directory.
process.chdir(mkdtempSync(join(tmpdir(), 'genkit-dev-local-')));
const letters = (text) => {
  const v = new Array(26).fill(0);
  for (const c of text.toLowerCase()) {
    const i = c.charCodeAt(0) - 97;
    if (i >= 0 && i < 26) v[i] += 1;
  }
  return v;
};
const ai = genkit({ plugins: [devLocalVectorstore([{ indexName: 'facts', embedder: 'letters' }])] });
ai.defineEmbedder({ name: 'letters' }, async (input) => ({
  embeddings: input.map((d) => ({ embedding: letters(d.text) })),
}));
const texts = ['aaaa', 'aaab', 'bbbb', 'abab', 'zzzz', 'abcz'];
await ai.index({
  indexer: devLocalIndexerRef('facts'),
  documents: texts.map((t, i) => Document.fromText(t, { n: i })),
});
const queries = [];
for (const [query, k] of [['aaaa', undefined], ['b', 5], ['zz', 1], ['abc', 2]]) {
  const docs = await ai.retrieve({ retriever: devLocalRetrieverRef('facts'), query, options: k ? { k } : undefined });
  queries.push({ query, k, documents: docs.map((d) => d.toJSON()) });
}
const db = JSON.parse(readFileSync('__db_facts.json', 'utf8'));
console.log(JSON.stringify({ db, queries }));
