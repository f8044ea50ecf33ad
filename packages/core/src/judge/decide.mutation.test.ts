import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Certainty, Effect } from "../types.ts";
import type { Classification } from "./classify.ts";
import { type BudgetName, type DecideContext, decide, safeToRepeat } from "./decide.ts";

// Pins the edges of `decide` that mutation testing found untested (issue 8): exact boundaries,
// which budget a stop names, personResolvable both ways, and the fields each decision carries.

/**
 * The context's spent budget. `exhausted` is one budget name today and becomes a list of names
 * (issue 8's fix of the switches budget); a string answers both `=== name` and `.includes(name)`,
 * and no budget name contains another, so these tests hold for either shape.
 */
const spentBudget = (name: BudgetName) =>
  name as unknown as NonNullable<DecideContext["exhausted"]>;

const ctx = (
  c: Partial<Classification>,
  { spent, ...extra }: Partial<Omit<DecideContext, "exhausted">> & { spent?: BudgetName } = {},
  policy: object = {},
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
  ...(spent !== undefined && { exhausted: spentBudget(spent) }),
  ...extra,
});
const withAlternatives = { tools: { t: { alternatives: ["u", "v"] } } };

describe("safeToRepeat", () => {
  it("is false only for an unkeyed, unverified mutation of unknown outcome", () => {
    const certainties: Certainty[] = ["not_sent", "failed", "unknown"];
    const effects: Effect[] = ["read_only", "idempotent", "mutating"];
    for (const certainty of certainties) {
      for (const effect of effects) {
        for (const keyed of [false, true]) {
          for (const verified of [undefined, "absent", "present", "unknown"] as const) {
            const unsafe =
              certainty === "unknown" && effect === "mutating" && !keyed && verified !== "absent";
            expect(safeToRepeat(certainty, effect, keyed, verified)).toBe(!unsafe);
          }
        }
      }
    }
  });
});

describe("decide: retries", () => {
  it("retries until attempt reaches the attempt cap, exactly", () => {
    const p = { defaults: { retry: { attempts: 4 } } };
    expect(decide(ctx({}, { attempt: 3 }, p)).action).toBe("retry_dependency");
    expect(decide(ctx({}, { attempt: 4 }, p))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
  });

  it("carries the failure's reason and certainty into a retry, with the delay", () => {
    expect(decide(ctx({ reason: "rate_limited", certainty: "not_sent" }))).toEqual({
      action: "retry_dependency",
      reason: "rate_limited",
      certainty: "not_sent",
      delayMs: 100,
    });
  });

  it("retries while the delay ends before the deadline, and gives up when it reaches it", () => {
    // attempt 1, base 200, random 0.5: a delay of 100 ms.
    expect(decide(ctx({}, { remainingMs: 101 })).action).toBe("retry_dependency");
    expect(decide(ctx({}, { remainingMs: 100 }))).toMatchObject({
      action: "stop",
      reason: "deadline_exceeded",
    });
  });

  it("honors a server hint up to the cap and gives up on a longer one", () => {
    expect(decide(ctx({ retryAfterMs: 30_000 }))).toMatchObject({
      action: "retry_dependency",
      delayMs: 30_000,
    });
    expect(decide(ctx({ retryAfterMs: 30_001 }))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
    });
    expect(decide(ctx({ retryAfterMs: 30_001 }, {}, withAlternatives))).toMatchObject({
      action: "switch_tool",
      alternatives: ["u", "v"],
    });
  });

  it("a hint that reaches the deadline is a deadline stop", () => {
    expect(decide(ctx({ retryAfterMs: 5_000 }, { remainingMs: 5_000 }))).toMatchObject({
      action: "stop",
      reason: "deadline_exceeded",
    });
  });

  it("gives up when the server's retry budget is empty, switching when it can", () => {
    expect(decide(ctx({}, { serverRetryBudgetEmpty: false })).action).toBe("retry_dependency");
    expect(decide(ctx({}, { serverRetryBudgetEmpty: true }, withAlternatives))).toMatchObject({
      action: "switch_tool",
    });
  });

  it("a spent failures budget stops, even with alternatives", () => {
    const d = decide(ctx({}, { spent: "failures" }, withAlternatives));
    expect(d).toMatchObject({ action: "stop", reason: "budget_exhausted", budget: "failures" });
  });

  it("a spent retries budget switches when the policy names alternatives", () => {
    const d = decide(ctx({ reason: "timeout" }, { spent: "retries" }, withAlternatives));
    expect(d).toEqual({
      action: "switch_tool",
      reason: "timeout",
      certainty: "failed",
      alternatives: ["u", "v"],
    });
  });

  it("issue 8 (mutation): no switch when the switches budget is spent; the stop names that budget", () => {
    const d = decide(ctx({}, { attempt: 3, spent: "switches" }, withAlternatives));
    expect(d).toMatchObject({ action: "stop", reason: "budget_exhausted", budget: "switches" });
    // Without alternatives the attempts cap ended it: no budget is named.
    const capped = decide(ctx({}, { attempt: 3, spent: "switches" }));
    expect(capped).toMatchObject({ action: "stop", reason: "retries_exhausted" });
    expect(capped).not.toHaveProperty("budget");
  });

  it("a switch the retries would have made meets the repeat rule and the deadline before its budget, as a switch_tool class does", () => {
    const spent = { attempt: 3, spent: "switches" as const };
    expect(decide(ctx({}, { ...spent, repeats: 3 }, withAlternatives))).toMatchObject({
      reason: "repeated_failure",
    });
    expect(decide(ctx({}, { ...spent, remainingMs: 0 }, withAlternatives))).toMatchObject({
      reason: "deadline_exceeded",
    });
    const switching = { action: "switch_tool" as const, reason: "not_supported" as const };
    expect(decide(ctx(switching, { ...spent, repeats: 3 }))).toMatchObject({
      reason: "repeated_failure",
    });
  });

  it("budgets other than retries and failures do not stop a retry", () => {
    for (const exhausted of ["corrections", "switches", "calls"] as const) {
      expect(decide(ctx({}, { spent: exhausted })).action).toBe("retry_dependency");
    }
  });

  it("an uncertain mutation stops before any budget or attempt rule", () => {
    const d = decide(
      ctx(
        { certainty: "unknown", reason: "timeout" },
        { effect: "mutating", spent: "retries", attempt: 9 },
        withAlternatives,
      ),
    );
    expect(d).toMatchObject({
      action: "stop",
      reason: "uncertain_mutation",
      cause: "timeout",
      certainty: "unknown",
      personResolvable: true,
    });
  });

  it("a verify step that found the effect present does not make a retry safe", () => {
    const c = { certainty: "unknown" as const, reason: "timeout" as const };
    for (const verified of ["present", "unknown"] as const) {
      expect(decide(ctx(c, { effect: "mutating", verified })).reason).toBe("uncertain_mutation");
    }
  });
});

