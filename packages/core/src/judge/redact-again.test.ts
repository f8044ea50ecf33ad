/**
 * Judging is pure: a text judged again, after others and with other options, gets the same rule,
 * normalization, fingerprint and redaction (no pattern's state, cache or option of one call
 * leaks into the next).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fingerprint, normalizeText } from "./fingerprint.ts";
import { redact } from "./redact.ts";
import { matchBuiltinRules } from "./rules.ts";

describe("judging a text again changes no result", () => {
  const text = fc.oneof(
    fc.string({ maxLength: 120 }),
    fc.constantFrom(
      "Rate limit exceeded, retry after 30s",
      'No note with id "drafts"',
      "HTTP 503 Service Unavailable",
      "HTTP 404 Not Found",
      "token sk-abcdefghijklmnopqrstuvwx1234 rejected for ana@example.com at /home/ana/app.js",
      "ECONNREFUSED 10.0.0.5:5432",
      "permission denied: you need the admin role",
    ),
  );

  it("gives a text judged before the same rule, normalization, fingerprint and redaction, in any order (property)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(text, { minLength: 1, maxLength: 30 }), (texts) => {
        const judge = (t: string) => [
          matchBuiltinRules(t)?.reason ?? null,
          normalizeText(t),
          fingerprint({ tool: "t", channel: "tool", text: t }),
          fingerprint({ tool: "t", channel: "tool", code: 5, text: t }),
          fingerprint({ tool: "t", channel: "tool", code: "5", text: t }),
          fingerprint({ tool: "u", channel: "protocol", code: 5, text: t }),
          redact(t),
          redact(t, { emails: true }),
          redact(t, { maxLength: 20 }),
        ];
        const first = texts.map(judge);
        // Again, in reverse, and once more: no state of one judgement leaks into the next.
        const again = [...texts].reverse().map(judge).reverse();
        const third = texts.map(judge);
        expect(again).toEqual(first);
        expect(third).toEqual(first);
      }),
    );
  });

  it("redacts right with many sets of options, in turn", () => {
    const texts = ["user ana@example.com failed", "key ABC-1234 rejected for bob@example.com"];
    const sets = [
      {},
      { emails: true },
      { maxLength: 12 },
      { patterns: ["ABC-\\d+"] },
      { emails: true, maxLength: 20 },
      { patterns: ["failed"] },
    ];
    const expected = sets.map((o) =>
      texts.map((t) => redact(t, { ...o, sensitiveValues: ["\u0000"] })),
    );
    for (let round = 0; round < 4; round++) {
      for (const [i, o] of sets.entries()) {
        expect(texts.map((t) => redact(t, o))).toEqual(expected[i]);
      }
    }
  });

  it('keeps fingerprints of one text apart by tool, channel and code (5 is not "5")', () => {
    const t = "the frobnicator sneezed at 12:30";
    const prints = new Set([
      fingerprint({ tool: "a", channel: "tool", text: t }),
      fingerprint({ tool: "b", channel: "tool", text: t }),
      fingerprint({ tool: "a", channel: "protocol", text: t }),
      fingerprint({ tool: "a", channel: "tool", code: 5, text: t }),
      fingerprint({ tool: "a", channel: "tool", code: "5", text: t }),
    ]);
    expect(prints.size).toBe(5);
    // Asked again after the others, the first one is still its own.
    expect(fingerprint({ tool: "a", channel: "tool", text: t })).toBe([...prints][0] as string);
  });

  it("redacts with the options of each call: emails, patterns changed in place, sensitive values", () => {
    const t = "user ana@example.com sent code ABC-1234 with key hunter2-secret";
    expect(redact(t)).toContain("ana@example.com");
    expect(redact(t, { emails: true })).not.toContain("ana@example.com");
    expect(redact(t)).toContain("ana@example.com");

    const patterns = ["ABC-\\d+"];
    expect(redact(t, { patterns })).not.toContain("ABC-1234");
    // The same array, changed: the new pattern applies, the old one no longer does.
    patterns[0] = "hunter\\d";
    const changed = redact(t, { patterns });
    expect(changed).toContain("ABC-1234");
    expect(changed).not.toContain("hunter2");

    // Sensitive values differ from call to call: each call removes its own.
    expect(redact(t, { sensitiveValues: ["hunter2-secret"] })).not.toContain("hunter2-secret");
    const other = redact(t, { sensitiveValues: ["ABC-1234"] });
    expect(other).not.toContain("ABC-1234");
    expect(other).toContain("hunter2-secret");
  });
});
