import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Effect } from "../types.ts";
import { type Classification, classify, MODEL_BARS, takeReading } from "./classify.ts";
import { decide, stopsGuessedWrite } from "./decide.ts";
import { explainClassification } from "./explain.ts";
import { failureFromResult } from "./failure.ts";
import {
  checkModel,
  MODEL_CLASSES,
  readText,
  SHIPPED_TEXT_MODEL,
  type TextModel,
  textFeatures,
} from "./text-model.ts";

const textFailure = (text: string) =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });
const tool = (policy = {}) => resolveToolPolicy(loadPolicy(policy), "t");
/** What `decide` makes of a classification on a call's first attempt: no key, no deadline. */
const firstAttempt = (
  classification: Classification,
  effect: Effect,
  policy: ReturnType<typeof tool> = tool(),
) =>
  decide({
    classification,
    tool: policy,
    effect,
    attempt: 1,
    repeats: 1,
    keyed: false,
    remainingMs: Number.POSITIVE_INFINITY,
    random: () => 0.5,
  });

/** A model of a few hand-set weights: what each test expects follows from them. */
const toy: TextModel = {
  v: 1,
  trainedOn: "test",
  bias: [0, 0, 0, 0],
  weights: {
    "w:frobnicated": [3, 0, 0, 0],
    "w:wobbly": [0, 0, 0, 3],
    "w:gloom": [0.4, 0, 0, 0.3],
    "w:jitter": [0, 3, 0, 0],
    "w:flaky": [0, 1, 0, 0],
    "w:hazy": [2, 0, 0, 0.5],
    "w:murk": [0.2, 0, 0, 0.6],
    "w:tie": [0.5, 0, 0, 0.55],
    "w:shaky": [1.5, 3, 0, -2],
  },
};

describe("textFeatures", () => {
  it("reads words, bigrams, status-like numbers, quoted values and imperative cues", () => {
    const f = textFeatures(
      'Request failed with status 503: "orders-7" busy. Please contact your admin.',
    );
    expect(f).toEqual(
      expect.arrayContaining([
        "s:5xx",
        "s:503",
        "c:quoted",
        "c:imperative",
        "w:request",
        "b:request failed",
        "b:status #n",
        "w:#q",
        "b:contact your",
      ]),
    );
    expect(f).not.toContain("w:orders");
  });

  it("a function word is no feature alone, only in the pairs it forms", () => {
    const f = textFeatures("the frobnicator glitched in the widget");
    expect(f).not.toContain("w:the");
    expect(f).not.toContain("w:in");
    expect(f).toEqual(expect.arrayContaining(["w:frobnicator", "b:the frobnicator", "b:in the"]));
  });

  it("splits identifiers and replaces values by their kind", () => {
    expect(textFeatures("ChannelNotFound at /srv/app/data.db for ada@example.com")).toEqual(
      expect.arrayContaining(["w:channel", "b:not found", "w:#path", "w:#email"]),
    );
  });

  it("does not depend on the values a template is filled with", () => {
    const value = fc.stringMatching(/^[a-z0-9_-]{1,20}$/);
    fc.assert(
      fc.property(value, value, fc.integer({ min: 0, max: 399 }), (a, b, n) => {
        const t = (v: string) => `Index "${v}" has ${n} shards; retry in ${n}s`;
        expect(textFeatures(t(a))).toEqual(textFeatures(t(b)));
      }),
    );
  });
});

describe("readText", () => {
  it("chooses the class the weights favour, with its softmax probability and what weighed most", () => {
    const r = readText("the part frobnicated", toy);
    expect(r?.action).toBe("correct_arguments");
    const e3 = Math.exp(3);
    expect(r?.probability).toBeCloseTo(e3 / (e3 + 3), 10);
    expect(r?.features).toEqual([{ feature: "w:frobnicated", weight: 3 }]);
    expect(readText("it went wobbly, gloom", toy)).toMatchObject({
      action: "stop",
      features: [
        { feature: "w:wobbly", weight: 3 },
        { feature: "w:gloom", weight: 0.3 },
      ],
    });
  });

  it("says nothing for a text with no word it knows", () => {
    expect(readText("zzz qqq", toy)).toBeUndefined();
    expect(readText("", SHIPPED_TEXT_MODEL)).toBeUndefined();
  });

  it("does not read inherited keys as features", () => {
    expect(readText("constructor toString __proto__", toy)).toBeUndefined();
  });

  it("is deterministic and bounded on any text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        const a = readText(text);
        expect(readText(text)).toEqual(a);
        if (a !== undefined) {
          expect(a.probability).toBeGreaterThan(0);
          expect(a.probability).toBeLessThanOrEqual(1);
          expect(MODEL_CLASSES).toContain(a.action);
        }
      }),
    );
  });
});

