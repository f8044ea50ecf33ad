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
import * as core from "@governor/core";
import { createRedisStore } from "@governor/redis";
import { baseDir, importBase } from "./base-build.ts";
import { timeKeyedWrites } from "./keyed-write-ab.ts";

const baseCore = await importBase<typeof core>(
  baseDir("bench/doubt-redis-ab.ts"),
  "packages/core/dist/index.js",
);
const url = process.env.REDIS_URL;
if (url === undefined || url === "") throw new Error("bench/doubt-redis-ab.ts: set REDIS_URL");
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
  return { store, governor };
};

const sides = [side(core), side(baseCore)] as const;
try {
  console.log(JSON.stringify(await timeKeyedWrites(sides[0], sides[1])));
} finally {
  await Promise.all(sides.map((s) => s.store.close()));
}
