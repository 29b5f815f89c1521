// Records what npm `dotprompt` (Handlebars.js underneath) renders for a set
// of templates, as the expected output of tests/npm_dotprompt.rs: Dotprompt
// for Rust must render every template exactly as the reference does.
//
// The cases: the hand-written ones below (printing values, truthiness,
// paths, scopes, helpers, partials), then generated templates (a seeded
// grammar mixing text, whitespace control, expressions, helpers, partials
// and nested blocks over the same data).
//
//   cd crates/dotprompt/tests/npm_dotprompt && npm ci && node templates.mjs > templates.jsonl
//
// Output: a header line {data, context, partials, dotprompt}, then one line
// per case {template, expected} where expected is {messages} or {error}.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Dotprompt } from 'dotprompt';
import { chance, pick, random } from './random.mjs';

// Handlebars.js compiles a run of expressions with nothing between them into
// one JavaScript `+` chain, and with `noEscape` (which Dotprompt sets) the
// values are not made strings first: `{{a}}{{b}}` with 1 and 2 prints `3`,
// `{{t}}{{t}}` with true prints `2`. Dotprompt for Rust deliberately prints
// `12` and `truetrue`. To record everything else, each template is also
// rendered with escaping on and an escape function that only makes strings
// (so nothing is escaped, but every value is a string before it is joined),
// triple-stash `{{{x}}}` written `{{x}}` (it would skip that function);
// where the two differ, the case is marked `quirk` and expects the second.
const require = createRequire(import.meta.url);
const utils = require('handlebars/dist/cjs/handlebars/utils.js');
const escapeExpression = utils.escapeExpression;
function stringsOnly(value) {
  if (value == null) return '';
  if (value && value.toHTML) return value.toHTML();
  return String(value);
}

const GENERATED = Number(process.env.CASES ?? 600);

const data = {
  name: 'Ada', n: 3, f: 1.5, neg: -2, zero: 0, t: true, no: false, nul: null, str: 's',
  big: 1e21, tiny: 1e-7, small: 0.000001, negzero: -0, third: 0.1 + 0.2,
  empty: [], emptyObj: {}, arr: [1, 'two', [3, 4], { x: 1 }, null],
  obj: { a: 1, b: { c: 'deep' } }, numeric: { b: 1, 10: 'ten', 2: 'two', a: 0 },
  items: [{ title: 'a', name: 'i0' }, { title: 'b' }, { title: null, items: [{ title: 'nested' }] }],
  person: { name: 'Bo', tags: ['x', 'y'], pet: { name: 'Rex' } }, d: 1, html: "<b>&'\"</b>",
  emoji: 'a😀b', 'weird key': 'w', words: ['x', 'y'], idx: 1,
  outer: [{ label: 'o1', inner: [1, 2] }, { label: 'o2', inner: [3] }],
};
const context = { state: { count: 2 } };
const partials = {
  p1: 'P1 {{name}}',
  item: '{{@index}}{{title}}{{#if @last}}!{{/if}}',
  lines: 'a\nb\n',
  up: '[{{../name}}|{{name}}]',
  greet: 'Hi {{name}} ({{who}})',
  outer: '[{{> inner}}]',
  inner: '{{name}}',
  block: 'B\n{{#each words}}- {{this}}\n{{/each}}',
  layout: 'L[{{> @partial-block}}]L',
  frame: 'F({{> content}})F',
};

// The partials generated templates include (`layout` and `frame` need a
// block or an inline partial; `inl` is declared inline by some templates).
const GENERATED_PARTIALS = ['p1', 'item', 'lines', 'up', 'greet', 'outer', 'inner', 'block', 'inl'];