describe("checkModel", () => {
  it("refuses a bad weight file with what is wrong and what is accepted", () => {
    expect(() => checkModel(null)).toThrow(/not an object; expected \{ v: 1/);
    expect(() => checkModel({ ...toy, v: 2 })).toThrow(/version 2 is not 1/);
    expect(() => checkModel({ ...toy, bias: [0, 0] })).toThrow(
      /bias is not a list of finite numbers/,
    );
    expect(() => checkModel({ ...toy, weights: { "w:x": [0, 0, 0, Number.NaN] } })).toThrow(
      /weights of "w:x" are not finite numbers/,
    );
    expect(checkModel(toy)).toBe(toy);
  });

  it("the shipped file is a small, versioned weight file", () => {
    expect(SHIPPED_TEXT_MODEL.v).toBe(1);
    const features = Object.keys(SHIPPED_TEXT_MODEL.weights).length;
    expect(features).toBeGreaterThan(100);
    expect(features).toBeLessThanOrEqual(1000);
  });
});

describe("the learned last stage in classify", () => {
  it("decides where no policy rule, signal or built-in rule speaks", () => {
    const c = classify(textFailure("it went wobbly"), tool(), undefined, toy);
    expect(c).toMatchObject({ action: "stop", reason: "person_required", source: "model" });
    expect(c.model).toMatchObject({ read: "stop", unsure: false });
    expect(classify(textFailure("it frobnicated"), tool(), undefined, toy)).toMatchObject({
      action: "correct_arguments",
      reason: "unclassified",
      source: "model",
    });
  });

  it("never outranks a rule, and leaves the default where it knows no word", () => {
    expect(classify(textFailure("wobbly: not found"), tool(), undefined, toy)).toMatchObject({
      reason: "not_found",
      source: "rule",
    });
    expect(classify(textFailure("zzz"), tool(), undefined, toy)).toMatchObject({
      action: "correct_arguments",
      reason: "unclassified",
      source: "default",
    });
  });

  it("takes a retry only when sure, and an unsure reading keeps the correction", () => {
    expect(classify(textFailure("jitter"), tool(), undefined, toy)).toMatchObject({
      action: "retry_dependency",
      reason: "unavailable",
      certainty: "unknown",
    });
    // A retry the model reads is read from words: a write is not sent again on it.
    const writes = tool({ tools: { t: { effect: "mutating" } } });
    const jitter = classify(textFailure("jitter"), writes, undefined, toy);
    expect(jitter).toMatchObject({ action: "retry_dependency", weakRetry: true });
    // Even with an idempotency key the tool honours.
    const keyed = {
      classification: jitter,
      tool: writes,
      attempt: 1,
      repeats: 1,
      keyed: true,
      remainingMs: Number.POSITIVE_INFINITY,
      random: () => 0.5,
    };
    expect(decide({ ...keyed, effect: "mutating" })).toMatchObject({
      action: "stop",
      reason: "uncertain_mutation",
    });
    expect(decide({ ...keyed, effect: "idempotent" }).action).toBe("retry_dependency");
    expect(firstAttempt(jitter, "read_only", writes).action).toBe("retry_dependency");
    // flaky: e / (e + 3) ≈ 0.48, below both bars.
    const flaky = classify(textFailure("flaky"), tool(), undefined, toy);
    expect(flaky).toMatchObject({ action: "correct_arguments", source: "model" });
    expect(flaky.model).toMatchObject({ read: "retry_dependency", unsure: true });
    // gloom: unsure, reads a correction.
    expect(classify(textFailure("gloom"), tool(), undefined, toy).model?.unsure).toBe(true);
  });

  it("where it is unsure, a mutating tool stops with a text a person can read; a read-only one is corrected", () => {
    const c = classify(textFailure("gloom"), tool(), undefined, toy);
    expect(firstAttempt(c, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      cause: "unclassified",
      personResolvable: true,
    });
    expect(firstAttempt(c, "read_only")).toMatchObject({ action: "correct_arguments" });
    // A sure correction of a mutating tool stops too; a read-only one goes to the model.
    const sure = classify(textFailure("frobnicated"), tool(), undefined, toy);
    expect(firstAttempt(sure, "mutating").action).toBe("stop");
    expect(firstAttempt(sure, "read_only").action).toBe("correct_arguments");
  });

  it("an unsure reading of stop as the likeliest class is taken: a stop costs a person a look", () => {
    // murk: P(stop) ≈ 0.36, P(correct) ≈ 0.24, below the bar but 1.5 times a correction.
    const c = classify(textFailure("murk"), tool(), undefined, toy);
    expect(c).toMatchObject({ action: "stop", reason: "person_required", source: "model" });
    expect(c.model).toMatchObject({ read: "stop", unsure: true });
    // A near tie with a correction leaves the correction.
    const tie = classify(textFailure("tie"), tool(), undefined, toy);
    expect(tie).toMatchObject({ action: "correct_arguments", source: "model" });
    expect(tie.model).toMatchObject({ read: "stop", unsure: true });
    // An unsure correction or retry is not changed by it.
    expect(classify(textFailure("gloom"), tool(), undefined, toy).action).toBe("correct_arguments");
    expect(classify(textFailure("flaky"), tool(), undefined, toy).action).toBe("correct_arguments");
  });

  it("on a tool the policy declares mutating, an unsure reading is decided a stop, not a correction", () => {
    const writes = tool({ tools: { t: { effect: "mutating" } } });
    // Classify marks the guess and leaves the correction; it does not read the effect.
    const c = classify(textFailure("gloom"), writes, undefined, toy);
    expect(c).toMatchObject({ action: "correct_arguments", source: "model" });
    expect(c.model).toMatchObject({ read: "correct_arguments", unsure: true, stopOnWrite: true });
    expect(classify(textFailure("gloom"), tool(), undefined, toy)).toEqual(c);
    const first = (classification: Classification, effect: Effect) =>
      firstAttempt(classification, effect, writes);
    // decide makes it a stop a person can act on, on a write only.
    expect(first(c, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      personResolvable: true,
    });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(first(c, "read_only").action).toBe("correct_arguments");
    expect(first(c, "idempotent").action).toBe("correct_arguments");
    // A sure reading is a guess about a write too: the model spoke because nothing else did.
    const sure = classify(textFailure("frobnicated"), writes, undefined, toy);
    expect(sure.model).toMatchObject({ unsure: false, stopOnWrite: true });
    expect(first(sure, "mutating")).toMatchObject({ action: "stop", reason: "person_required" });
    expect(first(sure, "read_only").action).toBe("correct_arguments");
  });

  it("on a write, a sure correction is not taken either, however much likelier than a stop", () => {
    // hazy: P(correct) ≈ 0.67 (sure), P(stop) ≈ 0.15: 10 × 0.15 > 0.67.
    const reading = readText("hazy", toy);
    expect(reading?.probabilities.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9);
    const writes = tool({ tools: { t: { effect: "mutating" } } });
    const c = classify(textFailure("hazy"), writes, undefined, toy);
    expect(c).toMatchObject({ action: "correct_arguments", source: "model" });
    expect(c.model).toMatchObject({ read: "correct_arguments", unsure: false, stopOnWrite: true });
    // The same classification with or without a declared effect; decide stops it when the
    // effect of the call (policy or trusted annotations) is mutating.
    const open = classify(textFailure("hazy"), tool(), undefined, toy);
    expect(open).toEqual(c);
    expect(firstAttempt(open, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
    });
    expect(firstAttempt(open, "idempotent").action).toBe("correct_arguments");
    // frobnicated: P(correct) ≈ 0.87, P(stop) ≈ 0.04, twenty times a stop: still a guess about a
    // write (the model read it where no rule, signal or argument spoke), taken elsewhere.
    const frob = classify(textFailure("frobnicated"), writes, undefined, toy);
    expect(frob.model).toMatchObject({
      read: "correct_arguments",
      unsure: false,
      stopOnWrite: true,
    });
    expect(firstAttempt(frob, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
    });
    expect(firstAttempt(frob, "read_only").action).toBe("correct_arguments");
  });

  it("is explained: the features that weighed most and the confidence", () => {
    const f = textFailure("it went wobbly, gloom");
    const c = classify(f, tool(), undefined, toy);
    const e = explainClassification(f, tool(), c);
    expect(e).toMatchObject({ decidedBy: "model", confidence: "medium", model: c.model });
    expect(e.detail).toMatch(
      /learned text model read stop with probability 0\.\d+; weighed most: w:wobbly \(3\), w:gloom \(0\.3\)/,
    );
    const unsure = textFailure("gloom");
    expect(
      explainClassification(unsure, tool(), classify(unsure, tool(), undefined, toy)),
    ).toMatchObject({
      confidence: "low",
    });
  });
});

describe("the bars a reading must pass (takeReading)", () => {
  it("applies the bars it is given, the shipped ones by default", () => {
    // hazy: P(correct) ≈ 0.67 (sure), P(stop) ≈ 0.15.
    const reading = readText("hazy", toy);
    if (reading === undefined) throw new Error("toy model reads hazy");
    expect(takeReading(reading)).toEqual(takeReading(reading, MODEL_BARS));
    expect(takeReading(reading)).toEqual({
      action: "correct_arguments",
      unsure: false,
      stopOnWrite: true,
    });
    // Every correction taken is a guess about a write, sure or not: under a bar of 0.9 too.
    expect(takeReading(reading, { ...MODEL_BARS, sureAt: 0.9 })).toMatchObject({
      unsure: true,
      stopOnWrite: true,
    });
    // What classify takes is what takeReading takes.
    const c = classify(textFailure("hazy"), tool(), undefined, toy);
    expect(c.model?.unsure).toBe(false);
    expect(c.model?.stopOnWrite).toBe(true);
  });
});

describe("the asymmetry of harm where nothing is sure (issue 27.2)", () => {
  const writes = tool({ tools: { t: { effect: "mutating" } } });

  it("the default (no word of the text known) stops a declared mutating tool instead of correcting it", () => {
    // Classify leaves the old default, a correction, whatever the effect.
    const guessed = classify(textFailure("zzz qqq"), writes, undefined, toy);
    expect(guessed).toMatchObject({
      action: "correct_arguments",
      reason: "unclassified",
      source: "default",
      certainty: "unknown",
    });
    expect(explainClassification(textFailure("zzz qqq"), writes, guessed).detail).toMatch(
      /the default applies \(a guess on a mutating tool: the run stops it\)$/,
    );
    const open = classify(textFailure("zzz qqq"), tool(), undefined, toy);
    expect(open).toEqual(guessed);
    expect(explainClassification(textFailure("zzz qqq"), tool(), open).detail).toMatch(
      /the default applies$/,
    );
    // decide stops it on a write, whether the policy declared the effect or trusted annotations
    // gave it at run time.
    expect(firstAttempt(guessed, "mutating", writes)).toMatchObject({
      action: "stop",
      reason: "person_required",
      cause: "unclassified",
      personResolvable: true,
    });
    expect(firstAttempt(open, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
      cause: "unclassified",
      personResolvable: true,
    });
    expect(firstAttempt(open, "idempotent").action).toBe("correct_arguments");
  });

  it("a retry read below its bar is not turned into a correction of a write", () => {
    // shaky: P(retry) ≈ 0.78 (sure, below MODEL_RETRY_AT), P(correct) ≈ 0.17, P(stop) ≈ 0.005:
    // a correction more than ten times as likely as a stop, but not what the model read.
    const reading = readText("shaky", toy);
    expect(reading?.action).toBe("retry_dependency");
    expect(reading?.probability).toBeGreaterThan(0.5);
    expect(reading?.probability).toBeLessThan(0.85);
    const c = classify(textFailure("shaky"), writes, undefined, toy);
    expect(c).toMatchObject({ action: "correct_arguments", source: "model" });
    expect(c.model).toMatchObject({ read: "retry_dependency", unsure: false, stopOnWrite: true });
    // decide stops it on a write, and leaves the correction elsewhere.
    expect(firstAttempt(c, "mutating", writes)).toMatchObject({
      action: "stop",
      reason: "person_required",
    });
    const open = classify(textFailure("shaky"), tool(), undefined, toy);
    expect(open).toEqual(c);
    expect(firstAttempt(open, "mutating")).toMatchObject({
      action: "stop",
      reason: "person_required",
    });
    expect(firstAttempt(open, "read_only").action).toBe("correct_arguments");
  });
});

describe("the policy wins over the learned stage's asymmetry", () => {
  it("a policy rule's correction of a mutating tool is not turned into a stop by an unsure reading", () => {
    const p = tool({ tools: { t: { rules: [{ match: "gloom", action: "correct_arguments" }] } } });
    const c = classify(textFailure("gloom"), p, undefined, toy);
    expect(c.source).toBe("policy");
    const d = firstAttempt(c, "mutating", p);
    expect(d.action).toBe("correct_arguments");
  });
});
