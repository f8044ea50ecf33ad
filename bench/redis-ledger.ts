import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { createRedisStore } from "@governor/redis";
import { percentile } from "./stats.ts";

/** Latency figures of one benchmark, in ms. */
export interface RedisLedgerBench {
  /** Median of a claim followed by a settle (two script round-trips). */
  readonly medianMs: number;
  /** 99th percentile of the same. */
  readonly p99Ms: number;
  /** Measured claim+settle pairs (after the warm-up). */
  readonly samples: number;
  /** Baseline: median of a plain GET round-trip on the same connection. */
  readonly baselineGetMedianMs: number;
}

/**
 * Measures the idempotency ledger's cost on a Redis server: sequential claim+settle pairs on fresh
 * keys (what one mutating call adds), after a warm-up, next to a plain GET as the baseline.
 * Entries are written under a fresh prefix with 1 s retention, so nothing is left behind.
 *
 * @default samples 2_000, warm-up 200
 */
export async function benchRedisLedger(
  url: string,
  samples = 2_000,
  warmup = 200,
): Promise<RedisLedgerBench> {
  const store = createRedisStore({
    url,
    prefix: `governor-bench:${randomUUID()}:`,
    retentionMs: 1_000,
  });
  try {
    const ledger: number[] = [];
    const baseline: number[] = [];
    for (let i = 0; i < warmup + samples; i++) {
      const key = `call-${i}`;
      const started = performance.now();
      const claim = await store.claim(key, "args", {
        now: Date.now(),
        allowUncertain: false,
        leaseMs: 30_000,
      });
      if (claim.status !== "claimed")
        throw new Error(`benchRedisLedger: claim answered ${claim.status}`);
      await store.settle(key, "succeeded", { now: Date.now(), result: { ok: true } });
      const between = performance.now();
      await store.get(key);
      const ended = performance.now();
      if (i >= warmup) {
        ledger.push(between - started);
        baseline.push(ended - between);
      }
    }
    return {
      medianMs: ms(ledger, 50),
      p99Ms: ms(ledger, 99),
      samples,
      baselineGetMedianMs: ms(baseline, 50),
    };
  } finally {
    await store.close();
  }
}

/** A percentile (0..100) of `values`, to the µs. */
function ms(values: readonly number[], p: number): number {
  return Math.round(percentile(values, p) * 1_000) / 1_000;
}
