// Shared harness for the Genkit JS peer benchmarks.
//
// Each benchmark: warm up, calibrate, then time N sequential awaited ops with
// process.hrtime.bigint() (only two clock reads around the whole timed loop),
// and print ONE JSON line per bench to stdout.
//
// CLI flags (all scripts):
//   --iterations N   time exactly N ops (overrides --seconds)
//   --seconds S      target timed duration when --iterations is absent (default 3)
//   --warmup-iterations N  max warmup ops (default 2000)
//   --warmup-seconds S     max warmup time (default 1); warmup stops at whichever comes first
//   --no-otel        call disableGenkitOTelInitialization() before genkit({}) so the
//                    OpenTelemetry NodeSDK is never started (spans become no-ops).
//                    Default is OFF (i.e. Genkit's normal production behaviour).
//   --only NAME      in a script that defines several benches, run just NAME

let loadedGenkitVersion = 'unknown';

export function parseArgs(argv = process.argv.slice(2)) {
  const opts = {
    iterations: undefined,
    seconds: 3,
    warmupIterations: 2000,
    warmupSeconds: 1,
    noOtel: false,
    only: undefined,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`missing value for ${a}`);
      return Number(v);
    };
    switch (a) {
      case '--iterations':
        opts.iterations = Math.max(1, Math.floor(next()));
        break;
      case '--seconds':
        opts.seconds = next();
        break;
      case '--warmup-iterations':
        opts.warmupIterations = Math.max(0, Math.floor(next()));
        break;
      case '--warmup-seconds':
        opts.warmupSeconds = next();
        break;
      case '--only':
        opts.only = argv[++i];
        if (opts.only === undefined) throw new Error('missing value for --only');
        break;
      case '--no-otel':
        opts.noOtel = true;
        break;
      default:
        throw new Error(`unknown argument: ${a}`);
    }
  }
  if (process.env.BENCH_NO_OTEL === '1') opts.noOtel = true;
  return opts;
}

/**
 * Imports genkit (optionally with OTel initialization disabled first) and
 * returns { genkit, z, GENKIT_VERSION }.
 */
export async function loadGenkit(opts) {
  if (process.env.GENKIT_ENV) {
    // Dev mode would start a reflection server and use SimpleSpanProcessor.
    throw new Error(
      `GENKIT_ENV=${process.env.GENKIT_ENV} is set; unset it (benchmarks run in production mode)`
    );
  }
  if (opts.noOtel) {
    const tracing = await import('genkit/tracing');
    tracing.disableGenkitOTelInitialization();
  }
  const mod = await import('genkit');
  loadedGenkitVersion = mod.GENKIT_VERSION;
  return { genkit: mod.genkit, z: mod.z, GENKIT_VERSION: mod.GENKIT_VERSION };
}

export function genkitPackageVersion() {
  return loadedGenkitVersion;
}

const nowNs = () => process.hrtime.bigint();

/**
 * Runs `op` (an async function) per the options and prints one JSON line.
 * @param {string} name bench name
 * @param {() => Promise<unknown>} op one operation
 * @param {object} opts from parseArgs()
 * @param {object} extra extra fields merged into the JSON line
 */
export async function bench(name, op, opts, extra = {}) {
  if (opts.only !== undefined && opts.only !== name) return null;
  const rssStart = process.memoryUsage().rss;
  // Warmup: up to warmupIterations ops or warmupSeconds, whichever first.
  const warmStart = nowNs();
  const warmLimitNs = BigInt(Math.round(opts.warmupSeconds * 1e9));
  let warm = 0;
  while (warm < opts.warmupIterations) {
    await op();
    warm++;
    if ((warm & 15) === 0 && nowNs() - warmStart >= warmLimitNs) break;
  }
  const warmNs = Number(nowNs() - warmStart);

  let iterations = 0;
  let elapsedNs = 0;
  if (opts.iterations !== undefined) {
    // Fixed count: one timed loop, two clock reads.
    iterations = opts.iterations;
    const t0 = nowNs();
    for (let i = 0; i < iterations; i++) {
      await op();
    }
    elapsedNs = Number(nowNs() - t0);
  } else {
    // Time-boxed: run batches (clock read only between batches) until the
    // target duration is reached; ns/op = total time / total ops.
    const targetNs = opts.seconds * 1e9;
    const perOpGuess = warm > 0 ? warmNs / warm : 1e6;
    let batch = Math.max(1, Math.round(50e6 / perOpGuess)); // ~50 ms batches
    const t0 = nowNs();
    while (elapsedNs < targetNs) {
      for (let i = 0; i < batch; i++) {
        await op();
      }
      iterations += batch;
      elapsedNs = Number(nowNs() - t0);
      // Re-aim batch size at ~50 ms using the measured rate so far.
      batch = Math.max(1, Math.round((50e6 * iterations) / elapsedNs));
    }
  }

  const mem = process.memoryUsage();
  const ru = process.resourceUsage(); // maxRSS is in kilobytes
  const nsPerOp = elapsedNs / iterations;
  const line = {
    bench: name,
    iterations,
    ns_per_op: round(nsPerOp, 1),
    ops_per_sec: round(1e9 / nsPerOp, 1),
    rss_mb_peak: round(ru.maxRSS / 1024, 2),
    heap_used_mb: round(mem.heapUsed / (1024 * 1024), 2),
    genkit_version: genkitPackageVersion(),
    rss_mb: round(mem.rss / (1024 * 1024), 2),
    rss_mb_start: round(rssStart / (1024 * 1024), 2),
    warmup_iterations: warm,
    node_version: process.version,
    otel: opts.noOtel ? 'disabled' : 'default',
    ...extra,
  };
  if (typeof globalThis.gc === 'function') {
    // Retained heap after a full GC (only when node runs with --expose-gc,
    // as run_all.sh does); measured after the timing, so it cannot skew it.
    globalThis.gc();
    line.heap_used_mb_after_gc = round(process.memoryUsage().heapUsed / (1024 * 1024), 2);
  }
  process.stdout.write(JSON.stringify(line) + '\n');
  return line;
}

function round(x, digits) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

export function assert(cond, msg) {
  if (!cond) {
    process.stderr.write(`verification failed: ${msg}\n`);
    process.exit(2);
  }
}
