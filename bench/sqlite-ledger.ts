/**
 * The idempotency ledger's cost on an SQLite file (@governor/sqlite): sequential claim+settle pairs
 * on fresh keys (what one mutating call adds; each commit is fsynced), next to the same pairs on
 * the memory store as the baseline, in one process after a warm-up. Needs Node 22.13 or later
 * (node:sqlite); not part of `pnpm bench`, which runs on the repo's lowest Node too.
 *
 *   node --conditions=source --import tsx bench/sqlite-ledger.ts
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createMemoryStore, type Store } from "@governor/core";
import { createSqliteStore } from "@governor/sqlite";
import { median } from "./stats.ts";

export interface SqliteLedgerBench {
  /** Median µs of a claim followed by a settle on the file. */
  readonly medianUs: number;
  /** 99th percentile µs of the same. */
  readonly p99Us: number;
  /** Claim+settle pairs per second on the file, one after another. */
  readonly pairsPerSecond: number;
  /** Baseline: median µs of the same pair on the memory store. */
  readonly memoryMedianUs: number;
  readonly samples: number;
}

function pairs(store: Store, prefix: string, count: number): number[] {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    store.claim(`${prefix}${i}`, "h", { now: Date.now(), allowUncertain: false, leaseMs: 30_000 });
    store.settle(`${prefix}${i}`, "succeeded", { now: Date.now(), result: { ok: i } });
    times.push((performance.now() - t) * 1000);
  }
  return times;
}

export function benchSqliteLedger(samples = 2_000, warmup = 200): SqliteLedgerBench {
  const dir = mkdtempSync(join(tmpdir(), "governor-bench-sqlite-"));
  const file = createSqliteStore({ path: join(dir, "ledger.db") });
  const memory = createMemoryStore();
  try {
    pairs(file, "warm:", warmup);
    pairs(memory, "warm:", warmup);
    const started = performance.now();
    const onFile = pairs(file, "k:", samples);
    const elapsed = performance.now() - started;
    const onMemory = pairs(memory, "k:", samples);
    const sorted = [...onFile].sort((a, b) => a - b);
    return {
      medianUs: Math.round(median(onFile)),
      p99Us: Math.round(sorted[Math.floor(samples * 0.99)] ?? 0),
      pairsPerSecond: Math.round((samples / elapsed) * 1000),
      memoryMedianUs: Math.round(median(onMemory) * 10) / 10,
      samples,
    };
  } finally {
    file.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(`${JSON.stringify(benchSqliteLedger(), null, 2)}\n`);
}
