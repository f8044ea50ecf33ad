import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HeavyHitters } from "./heavy-hitters.ts";

function exact(stream: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const key of stream) counts.set(key, (counts.get(key) ?? 0) + 1);
  return counts;
}

describe("HeavyHitters (Space-Saving)", () => {
  it("keeps what it promises on any stream: never under, over by at most error <= N/k, every key above N/k tracked", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.integer({ min: 0, max: 40 }), { maxLength: 400 }),
        (k, raw) => {
          const stream = raw.map((n) => `k${n}`);
          const hh = new HeavyHitters<undefined>(k, () => undefined);
          for (const key of stream) hh.add(key);
          const truth = exact(stream);
          const n = stream.length;
          expect(hh.size).toBeLessThanOrEqual(k);
          expect(hh.total).toBe(n);
          for (const e of hh.top()) {
            const t = truth.get(e.key) ?? 0;
            expect(e.count).toBeGreaterThanOrEqual(t);
            expect(e.count - t).toBeLessThanOrEqual(e.error);
            expect(e.error).toBeLessThanOrEqual(n / k);
          }
          for (const [key, t] of truth) {
            if (t > n / k) expect(hh.get(key), key).toBeDefined();
          }
        },
      ),
    );
  });

  it("is exact while the keys fit", () => {
    const hh = new HeavyHitters<undefined>(3, () => undefined);
    for (const key of ["a", "b", "a", "c", "a", "b"]) hh.add(key);
    expect(hh.top().map((e) => [e.key, e.count, e.error])).toEqual([
      ["a", 3, 0],
      ["b", 2, 0],
      ["c", 1, 0],
    ]);
    expect(hh.maxError).toBe(0);
  });

  it("finds the one frequent key among a million distinct ones in 100 slots", () => {
    const hh = new HeavyHitters<undefined>(100, () => undefined);
    for (let i = 0; i < 1_000_000; i++) hh.add(i % 10 === 0 ? "hot" : `cold-${i}`);
    const [first] = hh.top(1);
    expect(first?.key).toBe("hot");
    expect(first?.count).toBeGreaterThanOrEqual(100_000);
    expect((first?.count ?? 0) - 100_000).toBeLessThanOrEqual(first?.error ?? 0);
    expect(hh.size).toBe(100);
  });

  it("refuses a capacity it cannot keep", () => {
    expect(() => new HeavyHitters(0, () => undefined)).toThrow(
      /capacity must be a whole number >= 1, got 0/,
    );
  });
});
