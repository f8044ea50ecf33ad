import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "./memory-store.ts";
import type { LedgerEntry } from "./store.ts";

/**
 * The memory store's replay results under a byte budget (maxResultBytes), against a plain model:
 * whatever the budget and the order of claims, settles, expiries and reads, a `succeeded` entry
 * reads either its own last result or `resultUnavailable: true` (replayed as done, never run
 * again), never another key's result, an older result of its own, or nothing at all; an entry in
 * any other state carries neither.
 */
describe("memory store: replay results under a byte budget", () => {
  it("a succeeded entry reads its own last result or resultUnavailable, nothing else", () => {
    const op = fc.tuple(
      fc.oneof(
        { weight: 1, arbitrary: fc.constantFrom("claim", "failed", "uncertain", "tick") },
        { weight: 2, arbitrary: fc.constant("succeeded") },
        { weight: 3, arbitrary: fc.constant("read") },
      ),
      fc.integer({ min: 0, max: 3 }),
      fc.string({ maxLength: 60 }),
    );
    let kept = 0;
    let unavailable = 0;
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.array(op, { maxLength: 80 }),
        (budget, ops) => {
          let t = 1_000;
          const store = createMemoryStore({
            maxResultBytes: budget,
            retentionMs: 50,
            now: () => t,
          });
          // The last result each key was settled `succeeded` with, as JSON text.
          const model = new Map<string, string>();
          for (const [kind, k, payload] of ops) {
            const key = `k${k}`;
            if (kind === "tick") t += 7;
            else if (kind === "claim") {
              store.claim(key, "h", { now: t, allowUncertain: true, leaseMs: 1_000 });
            } else if (kind === "succeeded") {
              store.settle(key, "succeeded", { now: t, result: { p: payload } });
              model.set(key, JSON.stringify({ p: payload }));
            } else if (kind === "failed" || kind === "uncertain") {
              store.settle(key, kind, { now: t });
              model.delete(key);
            } else {
              const e = store.entry(key) as LedgerEntry | undefined;
              if (e === undefined) continue;
              if (e.state !== "succeeded") {
                expect(e.result, key).toBeUndefined();
                expect(e.resultUnavailable, key).toBeUndefined();
              } else if (e.result !== undefined) {
                kept++;
                expect(JSON.stringify(e.result), key).toBe(model.get(key));
              } else {
                unavailable++;
                expect(e.resultUnavailable, key).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 1_000 },
    );
    // Both sides were seen: results kept, and results the budget let go.
    expect(kept).toBeGreaterThan(100);
    expect(unavailable).toBeGreaterThan(30);
  });
});
