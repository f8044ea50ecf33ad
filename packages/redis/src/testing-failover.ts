/**
 * The load the failover tests (Redis Cluster, Sentinel) put on a ledger while a primary dies:
 * workers claim and settle jobs, each delivered twice and again after a store error, and the
 * tally says which jobs ran, which claims and settles the store answered, and which errors came.
 * Test support only: not exported from the package.
 */
import { type ClaimOptions, type ClaimResult, StoreError } from "@governor/core";
import type { RedisStore } from "./redis-store.ts";

export interface FailoverLoad {
  /** How many times each job's write ran (a claim answered `claimed`). */
  readonly runs: Map<string, number>;
  /** Jobs whose claim the store answered `claimed`. */
  readonly claimed: Set<string>;
  /** Jobs whose settle the store answered. */
  readonly settled: Set<string>;
  /** Store errors by reason (`other` for an error that is not a StoreError). */
  readonly errors: Map<string, number>;
}

export interface FailoverLoadOptions {
  /** How many distinct jobs; each is queued twice (a redelivery). */
  readonly jobs: number;
  /** How often a job is queued again after a failed claim. */
  readonly retries: number;
  /** Called with the count of claims answered `claimed` so far, after each one. */
  readonly onAnswered: (answered: number) => void;
  /** Whether a failed claim with this reason is queued again (default: always). */
  readonly requeue?: (reason: string) => boolean;
  /** The claim's timestamp. */
  readonly claimAt: () => ClaimOptions;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const reasonOf = (error: unknown): string =>
  StoreError.isInstance(error) ? (error as StoreError).reason : "other";

/** Runs the jobs through `workers` (one loop each, one shared queue) until the queue is empty. */
export async function runFailoverLoad(
  workers: readonly RedisStore[],
  options: FailoverLoadOptions,
): Promise<FailoverLoad> {
  const keys = Array.from({ length: options.jobs }, (_, i) => `job-${i}`);
  const queue = [...keys, ...keys].map((key) => ({ key, tries: 0 }));
  const load: FailoverLoad = {
    runs: new Map(),
    claimed: new Set(),
    settled: new Set(),
    errors: new Map(),
  };
  const count = (error: unknown): string => {
    const reason = reasonOf(error);
    load.errors.set(reason, (load.errors.get(reason) ?? 0) + 1);
    return reason;
  };
  let answered = 0;
  async function work(store: RedisStore): Promise<void> {
    for (;;) {
      const job = queue.shift();
      if (job === undefined) return;
      let result: ClaimResult;
      try {
        result = await store.claim(job.key, "h", options.claimAt());
      } catch (error) {
        const reason = count(error);
        if ((options.requeue?.(reason) ?? true) && job.tries++ < options.retries) {
          await sleep(50);
          queue.push(job);
        }
        continue;
      }
      if (result.status !== "claimed") continue;
      load.claimed.add(job.key);
      answered += 1;
      options.onAnswered(answered);
      load.runs.set(job.key, (load.runs.get(job.key) ?? 0) + 1);
      try {
        await store.settle(job.key, "succeeded", { now: Date.now(), result: job.key });
        load.settled.add(job.key);
      } catch (error) {
        count(error);
      }
    }
  }
  await Promise.all(workers.map(work));
  return load;
}

/**
 * The claims the store answered that `reader` no longer finds, and the answered settles it holds
 * unsettled; and the jobs that ran more than once.
 */
export async function failoverLosses(
  reader: RedisStore,
  load: FailoverLoad,
): Promise<{ lost: string[]; twice: [string, number][] }> {
  const lost: string[] = [];
  for (const key of load.claimed) {
    const entry = await reader.entry(key).catch(() => undefined);
    if (entry === undefined) lost.push(key);
    else if (load.settled.has(key) && entry.state !== "succeeded") lost.push(key);
  }
  const twice = [...load.runs].filter(([, n]) => n > 1);
  return { lost, twice };
}

/** How many store errors the load met, whatever their reason. */
export const errorCount = (load: FailoverLoad): number =>
  [...load.errors.values()].reduce((a, b) => a + b, 0);
