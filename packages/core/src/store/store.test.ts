import { describe, expect, it } from "vitest";
import { GovernorError } from "../errors.ts";
import { checkAddOutcome, isHeld } from "./store.ts";

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

describe("isHeld", () => {
  const hold = { holdMs: 100, heldSince: 1_000, claimedAt: 7 };

  it("holds until the hold runs out, for every claimer but the one naming its claim", () => {
    expect(isHeld(hold, 1_099, undefined)).toBe(true);
    expect(isHeld(hold, 1_099, 8)).toBe(true);
    expect(isHeld(hold, 1_099, 7)).toBe(false);
    expect(isHeld(hold, 1_100, undefined)).toBe(false);
    expect(isHeld({ ...hold, holdMs: 0 }, 1_000, undefined)).toBe(false);
  });

  it("a hold that names no claim is passed by no claimer until it runs out, as Redis's script reads it", () => {
    const claimless = { holdMs: 100, heldSince: 1_000 };
    // Was free for a claimer naming nothing: the hold kept out only those that named a claim.
    expect(isHeld(claimless, 1_050, undefined)).toBe(true);
    expect(isHeld(claimless, 1_050, 7)).toBe(true);
    expect(isHeld(claimless, 1_100, undefined)).toBe(false);
  });
});
