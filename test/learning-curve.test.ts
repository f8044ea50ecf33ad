// scripts/learning-curve.ts scores a set as `pnpm eval` scores a blind set, with a candidate text
// model injected, and optionally lets a sure reading override a built-in rule. A hand-made model
// and three texts pin what it counts: no training, no blind line.
import { describe, expect, it } from "vitest";
import type { TextModel } from "../packages/core/src/judge/text-model.ts";
import { type Line, scoreSet, textsOf } from "../scripts/learning-curve.ts";

/** Reads `frobnicator` and `limit` as a stop, nothing else. */
const MODEL: TextModel = {
  v: 1,
  trainedOn: "test",
  bias: [0, 0, 0, 0],
  weights: { "w:frobnicator": [0, 0, 0, 6], "w:limit": [0, 0, 0, 6] },
};

const line = (over: Partial<Line> & Pick<Line, "text" | "label">): Line => ({
  id: "x",
  server: "s",
  ambiguous: false,
  tool: "t",
  ...over,
});

// No rule reads it: the model decides (a stop, right).
const UNRULED = line({ text: "the frobnicator glitched", label: "stop" });
// A built-in rule reads a correction; the model reads a stop (sure): on a read only an override
// takes it (on a write the dispute alone stops it: disputedByModel).
const RULED = line({
  text: "Invalid value for parameter limit: must be at most 100",
  label: "stop",
  effect: "read_only",
});
// A built-in rule reads a correction of a write labelled a stop, and the model knows no word of it:
// a stop of a mutating tool sent back as arguments.
const WRITE_RULED = line({
  text: "Invalid value for parameter page: must be at most 100",
  label: "stop",
  effect: "mutating",
});
// A rule reads a retry of a write labelled a stop: dangerous twice (a stop retried, a write retried).
const RETRIED = line({
  text: "Service temporarily unavailable (503), try again later",
  label: "stop",
  effect: "mutating",
  ambiguous: true,
});

describe("learning-curve scoring", () => {
  it("counts the model's decisions and the dangerous kinds as pnpm eval does", () => {
    const f = scoreSet([UNRULED, RULED, RETRIED, WRITE_RULED], MODEL);
    expect(f.unambiguous).toEqual({ correct: 1, total: 3 });
    expect(f.learned).toEqual({
      decided: 1,
      right: 1,
      defaultRight: 0,
      runDefaultRight: 0,
      overrides: 0,
    });
    // WRITE_RULED: a stop of a mutating tool sent back as arguments; RETRIED (ambiguous, still counted).
    expect(f.dangerous).toEqual({
      total: 2,
      personOnlyRetried: 1,
      mutatingStopAsArguments: 1,
      mutatingWriteRetried: 1,
    });
    expect(f.missesBySource).toEqual({
      model: { lines: 1, wrong: 0 },
      rule: { lines: 2, wrong: 2 },
    });
    expect(f.ruleLines).toEqual({ modelRightRuleWrong: 1, modelWrongRuleRight: 0 });
  });

  it("lets a sure reading override a rule only at or above its bar", () => {
    const over = scoreSet([UNRULED, RULED], MODEL, { sureAt: 0.9, rules: "corrections" });
    expect(over.unambiguous).toEqual({ correct: 2, total: 2 });
    expect(over.learned.overrides).toBe(1);
    expect(over.dangerous.total).toBe(0);
    // The reading is e^6 / (e^6 + 3) ≈ 0.993: a bar above it leaves the rule.
    const under = scoreSet([RULED], MODEL, { sureAt: 0.999, rules: "any" });
    expect(under.learned.overrides).toBe(0);
    expect(under.unambiguous.correct).toBe(0);
    // On a write the sure stop the model reads against the rule's correction stops it unasked.
    const write = scoreSet([{ ...RULED, effect: "mutating" }], MODEL, {
      sureAt: 0.999,
      rules: "any",
    });
    expect(write.learned.overrides).toBe(0);
    expect(write.unambiguous.correct).toBe(1);
    expect(write.dangerous.total).toBe(0);
  });

  it("trains on the non-ambiguous lines unless told to take them all", () => {
    const sets = [{ name: "a", lines: [UNRULED, RULED, RETRIED] }];
    expect(textsOf(sets)).toHaveLength(2);
    expect(textsOf(sets, true)).toHaveLength(3);
  });
});
