import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fingerprint, normalizeText } from "./fingerprint.ts";
import { redact } from "./redact.ts";
import { matchBuiltinRules } from "./rules.ts";
import { TextFacts, TextMemo } from "./text-memo.ts";

/** A memo that keeps a text the first time, for the tests of its bounds. */
const memoOf = <V>(
  maxEntries: number,
  maxChars: number,
  maxTextLength: number,
  size?: (value: V) => number,
) =>
  new TextMemo<V>({
    maxEntries,
    maxChars,
    maxTextLength,
    keepFirstSight: true,
    ...(size !== undefined && { size }),
  });

describe("TextMemo", () => {
  it("gives back what was kept, and nothing for a text it never kept", () => {
    const memo = memoOf<string>(4, 100, 20, (v) => v.length);
    memo.set("rate limit", "a");
    expect(memo.get("rate limit")).toBe("a");
    expect(memo.get("rate limit ")).toBeUndefined();
    // A text built anew is found by its characters, not by its identity.
    expect(memo.get(["rate", "limit"].join(" "))).toBe("a");
  });

  it("keeps a text the second time it is offered, by default", () => {
    const memo = new TextMemo<number>({ maxEntries: 4, maxChars: 100, maxTextLength: 20 });
    memo.set("timeout after 30s", 1);
    expect(memo.get("timeout after 30s")).toBeUndefined();
    expect(memo.entries).toBe(0);
    memo.set("timeout after 30s", 1);
    expect(memo.get("timeout after 30s")).toBe(1);
    // Texts seen once, however many, are not kept.
    for (let i = 0; i < 100; i++) memo.set(`request ${i} failed`, i);
    expect(memo.entries).toBe(1);
  });

  it("keeps every text of a cycle it can hold by the third round, though texts share slots of the first-sight table", () => {
    // Texts judged in turn (a corpus replayed, a loop over failing tools): with one slot per text,
    // two texts of one slot took it from each other and neither was ever kept.
    const texts = Array.from({ length: 600 }, (_, i) => `tool ${i % 37} failed: reason ${i}`);
    const memo = new TextMemo<number>({ maxEntries: 1024, maxChars: 1 << 20, maxTextLength: 100 });
    for (let round = 0; round < 3; round++) {
      for (const [i, t] of texts.entries()) if (memo.get(t) === undefined) memo.set(t, i);
    }
    expect(texts.filter((t) => memo.get(t) === undefined)).toEqual([]);
  });

  it("holds at most maxEntries, dropping the oldest first", () => {
    const memo = memoOf<number>(3, 1000, 100);
    for (const [i, t] of ["a", "b", "c", "d"].entries()) memo.set(t, i);
    expect(memo.entries).toBe(3);
    expect(memo.get("a")).toBeUndefined();
    expect([memo.get("b"), memo.get("c"), memo.get("d")]).toEqual([1, 2, 3]);
    // Round the ring again: the order of eviction stays the order of arrival.
    for (const [i, t] of ["e", "f", "g", "h"].entries()) memo.set(t, 10 + i);
    expect(["d", "e", "f", "g", "h"].map((t) => memo.get(t))).toEqual([
      undefined,
      undefined,
      11,
      12,
      13,
    ]);
  });

  it("holds at most maxChars of texts and values, dropping the oldest to fit", () => {
    const memo = memoOf<string>(100, 20, 10, (v) => v.length);
    memo.set("aaaa", "11"); // 6
    memo.set("bbbb", "22"); // 12
    memo.set("cccc", "33"); // 18
    expect(memo.heldChars).toBe(18);
    memo.set("dddddd", "4444"); // 10 more: the two oldest go
    expect(memo.get("aaaa")).toBeUndefined();
    expect(memo.get("bbbb")).toBeUndefined();
    expect(memo.get("cccc")).toBe("33");
    expect(memo.heldChars).toBe(16);
    // A value too large to fit at all is not kept, and evicts nothing.
    memo.set("e", "x".repeat(30));
    expect(memo.get("e")).toBeUndefined();
    expect(memo.heldChars).toBe(16);
  });

  it("does not keep a text longer than maxTextLength", () => {
    const memo = memoOf<number>(10, 100, 5);
    memo.set("123456", 1);
    memo.set("12345", 2);
    expect(memo.get("123456")).toBeUndefined();
    expect(memo.get("12345")).toBe(2);
  });

  it("keeps the first value of a text (a pure function gives one)", () => {
    const memo = memoOf<number>(10, 100, 10);
    memo.set("a", 1);
    memo.set("a", 2);
    expect(memo.get("a")).toBe(1);
    expect(memo.heldChars).toBe(1);
  });

  it("stays within its bounds whatever is put in it, and forgets nothing it should hold (property)", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        fc.array(fc.tuple(fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 })), {
          maxLength: 200,
        }),
        (keepFirstSight, pairs) => {
          const memo = new TextMemo<string>({
            maxEntries: 16,
            maxChars: 200,
            maxTextLength: 30,
            size: (v) => v.length,
            keepFirstSight,
          });
          const first = new Map<string, string>();
          for (const [text, value] of pairs) {
            memo.set(text, value);
            if (!first.has(text)) first.set(text, value);
            expect(memo.entries).toBeLessThanOrEqual(16);
            expect(memo.heldChars).toBeLessThanOrEqual(200);
          }
          // What it gives back is a value offered for that text, and the characters add up.
          let chars = 0;
          for (const [text] of pairs) {
            const got = memo.get(text);
            if (got === undefined) continue;
            expect(pairs.some(([t, v]) => t === text && v === got)).toBe(true);
            if (keepFirstSight) expect(got).toBe(first.get(text));
          }
          for (const text of new Set(pairs.map(([t]) => t))) {
            const got = memo.get(text);
            if (got !== undefined) chars += text.length + got.length;
          }
          expect(chars).toBe(memo.heldChars);
          // The newest text that fits, kept on first sight, is held.
          const last = pairs[pairs.length - 1];
          if (keepFirstSight && last !== undefined && last[0].length <= 30) {
            expect(memo.get(last[0])).toBeDefined();
          }
        },
      ),
    );
  });

  it("refuses bounds that cannot hold a text, with a clear error", () => {
    expect(() => memoOf(0, 10, 5)).toThrow(/maxEntries must be an integer of at least 1/);
    expect(() => memoOf(1.5, 10, 5)).toThrow(/maxEntries must be an integer of at least 1/);
    expect(() => memoOf(4, 10, 50)).toThrow(/maxChars at least maxTextLength/);
  });
});

