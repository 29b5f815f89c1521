// npm `dotprompt` peer of crates/dotprompt/benches/render.rs: renders the
// prompt in prompt.json (a partial plus an {{#each}} over 100 items) in
// process, warms up, times N iterations and prints ns/op as one JSON line.
//
// Usage: node bench.mjs [--iterations N] [--warmup N] [--print] [--compiled-only]
// (--compiled-only times only the render of the already-compiled prompt;
// render_ns_per_op is then null.)
import { readFileSync } from 'node:fs';
import { Dotprompt } from 'dotprompt';

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const iterations = flag('--iterations', 20000);
const warmup = flag('--warmup', 5000);

const spec = JSON.parse(readFileSync(new URL('./prompt.json', import.meta.url), 'utf8'));
const items = Array.from({ length: spec.items }, (_, i) => ({ title: `item ${i}`, score: i }));
const data = { input: { name: 'Ada', items } };
const dotprompt = new Dotprompt({ partials: spec.partials });

if (args.includes('--print')) {
  console.log(JSON.stringify(await dotprompt.render(spec.source, data), null, 2));
  process.exit(0);
}

async function measure(op) {
  for (let i = 0; i < warmup; i++) await op();
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) await op();
  return Number(process.hrtime.bigint() - start) / iterations;
}

const renderNs = args.includes('--compiled-only')
  ? null
  : await measure(() => dotprompt.render(spec.source, data));
const compiled = await dotprompt.compile(spec.source);
const compiledNs = await measure(() => compiled(data));

console.log(
  JSON.stringify({
    bench: 'dotprompt',
    dotprompt_version: JSON.parse(
      readFileSync(new URL('./node_modules/dotprompt/package.json', import.meta.url), 'utf8'),
    ).version,
    node: process.version,
    iterations,
    warmup,
    render_ns_per_op: renderNs === null ? null : Math.round(renderNs),
    compiled_ns_per_op: Math.round(compiledNs),
  }),
);
