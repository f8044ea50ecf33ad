/**
 * One worker process of bench/redis-scale.ts: from a start (epoch ms, read from stdin once it has
 * printed "ready") for DURATION ms, LANES
 * concurrent loops each claim a fresh key and settle it succeeded, through a RedisStore on one
 * server (`redis://…`) or a cluster (`cluster:redis://…,redis://…`). Prints one JSON line:
 * `{ pairs, claimMs, lateMs, cpuMs }` (claim+settle pairs done in the window, each claim's
 * latency in ms, how late the worker was ready for the window, the CPU time its loops took).
 * With RATE, the worker does not keep LANES claims in flight but starts RATE claim+settle pairs a
 * second on a fixed schedule, whatever the answers (an open loop: the load a fleet of agents
 * brings, which does not wait for the ledger), and each claim's latency is taken from the time it
 * was due, so a worker that falls behind counts its lateness (no coordinated omission).
 * Usage: redis-scale-worker.ts TARGET PREFIX DURATION LANES WAIT_FOR_REPLICAS [RATE]
 */
import { performance } from "node:perf_hooks";
import { createRedisStore } from "@governor/redis";
import { connectCluster } from "../packages/redis/src/testing-cluster.ts";

const [target, prefix, duration, lanes, wait, rate] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string | undefined,
];
const cluster = target.startsWith("cluster:")
  ? await connectCluster(
      target
        .slice("cluster:".length)
        .split(",")
        .map((url) => ({ url })),
    )
  : undefined;
const waitForReplicas = wait === "auto" ? undefined : Number(wait);
const common = {
  prefix,
  retentionMs: 60_000,
  ...(waitForReplicas !== undefined && { waitForReplicas }),
};
const store =
  cluster === undefined
    ? createRedisStore({ url: target, ...common })
    : createRedisStore({ client: cluster, ...common });

// Connect and pass the checks, warm up (the scripts loaded on the servers, the store's code
// compiled: without it the first pairs of the window, slower by tens of ms, are the p99 of a
// window at a low rate), say so, then wait for the window's start (epoch ms) on stdin: the parent
// sends it once every worker is ready.
for (let i = 0; i < 200; i++) {
  const key = `warm-${process.pid}-${i}`;
  await store.claim(key, "args", { now: Date.now(), allowUncertain: false, leaseMs: 30_000 });
  await store.settle(key, "succeeded", { now: Date.now(), result: { ok: true } });
}
process.stdout.write("ready\n");
const from = await new Promise<number>((resolve) => {
  process.stdin.once("data", (chunk) => resolve(Number(String(chunk).trim())));
});
process.stdin.pause();
const until = from + Number(duration);
// How late this worker was ready (a window it partly missed measures less than the servers do).
const lateMs = Math.max(0, Date.now() - from);
await new Promise((resolve) => setTimeout(resolve, Math.max(0, from - Date.now())));

let pairs = 0;
const claimMs: number[] = [];
const cpuFrom = process.cpuUsage();
let n = 0;

/** One claim+settle on a fresh key; the claim's latency counted from `due` (performance.now()). */
async function pair(due: number): Promise<void> {
  const key = `${process.pid}-${n++}`;
  const claim = await store.claim(key, "args", {
    now: Date.now(),
    allowUncertain: false,
    leaseMs: 30_000,
  });
  claimMs.push(performance.now() - due);
  if (claim.status !== "claimed") throw new Error(`claim answered ${claim.status}`);
  await store.settle(key, "succeeded", { now: Date.now(), result: { ok: true } });
  if (Date.now() <= until) pairs += 1;
}

if (rate === undefined) {
  await Promise.all(
    Array.from({ length: Number(lanes) }, async () => {
      while (Date.now() < until) await pair(performance.now());
    }),
  );
} else {
  const interval = 1_000 / Number(rate);
  const first = performance.now();
  const started: Promise<void>[] = [];
  for (let i = 0; Date.now() < until; i++) {
    const due = first + i * interval;
    const ahead = due - performance.now();
    if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
    started.push(pair(due));
  }
  await Promise.all(started);
}
const cpu = process.cpuUsage(cpuFrom);
const cpuMs = (cpu.user + cpu.system) / 1_000;
process.stdout.write(`${JSON.stringify({ pairs, claimMs, lateMs, cpuMs })}\n`);
await store.close();
cluster?.destroy();