describe("decide: stops", () => {
  it("personResolvable is false for what no person can resolve", () => {
    expect(decide(ctx({}, { attempt: 3 }))).toMatchObject({
      action: "stop",
      reason: "retries_exhausted",
      cause: "unavailable",
      personResolvable: false,
    });
    expect(decide(ctx({ action: "stop", reason: "business_rule" }))).toMatchObject({
      personResolvable: false,
    });
    expect(
      decide(ctx({ action: "correct_arguments", reason: "not_found" }, { repeats: 3 })),
    ).toMatchObject({ reason: "repeated_failure", personResolvable: false });
  });

  it("personResolvable is true when either the stop reason or its cause is a person's to resolve", () => {
    // By the failure's cause: a repeated unauthorized failure.
    expect(
      decide(ctx({ action: "correct_arguments", reason: "unauthorized" }, { repeats: 3 })),
    ).toMatchObject({ reason: "repeated_failure", cause: "unauthorized", personResolvable: true });
    // By the stop's own reason.
    expect(decide(ctx({ action: "stop", reason: "quota_exceeded" }))).toMatchObject({
      personResolvable: true,
    });
  });

  it("a policy or classification stop keeps the failure's reason and certainty", () => {
    expect(decide(ctx({ action: "stop", reason: "forbidden", certainty: "unknown" }))).toEqual({
      action: "stop",
      reason: "forbidden",
      certainty: "unknown",
      cause: "forbidden",
      personResolvable: true,
    });
  });

  it("a stop names a budget only when a budget ran out", () => {
    const d = decide(ctx({ action: "correct_arguments", reason: "not_found" }, { repeats: 3 }));
    expect(d).not.toHaveProperty("budget");
  });

  it("host failures keep their reason and certainty", () => {
    expect(
      decide(ctx({ action: "host", reason: "session_expired", certainty: "not_sent" })),
    ).toEqual({ action: "host", reason: "session_expired", certainty: "not_sent" });
  });
});

describe("decide: corrections and switches", () => {
  const correct = { action: "correct_arguments" as const, reason: "not_found" as const };
  const sw = { action: "switch_tool" as const, reason: "unknown_tool" as const };

  it("stops on the maxRepeats-th repeat, exactly", () => {
    const p = { defaults: { maxRepeats: 4 } };
    expect(decide(ctx(correct, { repeats: 3 }, p)).action).toBe("correct_arguments");
    expect(decide(ctx(correct, { repeats: 4 }, p))).toMatchObject({
      action: "stop",
      reason: "repeated_failure",
    });
    expect(decide(ctx(sw, { repeats: 4 }, p))).toMatchObject({ reason: "repeated_failure" });
  });

  it("a correction spends the corrections budget, a switch the switches budget", () => {
    expect(decide(ctx(correct, { spent: "switches" })).action).toBe("correct_arguments");
    expect(decide(ctx(sw, { spent: "corrections" })).action).toBe("switch_tool");
    expect(decide(ctx(sw, { spent: "switches" }))).toMatchObject({
      action: "stop",
      reason: "budget_exhausted",
      budget: "switches",
      cause: "unknown_tool",
    });
    expect(decide(ctx(correct, { spent: "failures" }))).toMatchObject({
      reason: "budget_exhausted",
      budget: "failures",
    });
    expect(decide(ctx(sw, { spent: "failures" }))).toMatchObject({
      reason: "budget_exhausted",
      budget: "failures",
    });
    expect(decide(ctx(correct, { spent: "retries" })).action).toBe("correct_arguments");
  });

  it("a correction carries the failure's reason and certainty, and no alternatives", () => {
    expect(decide(ctx({ ...correct, certainty: "not_sent" }, {}, withAlternatives))).toEqual({
      action: "correct_arguments",
      reason: "not_found",
      certainty: "not_sent",
    });
  });

  it("a switch names the policy's alternatives", () => {
    expect(decide(ctx(sw, {}, withAlternatives))).toEqual({
      action: "switch_tool",
      reason: "unknown_tool",
      certainty: "failed",
      alternatives: ["u", "v"],
    });
  });
});