const handwritten = [
  // Printing values.
  '{{name}} {{n}} {{f}} {{neg}} {{zero}} {{t}} {{no}} [{{nul}}] [{{missing}}]',
  '{{big}} {{tiny}} {{small}} {{negzero}} {{third}}',
  '{{arr}} | {{obj}} | {{items}} | {{person.tags}} | {{empty}} | {{emptyObj}}',
  '{{{arr}}} {{html}} {{{html}}}',
  // Paths.
  '{{person.name}} {{person/name}} {{person.tags.[1]}} {{this.name}} {{./name}} {{obj.b.c}}',
  '{{items.[0].title}} {{items.length}} {{name.length}} {{emoji.length}} {{name.[1]}} {{emoji.[3]}}',
  '[{{items.title}}] [{{person.tags.name}}] [{{n.x}}] [{{nul.x}}] [{{t.x}}] [{{str.length.x}}]',
  '{{.}}',
  // Truthiness.
  '{{#if zero}}1{{/if}}{{#if zero includeZero=true}}2{{/if}}{{#if emptyObj}}3{{/if}}{{#if empty}}4{{/if}}{{#if str}}5{{/if}}{{#if nul}}6{{/if}}{{#if neg}}7{{/if}}{{#if tiny}}8{{/if}}',
  '{{#unless zero}}a{{/unless}}{{#unless emptyObj}}b{{else}}c{{/unless}}{{#unless empty}}d{{/unless}}',
  '{{#with zero}}[{{this}}]{{else}}none{{/with}} {{#with emptyObj}}obj{{else}}none{{/with}} {{#with empty}}arr{{else}}none{{/with}} {{#with str}}{{this}}{{/with}} {{#with no}}x{{else}}false{{/with}}',
  '{{#if items.length}}{{items.length}} items{{/if}}{{#if empty.length}}x{{else}}none{{/if}}',
  // Loops.
  '{{#each arr}}{{@index}}:{{this}};{{/each}}',
  '{{#each items}}{{@key}}/{{@index}}/{{@first}}/{{@last}} {{/each}}',
  '{{#each obj}}{{@key}}={{this}} {{/each}}{{#each numeric}}{{@key}}={{this}} {{/each}}',
  '{{#each str}}x{{else}}not a list{{/each}}{{#each emptyObj}}x{{else}}empty{{/each}}{{#each n}}x{{else}}number{{/each}}',
  '{{#each person.tags}}{{this}}{{#unless @last}}, {{/unless}}{{/each}}',
  '{{#each items}}{{../name}}/{{name}}/{{@root.name}}/{{title}} {{/each}}',
  // Scopes and ../
  '[{{../name}}] {{#if t}}[{{../name}}]{{/if}} {{#with person}}[{{../name}}] {{#with tags}}[{{../name}}|{{../../name}}]{{/with}}{{/with}}',
  '{{#with this}}[{{../name}}]{{/with}} {{#each items}}{{#if title}}[{{../name}}]{{/if}}{{/each}}',
  '{{#with person}}{{#each tags}}{{../name}}:{{this}} {{/each}}{{/with}}',
  // Helpers.
  '{{json items}} {{json obj indent=2}} {{json nul}} {{json missing}} {{json str}}',
  '{{lookup items 1}} {{lookup person.tags 0}} {{lookup obj "a"}} {{lookup name 1}} {{lookup items "length"}}',
  '[{{lookup zero 1}}] [{{lookup no 1}}] [{{lookup nul 1}}] [{{lookup missing 1}}] [{{lookup str 5}}]',
  '{{#ifEquals n 3}}eq{{else}}ne{{/ifEquals}} {{#ifEquals n "3"}}eq{{else}}ne{{/ifEquals}} {{#unlessEquals str "s"}}x{{else}}same{{/unlessEquals}}',
  '{{@state.count}} {{json @state}} [{{@nope}}]',
  // Partials.
  '{{> p1}}|{{> p1 person}}|{{> p1 name="X"}}|{{> p1 person name="Y"}}',
  '{{#each items}}{{> item}}{{/each}}|{{#with person}}{{> up}}{{/with}}|{{> up person}}',
  '{{> lines}}after',
  '{{> greet name="X"}}|{{> greet person who=name}}|{{> outer}}|{{#with person}}{{> outer}}{{/with}}',
  '{{> lines}}\n{{> lines}}\nafter',
  'a\n  {{> block}}\nb\n\t{{> lines}}\n{{#if t}}\n  {{> block}}\n{{/if}}',
  'x {{> block}} y\n  {{> lines}} z',
  // Comments, whitespace control, standalone lines.
  'Hello {{name}}! {{{name}}} {{~name~}} x {{! a comment }}{{!-- another --}}y',
  'line\n  {{#if t}}\n  yes\n  {{/if}}\nend\n',
  '{{#each words}}\n  - {{this}}\n{{/each}}\n{{#unless no}}\n  done\n{{/unless}}',
  '{{#if a}}A{{else if t}}B{{else}}C{{/if}} {{#if no}}A{{else if missing}}B{{else}}C{{/if}}',
  // More scopes.
  '{{[weird key]}} {{person.missing.deeper}} {{this.idx}} {{items.[1].title}}',
  '{{#each outer}}{{#each inner}}{{@../index}}.{{@index}} {{../label}} {{../../name}} {{this}}; {{/each}}{{/each}}',
  '{{#with person}}{{name}} {{pet.name}} {{../name}} {{#with pet}}{{name}} {{../name}} {{../../name}}{{/with}}{{/with}}',
  '{{#each words}}{{#with ../person}}{{name}}{{@index}}{{/with}}{{/each}}',
  '{{#each (lookup outer 0)}}{{@key}}={{this}} {{/each}} {{lookup items idx}} {{lookup (lookup obj "b") "c"}}',
  '{{#each items}}{{#if @first}}first {{/if}}{{title}}{{#unless @last}}, {{/unless}}{{/each}}',
  '{{json person indent="\\t"}} {{json person indent="----"}} {{json person indent=20}}',
  '{{@metadata.prompt.name}} {{#each @state}}{{@key}}={{this}}{{/each}}',
  // Block parameters.
  '{{#each items as |item i|}}{{i}}:{{item.title}} {{/each}}{{#each obj as |v k|}}{{k}}={{v}} {{/each}}',
  '{{#each person.tags as |tag|}}{{#each ../words as |w|}}{{tag}}{{w}} {{/each}}{{/each}}',
  '{{#with person as |p|}}{{p.name}} {{name}} {{#each p.tags as |t idx|}}{{p.name}}-{{t}}-{{idx}} {{/each}}{{/with}}',
  '{{#each words as |name|}}{{name}} {{this}} [{{./name}}] [{{this.name}}] {{/each}}',
  '{{#each items as |item|}}{{json item}} {{lookup item "title"}} {{#if item.name}}has name{{/if}};{{/each}}',
  '{{#each items as |name|}}{{> p1}}|{{/each}} {{#each words as |json|}}{{json}}{{/each}}',
  '{{#each items as |item|}}{{#each item.items as |inner|}}{{inner.title}}/{{item.title}}{{/each}}{{else}}none{{/each}}',
  // Inline partials and partial blocks.
  '{{#*inline "row"}}[{{title}}]{{/inline}}{{#each items}}{{> row}}{{/each}}',
  '{{> early}}{{#*inline "early"}}E{{name}}{{/inline}}',
  '{{#> layout}}body for {{name}}{{/layout}} {{#> missing}}fallback {{name}}{{/missing}}',
  '{{#*inline "content"}}C {{name}}{{/inline}}{{> frame}} {{> frame person}}',
  '{{#> layout person}}{{name}}{{/layout}} {{#> layout}}{{#> layout}}in{{/layout}}{{/layout}}',
  '{{#*inline "x"}}\n  X {{name}}\n{{/inline}}\n{{> x}}\n{{#each words}}\n  {{> x}}\n{{/each}}',
  '{{#each items}}{{#*inline "t"}}<{{title}}>{{/inline}}{{> t}}{{/each}}',
  '{{#> layout}}\n  {{#each words}}{{this}}{{/each}}\n{{/layout}}\nend',
  '{{#*inline "tree"}}{{title}}({{#each items}}{{> tree}}{{/each}}){{/inline}}{{#each items}}{{> tree}}{{/each}}',
  '{{#*inline "loop"}}x{{> loop}}{{/inline}}{{> loop}}',
  // Roles, sections, media.
  '{{role "system"}}You are {{name}}.{{role "user"}}Hi {{#each person.tags}}{{this}}{{/each}}',
  'Look: {{media url="http://x/y.png" contentType="image/png"}} {{section "after"}}done',
];


