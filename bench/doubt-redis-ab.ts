/**
 * Two builds of `@governor/core` side by side on one Redis server: short runs of one undeclared
 * keyed write each (claim and settle of its key; with the index of writes in doubt, of its
 * content entry too), sides taking turns in rounds of 100 runs, the order alternating each round.
 * Prints the median µs per write of each side and their ratio.
 *
 *   pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base   # on the base checkout
 *   REDIS_URL=redis://127.0.0.1:6379 GOVERNOR_BASE=/tmp/governor-base \
 *     node --conditions=source --import tsx bench/doubt-redis-ab.ts
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import * as core from "@governor/core";
import { createRedisStore } from "@governor/redis";
import { baseDir, importBase } from "./base-build.ts";
import { median } from "./stats.ts";

const baseCore = await importBase<typeof core>(
  baseDir("bench/doubt-redis-ab.ts"),
  "packages/core/dist/index.js",
);
const url = process.env.REDIS_URL;
if (url === undefined || url === "") throw new Error("bench/doubt-redis-ab.ts: set REDIS_URL");
const ok = { content: [{ type: "text", text: "paid" }] };

const side = (c: typeof core) => {
  const store = createRedisStore({
    url,
    prefix: `governor-bench:${randomUUID()}:`,
    retentionMs: 5_000,
  });
  const governor = c.createGovernor(
    { tools: { pay: { effect: "mutating" } } },
    { store, metrics: false },
  );
  return { store, governor, times: [] as number[], n: 0 };
};

const sides = [side(core), side(baseCore)] as const;
for (let round = 0; round < 24; round++) {
  for (const s of round % 2 === 1 ? [sides[1], sides[0]] : sides) {
    for (let i = 0; i < 100; i++) {
      const run = s.governor.startRun();
      const started = performance.now();
      await run.call({ tool: "pay", args: { amount: s.n++ } }, async () => ok);
      // The first 4 rounds warm up.
      if (round >= 4) s.times.push(performance.now() - started);
      run.end();
    }
  }
}
const ours = median(sides[0].times) * 1000;
const base = median(sides[1].times) * 1000;
console.log(
  JSON.stringify({
    oursUsPerWrite: Math.round(ours),
    baseUsPerWrite: Math.round(base),
    ratio: Number((ours / base).toFixed(3)),
    samples: sides[0].times.length,
  }),
);
await Promise.all(sides.map((s) => s.store.close()));
