// Records what npm `dotprompt` makes of Picoschemas (the JSON Schema, or
// that it fails), as the expected output of tests/npm_dotprompt.rs.
//
// The cases: generated schemas (a seeded grammar of nested objects, optional
// fields, arrays, enums, wildcards, descriptions, named and unknown types,
// malformed type specs), plain types and JSON Schema passed through. The
// schema resolver knows one named schema, `Person`.
//
//   cd crates/dotprompt/tests/npm_dotprompt && npm ci && node picoschema.mjs > picoschema.jsonl
//
// Output: one line per case {schema, expected} where expected is
// {schema: <JSON Schema or null>} or {error}.
import { picoschema } from 'dotprompt';
import { chance, pick, random } from './random.mjs';

const CASES = Number(process.env.CASES ?? 800);

const NAMES = ['name', 'age', 'a', 'b_c', 'x-y', 'n1'];
const TYPES = ['string', 'integer', 'number', 'boolean', 'null', 'any', 'Person', 'Unknown', 'object', 'array', 'strin'];
const DESCRIPTIONS = ['', ', the name', ',x', ', a, b', ',  spaced ', ','];
const typeSpec = () => pick(TYPES) + pick(DESCRIPTIONS);

function object(depth) {
  const out = {};
  const count = Math.floor(random() * 4);
  for (let i = 0; i < count; i++) {
    const key = pick(NAMES) + (chance(0.3) ? '?' : '');
    const r = random();
    if (r < 0.45 || depth > 2) out[key] = chance(0.9) ? typeSpec() : pick([1, true, null, ['a']]);
    else if (r < 0.6) out[`${key}(array${pick(['', ', list', ',d'])})`] = chance(0.5) ? typeSpec() : object(depth + 1);
    else if (r < 0.72) out[`${key}(object${pick(['', ', thing'])})`] = object(depth + 1);
    else if (r < 0.82) out[`${key}(enum${pick(['', ', color'])})`] = pick([['A', 'B'], ['A', null], [1, 2], [], 'A']);
    else if (r < 0.87) out['(*)'] = typeSpec();
    else if (r < 0.92) out[`${key}(${pick(['foo', 'array, x, y', 'enum'])})`] = 'string';
    else out[key] = object(depth + 1);
  }
  return out;
}

const cases = [
  null, '', 0, false, [], 'string', 'any', 'any, anything', 'Person', 'Person, someone',
  { type: 'string' }, { properties: {} }, { type: 'object', properties: { a: { type: 'string' } } },
  { type: ['string', 'null'] }, { name: 'string', 'tags(array)': 'string' },
];
for (let i = 0; i < CASES; i++) {
  const r = random();
  if (r < 0.1) cases.push(typeSpec());
  else cases.push(object(0));
}

const schemaResolver = async (name) =>
  name === 'Person' ? { type: 'object', properties: { id: { type: 'string' } } } : undefined;
for (const schema of cases) {
  let expected;
  try {
    expected = { schema: (await picoschema(schema, { schemaResolver })) ?? null };
  } catch (e) {
    expected = { error: String(e.message ?? e) };
  }
  console.log(JSON.stringify({ schema, expected }));
}