const PATHS = [
  'name', 'n', 'f', 'neg', 'zero', 't', 'no', 'nul', 'str', 'big', 'empty', 'emptyObj', 'arr',
  'arr.[2].[1]', 'obj', 'obj.a', 'obj.b.c', 'items', 'items.[0].title', 'items.length',
  'person', 'person.tags', 'person.tags.[1]', 'title', 'this', '.', 'this.name', '../name',
  '../items', '../../name', '@index', '@first', '@last', '@key', '@root.name', '@root.items',
  '@state.count', '@state', 'missing', 'missing.deep', 'd', 'name.length', 'numeric',
  'it', 'it.title', 'ix',
];
const TEXTS = ['', 'x', ' ', '  ', '\n', '\n  ', '  \n', '\r\n', '\t', 'a b', '{ ', ' }', '-', 'é'];

function leaf() {
  const r = random();
  const p = pick(PATHS);
  const [l, t] = [chance(0.3), chance(0.3)];
  if (r < 0.3) return pick(TEXTS);
  if (r < 0.5) return `${l ? '{{~' : '{{'}${p}${t ? '~}}' : '}}'}`;
  if (r < 0.6) return `${l ? '{{~{' : '{{{'}${p}${t ? '}~}}' : '}}}'}`;
  if (r < 0.67) return `{{json ${p}${chance(0.3) ? ' indent=2' : ''}}}`;
  if (r < 0.74) return `{{lookup ${p} ${Math.floor(random() * 3)}}}`;
  if (r < 0.78) return `{{lookup obj "${p}"}}`;
  if (r < 0.82) return pick(['{{role "user"}}', '{{role "model"}}', '{{section "s"}}', '{{history}}']);
  return `{{> ${pick(GENERATED_PARTIALS)}${chance(0.4) ? ' ' + pick(PATHS) : ''}}}`;
}

