/**
 * The normalizer's hand-written hints answer as the patterns they replace, and the words it
 * searches before a pattern are in every match of it.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PROPER_NAME, properNames, WORD_VALUE_HINTS } from "./fingerprint.ts";
import { hasHostHint, hasIpv6Hint, hasOpeningQuote } from "./normalize-hints.ts";

/** What the normalizer tested with patterns before. */
const IPV6_HINT = /:[0-9a-f]{0,4}:/;
const HOST_HINT = /\.[a-z]{2}/;
const HAS_QUOTE = /["'`“‘]/;

/** Short runs of the characters the hints read, and of a few they must not take for them. */
const hintText = fc
  .array(
    fc.oneof(
      fc.string({ unit: fc.constantFrom(..."0123456789abcdefgz:.AF -<>"), maxLength: 8 }),
      fc.constantFrom('"', "'", "`", "“", "‘", "”", "’", "«"),
      fc.constantFrom("::1", "fe80::1", "a.io", "0.0.0.0", "<id>:<id>", "x.y", ".co", "ab:cd:"),
    ),
    { maxLength: 8 },
  )
  .map((parts) => parts.join(""));

describe("the normalizer's hints", () => {
  it.each([
    ["hasIpv6Hint", hasIpv6Hint, IPV6_HINT],
    ["hasHostHint", hasHostHint, HOST_HINT],
    ["hasOpeningQuote", hasOpeningQuote, HAS_QUOTE],
  ] as const)("%s answers as its pattern", (_name, hint, pattern) => {
    let yes = 0;
    let no = 0;
    fc.assert(
      fc.property(hintText, (text) => {
        const expected = pattern.test(text);
        if (expected) yes++;
        else no++;
        expect(hint(text)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    // Both answers are reached.
    expect(yes).toBeGreaterThan(500);
    expect(no).toBeGreaterThan(500);
  });
});

describe("the words searched before the patterns of word values", () => {
  it.each(WORD_VALUE_HINTS.map(([p, words]) => [p.source, p, words] as const))(
    "every alternative of %s holds one of them",
    (_source, pattern, words) => {
      const alternatives = pattern.source.split("|");
      expect(alternatives.length).toBeGreaterThan(1);
      for (const alternative of alternatives) {
        expect(
          words.some((w) => alternative.includes(w)),
          alternative,
        ).toBe(true);
      }
      // None starts with a space, the slow search.
      for (const w of words) expect(w.startsWith(" ")).toBe(false);
    },
  );
});

describe("properNames", () => {
  const nameText = fc
    .array(
      fc.oneof(
        fc.string({ unit: fc.constantFrom(..."abzAZ09, .:;!?)'\"\t\n-/_"), maxLength: 8 }),
        fc.constantFrom(
          " Budget",
          "a Cecil",
          ", Zed.",
          " Q",
          " Aa",
          `x A${"b".repeat(41)}`,
          " INR",
          "a SELECT",
          " AB",
          "x A1B2",
          ` ${"Z".repeat(21)}`,
        ),
      ),
      { maxLength: 12 },
    )
    .map((parts) => parts.join(""));

  it("finds what PROPER_NAME matches, at the same places", () => {
    fc.assert(
      fc.property(nameText, (text) => {
        const expected = [...text.matchAll(PROPER_NAME)].map((m) => [
          m.index,
          m.index + m[0].length,
        ]);
        expect(properNames(text)).toEqual(expected);
      }),
      { numRuns: 2_000, seed: 27 },
    );
    expect(properNames("needs a Firecrawl account")).toEqual([[8, 17]]);
  });
});
