// The shipped weights of the learned last stage are what `pnpm train-model` makes of test/corpus:
// nobody edits them by hand, and a corpus change without retraining shows here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { SHIPPED_TEXT_MODEL } from "../packages/core/src/judge/text-model.ts";
import { corpusTrainingTexts } from "../scripts/text-model-corpus.ts";
import { trainTextModel } from "../scripts/text-model-training.ts";

describe("the shipped text model", () => {
  it("is reproduced by the training script from test/corpus (to rounding)", () => {
    const trained = trainTextModel(
      corpusTrainingTexts(new URL("corpus", import.meta.url).pathname),
    );
    const shipped = SHIPPED_TEXT_MODEL;
    const features = Object.keys(trained.weights);
    const same = features.filter((f) => Object.hasOwn(shipped.weights, f));
    // Floating point may differ in the last digit between platforms: a feature at the edge of
    // the kept set may swap, no more.
    expect(same.length).toBeGreaterThanOrEqual(features.length - 2);
    // Both ways: a feature added to the file by hand, which training never makes, shows too
    // (training keeps a fixed number of features, so a swap at the edge keeps the count).
    expect(Object.keys(shipped.weights).length).toBe(features.length);
    for (const f of same) {
      const a = trained.weights[f] as readonly number[];
      const b = shipped.weights[f] as readonly number[];
      for (const [k, w] of a.entries()) {
        expect(Math.abs(w - (b[k] as number)), f).toBeLessThanOrEqual(0.002);
      }
    }
    for (const [k, w] of trained.bias.entries()) {
      expect(Math.abs(w - (shipped.bias[k] as number))).toBeLessThanOrEqual(0.002);
    }
  });

  it("stays small: the package carries it", () => {
    const bytes = readFileSync(
      new URL("../packages/core/src/judge/text-model.weights.json", import.meta.url),
    ).length;
    expect(bytes).toBeLessThan(40_000);
  });
});
