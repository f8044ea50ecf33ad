/**
 * Two builds of `@governor/core` side by side in one process: many short runs, each one
 * undeclared write (keyed, claimed and settled in the default memory store) then `run.end()`, as
 * a long-lived server makes them. Sides take turns in rounds of 1000 runs, the order alternating
 * each round. Each figure is the median µs per run (start, write, end); `keptOfSampled` is how
 * many of the sampled keys (one per round) the side's ledger still holds at the end: a build whose
 * runs' keys leave at their end holds none, one that keeps them for the retention holds them all
 * (and reaches `maxLedgerEntries`, by default, after 100 000 such writes in 24 h).
 *
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/ledger-ab.ts
 *
 * ROUNDS (default 60) sets the rounds per side (the first 5 are not measured).
 */
import * as core from "@governor/core";
import { baseDir, importBase } from "./base-build.ts";
import { median } from "./stats.ts";

const base = baseDir("bench/ledger-ab.ts");
const baseCore = await importBase<typeof core>(base, "packages/core/dist/index.js");

const RUNS = 1000;
const ok = { content: [{ type: "text", text: "paid" }] };

interface Side {
  readonly store: core.MemoryStore;
  readonly governor: core.Governor;
  readonly times: number[];
  readonly sampled: string[];
  n: number;
}
const side = (c: typeof core): Side => {
  const store = c.createMemoryStore();
  const governor = c.createGovernor(
    { tools: { pay: { effect: "mutating" } } },
    { metrics: false, store },
  );
  return { store, governor, times: [], sampled: [], n: 0 };
};
const sides: Record<string, Side> = { ours: side(core), baseline: side(baseCore) };

async function round(s: Side, record: boolean): Promise<void> {
  const t = process.hrtime.bigint();
  for (let i = 0; i < RUNS; i++) {
    const run = s.governor.startRun();
    const sample = i === 0;
    const outcome = await run.call({ tool: "pay", args: { n: s.n++ } }, async (ctx) => {
      if (sample && ctx.idempotencyKey !== undefined) s.sampled.push(ctx.idempotencyKey);
      return ok;
    });
    if (outcome.kind !== "ok") throw new Error(`bench: a write ended with ${outcome.kind}`);
    run.end();
  }
  if (record) s.times.push(Number(process.hrtime.bigint() - t) / 1000 / RUNS);
}

const rounds = Number(process.env.ROUNDS ?? 60);
const names = Object.keys(sides);
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 === 0 ? names : [...names].reverse()) {
    await round(sides[name] as Side, r >= 5);
  }
}
const out: Record<string, { medianUsPerRun: number; runs: number; keptOfSampled: string }> = {};
for (const [name, s] of Object.entries(sides)) {
  const kept = s.sampled.filter((key) => s.store.entry(key) !== undefined).length;
  out[name] = {
    medianUsPerRun: Math.round(median(s.times) * 100) / 100,
    runs: s.n,
    keptOfSampled: `${kept}/${s.sampled.length}`,
  };
}
const ratio = (out.ours?.medianUsPerRun ?? 0) / (out.baseline?.medianUsPerRun ?? 1);
process.stdout.write(
  `${JSON.stringify({ base, ...out, ratio: Math.round(ratio * 1000) / 1000 }, null, 2)}\n`,
);