function nodes(depth) {
  let out = '';
  const count = Math.floor(random() * 7);
  for (let i = 0; i < count; i++) {
    if (depth < 3 && chance(0.05)) {
      // A partial block (layout renders it, missing falls back to it) or
      // an inline partial declaration (used through `{{> inl}}`).
      const [l, t] = [chance(0.3), chance(0.3)];
      const [open, close] = pick([
        ['#> layout', '/layout'],
        ['#> missing', '/missing'],
        ['#*inline "inl"', '/inline'],
      ]);
      out += `${l ? '{{~' : '{{'}${open}${t ? '~}}' : '}}'}${nodes(depth + 1)}`;
      out += `${t ? '{{~' : '{{'}${close}${l ? '~}}' : '}}'}`;
    } else if (depth < 3 && chance(0.3)) {
      const name = pick(['if', 'unless', 'each', 'with', 'ifEquals', 'unlessEquals']);
      let args = pick(PATHS);
      if (name === 'ifEquals' || name === 'unlessEquals') args += ' ' + pick(PATHS);
      else if (name === 'if' && chance(0.2)) args += ' includeZero=true';
      else if (name === 'each' && chance(0.25)) args += chance(0.5) ? ' as |it ix|' : ' as |it|';
      else if (name === 'with' && chance(0.25)) args += ' as |it|';
      const [l, t] = [chance(0.3), chance(0.3)];
      out += `${l ? '{{~' : '{{'}#${name} ${args}${t ? '~}}' : '}}'}`;
      out += nodes(depth + 1);
      if (chance(0.4)) out += '{{else}}' + nodes(depth + 1);
      out += `${t ? '{{~' : '{{'}/${name}${l ? '~}}' : '}}'}`;
    } else {
      out += leaf();
    }
  }
  return out;
}

const templates = [...handwritten];
for (let i = 0; i < GENERATED; i++) templates.push(nodes(0));

const dotprompt = new Dotprompt({ partials });
const stringDotprompt = new Dotprompt({ partials });
const compile = stringDotprompt.handlebars.compile.bind(stringDotprompt.handlebars);
stringDotprompt.handlebars.compile = (source, options) => compile(source, { ...options, noEscape: false });

const unstash = (template) =>
  template.replace(/\{\{(~?)\{/g, '{{$1').replace(/\}(~?)\}\}/g, '$1}}');

async function render(dp, template, strings) {
  utils.escapeExpression = strings ? stringsOnly : escapeExpression;
  if (strings) template = unstash(template);
  try {
    const rendered = await dp.render(template, { input: data, context });
    return { messages: rendered.messages };
  } catch (e) {
    return { error: String(e.message ?? e) };
  } finally {
    utils.escapeExpression = escapeExpression;
  }
}
const version = JSON.parse(
  readFileSync(new URL('./node_modules/dotprompt/package.json', import.meta.url), 'utf8'),
).version;
// Handlebars.js warns on stderr about prototype properties it refuses; the
// refusal (an undefined value) is what is recorded.
console.warn = () => {};
console.log(JSON.stringify({ data, context, partials, dotprompt: version }));
// A character of a string is one UTF-16 unit in JavaScript, so it may be
// half a surrogate pair, which JSON (and Rust strings) cannot carry; such
// cases are left out.
// (JSON.stringify writes such a half as a `\udXXX` escape.)
const loneSurrogate = /\\ud[89a-f][0-9a-f]{2}/i;
for (const template of templates) {
  const real = await render(dotprompt, template, false);
  const expected = await render(stringDotprompt, template, true);
  if (loneSurrogate.test(JSON.stringify(expected))) continue;
  const quirk = JSON.stringify(real) !== JSON.stringify(expected);
  console.log(JSON.stringify(quirk ? { template, expected, quirk: real } : { template, expected }));
}
