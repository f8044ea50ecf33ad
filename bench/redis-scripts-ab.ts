/**
 * Two versions of `@governor/redis` side by side on one Redis server, both driven by this
 * checkout's `@governor/core`: the checkout's, and the sources of another commit (BASE_REV,
 * default `bf04823^`, the scripts before each ledger script's guard read and kept the
 * `replicated` mark: one HEXISTS, and an HSET while a replica is connected). Short runs of one
 * undeclared keyed write each (claim and settle of its key and of its content entry), sides
 * taking turns in rounds of 100 runs, the order alternating each round, as
 * bench/doubt-redis-ab.ts does. Prints the median µs per write of each side and their ratio.
 *
 *   REDIS_URL=redis://127.0.0.1:6379 node --conditions=source --import tsx bench/redis-scripts-ab.ts
 *
 * The base's sources are taken with `git archive` into packages/redis/node_modules (so they import
 * the checkout's `@governor/core` and `redis`), and removed at the end.
 */
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as core from "@governor/core";
import { createRedisStore } from "@governor/redis";
import { median } from "./stats.ts";

const url = process.env.REDIS_URL;
if (url === undefined || url === "") throw new Error("bench/redis-scripts-ab.ts: set REDIS_URL");
if (!import.meta.resolve("@governor/redis").includes("/src/")) {
  throw new Error("bench/redis-scripts-ab.ts: run it with --conditions=source --import tsx");
}
const rev = process.env.BASE_REV ?? "bf04823^";
const root = fileURLToPath(new URL("..", import.meta.url));
const dir = `${root}packages/redis/node_modules/.governor-base-${process.pid}`;
mkdirSync(dir, { recursive: true });
const archive = execFileSync("git", ["archive", rev, "packages/redis/src"], { cwd: root });
execFileSync("tar", ["-x", "--strip-components=2", "-C", dir], { input: archive });

try {
  const base = (await import(pathToFileURL(`${dir}/src/index.ts`).href)) as {
    createRedisStore: typeof createRedisStore;
  };
  const ok = { content: [{ type: "text", text: "paid" }] };
  const side = (create: typeof createRedisStore) => {
    const store = create({ url, prefix: `governor-bench:${randomUUID()}:`, retentionMs: 5_000 });
    const governor = core.createGovernor(
      { tools: { pay: { effect: "mutating" } } },
      { store, metrics: false },
    );
    return { store, governor, times: [] as number[], n: 0 };
  };
  const sides = [side(createRedisStore), side(base.createRedisStore)] as const;
  try {
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
  } finally {
    await Promise.all(sides.map((s) => s.store.close()));
  }
  const ours = median(sides[0].times) * 1000;
  const baseUs = median(sides[1].times) * 1000;
  console.log(
    JSON.stringify({
      base: rev,
      oursUsPerWrite: Math.round(ours),
      baseUsPerWrite: Math.round(baseUs),
      ratio: Number((ours / baseUs).toFixed(3)),
      samples: sides[0].times.length,
    }),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
