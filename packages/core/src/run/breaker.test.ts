import { describe, expect, it } from "vitest";
import { type BreakerSettings, breakerAfter, breakerCheck } from "./breaker.ts";

const settings: BreakerSettings = { threshold: 3, cooldownMs: 30_000 };

describe("breakerCheck", () => {
  it("lets calls through while closed", () => {
    expect(breakerCheck(undefined, settings, 0).verdict).toBe("closed");
    // Failures below the threshold do not open it.
    expect(breakerCheck({ failures: 2 }, settings, 0).verdict).toBe("closed");
  });

  it("refuses calls for the whole cool-down, then lets a probe through at its end", () => {
    const state = { failures: 3, openedAt: 1_000 };
    expect(breakerCheck(state, settings, 1_000).verdict).toBe("open");
    expect(breakerCheck(state, settings, 30_999).verdict).toBe("open");
    expect(breakerCheck(state, settings, 31_000).verdict).toBe("probe");
    expect(breakerCheck(state, settings, 90_000).verdict).toBe("probe");
  });

  it("opens at epoch 0 too (openedAt 0 is a time, not an absence)", () => {
    expect(breakerCheck({ failures: 3, openedAt: 0 }, settings, 10).verdict).toBe("open");
  });

  it("a zero cool-down probes at once", () => {
    const state = { failures: 3, openedAt: 5 };
    expect(breakerCheck(state, { threshold: 3, cooldownMs: 0 }, 5).verdict).toBe("probe");
  });
});

describe("breakerAfter", () => {
  it("a success closes the breaker and forgets the failures", () => {
    expect(breakerAfter(undefined, settings, "success", 0)).toBeUndefined();
    expect(breakerAfter({ failures: 2 }, settings, "success", 0)).toBeUndefined();
    expect(breakerAfter({ failures: 9, openedAt: 1 }, settings, "success", 5)).toBeUndefined();
  });

  it("counts consecutive failures and opens at the threshold, at the time of the last", () => {
    const one = breakerAfter(undefined, settings, "failure", 10);
    expect(one).toEqual({ failures: 1 });
    const two = breakerAfter(one, settings, "failure", 20);
    expect(two).toEqual({ failures: 2 });
    expect(breakerCheck(two, settings, 20).verdict).toBe("closed");
    const three = breakerAfter(two, settings, "failure", 30);
    expect(three).toEqual({ failures: 3, openedAt: 30 });
    expect(breakerCheck(three, settings, 30).verdict).toBe("open");
  });

  it("a threshold of 1 opens on the first failure", () => {
    expect(breakerAfter(undefined, { ...settings, threshold: 1 }, "failure", 7)).toEqual({
      failures: 1,
      openedAt: 7,
    });
  });

  it("a failed probe opens it again for a new cool-down, even below the threshold", () => {
    const reopened = breakerAfter({ failures: 4, openedAt: 0 }, settings, "failure", 40_000);
    expect(reopened).toEqual({ failures: 5, openedAt: 40_000 });
    expect(breakerCheck(reopened, settings, 60_000).verdict).toBe("open");
    // The threshold may have been raised since it opened: an open breaker still stays open.
    const raised = { threshold: 10, cooldownMs: 30_000 };
    expect(breakerAfter({ failures: 1, openedAt: 0 }, raised, "failure", 50)).toEqual({
      failures: 2,
      openedAt: 50,
    });
  });
});
