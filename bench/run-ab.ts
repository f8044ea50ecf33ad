/**
 * Two builds of `@governor/core` side by side in one process: a successful `run.call` (read-only,
 * and an undeclared write: keyed, claimed and settled in the memory store), in runs of 1000 calls,
 * the sides taking turns and the order alternating each round. Prints each side's median µs per
 * call and bytes allocated per call (V8's sampling heap profiler, as `bytes_per_call`), and the
 * ratio ours / base.
 *
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --expose-gc --import tsx bench/run-ab.ts
 *
 * ROUNDS (default 40) sets the measured rounds per side.
 */
import * as core from "@governor/core";
import { baseDir, importBase } from "./base-build.ts";
import { sampleAllocations, totalBytes } from "./heap-sampler.ts";
import { median } from "./stats.ts";

const base = baseDir("bench/run-ab.ts");
const baseCore = await importBase<typeof core>(base, "packages/core/dist/index.js");
const ROUNDS = Number(process.env.ROUNDS ?? 40);
const CALLS = 1000;
const ok = { content: [{ type: "text", text: "ok" }] };
const noop = async () => ok;

type Kind = "read_only" | "write";
const governorOf = (c: typeof core, kind: Kind) =>
  c.createGovernor(
    kind === "read_only"
      ? { tools: { t: { effect: "read_only" } }, budgets: { calls: 100_000_000 } }
      : { tools: { t: { effect: "mutating" } }, budgets: { calls: 100_000_000 } },
    { metrics: false },
  );

let n = 0;
async function batch(governor: core.Governor): Promise<void> {
  const run = governor.startRun();
  for (let i = 0; i < CALLS; i++) {
    const outcome = await run.call({ tool: "t", args: { i: n++ } }, noop);
    if (outcome.kind !== "ok") throw new Error(`bench: run.call ended with ${outcome.kind}`);
  }
  run.end();
}

const out: Record<string, unknown> = {};
for (const kind of ["read_only", "write"] as const) {
  const ours = governorOf(core, kind);
  const theirs = governorOf(baseCore, kind);
  const times: Record<"ours" | "base", number[]> = { ours: [], base: [] };
  for (let round = 0; round < ROUNDS + 5; round++) {
    const order = round % 2 === 0 ? (["ours", "base"] as const) : (["base", "ours"] as const);
    for (const side of order) {
      const t = process.hrtime.bigint();
      await batch(side === "ours" ? ours : theirs);
      const us = Number(process.hrtime.bigint() - t) / 1000 / CALLS;
      if (round >= 5) times[side].push(us);
    }
  }
  const bytes = async (g: core.Governor) =>
    totalBytes(
      await sampleAllocations(async () => {
        for (let b = 0; b < 20; b++) await batch(g);
      }),
    ) /
    (20 * CALLS);
  const bo = await bytes(ours);
  const bb = await bytes(theirs);
  const bo2 = await bytes(ours);
  const bb2 = await bytes(theirs);
  const mo = median(times.ours);
  const mb = median(times.base);
  out[kind] = {
    us: { ours: mo, base: mb, ratio: Number((mo / mb).toFixed(3)) },
    bytes: {
      ours: Math.round((bo + bo2) / 2),
      base: Math.round((bb + bb2) / 2),
      ratio: Number(((bo + bo2) / (bb + bb2)).toFixed(3)),
    },
  };
}
console.log(JSON.stringify(out, null, 2));
