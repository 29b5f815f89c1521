// A small seeded generator (mulberry32) for the recording scripts, so the
// generated cases are the same on every run. SEED overrides the seed.
let seed = Number(process.env.SEED ?? 20261130);

export function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
export const pick = (list) => list[Math.floor(random() * list.length)];
export const chance = (p) => random() < p;
