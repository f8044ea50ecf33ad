import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Classification } from "./classify.ts";
import { type DecideContext, decide } from "./decide.ts";

const base = (
  c: Partial<Classification>,
  extra: Partial<DecideContext> = {},
  policy = {},
): DecideContext => ({
  classification: {
    action: "retry_dependency",
    reason: "unavailable",
    certainty: "failed",
    source: "rule",
    ...c,
  },
  tool: resolveToolPolicy(loadPolicy(policy), "t"),
  effect: "read_only",
  attempt: 1,
  repeats: 1,
  keyed: false,
  remainingMs: Number.POSITIVE_INFINITY,
  random: () => 0.5,
  ...extra,
});

describe("decide", () => {
  it("retries with full jitter until the attempt cap", () => {
    expect(decide(base({}))).toMatchObject({ action: "retry_dependency", delayMs: 100 });
    expect(decide(base({}, { attempt: 2 }))).toMatchObject({
      action: "retry_dependency",
      delayMs: 200,
    });
    expect(decide(base({}, { attempt: 3 }))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
  });

  it("never retries an uncertain mutation without a key or a verify answer", () => {
    const c = { certainty: "unknown" as const, reason: "timeout" as const };
    expect(decide(base(c, { effect: "mutating" }))).toMatchObject({
      action: "stop",
      reason: "uncertain_mutation",
      personResolvable: true,
    });
    expect(decide(base(c, { effect: "mutating", keyed: true })).action).toBe("retry_dependency");
    expect(decide(base(c, { effect: "mutating", verified: "absent" })).action).toBe(
      "retry_dependency",
    );
    expect(decide(base(c, { effect: "idempotent" })).action).toBe("retry_dependency");
    expect(decide(base({ certainty: "failed" }, { effect: "mutating" })).action).toBe(
      "retry_dependency",
    );
  });

  it("a keyed write of unknown outcome whose retries are over stops as uncertain_mutation", () => {
    // Retried with its key, it may still have happened: another tool would write a second time,
    // and a stop for the retries alone would not say the write may have happened.
    const c = { certainty: "unknown" as const, reason: "timeout" as const };
    const alts = { tools: { t: { alternatives: ["u"] } } };
    const keyedWrite = { effect: "mutating" as const, keyed: true };
    for (const extra of [
      { attempt: 3 },
      { attempt: 1, serverRetryBudgetEmpty: true },
      { attempt: 1, exhausted: ["retries" as const] },
      { attempt: 1, exhausted: ["failures" as const] },
      { attempt: 1, remainingMs: 1 },
    ]) {
      for (const policy of [{}, alts]) {
        expect(decide(base(c, { ...keyedWrite, ...extra }, policy))).toMatchObject({
          action: "stop",
          reason: "uncertain_mutation",
          personResolvable: true,
        });
      }
    }
    // A verify step that found no effect makes giving up safe: the switch stays.
    expect(decide(base(c, { ...keyedWrite, attempt: 3, verified: "absent" }, alts))).toMatchObject({
      action: "switch_tool",
    });
    // Not a write, or a write that certainly failed: as before.
    expect(decide(base(c, { effect: "idempotent", attempt: 3 }, alts)).action).toBe("switch_tool");
    expect(decide(base({ certainty: "failed" }, { ...keyedWrite, attempt: 3 })).reason).toBe(
      "retries_exhausted",
    );
  });

  it("switches when retries run out and alternatives exist", () => {
    const d = decide(base({}, { attempt: 3 }, { tools: { t: { alternatives: ["u"] } } }));
    expect(d).toMatchObject({ action: "switch_tool", alternatives: ["u"] });
  });

  it("switches budget: a retry that gives up does not switch when switches are spent", () => {
    const alts = { tools: { t: { alternatives: ["u"] } } };
    // The stop names the budget that refused the switch, not the retries that led to it.
    expect(decide(base({}, { attempt: 3, exhausted: ["switches"] }, alts))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "switches",
    });
    expect(
      decide(base({}, { attempt: 1, exhausted: ["retries", "switches"] }, alts)),
    ).toMatchObject({ action: "stop", reason: "budget_exhausted", budget: "switches" });
    // Without alternatives no switch was refused: the retries' own reason stands.
    expect(decide(base({}, { attempt: 3, exhausted: ["switches"] }))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
    expect(decide(base({}, { attempt: 1, exhausted: ["retries", "switches"] }))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "retries",
    });
    // Other spent budgets do not stop the switch.
    expect(decide(base({}, { attempt: 3, exhausted: ["corrections"] }, alts)).action).toBe(
      "switch_tool",
    );
    // The switch reaches the model, so the repeat rule holds for it too.
    expect(decide(base({}, { attempt: 3, repeats: 3 }, alts))).toMatchObject({
      action: "stop",
      reason: "repeated_failure",
    });
  });

  it("a model action checks its own budget and the failures budget", () => {
    const switching = { action: "switch_tool" as const, reason: "not_supported" as const };
    expect(decide(base(switching, { exhausted: ["switches"] }))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "switches",
    });
    expect(decide(base(switching, { exhausted: ["corrections"] })).action).toBe("switch_tool");
    expect(decide(base(switching, { exhausted: ["failures"] }))).toMatchObject({
      budget: "failures",
    });
    expect(decide(base({}, { exhausted: ["failures"] }))).toMatchObject({
      action: "stop",
      budget: "failures",
    });
  });

  it("does not retry past the deadline, nor when the server retry budget is empty", () => {
    expect(decide(base({}, { remainingMs: 50 }))).toMatchObject({
      action: "stop",
      reason: "deadline_exceeded",
    });
    expect(decide(base({}, { serverRetryBudgetEmpty: true }))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
  });

  it("hands the model no correction or switch once the run's deadline has passed: no call could follow it", () => {
    const alts = { tools: { t: { alternatives: ["u"] } } };
    const late = { remainingMs: 0 };
    const deadline = { action: "stop", reason: "deadline_exceeded" };
    // A retry that cannot wait gives up: with no time left, not to another tool.
    expect(decide(base({}, late, alts))).toMatchObject(deadline);
    expect(decide(base({}, { remainingMs: -5, attempt: 3 }, alts))).toMatchObject(deadline);
    const correcting = { action: "correct_arguments" as const, reason: "not_found" as const };
    expect(decide(base(correcting, late))).toMatchObject(deadline);
    const switching = { action: "switch_tool" as const, reason: "not_supported" as const };
    expect(decide(base(switching, late))).toMatchObject(deadline);
    // With time left, the same failures go to the model as before.
    expect(decide(base({}, { remainingMs: 1 }, alts)).action).toBe("switch_tool");
    expect(decide(base(correcting, { remainingMs: 1 })).action).toBe("correct_arguments");
    expect(decide(base(switching, { remainingMs: 1 })).action).toBe("switch_tool");
  });

  it("stops on repeats and spent budgets", () => {
    const c = { action: "correct_arguments" as const, reason: "not_found" as const };
    expect(decide(base(c, { repeats: 3 }))).toMatchObject({
      action: "stop",
      reason: "repeated_failure",
      cause: "not_found",
    });
    expect(decide(base(c, { exhausted: ["corrections"] }))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "corrections",
    });
    expect(decide(base({}, { exhausted: ["retries"] }))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "retries",
    });
  });

  it("routes host failures to the host", () => {
    expect(decide(base({ action: "host", reason: "protocol_error" }))).toMatchObject({
      action: "host",
    });
  });

  it("property: a retry delay is within [0, cap] and never reaches the deadline", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        fc.integer({ min: 1, max: 100_000 }),
        (attempt, r, remaining) => {
          const d = decide(
            base(
              {},
              { attempt, random: () => r, remainingMs: remaining },
              { defaults: { retry: { attempts: 20 } } },
            ),
          );
          if (d.action === "retry_dependency") {
            expect(d.delayMs).toBeGreaterThanOrEqual(0);
            expect(d.delayMs).toBeLessThanOrEqual(10_000);
            expect(d.delayMs).toBeLessThan(remaining);
          } else {
            expect(d).toMatchObject({ action: "stop", reason: "deadline_exceeded" });
          }
        },
      ),
    );
  });

  it("property: an uncertain unkeyed mutation is never retried", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("timeout", "upstream_error", "connection_closed", "network_error"),
        fc.integer({ min: 1, max: 5 }),
        (reason, attempt) => {
          const d = decide(
            base(
              { reason: reason as "timeout", certainty: "unknown" },
              { effect: "mutating", attempt },
            ),
          );
          expect(d.action).toBe("stop");
        },
      ),
    );
  });
});

