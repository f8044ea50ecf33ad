/** The readers of what stands around a quoted value answer as the patterns they replace. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { colonFollows, endsInObjectSeparator, keyAtEnd } from "./quote-context.ts";

/** What the quoted-value pass read with patterns before. */
const COLON_FOLLOWS = /^\s*:/;
const OBJECT_SEPARATOR = /[{,]\s*$/;
const KEY_BEFORE = /(?:["']([\w.-]{1,40})["']\s*:\s*|([\w.-]{1,40})=)$/;

/** Keys, quotes, separators and whitespace of every kind, in any order. */
const piece = fc.oneof(
  fc.constantFrom('"', "'", ":", "=", "{", ",", " ", "\n", "\t", "\u00a0", "\u2028", "\ufeff"),
  fc.constantFrom("code", "error_code", "a.b-c", "K9", "x".repeat(40), "y".repeat(41), "é", "<v>"),
  fc.constantFrom('"code": ', "'reason' : ", "code=", '{"error":', ", ", "key =", '"k"\u00a0:'),
  fc.constantFrom(
    `${" ".repeat(7)}:`,
    `${" ".repeat(8)}:`,
    `"${"z".repeat(40)}": `,
    `'${"z".repeat(41)}':`,
    `${"z".repeat(41)}=`,
  ),
  // Every character of `\s`, and two that are not.
  fc.constantFrom(..."\v\f\r\u1680\u2000\u2005\u200a\u2029\u202f\u205f\u3000\u200b\u180e"),
  fc.string({ unit: fc.constantFrom(..."ab_.-\"': ={,"), maxLength: 6 }),
);
const windowText = fc.array(piece, { maxLength: 10 }).map((parts) => parts.join(""));

describe("the readers around a quoted value", () => {
  it("colonFollows answers as /^\\s*:/ on the 8 characters from a place", () => {
    let yes = 0;
    fc.assert(
      fc.property(windowText, fc.nat(12), (text, from) => {
        const expected = COLON_FOLLOWS.test(text.slice(from, from + 8));
        if (expected) yes++;
        expect(colonFollows(text, from)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    expect(yes).toBeGreaterThan(50);
  });

  it("endsInObjectSeparator answers as /[{,]\\s*$/", () => {
    let yes = 0;
    fc.assert(
      fc.property(windowText, (text) => {
        const expected = OBJECT_SEPARATOR.test(text);
        if (expected) yes++;
        expect(endsInObjectSeparator(text)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    expect(yes).toBeGreaterThan(50);
  });

  it("keyAtEnd reads the key the pattern reads", () => {
    let quoted = 0;
    let bare = 0;
    fc.assert(
      fc.property(windowText, (text) => {
        const match = KEY_BEFORE.exec(text);
        if (match?.[1] !== undefined) quoted++;
        if (match?.[2] !== undefined) bare++;
        expect(keyAtEnd(text)).toBe(match?.[1] ?? match?.[2]);
      }),
      { numRuns: 5000 },
    );
    // Both kinds of key are reached.
    expect(quoted).toBeGreaterThan(50);
    expect(bare).toBeGreaterThan(50);
  });
});
