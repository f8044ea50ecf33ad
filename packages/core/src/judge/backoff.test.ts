import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BackoffSettings, backoffDelay } from "./backoff.ts";

const settings: BackoffSettings = { baseDelayMs: 200, maxDelayMs: 10_000, maxHintMs: 30_000 };
/** The largest double below 1: the top of the jitter range. */
const TOP = 1 - Number.EPSILON / 2;
const at = (r: number) => () => r;

describe("backoffDelay", () => {
  it("doubles the ceiling with each attempt, from the base delay", () => {
    expect(backoffDelay(1, settings, at(TOP))).toBe(199);
    expect(backoffDelay(2, settings, at(TOP))).toBe(399);
    expect(backoffDelay(3, settings, at(TOP))).toBe(799);
    expect(backoffDelay(4, settings, at(0.5))).toBe(800);
  });

  it("never exceeds maxDelayMs, however many attempts were made", () => {
    expect(backoffDelay(7, settings, at(TOP))).toBe(9_999);
    expect(backoffDelay(20, settings, at(TOP))).toBe(9_999);
    expect(backoffDelay(6, { ...settings, maxDelayMs: 6_400 }, at(TOP))).toBe(6_399);
  });

  it("reads an attempt below 1 as the first (no ceiling under the base delay)", () => {
    expect(backoffDelay(0, settings, at(TOP))).toBe(199);
  });

  it("uses full jitter: from 0 up to, never reaching, the ceiling, rounded down", () => {
    expect(backoffDelay(1, settings, at(0))).toBe(0);
    expect(backoffDelay(1, settings, at(0.25))).toBe(50);
    expect(backoffDelay(1, settings, at(0.0049))).toBe(0);
    expect(backoffDelay(2, { ...settings, baseDelayMs: 3 }, at(0.5))).toBe(3);
  });

  it("waits at least as long as the server's hint, rounded up to a whole ms", () => {
    expect(backoffDelay(1, settings, at(0), 1_500)).toBe(1_500);
    expect(backoffDelay(1, settings, at(0), 1_500.2)).toBe(1_501);
    // The jittered delay wins when it is longer than the hint.
    expect(backoffDelay(3, settings, at(TOP), 100)).toBe(799);
    // A zero hint is a hint: the jittered delay stands.
    expect(backoffDelay(1, settings, at(0.5), 0)).toBe(100);
  });

  it("honors a hint up to maxHintMs inclusive, and gives up beyond it", () => {
    expect(backoffDelay(1, settings, at(0), 30_000)).toBe(30_000);
    expect(backoffDelay(1, settings, at(0), 30_000.5)).toBeUndefined();
    expect(backoffDelay(1, settings, at(0), 30_001)).toBeUndefined();
    expect(backoffDelay(1, { ...settings, maxHintMs: 0 }, at(0), 0)).toBe(0);
    expect(backoffDelay(1, { ...settings, maxHintMs: 0 }, at(0), 1)).toBeUndefined();
  });

  it("property: without a hint the delay is a whole number in [0, min(max, base * 2^(n-1)))", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 0, max: TOP, noNaN: true }),
        fc.integer({ min: 1, max: 5_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        (attempt, r, base, max) => {
          const d = backoffDelay(
            attempt,
            { ...settings, baseDelayMs: base, maxDelayMs: max },
            at(r),
          );
          const ceiling = Math.min(max, base * 2 ** (attempt - 1));
          expect(Number.isInteger(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThan(ceiling);
        },
      ),
    );
  });
});
