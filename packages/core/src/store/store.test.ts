import { describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import { checkAddOutcome } from "./store.ts";

const ok = { now: 1_000, halfLifeMs: 60_000, ttlMs: 3_600_000 };

describe("checkAddOutcome", () => {
  it("answers the options with by filled in (1 by default)", () => {
    expect(checkAddOutcome("retry_paid", ok)).toEqual({ ...ok, by: 1 });
    expect(checkAddOutcome("retry_paid", { ...ok, by: 2.5 })).toEqual({ ...ok, by: 2.5 });
    expect(checkAddOutcome("retry_paid", { ...ok, now: 0 }).now).toBe(0);
  });

  it.each([
    ["", ok, 'addOutcome: field must be a non-empty string not starting with "@", got "".'],
    ["@t", ok, 'addOutcome: field must be a non-empty string not starting with "@", got "@t".'],
    ["f", { ...ok, by: 0 }, "addOutcome: by must be a positive finite number, got 0."],
    ["f", { ...ok, by: Number.NaN }, "addOutcome: by must be a positive finite number, got NaN."],
    ["f", { ...ok, now: -1 }, "addOutcome: now must be epoch ms (a finite number >= 0), got -1."],
    [
      "f",
      { ...ok, halfLifeMs: Number.POSITIVE_INFINITY },
      "addOutcome: halfLifeMs must be a positive finite number of ms, got Infinity.",
    ],
    ["f", { ...ok, ttlMs: 0 }, "addOutcome: ttlMs must be a positive finite number of ms, got 0."],
  ])("refuses field %j with %j, naming what it accepts", (field, options, message) => {
    let thrown: unknown;
    try {
      checkAddOutcome(field, options);
    } catch (error) {
      thrown = error;
    }
    expect(GovernorError.isInstance(thrown) && thrown.code).toBe("invalid_options");
    expect((thrown as Error).message).toBe(message);
  });
});
