// Property tests of the fingerprint fold (issue 27.5): one template with values of any of the
// normalized classes shares a fingerprint; different conditions (a status, "not found" vs
// "already exists") never do, whatever value surrounds them.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fingerprint } from "./fingerprint.ts";

const print = (text: string) => fingerprint({ tool: "t", channel: "tool", text });

// Names that are no English word: a name made of the error vocabulary (`max_length_v2`) is read
// as words, not as a value (a miss, never a merge), and is left out here.
const word = fc.stringMatching(/^[a-z]{3,10}$/).map((w) => `q${w}`);
/**
 * A value of one of the classes the fold normalizes: number, quoted, slug, path, duration, uuid.
 * Not lists: a bracketed list keeps its brackets (`[<v>]`), apart from a bare value, and a list of
 * plain words (`[abc, def]`) is not folded at all: misses, never merges.
 */
const CLASSES = [
  fc.integer({ min: 0, max: 10_000_000 }).map(String),
  word.map((w) => `'${w}'`),
  word.map((w) => `"${w}"`),
  fc.tuple(word, word).map(([a, b]) => `${a}-${b}`),
  fc.tuple(word, word).map(([a, b]) => `${a}_${b}_v2`),
  fc.tuple(word, word).map(([a, b]) => `/var/${a}/${b}.json`),
  fc.integer({ min: 1, max: 600 }).map((n) => `${n}s`),
  fc.integer({ min: 1, max: 600 }).map((n) => `${n} ms`),
  fc.uuid(),
];
const value = fc.oneof(...CLASSES);

/** Templates whose value stands where a server puts one. */
const TEMPLATES = [
  (v: string) => `Table ${v} is locked`,
  (v: string) => `No note with id ${v}`,
  (v: string) => `Query timed out after ${v}`,
  (v: string) => `Unknown field ${v}`,
];

describe("the fold, property-based", () => {
  it("a template shares its fingerprint whatever values of the normalized classes it holds", () => {
    // Across classes: a number in one failure, a quoted name, a slug, a path or a list in the next.
    fc.assert(
      fc.property(fc.constantFrom(...TEMPLATES), value, value, (template, a, b) => {
        expect(print(template(a)), `${template(a)} / ${template(b)}`).toBe(print(template(b)));
      }),
      { numRuns: 1_000, seed: 27 },
    );
  });

  it("never merges two statuses, or not found with already exists, whatever the value", () => {
    fc.assert(
      fc.property(
        value,
        fc.constantFrom(400, 401, 403, 404, 409, 422, 429, 500, 502, 503),
        fc.constantFrom(400, 401, 403, 404, 409, 422, 429, 500, 502, 503),
        (v, s1, s2) => {
          fc.pre(s1 !== s2);
          expect(print(`HTTP ${s1}: request for ${v} failed`)).not.toBe(
            print(`HTTP ${s2}: request for ${v} failed`),
          );
          expect(print(`Resource ${v} not found`)).not.toBe(print(`Resource ${v} already exists`));
        },
      ),
      { numRuns: 500, seed: 27 },
    );
  });
});