describe("decide: where an uncertain_mutation stop can come from (the run asks decide only for retries before the verify step)", () => {
  it("property: besides a retry, only a stop classified uncertain_mutation is one, and no other action draws a random number", async () => {
    const { REASONS } = await import("../types.ts");
    const reasons = Object.keys(REASONS) as Classification["reason"][];
    fc.assert(
      fc.property(
        fc.constantFrom("correct_arguments", "switch_tool", "stop", "host") as fc.Arbitrary<
          Classification["action"]
        >,
        fc.constantFrom(...reasons),
        fc.constantFrom("failed", "not_sent", "unknown") as fc.Arbitrary<
          Classification["certainty"]
        >,
        fc.constantFrom("read_only", "idempotent", "mutating") as fc.Arbitrary<
          DecideContext["effect"]
        >,
        fc.integer({ min: 1, max: 5 }),
        fc.boolean(),
        fc.subarray(["failures", "retries", "corrections", "switches"] as const),
        fc.option(
          fc.record({
            retry_paid: fc.nat(20),
            retry_futile: fc.nat(20),
            correct_paid: fc.nat(20),
            correct_futile: fc.nat(20),
            switch_paid: fc.nat(20),
            switch_futile: fc.nat(20),
          }),
          { nil: undefined },
        ),
        (action, reason, certainty, effect, repeats, keyed, exhausted, learned) => {
          let draws = 0;
          const d = decide(
            base(
              { action, reason, certainty },
              {
                effect,
                repeats,
                keyed,
                exhausted,
                ...(learned !== undefined && { learned }),
                random: () => {
                  draws += 1;
                  return 0.5;
                },
              },
              { tools: { t: { alternatives: ["u"] } } },
            ),
          );
          const uncertain = d.action === "stop" && d.reason === "uncertain_mutation";
          expect(uncertain).toBe(action === "stop" && reason === "uncertain_mutation");
          expect(draws).toBe(0);
        },
      ),
    );
  });
});
