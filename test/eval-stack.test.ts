// scripts/eval-stack.ts: the experiment of a learned decision over the rule firings (issue 27).
// What it reads of a text, how it decides, what it counts and the pre-registered criterion are
// pinned on hand-made texts and models: no training, no blind line.
import { describe, expect, it } from "vitest";
import {
  readText,
  SHIPPED_TEXT_MODEL,
  type TextModel,
  textFeatures,
} from "../packages/core/src/judge/text-model.ts";
import { decidedAction } from "../scripts/eval-decided.ts";
import {
  type FoldReport,
  finalSources,
  firstPass,
  type Line,
  meetsCriterion,
  meetsFreshCriterion,
  readFeatures,
  scoreFold,
  stackClassify,
} from "../scripts/eval-stack.ts";

const line = (over: Partial<Line> & Pick<Line, "text" | "label">): Line => ({
  id: "x",
  server: "s",
  ambiguous: false,
  tool: "t",
  ...over,
});

const model = (weights: Record<string, number[]>, bias = [0, 0, 0, 0]): TextModel => ({
  v: 1,
  trainedOn: "test",
  bias,
  weights,
});

describe("the stack's features", () => {
  it("name the rule that fired, its action and reason, the effect and their cross", () => {
    const p = firstPass(
      line({
        text: "Invalid value for 'limit': must be at most 100",
        label: "correct_arguments",
        effect: "mutating",
      }),
    );
    expect(p.hard).toBe(false);
    expect(p.ruleIndex).toBeTypeOf("number");
    expect(p.features).toEqual(
      expect.arrayContaining([
        "e:mutating",
        `r:#${p.ruleIndex}`,
        "ra:correct_arguments",
        "rr:invalid_argument",
        "x:correct_arguments|mutating",
        "w:invalid",
      ]),
    );
  });

  it("say no rule fired, and an undeclared effect is unknown", () => {
    const p = firstPass(line({ text: "the frobnicator glitched", label: "stop" }));
    expect(p.rulesOnly.source).toBe("default");
    expect(p.features).toEqual(
      expect.arrayContaining(["e:unknown", "r:none", "x:none|unknown", "w:frobnicator"]),
    );
  });

  it("are not read for a request still in progress: that stays hard", () => {
    const p = firstPass(
      line({
        text: "A request with this idempotency key is already in progress",
        label: "retry_dependency",
      }),
    );
    expect(p.hard).toBe(true);
    expect(p.features).toEqual([]);
    // Even a model sure of a correction leaves it as classify read it.
    const sure = model({ "e:unknown": [9, 0, 0, 0] });
    expect(stackClassify(p, { name: "s", verdictRules: new Set(), model: sure })).toBe(p.rulesOnly);
  });

  it("are read as the text model reads a text, when they are a text's features", () => {
    for (const text of [
      "Rate limit exceeded (429). Retry after 30 seconds.",
      "Your plan does not include access to this feature; ask your admin.",
      "no such file /srv/data/x.json",
    ]) {
      expect(readFeatures(textFeatures(text), SHIPPED_TEXT_MODEL)).toEqual(readText(text));
    }
  });
});

describe("the stack's decision", () => {
  const corrected = line({
    text: "Invalid value for 'limit': must be at most 100",
    label: "stop",
    effect: "mutating",
  });

  it("takes a sure reading over the rule, through the run's asymmetry of harm", () => {
    const p = firstPass(corrected);
    const stop = model({ "x:correct_arguments|mutating": [0, 0, 0, 8] });
    const c = stackClassify(p, { name: "s", verdictRules: new Set(), model: stop });
    expect(c).toMatchObject({ action: "stop", source: "model" });
    // A rule kept as a verdict is not read.
    const kept = stackClassify(p, {
      name: "n",
      verdictRules: new Set([p.ruleIndex as number]),
      model: stop,
    });
    expect(kept).toBe(p.rulesOnly);
  });

  it("marks an unsure correction, which the run stops on a mutating tool only", () => {
    const p = firstPass(corrected);
    // Correction barely ahead of a stop: a guess.
    const unsure = model({ "ra:correct_arguments": [0.2, 0, -9, 0] });
    const c = stackClassify(p, { name: "s", verdictRules: new Set(), model: unsure });
    expect(c.action).toBe("correct_arguments");
    expect(c.model?.stopOnWrite).toBe(true);
    expect(decidedAction(c, "mutating")).toBe("stop");
    expect(decidedAction(c, "read_only")).toBe("correct_arguments");
  });

  it("counts right lines on the unambiguous lines and dangerous ones on all", () => {
    const retry = model({ "r:none": [0, 9, 0, 0] });
    const lines = [
      line({ text: "the frobnicator glitched", label: "stop" }),
      line({ text: "the frobnicator glitched again", label: "stop", ambiguous: true }),
      line({ text: "the frobnicator is down", label: "retry_dependency" }),
    ];
    const f = scoreFold(lines, (l) =>
      stackClassify(firstPass(l), { name: "s", verdictRules: new Set(), model: retry }),
    );
    expect(f).toEqual({ right: 1, unambiguous: 2, dangerous: 2, byModel: 2 });
  });
});

