/**
 * The redactor's patterns that find a word from one of its rarer characters (a vendor key's
 * prefix, a credential header, a private IPv6 address) answer as the patterns they replace.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  HEADER_HINT,
  PRIVATE_IPV6_HINT,
  VENDOR_PREFIX,
  VENDOR_TOKEN_HINT,
} from "./redact-hints.ts";

/** What the redactor tested before: each prefix in turn. */
const TOKEN_HINT_BEFORE =
  /sk-|_(?:live|test)_|whsec_|gh[pousr]_|github_pat_|xox[abprseco]-|xapp-|A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA|3T)|AIza|(?:npm|hf|glpat|pypi)[_-]|eyJ/;
const PREFIX_BEFORE =
  /(?:gsk|lin_api|ntn|shppa|shpca|shpat|shpss|glc|glsa|vc[piark]|dckr_pat|figd|cfk|cfut|cfat|ops)_|hv[sbr]\.|SG\.|dapi|tskey-|sq0atp-|sq0csp-|AGE-SECRET-KEY-/;

const HEADER_BEFORE = /authorization|api-key|-auth-token|-access-token|cookie|bearer/i;
const IPV6_BEFORE = /::1|f[c-e][0-9a-f]{2}:/i;

/** Every word each pattern before matches, spelled out (the case-blind ones in both cases). */
const TOKEN_WORDS = [
  "sk-",
  "_live_",
  "_test_",
  "whsec_",
  ..."pousr".split("").map((c) => `gh${c}_`),
  "github_pat_",
  ..."abprseco".split("").map((c) => `xox${c}-`),
  "xapp-",
  ..."KIA SIA BIA CCA GPA IDA IPA NPA NVA ROA PKA SCA 3T Iza".split(" ").map((w) => `A${w}`),
  ..."npm hf glpat pypi".split(" ").flatMap((w) => [`${w}_`, `${w}-`]),
  "eyJ",
];
const PREFIX_WORDS = [
  ..."gsk lin_api ntn shppa shpca shpat shpss glc glsa vcp vci vca vcr vck dckr_pat figd cfk cfut cfat ops"
    .split(" ")
    .map((w) => `${w}_`),
  "hvs.",
  "hvb.",
  "hvr.",
  "SG.",
  "dapi",
  "tskey-",
  "sq0atp-",
  "sq0csp-",
  "AGE-SECRET-KEY-",
];

const HEADER_WORDS = [
  "authorization",
  "api-key",
  "-auth-token",
  "-access-token",
  "cookie",
  "bearer",
].flatMap((w) => [w, w.toUpperCase(), w.charAt(0).toUpperCase() + w.slice(1)]);
const IPV6_WORDS = [
  "::1",
  ..."cde".split("").flatMap((c) => [`f${c}00:`, `F${c.toUpperCase()}9a:`, `f${c}fB:`]),
];

/**
 * Words, pieces of words (a word cut at either end, or with one character changed) and single
 * characters of them, joined with nothing or a space between.
 */
function textOf(words: readonly string[]) {
  const piece = fc
    .tuple(fc.constantFrom(...words), fc.nat(), fc.nat(), fc.nat())
    .map(([word, a, b, c]) => {
      const start = a % word.length;
      const end = start + 1 + (b % (word.length - start));
      const cut = word.slice(start, end);
      // Sometimes one character changed to another of the words' alphabet, or to its other case.
      if (c % 3 !== 0) return cut;
      const at = c % cut.length;
      const ch = cut.charAt(at);
      const swapped = ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
      return cut.slice(0, at) + swapped + cut.slice(at + 1);
    });
  const alphabet = [...new Set(words.join(""))];
  return fc
    .array(
      fc.oneof(
        { weight: 2, arbitrary: fc.constantFrom(...words) },
        { weight: 5, arbitrary: piece },
        { weight: 2, arbitrary: fc.constantFrom(...alphabet, " ", "x", "Z") },
      ),
      { maxLength: 10 },
    )
    .map((parts) => parts.join(""));
}

describe("the redactor's word hints", () => {
  it.each([
    ["VENDOR_TOKEN_HINT", VENDOR_TOKEN_HINT, TOKEN_HINT_BEFORE, TOKEN_WORDS],
    ["VENDOR_PREFIX", VENDOR_PREFIX, PREFIX_BEFORE, PREFIX_WORDS],
    ["HEADER_HINT", HEADER_HINT, HEADER_BEFORE, HEADER_WORDS],
    ["PRIVATE_IPV6_HINT", PRIVATE_IPV6_HINT, IPV6_BEFORE, IPV6_WORDS],
  ] as const)("%s answers as the alternation it replaces", (_name, hint, before, words) => {
    // Each word is found alone, inside a text, and no cut of it is taken for it.
    for (const word of words) {
      expect(before.test(word), word).toBe(true);
      expect(hint.test(word), word).toBe(true);
      expect(hint.test(`a ${word}b`), word).toBe(true);
      for (let i = 1; i < word.length; i++) {
        for (const cut of [word.slice(i), word.slice(0, i)]) {
          expect(hint.test(cut), cut).toBe(before.test(cut));
        }
      }
    }
    let yes = 0;
    let no = 0;
    fc.assert(
      fc.property(textOf(words), (text) => {
        const expected = before.test(text);
        if (expected) yes++;
        else no++;
        expect(hint.test(text)).toBe(expected);
      }),
      { numRuns: 10_000 },
    );
    // Both answers are reached.
    expect(yes).toBeGreaterThan(1000);
    expect(no).toBeGreaterThan(1000);
  });
});
