/** replaceEach replaces as the builtin `replace` with a function does, for every normalizer pattern. */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NORMALIZE_PATTERNS } from "./fingerprint.ts";
import { replaceEach } from "./replace-each.ts";

const corpusWords = [
  ...new Set(
    readFileSync(new URL("../../../../test/corpus/tool-errors.jsonl", import.meta.url), "utf8")
      .trim()
      .split("\n")
      .flatMap((line) => (JSON.parse(line) as { text: string }).text.toLowerCase().split(/\s+/))
      .filter(Boolean),
  ),
];

/** Corpus words and the pieces the normalizer's patterns read, with separators between. */
const text = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...corpusWords) },
        { weight: 1, arbitrary: fc.uuid() },
        {
          weight: 2,
          arbitrary: fc.string({
            unit: fc.constantFrom(..."0123456789abcdefx.:-_/=\"'`"),
            maxLength: 12,
          }),
        },
        {
          weight: 1,
          arbitrary: fc.constantFrom(
            ...["<id>, <id>", "<str>,<str>", "1m30s", "256 kib", "12ms", "5 minutes", "“a b”"],
            ...["[logs-app]", "code=x", "name = x", "a.example.com", "a@b.co", "/a/b c.txt"],
            ...[
              "c:\\x",
              "\\\\srv\\x",
              "1.2.3.4",
              "::1",
              "2024-01-02",
              "3 jan 2024",
              "10:20",
              "jan 3, 2024",
              "<path> a.txt",
            ],
            ...["https://a.b/c", "mcp error -1: ", "with name x", ": x is not defined"],
            ...["not found: x", "getaddrinfo enotfound a.b", "cache:user:42", "a_b-c"],
          ),
        },
      ),
      fc.constantFrom(" ", ", ", ": ", "\n", "", "=", '"', "'", "."),
    ),
    { maxLength: 16 },
  )
  .map((parts) => parts.map(([p, s]) => p + s).join(""));

/** Every global pattern of the normalizer, and one that matches the empty string. */
const PATTERNS = [...NORMALIZE_PATTERNS.filter((p) => p.global), /x*/g];

describe("replaceEach", () => {
  it.each(PATTERNS.map((p) => [p.source.slice(0, 40), p] as const))(
    "replaces as the builtin does (%s)",
    (_name, pattern) => {
      let replaced = 0;
      const check = (t: string) => {
        // What the builtin passes a replacer: the match, its groups, its offset (then the text).
        const expected = t.replace(pattern, (...args: unknown[]) =>
          JSON.stringify(args.slice(0, -1)),
        );
        const actual = replaceEach(t, pattern, (m) => JSON.stringify([...m, m.index]));
        if (expected !== t) replaced++;
        expect(actual).toBe(expected);
        expect(pattern.lastIndex).toBe(0);
      };
      fc.assert(fc.property(text, check), { numRuns: 500 });
      // The texts reach the pattern: counted on texts of a fixed seed, since 500 texts of a random
      // one miss the tail pattern (`not found: x`) in about one run in 16; 2000 of them, so that
      // words added to the corpus (which shift what the seed draws) do not starve a rare pattern.
      replaced = 0;
      for (const t of fc.sample(text, { numRuns: 2000, seed: 1 })) check(t);
      expect(replaced).toBeGreaterThan(0);
    },
  );
});
