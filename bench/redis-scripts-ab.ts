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
import { fileURLToPath, pathToFileURL } from "node:url";
import * as core from "@governor/core";
import { createRedisStore } from "@governor/redis";
import { timeKeyedWrites } from "./keyed-write-ab.ts";

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
  const side = (create: typeof createRedisStore) => {
    const store = create({ url, prefix: `governor-bench:${randomUUID()}:`, retentionMs: 5_000 });
    const governor = core.createGovernor(
      { tools: { pay: { effect: "mutating" } } },
      { store, metrics: false },
    );
    return { store, governor };
  };
  const sides = [side(createRedisStore), side(base.createRedisStore)] as const;
  try {
    console.log(JSON.stringify({ base: rev, ...(await timeKeyedWrites(sides[0], sides[1])) }));
  } finally {
    await Promise.all(sides.map((s) => s.store.close()));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
