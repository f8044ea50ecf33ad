import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createLoopDetector, resultHash } from "./repeats.ts";

describe("createLoopDetector", () => {
  it("counts the same result in a row, and starts over when it changes", () => {
    const loops = createLoopDetector();
    loops.note("k", { value: { a: 1 } });
    loops.note("k", { value: { a: 1 } });
    expect(loops.get("k")).toEqual({ sig: 'ok:{"a":1}', count: 2 });
    loops.note("k", { failure: "abc" });
    expect(loops.get("k")).toEqual({ sig: "f:abc", count: 1 });
  });

  it("follows at most max calls: the one first seen longest ago goes, whatever was noted since", () => {
    const loops = createLoopDetector(3);
    for (const key of ["a", "b", "c"]) loops.note(key, { value: 1 });
    // Noting "a" again does not make it younger: it was first seen first.
    loops.note("a", { value: 1 });
    loops.note("d", { value: 1 });
    expect(loops.get("a")).toBeUndefined();
    expect(loops.get("b")?.count).toBe(1);
    loops.note("e", { value: 1 });
    expect(loops.get("b")).toBeUndefined();
    expect([loops.get("c"), loops.get("d"), loops.get("e")].map((s) => s?.count)).toEqual([
      1, 1, 1,
    ]);
  });

  it("forgets everything on clear, and fills again from empty", () => {
    const loops = createLoopDetector(2);
    for (const key of ["a", "b", "c"]) loops.note(key, { value: 1 });
    loops.clear();
    expect(loops.get("b")).toBeUndefined();
    for (const key of ["x", "y"]) loops.note(key, { value: 1 });
    expect([loops.get("x"), loops.get("y")].every((s) => s?.count === 1)).toBe(true);
  });
});

describe("the loop detector's memory", () => {
  it("stays bounded over a run that calls ever new tools: a tool's bookkeeping goes with its last call", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const heapMb = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed / 1024 / 1024;
    };
    const loops = createLoopDetector(4);
    // A model inventing tool names: 30,000 names of 4 KB each (120 MB if the detector kept what
    // it holds per tool after the tool's calls were forgotten), a detector following 4 calls.
    const name = (i: number) => `${i}-`.repeat(4_096 / (String(i).length + 1));
    for (let i = 0; i < 100; i++) loops.noteFailure("k", "f", name(i), "s");
    const before = heapMb();
    for (let i = 100; i < 30_100; i++) loops.noteFailure("k", "f", name(i), "s");
    const grown = heapMb() - before;
    expect(loops.count("k", name(30_099), "s")).toBe(1);
    expect(loops.count("k", name(100), "s")).toBe(0);
    expect(grown).toBeLessThan(20);
  });
});

describe("the loop detector against a plain model of it (property)", () => {
  /** What the detector promises, written plainly: calls in first-seen order, the oldest dropped. */
  class Model {
    calls: { id: string; sig: string; count: number }[] = [];
    constructor(readonly max: number) {}
    note(id: string, sig: string) {
      const seen = this.calls.find((c) => c.id === id);
      if (seen) {
        seen.count = seen.sig === sig ? seen.count + 1 : 1;
        seen.sig = sig;
        return;
      }
      if (this.calls.length >= this.max) this.calls.shift();
      this.calls.push({ id, sig, count: 1 });
    }
    get(id: string) {
      const c = this.calls.find((x) => x.id === id);
      return c && { sig: c.sig, count: c.count };
    }
  }

  it("counts, forgets and clears as the model does, for one call or many, any max, any tools and servers", () => {
    // Few distinct calls, most of them one call: repeats in a row and a second call both come.
    const call = fc.oneof(
      { weight: 3, arbitrary: fc.constant({ key: "k1", tool: "t", server: "" }) },
      {
        weight: 1,
        arbitrary: fc.record({
          key: fc.constantFrom("k1", "k2", "k3"),
          tool: fc.constantFrom("", "t", "u"),
          server: fc.constantFrom("", "s"),
        }),
      },
    );
    const op = fc.oneof(
      fc.record({ kind: fc.constant("failure" as const), call, sig: fc.constantFrom("a", "b") }),
      fc.record({ kind: fc.constant("value" as const), call, sig: fc.constantFrom("a", "b") }),
      fc.record({ kind: fc.constant("success" as const), call, sig: fc.constantFrom("a", "b") }),
      fc.record({ kind: fc.constant("clear" as const), call, sig: fc.constant("") }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 40 }), (max, ops) => {
        const loops = createLoopDetector(max);
        let model = new Model(max);
        const id = (c: { key: string; tool: string; server: string }) =>
          `${c.server}|${c.tool}|${c.key}`;
        for (const o of ops) {
          const { key, tool, server } = o.call;
          if (o.kind === "clear") {
            loops.clear();
            model = new Model(max);
          } else if (o.kind === "failure") {
            loops.noteFailure(key, o.sig, tool, server);
            model.note(id(o.call), `f:${o.sig}`);
          } else if (o.kind === "value") {
            loops.note(key, { value: o.sig }, tool, server);
            model.note(id(o.call), `ok:${JSON.stringify(o.sig)}`);
          } else {
            loops.note(key, { failure: o.sig }, tool, server);
            model.note(id(o.call), `f:${o.sig}`);
          }
          for (const k of ["k1", "k2", "k3"]) {
            for (const t of ["", "t", "u"]) {
              for (const s of ["", "s"]) {
                const want = model.get(id({ key: k, tool: t, server: s }));
                expect(loops.get(k, t, s)).toEqual(want);
                expect(loops.count(k, t, s)).toBe(want?.count ?? 0);
              }
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("resultHash", () => {
  it("is the JSON of a short result, a hash of a long one, a fixed word for what has none", () => {
    expect(resultHash({ ok: true })).toBe('{"ok":true}');
    expect(resultHash("x".repeat(100))).toMatch(/^[0-9a-f]{32}$/);
    expect(resultHash(undefined)).toBe("null");
    expect(resultHash({ n: 1n })).toBe("unhashable");
  });
});
