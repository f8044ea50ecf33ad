import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLoopDetector } from "./repeats.ts";
import { resultSignature, signResultInto, textSignature, UNHASHABLE } from "./result-signature.ts";

/** What the signature must equal: the hash of the text JSON.stringify gives the value. */
function viaJson(value: unknown): number {
  let json: string;
  try {
    json = JSON.stringify(value ?? null) ?? "null";
  } catch {
    return UNHASHABLE;
  }
  return textSignature(json);
}

// Strings with every escape JSON knows: quotes, backslashes, controls, lone and paired surrogates.
const nasty = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({
    unit: fc.constantFrom(
      "a",
      '"',
      "\\",
      "\n",
      "\t",
      "\b",
      "\f",
      "\r",
      "\u0001",
      "\u001f",
      "\u007f",
      "\u2028",
      "\ud83d",
      "\ude00",
      "é",
    ),
  }),
);
const numbers = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    0,
    -0,
    2_147_483_647,
    -2_147_483_647,
    -2_147_483_648,
    2 ** 31,
    2 ** 53,
    1e21,
    1e-7,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1e300,
  ),
);
const values = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    nasty,
    numbers,
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(nasty, tie("value"), { maxKeys: 4 }),
    // Arrays with holes, objects without a prototype, dates (toJSON), boxed primitives, functions.
    fc.array(tie("value"), { maxLength: 3 }).map((a) => {
      const holey = [...a];
      holey.length += 2;
      return holey;
    }),
    fc
      .dictionary(fc.string(), tie("value"), { maxKeys: 3 })
      .map((d) => Object.assign(Object.create(null), d)),
    fc.date({ noInvalidDate: true }),
    fc.constantFrom(new Number(3), new String("s"), new Boolean(false), () => 1, Symbol("s")),
  ),
})).value;

describe("resultSignature", () => {
  it("is the hash of the value's JSON text, for any value", () => {
    fc.assert(
      fc.property(values, (value) => {
        expect(resultSignature(value)).toBe(viaJson(value));
        // The same, written into an array (the loop detector's way).
        const out = new Float64Array(1);
        signResultInto(value, out);
        expect(out[0]).toBe(viaJson(value));
      }),
      { numRuns: 2_000 },
    );
  });

  it("is equal for values with equal JSON, different for different JSON", () => {
    const a = { content: [{ type: "text", text: 'say "hi"\n' }], n: -0, list: [1, undefined] };
    const b = JSON.parse(JSON.stringify(a));
    expect(resultSignature(a)).toBe(resultSignature(b));
    const seen = new Map<number, string>();
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const json = JSON.stringify(value) ?? "null";
        const sig = resultSignature(value);
        const before = seen.get(sig);
        if (before !== undefined) expect(before).toBe(json);
        seen.set(sig, json);
      }),
      { numRuns: 5_000 },
    );
  });

  it("is one word for what JSON cannot write, and survives a getter that throws", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(resultSignature(cyclic)).toBe(UNHASHABLE);
    expect(resultSignature({ n: 1n })).toBe(UNHASHABLE);
    const out = new Float64Array([42]);
    signResultInto(cyclic, out);
    expect(out[0]).toBe(UNHASHABLE);
    const throwing = Object.defineProperty({}, "x", {
      enumerable: true,
      get() {
        throw new Error("boom");
      },
    });
    expect(resultSignature(throwing)).toBe(UNHASHABLE);
    expect(resultSignature(undefined)).toBe(textSignature("null"));
    // Deeper than the walk goes: the text is made and hashed.
    let deep: unknown = "end";
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(resultSignature(deep)).toBe(viaJson(deep));
  });
});

describe("the loop detector's success hashes", () => {
  it("counts the same JSON in a row per server, tool and key, and starts over when it changes", () => {
    const loops = createLoopDetector();
    loops.noteSuccess("k", { a: 1 }, "t", "s");
    loops.noteSuccess("k", JSON.parse('{"a":1}'), "t", "s");
    expect(loops.count("k", "t", "s")).toBe(2);
    // Another server or tool with the same key is another call.
    expect(loops.count("k", "t", "other")).toBe(0);
    expect(loops.count("k", "u", "s")).toBe(0);
    loops.noteSuccess("k", { a: 2 }, "t", "s");
    expect(loops.count("k", "t", "s")).toBe(1);
    loops.note("k", { failure: "abc" }, "t", "s");
    expect(loops.get("k", "t", "s")).toEqual({ sig: "f:abc", count: 1 });
  });

  it("forgets the oldest call when full, whatever its tool and server", () => {
    const loops = createLoopDetector(2);
    loops.noteSuccess("a", 1, "t1", "s1");
    loops.noteSuccess("b", 1, "t2", "s2");
    loops.noteSuccess("c", 1, "t3", "s3");
    expect(loops.count("a", "t1", "s1")).toBe(0);
    expect(loops.count("b", "t2", "s2")).toBe(1);
    expect(loops.count("c", "t3", "s3")).toBe(1);
    // A thousand tools seen once each: the detector still follows two calls.
    for (let i = 0; i < 1_000; i++) loops.noteSuccess("k", i, `tool${i}`, `server${i}`);
    expect(loops.count("k", "tool999", "server999")).toBe(1);
    expect(loops.count("k", "tool998", "server998")).toBe(1);
    expect(loops.count("k", "tool997", "server997")).toBe(0);
  });

  it("keeps following a tool whose only call was just forgotten to make room for its next", () => {
    const loops = createLoopDetector(1);
    loops.noteSuccess("a", 1, "t", "s");
    // Full: "b" takes the slot of "a", the only call of the same tool.
    loops.noteSuccess("b", 1, "t", "s");
    loops.noteSuccess("b", 1, "t", "s");
    expect(loops.count("b", "t", "s")).toBe(2);
    expect(loops.count("a", "t", "s")).toBe(0);
  });
});

describe("resultSignature with a polluted Object.prototype", () => {
  it("hashes only own members, as JSON writes them", () => {
    Object.defineProperty(Object.prototype, "extra", {
      value: "x",
      enumerable: true,
      configurable: true,
      writable: true,
    });
    try {
      const value = { content: [{ type: "text", text: "ok" }] };
      expect(resultSignature(value)).toBe(viaJson(value));
      expect(resultSignature(value)).toBe(textSignature(JSON.stringify(value)));
    } finally {
      delete (Object.prototype as Record<string, unknown>).extra;
    }
  });
});
