import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, flatPrefix32, hashArgs, hashCanonical, sha256Hex } from "./canonical.ts";

/** Rebuilds every object of a JSON value with its keys in a shuffled order. */
function reorder(value: unknown, pick: (n: number) => number): unknown {
  if (Array.isArray(value)) return value.map((item) => reorder(item, pick));
  if (typeof value !== "object" || value === null) return value;
  const keys = Object.keys(value);
  const shuffled: string[] = [];
  while (keys.length > 0) shuffled.push(...keys.splice(pick(keys.length), 1));
  const out: Record<string, unknown> = {};
  // defineProperty, not assignment: a generated "__proto__" key must stay an own key.
  for (const k of shuffled) {
    const v = reorder((value as Record<string, unknown>)[k], pick);
    Object.defineProperty(out, k, {
      value: v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

describe("canonicalJson", () => {
  it("sorts keys at every depth and otherwise matches JSON.stringify", () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: "x" } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
    expect(canonicalJson({ a: undefined, f: () => 1, s: Symbol("s"), n: null })).toBe('{"n":null}');
    expect(canonicalJson([undefined, Number.NaN, -0, Number.POSITIVE_INFINITY])).toBe(
      "[null,null,0,null]",
    );
    expect(canonicalJson(new Date(0))).toBe('"1970-01-01T00:00:00.000Z"');
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":"1970-01-01T00:00:00.000Z"}');
  });

  it("writes a bigint as its decimal string and undefined as null", () => {
    expect(canonicalJson({ n: 12345678901234567890n })).toBe('{"n":"12345678901234567890"}');
    expect(canonicalJson(undefined)).toBe("null");
  });

  it("throws a TypeError naming the path of a cycle, and accepts shared references", () => {
    const a: Record<string, unknown> = { x: 1 };
    a.self = { inner: [a] };
    expect(() => canonicalJson(a)).toThrow(TypeError);
    expect(() => canonicalJson(a)).toThrow(/cycle at \$\.self\.inner\[0\]/);
    const shared = { v: 1 };
    expect(canonicalJson({ p: shared, q: [shared] })).toBe('{"p":{"v":1},"q":[{"v":1}]}');
  });

  it("writes data already in canonical order as the walk writes any order (property)", () => {
    // Sorted input takes the one-pass JSON.stringify path; a shuffled copy takes the walk.
    const sorted = (value: unknown): unknown => {
      if (Array.isArray(value)) return value.map(sorted);
      if (typeof value !== "object" || value === null) return value;
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(value).sort()) {
        Object.defineProperty(out, k, {
          value: sorted((value as Record<string, unknown>)[k]),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return out;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.infiniteStream(fc.nat()), (value, stream) => {
        const it = stream[Symbol.iterator]();
        const pick = (n: number) => (it.next().value as number) % n;
        expect(canonicalJson(sorted(value))).toBe(canonicalJson(reorder(value, pick)));
      }),
    );
    // Keys Object.keys lists in another order than a sort, boxed values, deep nesting, no prototype.
    expect(canonicalJson({ "9": 1, "10": 2 })).toBe('{"10":2,"9":1}');
    expect(canonicalJson({ a: Object("x") })).toBe('{"a":{"0":"x"}}');
    const bare = Object.assign(Object.create(null) as object, { a: 1, b: [2] });
    expect(canonicalJson(bare)).toBe('{"a":1,"b":[2]}');
    let deep: unknown = { z: 1, a: 2 };
    for (let i = 0; i < 40; i++) deep = { k: deep };
    expect(canonicalJson(deep)).toBe(`${'{"k":'.repeat(40)}{"a":2,"z":1}${"}".repeat(40)}`);
  });

  it("round-trips through JSON.parse to the same value (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});

describe("hashArgs", () => {
  it("is 32 hex characters", () => {
    expect(hashArgs({ a: 1 })).toMatch(/^[0-9a-f]{32}$/);
  });

  it("never changes with key order (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.infiniteStream(fc.nat()), (value, stream) => {
        const it = stream[Symbol.iterator]();
        const pick = (n: number) => (it.next().value as number) % n;
        const shuffled = reorder(value, pick);
        expect(canonicalJson(shuffled)).toBe(canonicalJson(value));
        expect(hashArgs(shuffled)).toBe(hashArgs(value));
      }),
    );
  });

  it("changes when the values differ (property)", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        fc.pre(canonicalJson(a) !== canonicalJson(b));
        expect(hashArgs(a)).not.toBe(hashArgs(b));
      }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string(),
        fc.jsonValue(),
        (record, name, value) => {
          const changed = { ...record, [name]: value };
          fc.pre(JSON.stringify(record[name]) !== JSON.stringify(value));
          expect(hashArgs(changed)).not.toBe(hashArgs(record));
        },
      ),
    );
  });
});

describe("sha256Hex: the one-shot hash gives the Hash object's digest", () => {
  it("for ASCII, non-ASCII and empty texts, so keys and fingerprints keep their values", () => {
    for (const text of ["", '{"a":1}', "Zürich ✓ 日本 🚀", "x".repeat(5000)]) {
      expect(sha256Hex(text)).toBe(createHash("sha256").update(text, "utf8").digest("hex"));
      expect(hashCanonical(text)).toBe(sha256Hex(text).slice(0, 32));
      expect(flatPrefix32("gk_", sha256Hex(text))).toBe(`gk_${sha256Hex(text).slice(0, 32)}`);
    }
  });
});

describe("canonicalJson with a polluted Object.prototype", () => {
  it("writes only own keys, sorted, whatever is enumerable on the prototype", () => {
    Object.defineProperty(Object.prototype, "aa", {
      value: 1,
      enumerable: true,
      configurable: true,
      writable: true,
    });
    Object.defineProperty(Object.prototype, "zz", {
      value: 2,
      enumerable: true,
      configurable: true,
      writable: true,
    });
    try {
      expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe('{"a":{"c":3,"d":2},"b":1}');
      expect(canonicalJson({ a: 1, b: 2 })).toBe('{"a":1,"b":2}');
      expect(canonicalJson({})).toBe("{}");
    } finally {
      delete (Object.prototype as Record<string, unknown>).aa;
      delete (Object.prototype as Record<string, unknown>).zz;
    }
  });
});
