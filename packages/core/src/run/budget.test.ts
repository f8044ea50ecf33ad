import { describe, expect, it } from "vitest";
import { loadPolicy } from "../policy/policy.ts";
import { createRunBudgets } from "./budget.ts";

const limits = (over: object = {}) => loadPolicy({ budgets: over }).budgets;

describe("createRunBudgets", () => {
  it("takes up to the limit, then refuses without taking", () => {
    const b = createRunBudgets(limits({ retries: 2 }));
    expect(b.has("retries")).toBe(true);
    expect(b.take("retries")).toBe(true);
    expect(b.take("retries")).toBe(true);
    expect(b.has("retries")).toBe(false);
    expect(b.take("retries")).toBe(false);
    expect(b.used().retries).toBe(2);
  });

  it("a zero budget allows nothing", () => {
    const b = createRunBudgets(limits({ switches: 0, corrections: 0 }));
    expect(b.has("switches")).toBe(false);
    expect(b.take("switches")).toBe(false);
    expect(b.take("corrections")).toBe(false);
    expect(b.used()).toMatchObject({ switches: 0, corrections: 0 });
  });

  it("keeps each budget apart", () => {
    const b = createRunBudgets(limits({ calls: 1, failures: 1 }));
    expect(b.take("calls")).toBe(true);
    expect(b.take("calls")).toBe(false);
    expect(b.has("failures")).toBe(true);
    expect(b.take("failures")).toBe(true);
    expect(b.used()).toEqual({ calls: 1, failures: 1, retries: 0, corrections: 0, switches: 0 });
  });

  it("starts every counter at zero", () => {
    expect(createRunBudgets(limits()).used()).toEqual({
      calls: 0,
      failures: 0,
      retries: 0,
      corrections: 0,
      switches: 0,
    });
  });

  it("a refund gives back one unit, and never more than was taken", () => {
    const b = createRunBudgets(limits({ corrections: 1 }));
    b.refund("corrections");
    expect(b.used().corrections).toBe(0);
    // A refund without a take must not make room for a second unit.
    expect(b.take("corrections")).toBe(true);
    expect(b.take("corrections")).toBe(false);
    b.refund("corrections");
    expect(b.used().corrections).toBe(0);
    expect(b.has("corrections")).toBe(true);
    expect(b.take("corrections")).toBe(true);
  });

  it("used() is a snapshot the caller cannot write through", () => {
    const b = createRunBudgets(limits({ calls: 2 }));
    const before = b.used();
    b.take("calls");
    expect(before.calls).toBe(0);
    (b.used() as Record<string, number>).calls = 99;
    expect(b.used().calls).toBe(1);
    expect(b.take("calls")).toBe(true);
  });

  it("counters made from another run's start with what it used; ownOf leaves that out", () => {
    const before = createRunBudgets(limits({ calls: 3, retries: 1 }));
    before.take("calls");
    before.take("calls");
    before.take("retries");
    const after = createRunBudgets(limits({ calls: 3, retries: 1 }), before);
    expect(after.used()).toEqual({
      calls: 2,
      failures: 0,
      retries: 1,
      corrections: 0,
      switches: 0,
    });
    expect(after.has("retries")).toBe(false);
    expect(after.take("calls")).toBe(true);
    expect(after.take("calls")).toBe(false);
    expect([after.usedOf("calls"), after.ownOf("calls"), after.ownOf("retries")]).toEqual([
      3, 1, 0,
    ]);
    // Apart from then on: what the first takes later is not the second's.
    before.refund("calls");
    expect(after.usedOf("calls")).toBe(3);
  });
});
