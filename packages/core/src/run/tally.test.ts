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

  it("writes the summary's keys in one order, with or without a budget and a last failure, and a copy each time", () => {
    const order = [
      "runId",
      "reason",
      "budget",
      "personResolvable",
      "calls",
      "attempts",
      "actions",
      "retries",
      "failures",
      "fingerprints",
      "durationMs",
      "lastFailure",
      "observeOnly",
    ];
    const last = { tool: "t", reason: "timeout" as const, text: "x" };
    for (const budget of [false, true]) {
      for (const failed of [false, true]) {
        const tally = createRunTally();
        if (failed) tally.decision("stop", "aaaa", last, true);
        if (budget) tally.stop("budget_exhausted", "calls");
        const s = tally.summary("r", 1, 2, false);
        const keys = Object.keys(s);
        expect(keys).toEqual(
          order.filter((k) => (k !== "budget" || budget) && (k !== "lastFailure" || failed)),
        );
        // Each summary is a copy: changing one changes no later one.
        (s.actions as Record<string, number>).stop = 99;
        (s.fingerprints as Record<string, number>).zzzz = 1;
        const again = tally.summary("r", 1, 2, false);
        expect(again.actions.stop).toBe(failed ? 1 : 0);
        expect(again.fingerprints).toEqual(failed ? { aaaa: 1 } : {});
      }
    }
  });
});