describe("TextFacts", () => {
  it("refuses bounds that cannot hold a text, with the same clear error as TextMemo", () => {
    const of = (maxEntries: number, maxChars: number, maxTextLength: number) =>
      new TextFacts({ maxEntries, maxChars, maxTextLength });
    expect(() => of(0, 10, 5)).toThrow(/^TextFacts: maxEntries must be an integer of at least 1/);
    expect(() => of(1.5, 10, 5)).toThrow(/maxEntries must be an integer of at least 1/);
    expect(() => of(4, 10, 50)).toThrow(/maxChars at least maxTextLength \(got 4, 50, 10\)/);
  });

  it("keeps each slot's value the second time that slot is offered the text, in one entry", () => {
    const facts = new TextFacts({ maxEntries: 4, maxChars: 100, maxTextLength: 20 });
    const a = facts.slot<string>((v) => v.length);
    const b = facts.slot<number>();
    a.set("rate limit", "x");
    // Another slot offered the same text in the same judgement: still the text's first sight for it.
    b.set("rate limit", 1);
    expect([a.get("rate limit"), b.get("rate limit"), facts.entries]).toEqual([
      undefined,
      undefined,
      0,
    ]);
    a.set("rate limit", "x");
    expect([a.get("rate limit"), b.get("rate limit"), facts.entries]).toEqual(["x", undefined, 1]);
    b.set("rate limit", 1);
    expect([a.get("rate limit"), b.get("rate limit"), facts.entries]).toEqual(["x", 1, 1]);
    // Found by its characters, not its identity; the first value stays.
    a.set(["rate", "limit"].join(" "), "y");
    expect(a.get(["rate", "limit"].join(" "))).toBe("x");
    expect(facts.heldChars).toBe("rate limit".length + 1);
  });

  it("holds at most maxEntries and maxChars, a value added later counted, the oldest text going with all its values", () => {
    const facts = new TextFacts({ maxEntries: 3, maxChars: 30, maxTextLength: 10 });
    const a = facts.slot<string>((v) => v.length);
    const b = facts.slot<string>((v) => v.length);
    const offer = (slot: typeof a, t: string, v: string) => {
      slot.set(t, v);
      slot.set(t, v);
    };
    for (const t of ["aaaa", "bbbb", "cccc", "dddd"]) offer(a, t, "1");
    expect(facts.entries).toBe(3);
    expect(a.get("aaaa")).toBeUndefined();
    expect(facts.heldChars).toBe(15);
    // A second slot's value for the oldest text: 10 more characters, 25 held.
    offer(b, "bbbb", "x".repeat(10));
    expect(facts.heldChars).toBe(25);
    // 10 more do not fit: the oldest text (bbbb, both its values) goes.
    offer(b, "cccc", "y".repeat(10));
    expect([a.get("bbbb"), b.get("bbbb"), a.get("cccc"), b.get("cccc")]).toEqual([
      undefined,
      undefined,
      "1",
      "y".repeat(10),
    ]);
    expect(facts.heldChars).toBe(20);
    // A text longer than maxTextLength is not kept; nor a value that cannot fit at all.
    offer(a, "k".repeat(11), "1");
    offer(a, "eeee", "z".repeat(40));
    expect([a.get("k".repeat(11)), a.get("eeee"), facts.entries]).toEqual([
      undefined,
      undefined,
      2,
    ]);
  });

  it("finds a text kept after it was looked for and missed, whichever copy of it asks", () => {
    const facts = new TextFacts({ maxEntries: 4, maxChars: 100, maxTextLength: 20 });
    const a = facts.slot<string>((v) => v.length);
    const b = facts.slot<number>();
    const offer = (t: string, v: string) => {
      a.set(t, v);
      a.set(t, v);
    };
    offer("busy", "u");
    const text = ["quota", "exceeded"].join(" ");
    expect([a.get(text), b.get(text)]).toEqual([undefined, undefined]);
    a.set(text, "q");
    expect(a.get(text)).toBeUndefined();
    // Kept, offered by another copy of the text; then found after another text was looked for.
    a.set(["quota", "exceeded"].join(" "), "q");
    expect(a.get("busy")).toBe("u");
    expect([a.get(text), b.get(text)]).toEqual(["q", undefined]);
    expect(a.get("busy")).toBe("u");
    expect(a.get(["quota", "exceeded"].join(" "))).toBe("q");
    // A text too long to be held is never found.
    expect(a.get("x".repeat(21))).toBeUndefined();
    facts.clear();
    expect([a.get(text), a.get("busy")]).toEqual([undefined, undefined]);
    offer("busy", "v");
    expect(a.get("busy")).toBe("v");
  });

  it("forgets one slot's values on clear, the others' kept", () => {
    const facts = new TextFacts({ maxEntries: 4, maxChars: 100, maxTextLength: 20 });
    const a = facts.slot<string>((v) => v.length);
    const b = facts.slot<string>((v) => v.length);
    for (const slot of [a, b, a, b]) slot.set("busy", slot === a ? "aa" : "bbb");
    expect(facts.heldChars).toBe(4 + 2 + 3);
    a.clear();
    expect([a.get("busy"), b.get("busy"), facts.heldChars]).toEqual([undefined, "bbb", 7]);
  });

  it("stays within its bounds whatever is put in it, and gives back only what was put (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat(2), fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 })), {
          maxLength: 200,
        }),
        (offers) => {
          const facts = new TextFacts({ maxEntries: 5, maxChars: 60, maxTextLength: 10 });
          const slots = [0, 1, 2].map(() => facts.slot<string>((v) => v.length));
          const first = new Map<string, string>();
          for (const [i, text, value] of offers) {
            const slot = slots[i] as (typeof slots)[number];
            slot.set(text, value);
            if (!first.has(`${i}:${text}`)) first.set(`${i}:${text}`, value);
            expect(facts.entries).toBeLessThanOrEqual(5);
            expect(facts.heldChars).toBeLessThanOrEqual(60);
            const got = slot.get(text);
            // What it holds is a value offered for that slot and text.
            if (got !== undefined)
              expect(offers.some(([j, t, v]) => j === i && t === text && v === got)).toBe(true);
          }
        },
      ),
    );
  });
});

describe("judging remembers texts without changing a result", () => {
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

  it("gives a remembered text the same rule, normalization, fingerprint and redaction, in any order (property)", () => {
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
        // Again, in reverse (now kept: seen twice), and once more: the answers come from the memo.
        const again = [...texts].reverse().map(judge).reverse();
        const third = texts.map(judge);
        expect(again).toEqual(first);
        expect(third).toEqual(first);
      }),
    );
  });

  it("redacts right with more sets of options than it keeps, in turn (a set's slot is cleared before another takes it)", () => {
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