describe("the pre-registered criterion", () => {
  const fig = (right: number, dangerous: number) => ({
    right,
    unambiguous: 1000,
    dangerous,
    byModel: 0,
  });
  const rows = (stack: [number, number][], current: [number, number][]): FoldReport[] =>
    ["corpus fold 1", "blind5"].map((fold, i) => ({
      fold,
      current: fig(...(current[i] as [number, number])),
      shipped: fig(0, 0),
      stack: fig(...(stack[i] as [number, number])),
      narrow: fig(0, 0),
      narrowVerdictRules: 0,
    }));

  it("is met at +1 % of the unambiguous lines, no more dangerous, blind5 not worse", () => {
    // 2,000 unambiguous lines: +20 right needed.
    const met = rows(
      [
        [920, 5],
        [900, 3],
      ],
      [
        [900, 5],
        [900, 3],
      ],
    );
    expect(meetsCriterion(met, "stack")).toEqual({
      more: true,
      safer: true,
      blind5: true,
      met: true,
    });
  });

  it("is not met one line short, with one more dangerous, or worse on blind5", () => {
    const short = rows(
      [
        [919, 5],
        [900, 3],
      ],
      [
        [900, 5],
        [900, 3],
      ],
    );
    expect(meetsCriterion(short, "stack").met).toBe(false);
    const riskier = rows(
      [
        [930, 6],
        [900, 3],
      ],
      [
        [900, 5],
        [900, 3],
      ],
    );
    expect(meetsCriterion(riskier, "stack")).toMatchObject({ safer: false, met: false });
    const blind5Worse = rows(
      [
        [940, 2],
        [899, 3],
      ],
      [
        [900, 5],
        [900, 3],
      ],
    );
    expect(meetsCriterion(blind5Worse, "stack")).toMatchObject({
      more: true,
      safer: true,
      blind5: false,
      met: false,
    });
  });

  /** One fresh set's row: the stack's and the current pipeline's [right, dangerous]. */
  const fresh = (fold: string, stack: [number, number], current: [number, number]) =>
    meetsFreshCriterion({ ...(rows([stack, [0, 0]], [current, [0, 0]])[0] as FoldReport), fold });

  it("second comparison, on blind6: at most half the dangerous, at most 2 right lost per one avoided", () => {
    // 9 avoided, 18 lost: exactly at both bounds.
    expect(fresh("blind6", [180, 9], [198, 18])).toEqual({
      avoided: 9,
      lost: 18,
      halves: true,
      worth: true,
      met: true,
    });
    expect(fresh("blind6", [179, 9], [198, 18])).toMatchObject({ worth: false, met: false });
    expect(fresh("blind6", [198, 10], [198, 18])).toMatchObject({ halves: false, met: false });
    // What blind6 gave: 5 avoided for 1 lost, but 6 is more than half of 11.
    expect(fresh("blind6", [194, 6], [195, 11])).toMatchObject({ worth: true, met: false });
    expect(fresh("blind6", [200, 0], [198, 0]).met).toBe(true);
  });

  it("third comparison, on a later set: fewer dangerous, at most 2 right lost per one avoided", () => {
    expect(fresh("blind7", [194, 6], [195, 11]).met).toBe(true);
    // 8 avoided: 16 lost is the bound.
    expect(fresh("blind7", [182, 10], [198, 18]).met).toBe(true);
    expect(fresh("blind7", [181, 10], [198, 18]).met).toBe(false);
    expect(fresh("blind7", [200, 18], [198, 18]).met).toBe(false);
  });

  it("a fresh set is scored with every earlier blind set in training", () => {
    // Each listed set from blind6 on (blind17 the last): blind6 up to it, in the order they were collected.
    for (let n = 6; n <= 17; n++) {
      const upTo = Array.from({ length: n - 5 }, (_, i) => `blind${i + 6}`);
      expect(finalSources(`blind${n}`), `blind${n}`).toEqual(upTo);
    }
    // A set not yet in BLIND_SETS is added alone; once listed, the sets between blind5 and it train.
    expect(finalSources("blind18")).toEqual(["blind18"]);
    expect(finalSources("blind3")).toEqual([]);
  });
});
