// Issue 27.5: the hard pairs made from corpus templates (scripts/fingerprint-hard-pairs.ts) hold
// the goal: the same template with word, slug, list or duration values, or wrapped in a JSON
// error body, or with the arguments each call sent, shares a fingerprint; another template of the
// same server does not, with its arguments or without.
import { describe, expect, it } from "vitest";
import { hardPairsReport } from "../scripts/eval-hard-pairs.ts";

describe("fingerprints on the hard pairs", () => {
  const r = hardPairsReport(new URL("corpus", import.meta.url).pathname);

  it("has pairs of each kind", () => {
    for (const kind of [
      "hard-word",
      "hard-slug",
      "hard-list",
      "hard-duration",
      "hard-json-wrapped",
      "hard-different",
      "hard-args",
      "hard-different-args",
    ]) {
      expect(r.byKind[kind]?.pairs ?? 0, kind).toBeGreaterThan(0);
    }
  });

  it("same-template recall >= 0.90, different-template merges <= 0.01", () => {
    expect(r.recall).toBeGreaterThanOrEqual(0.9);
    expect(r.mergeRate).toBeLessThanOrEqual(0.01);
  });
});
