/**
 * The gates of the stack-frame rules and of the localised credential rules (a rule is not run where
 * its gate fails) skip only rules that would change nothing: on seeded adversarial texts, stack
 * frames of every runtime (cut, re-spaced, re-cased, JSON-escaped, mixed with other runtimes'
 * marks and prose), credentials named in every language of named-values.ts (case, Turkish İ/ı,
 * full-width separators and letters, quotes, prose), and mutants of both (a few characters
 * inserted, deleted or replaced). A gate that fails on a text its rule would match is a leak. The
 * texts are adversarial-texts.support.ts, which scripts/fuzz-redact-diff.ts also tries, against a
 * base build.
 */
import { describe, expect, it } from "vitest";
import { adversarialTexts } from "./adversarial-texts.support.ts";
import { NAMED_VALUE_RULES } from "./named-values.ts";
import { applySecretRule } from "./rule.ts";
import { FRAME_RULE_TESTS } from "./stack-frames.ts";

// Seeded, so every run tries the same texts (a failure names its text, and reruns the same).
const texts = adversarialTexts(29);
const TEXTS = Array.from({ length: 4000 }, () => texts.next().text);

describe("prefilter gates skip only rules that would change nothing", () => {
  it("a frame rule whose test fails on a text takes no frame from it", () => {
    let gated = 0;
    for (const text of TEXTS) {
      for (const { pattern, test, takes } of FRAME_RULE_TESTS) {
        if (test(text)) continue;
        gated++;
        expect(takes(text), `${pattern.source}\n${JSON.stringify(text)}`).toBe(false);
      }
    }
    expect(gated).toBeGreaterThan(10_000);
  });

  it("a named-value rule whose test fails on a text changes nothing in it", () => {
    let gated = 0;
    for (const text of TEXTS) {
      for (const rule of NAMED_VALUE_RULES.rules) {
        if (rule[2](text)) continue;
        gated++;
        expect(applySecretRule(rule, text), `${rule[0].source}\n${JSON.stringify(text)}`).toBe(
          text,
        );
      }
    }
    expect(gated).toBeGreaterThan(1_000);
  });
});
