import { describe, expect, it } from "vitest";
import { createRunTally } from "./tally.ts";

describe("createRunTally", () => {
  it("starts empty and completed", () => {
    expect(createRunTally().summary("r", 0, 5, false)).toEqual({
      runId: "r",
      reason: "completed",
      personResolvable: false,
      calls: 0,
      attempts: 0,
      actions: {
        correct_arguments: 0,
        retry_dependency: 0,
        switch_tool: 0,
        stop: 0,
        host: 0,
      },
      retries: 0,
      failures: 0,
      fingerprints: {},
      durationMs: 5,
      observeOnly: false,
    });
  });

  it("counts attempts, retries, decisions by action and fingerprint, and keeps the last failure", () => {
    const tally = createRunTally();
    tally.attempt();
    tally.attempt();
    tally.retry();
    const last = { tool: "t", reason: "rate_limited", text: "slow down" } as const;
    tally.decision("retry_dependency", "aaaa", last, true);
    tally.decision("retry_dependency", "aaaa", last, true);
    tally.decision("switch_tool", "bbbb", { ...last, reason: "denied_by_policy" }, false);
    const s = tally.summary("r", 2, 0, true);
    expect(s).toMatchObject({
      attempts: 2,
      retries: 1,
      failures: 2,
      fingerprints: { aaaa: 2, bbbb: 1 },
      actions: { retry_dependency: 2, switch_tool: 1 },
      lastFailure: { reason: "denied_by_policy" },
      observeOnly: true,
    });
    // A summary is a snapshot: later counts do not change it.
    tally.decision("stop", "cccc", last, true);
    expect(s.fingerprints).toEqual({ aaaa: 2, bbbb: 1 });
  });

  it("keeps the first stop's reason, budget and whether a person can resolve it", () => {
    const tally = createRunTally();
    tally.stop("budget_exhausted", "calls");
    tally.stop("aborted", undefined, false);
    tally.stopBeforeFailure();
    expect(tally.stopped).toEqual({
      reason: "budget_exhausted",
      budget: "calls",
      personResolvable: expect.any(Boolean),
    });
    expect(tally.summary("r", 0, 0, false)).toMatchObject({
      reason: "budget_exhausted",
      budget: "calls",
      actions: { stop: 1 },
    });
  });
});
